//! `--schema-dir DIR`: validate every stdout frame against the official
//! schema of the negotiated revision, `DIR/<revision>/schema.json`: the
//! envelope (`JSONRPCMessage`) and, for results, the result type of the
//! request the response answers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use portcullis_wire::transcript::render_bytes;
use serde_json::Value;

use super::judge::Failure;

/// Compiled validators by (revision, definition); `None` when the
/// revision's schema has no such definition.
type Cache = Mutex<HashMap<(String, String), Option<Arc<jsonschema::Validator>>>>;

/// Compiled validators, by (revision, definition).
#[derive(Debug)]
pub struct Schemas {
    dir: PathBuf,
    cache: Cache,
}

impl Schemas {
    /// Schemas under `dir` (one folder per revision).
    pub fn new(dir: PathBuf) -> anyhow::Result<Self> {
        anyhow::ensure!(
            dir.is_dir(),
            "--schema-dir {} is not a directory",
            dir.display()
        );
        Ok(Self {
            dir,
            cache: Mutex::default(),
        })
    }

    fn validator(
        &self,
        revision: &str,
        definition: &str,
    ) -> Result<Option<Arc<jsonschema::Validator>>, String> {
        let key = (revision.to_owned(), definition.to_owned());
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = cache.get(&key) {
            return Ok(v.clone());
        }
        let path = self.dir.join(revision).join("schema.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "no official schema for revision {revision} ({}: {e})",
                path.display()
            )
        })?;
        let mut root: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        let defs = if root.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        if root.get(defs).and_then(|d| d.get(definition)).is_none() {
            cache.insert(key, None);
            return Ok(None);
        }
        let Some(object) = root.as_object_mut() else {
            return Err(format!("{} is not a schema object", path.display()));
        };
        object.insert(
            "$ref".into(),
            Value::String(format!("#/{defs}/{definition}")),
        );
        let compiled = jsonschema::validator_for(&root)
            .map_err(|e| format!("{} does not compile: {e}", path.display()))?;
        let compiled = Some(Arc::new(compiled));
        cache.insert(key, compiled.clone());
        Ok(compiled)
    }

    /// The first frame that does not validate.
    pub fn check(
        &self,
        stdout: &[u8],
        revision: &str,
        requests: &HashMap<String, String>,
    ) -> Result<(), Failure> {
        let fail = |line: Option<(usize, Vec<u8>)>, message: String| Failure {
            check: "schema",
            message,
            line,
        };
        let envelope = self
            .validator(revision, "JSONRPCMessage")
            .map_err(|m| fail(None, m))?;
        let Some(envelope) = envelope else {
            return Err(fail(
                None,
                format!("the {revision} schema has no JSONRPCMessage"),
            ));
        };
        for (n, raw) in stdout.split_inclusive(|&b| b == b'\n').enumerate() {
            let Ok(value) = serde_json::from_slice::<Value>(raw) else {
                continue;
            };
            let line = Some((n + 1, raw.to_vec()));
            if let Err(err) = envelope.validate(&value) {
                return Err(fail(
                    line,
                    format!(
                        "line {} is not a {revision} JSONRPCMessage ({err}): {}",
                        n + 1,
                        render_bytes(raw)
                    ),
                ));
            }
            let (Some(result), Some(id)) = (value.get("result"), value.get("id")) else {
                continue;
            };
            let Some(definition) = requests
                .get(&id.to_string())
                .and_then(|m| result_definition(m))
            else {
                continue;
            };
            let Some(check) = self
                .validator(revision, definition)
                .map_err(|m| fail(None, m))?
            else {
                continue;
            };
            if let Err(err) = check.validate(result) {
                return Err(fail(
                    line,
                    format!(
                        "line {}: result is not a {revision} {definition} ({err}): {}",
                        n + 1,
                        render_bytes(raw)
                    ),
                ));
            }
        }
        Ok(())
    }
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
