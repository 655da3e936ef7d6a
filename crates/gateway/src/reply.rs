//! Result bodies the gateway writes, shaped for the session's revision.

use serde_json::{Map, Value, json};

use crate::mcp::{MODERN_VERSIONS, Revision};
use crate::policy::Policy;

/// How long a modern client may cache discovery and tool lists.
const CACHE_TTL_MS: u64 = 300_000;

fn complete(revision: Revision, mut body: Map<String, Value>) -> Value {
    if revision >= Revision::V2026_07_28 {
        body.insert("resultType".into(), Value::String("complete".into()));
    }
    Value::Object(body)
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn capabilities() -> Value {
    json!({ "tools": { "listChanged": false } })
}

/// Result of a legacy `initialize`.
pub fn initialize(policy: &Policy, revision: Revision) -> Value {
    let mut body = object(json!({
        "protocolVersion": revision.as_str(),
        "capabilities": capabilities(),
        "serverInfo": { "name": policy.server.name, "version": policy.server.version },
    }));
    if let Some(text) = &policy.server.instructions {
        body.insert("instructions".into(), Value::String(text.clone()));
    }
    Value::Object(body)
}

/// Result of `server/discover`.
pub fn discover(policy: &Policy, revision: Revision) -> Value {
    let mut body = object(json!({
        "supportedVersions": MODERN_VERSIONS,
        "capabilities": capabilities(),
        "cacheScope": "public",
        "ttlMs": CACHE_TTL_MS,
        // Modern clients read the server's name here (there is no
        // `initialize` result to carry it).
        "_meta": {
            "io.modelcontextprotocol/serverInfo": {
                "name": policy.server.name,
                "version": policy.server.version,
            }
        },
    }));
    if let Some(text) = &policy.server.instructions {
        body.insert("instructions".into(), Value::String(text.clone()));
    }
    complete(revision, body)
}

/// Result of `ping`.
pub fn empty(revision: Revision) -> Value {
    complete(revision, Map::new())
}

/// Result of `tools/list`, generated from the policy.
pub fn tools_list(policy: &Policy, revision: Revision) -> Value {
    let tools: Vec<Value> = policy
        .tools
        .iter()
        .map(|tool| {
            let mut t = Map::new();
            t.insert("name".into(), Value::String(tool.name.to_string()));
            if let Some(title) = &tool.title {
                t.insert("title".into(), Value::String(title.clone()));
            }
            if let Some(d) = &tool.description {
                t.insert("description".into(), Value::String(d.clone()));
            }
            t.insert("inputSchema".into(), tool.schema.document().clone());
            Value::Object(t)
        })
        .collect();
    let mut body = Map::new();
    body.insert("tools".into(), Value::Array(tools));
    if revision >= Revision::V2026_07_28 {
        body.insert("cacheScope".into(), Value::String("public".into()));
        body.insert("ttlMs".into(), Value::from(CACHE_TTL_MS));
    }
    complete(revision, body)
}

/// A `CallToolResult` with one text block.
pub fn call_tool(revision: Revision, text: &str, is_error: bool) -> Value {
    let body = object(json!({
        "content": [{ "type": "text", "text": text }],
        "isError": is_error,
    }));
    complete(revision, body)
}

/// The standard message for a JSON-RPC error code.
pub fn standard_message(code: i64) -> &'static str {
    use portcullis_wire::codes::*;
    match code {
        PARSE_ERROR => "Parse error",
        INVALID_REQUEST => "Invalid Request",
        METHOD_NOT_FOUND => "Method not found",
        INVALID_PARAMS => "Invalid params",
        crate::mcp::UNSUPPORTED_PROTOCOL_VERSION => "Unsupported protocol version",
        _ => "Internal error",
    }
}
