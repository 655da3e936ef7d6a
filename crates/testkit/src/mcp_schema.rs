//! Validate stdout against the official MCP schema of the negotiated
//! revision, read from `$MCP_SCHEMA_DIR/<rev>/schema.json`.
//!
//! When the variable is unset the check says so once on stderr and passes:
//! the reference data lives outside the repository (`.ci/run` sets it).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use portcullis_gateway::mcp::Revision;
use serde_json::Value;

type Cache = Mutex<HashMap<(String, String), Arc<jsonschema::Validator>>>;

fn schema_dir() -> Option<PathBuf> {
    static WARNED: OnceLock<()> = OnceLock::new();
    match std::env::var_os("MCP_SCHEMA_DIR") {
        Some(dir) if PathBuf::from(&dir).is_dir() => Some(PathBuf::from(dir)),
        _ => {
            WARNED.get_or_init(|| {
                // Past the test harness's output capture, so CI logs show it.
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "MCP_SCHEMA_DIR is not set (or not a directory): skipping validation against the official MCP schemas"
                );
            });
            None
        }
    }
}

/// Whether official schemas are available.
pub fn available() -> bool {
    schema_dir().is_some()
}

fn documents() -> &'static Mutex<HashMap<String, Arc<Value>>> {
    static DOCS: OnceLock<Mutex<HashMap<String, Arc<Value>>>> = OnceLock::new();
    DOCS.get_or_init(Default::default)
}

fn validator(revision: &str, definition: &str) -> Option<Arc<jsonschema::Validator>> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (revision.to_owned(), definition.to_owned());
    if let Some(v) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Some(Arc::clone(v));
    }
    let dir = schema_dir()?;
    let doc = {
        let mut docs = documents().lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(docs.entry(revision.to_owned()).or_insert_with(|| {
            let path = dir.join(revision).join("schema.json");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            Arc::new(serde_json::from_str(&text).expect("official schema is JSON"))
        }))
    };
    let mut root = (*doc).clone();
    let defs_key = if root.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    };
    let object = root.as_object_mut().expect("schema root is an object");
    object.insert(
        "$ref".into(),
        Value::String(format!("#/{defs_key}/{definition}")),
    );
    let compiled = Arc::new(
        jsonschema::validator_for(&root)
            .unwrap_or_else(|e| panic!("official schema {revision} does not compile: {e}")),
    );
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, Arc::clone(&compiled));
    Some(compiled)
}

fn result_definition(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "InitializeResult",
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "server/discover" => "DiscoverResult",
        "ping" => "Result",
        _ => return None,
    })
}

/// Check every stdout frame against `revision`'s schema: the envelope
/// (`JSONRPCMessage`) and, for results, the result type of the request
/// whose id it answers (`requests`: id → method, read from the input).
/// Returns a description of the first failure. Passes when schemas are
/// unavailable.
pub fn check_stdout(
    stdout: &[u8],
    revision: Revision,
    requests: &HashMap<String, String>,
) -> Result<(), String> {
    let rev = revision.as_str();
    let Some(envelope) = validator(rev, "JSONRPCMessage") else {
        return Ok(());
    };
    for (n, line) in stdout.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_slice(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        if let Err(err) = envelope.validate(&value) {
            return Err(format!(
                "line {} is not a {rev} JSONRPCMessage: {err}\n{value}",
                n + 1
            ));
        }
        let Some(result) = value.get("result") else {
            continue;
        };
        let id = value.get("id").map(Value::to_string).unwrap_or_default();
        let Some(definition) = requests.get(&id).and_then(|m| result_definition(m)) else {
            continue;
        };
        let Some(check) = validator(rev, definition) else {
            continue;
        };
        if let Err(err) = check.validate(result) {
            return Err(format!(
                "line {}: result is not a {rev} {definition}: {err}\n{value}",
                n + 1
            ));
        }
    }
    Ok(())
}

/// id (as JSON text) → method for every request-looking input line.
/// Each line is read whole, as a `serde_json::Value`: a line serde_json
/// refuses anywhere (invalid UTF-8 or a lone surrogate in a member the map
/// does not need) names nothing, even if its `id` and `method` read fine.
pub fn requests_of(input: &[u8]) -> HashMap<String, String> {
    let mut map = HashMap::new();
    for line in input.split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if let (Some(id), Some(method)) =
            (value.get("id"), value.get("method").and_then(Value::as_str))
        {
            map.entry(id.to_string())
                .or_insert_with(|| method.to_owned());
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_map_ids_to_string_methods_from_whole_json_lines_and_the_first_request_names_an_id()
    {
        let input =
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"id\":9}}\n\
{\"id\":1,\"method\":\"tools/call\"}\n\
{\"id\":\"a\",\"\\u006dethod\":\"ping\"}\n\
{\"id\":2,\"method\":5}\n\
{\"method\":\"notifications/initialized\"}\n\
[{\"id\":3,\"method\":\"ping\"}]\n\
{\"id\":null,\"method\":\"ping\"}\n\
{\"id\":4,\"method\":\"ping\",\"params\":{\"x\":\"\\ud800\"}}\n\
{\"id\":5,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}\n\
not json\n";
        let requests = requests_of(input);
        let mut pairs: Vec<_> = requests.iter().collect();
        pairs.sort();
        assert_eq!(
            pairs,
            [
                (&"\"a\"".to_owned(), &"ping".to_owned()),
                (&"1".to_owned(), &"initialize".to_owned()),
                (&"null".to_owned(), &"ping".to_owned()),
            ]
        );
    }
}
