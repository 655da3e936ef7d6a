//! What `check` sends: the default client scripts of each era, user
//! scripts (`--script FILE`, NDJSON with `{"delay_ms":N}` steps) and the
//! optional `--call`.

use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

/// The newest legacy revision, offered by the default legacy `initialize`.
pub const LEGACY_REVISION: &str = "2025-11-25";
/// The revision the modern era's per-request `_meta` names.
pub const MODERN_REVISION: &str = "2026-07-28";

/// One step of a script.
#[derive(Debug, Clone)]
pub enum Step {
    /// Write these bytes (normally one frame and its newline) to stdin.
    Send(Vec<u8>),
    /// Wait before the next step.
    Delay(Duration),
}

/// What a sent frame was, as far as a client can tell from its own bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// A request: its id (as JSON text) and method.
    Request { id: String, method: String },
    /// A notification and its method.
    Notification { method: String },
    /// Anything else (garbage, responses, batches).
    Other,
}

/// Classify the bytes of a sent frame.
pub fn classify(bytes: &[u8]) -> Sent {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(bytes) else {
        return Sent::Other;
    };
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return Sent::Other;
    };
    match message.get("id") {
        None => Sent::Notification {
            method: method.to_owned(),
        },
        Some(id @ (Value::String(_) | Value::Number(_))) => Sent::Request {
            id: id.to_string(),
            method: method.to_owned(),
        },
        Some(_) => Sent::Other,
    }
}

/// A frame: compact JSON and its newline.
pub fn frame(value: &Value) -> Vec<u8> {
    let mut bytes = value.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

/// Per-request `_meta` of the modern era.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN_REVISION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "portcullis-check", "version": env!("CARGO_PKG_VERSION") }
    })
}

/// Which handshake the default script performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Era {
    /// `initialize` (revision 2025-11-25) then `notifications/initialized`.
    Legacy,
    /// `server/discover` and `_meta` on every request (revision 2026-07-28).
    Modern,
}

/// The handshake alone: what a client sends before its first real request.
pub fn handshake(era: Era) -> Vec<Step> {
    match era {
        Era::Legacy => vec![
            Step::Send(frame(&json!({
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY_REVISION,
                    "capabilities": {},
                    "clientInfo": { "name": "portcullis-check", "version": env!("CARGO_PKG_VERSION") }
                }
            }))),
            Step::Send(frame(
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )),
        ],
        Era::Modern => vec![Step::Send(frame(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "server/discover",
            "params": { "_meta": modern_meta() }
        })))],
    }
}

/// A request of the era with the given id (modern requests carry `_meta`).
pub fn request(era: Era, id: i64, method: &str, params: Value) -> Vec<u8> {
    let mut params = params;
    if era == Era::Modern
        && let Value::Object(map) = &mut params
    {
        map.insert("_meta".into(), modern_meta());
    }
    let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if params.as_object().is_some_and(|m| !m.is_empty()) {
        message["params"] = params;
    }
    frame(&message)
}

/// The liveness probe: a `ping` with an id no script uses.
pub fn ping(era: Era) -> Vec<u8> {
    request(era, 900_001, "ping", json!({}))
}

/// The default script: handshake, `ping`, `tools/list`, then the optional
/// `--call`.
pub fn default_script(era: Era, call: Option<(&str, &Value)>) -> Vec<Step> {
    let mut steps = handshake(era);
    steps.push(Step::Send(request(era, 2, "ping", json!({}))));
    steps.push(Step::Send(request(era, 3, "tools/list", json!({}))));
    if let Some((tool, arguments)) = call {
        steps.push(Step::Send(request(
            era,
            4,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )));
    }
    steps
}

/// Parse a user script: every line is sent verbatim (its newline included;
/// a last line without one is sent without one), except a line that is
/// exactly a `{"delay_ms":N}` object, which waits N milliseconds.
pub fn parse_script(bytes: &[u8]) -> anyhow::Result<Vec<Step>> {
    let mut steps = Vec::new();
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        if let Some(delay) = delay_of(line)? {
            steps.push(Step::Delay(delay));
        } else {
            steps.push(Step::Send(line.to_vec()));
        }
    }
    if steps.is_empty() {
        bail!("the script is empty");
    }
    Ok(steps)
}

fn delay_of(line: &[u8]) -> anyhow::Result<Option<Duration>> {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(line) else {
        return Ok(None);
    };
    if map.len() != 1 {
        return Ok(None);
    }
    let Some(delay) = map.get("delay_ms") else {
        return Ok(None);
    };
    let ms = delay
        .as_u64()
        .context("delay_ms must be a non-negative integer")?;
    Ok(Some(Duration::from_millis(ms)))
}

/// Render steps as a script file that [`parse_script`] reads back to the
/// same steps.
pub fn render_script(steps: &[Step]) -> Vec<u8> {
    let mut out = Vec::new();
    for step in steps {
        match step {
            Step::Send(bytes) => out.extend_from_slice(bytes),
            Step::Delay(d) => out.extend(frame(&json!({"delay_ms": d.as_millis()}))),
        }
    }
    out
}
