//! Hostile inputs: whole stdin streams that must never cause a tool to run,
//! and the exit each one ends `portcullis mcp` with.

use serde_json::{Value, json};

use super::{call, frame, session};

/// JSON nested `depth` arrays deep.
pub fn nested(depth: usize) -> Value {
    let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    serde_json::from_str(&text).expect("nested arrays")
}

/// The expected exit of `portcullis mcp` (default policy) fed one hostile
/// case and then end of input: a well-formed call refused by the schema or
/// authorization is a tool error and the session runs on (0); anything else
/// closes it (3).
pub fn hostile_case_exit(name: &str) -> i32 {
    let refused_call = [
        "unknown argument property",
        "denied host after template expansion",
    ];
    if refused_call.contains(&name) { 0 } else { 3 }
}

/// Inputs that must never cause `tool` to run, each a whole stdin stream.
/// `args` are arguments that would be valid for the tool.
pub fn hostile_cases(tool: &str, args: &Value) -> Vec<(&'static str, Vec<u8>)> {
    let valid = call(2, tool, args.clone());
    let valid_line = &valid[..valid.len() - 1];
    let joined = |a: &[u8], b: &[u8]| [a, b].concat();
    let mut extra = args.clone();
    extra["extra_property"] = json!(true);
    let mut long = args.clone();
    long["pad"] = json!("a".repeat(10_000));
    let mut deep = args.clone();
    deep["deep"] = nested(64);
    let id_true =
        String::from_utf8(valid.clone())
            .expect("utf-8")
            .replacen("\"id\":2", "\"id\":true", 1);
    assert!(id_true.contains("\"id\":true"));
    let mut not_utf8 = valid.clone();
    let at = not_utf8
        .windows(8)
        .position(|w| w == b"\"name\":\"")
        .expect("name key")
        + 8;
    not_utf8.insert(at, 0xff);
    let duplicate = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"{tool}","name":"{tool}","arguments":{args}}}}}"#
    );
    let modern = frame(&json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {
            "name": tool, "arguments": args,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2099-01-01",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    }));
    vec![
        (
            "debug line then valid request",
            session(&[b"debug: entering tool handler\n", &valid]),
        ),
        (
            "valid request + banner on the same line",
            session(&[&joined(valid_line, b" server ready\n")]),
        ),
        (
            "truncated object then EOF",
            session(&[&valid[..valid.len() / 2]]),
        ),
        (
            "two objects on one line",
            session(&[&joined(valid_line, &call(3, tool, args.clone()))]),
        ),
        (
            "params is a string",
            session(&[&frame(
                &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": "run"}),
            )]),
        ),
        ("id is true", session(&[id_true.as_bytes()])),
        (
            "unknown argument property",
            session(&[&call(2, tool, extra)]),
        ),
        (
            "tools/call as a notification",
            session(&[&frame(&json!({
                "jsonrpc": "2.0", "method": "tools/call",
                "params": { "name": tool, "arguments": args }
            }))]),
        ),
        ("tools/call before initialize", valid.clone()),
        ("reused id", session(&[&call(1, tool, args.clone())])),
        (
            "duplicate name key",
            session(&[&joined(duplicate.as_bytes(), b"\n")]),
        ),
        ("unsupported modern version", modern),
        ("invalid UTF-8", session(&[&not_utf8])),
        ("over-long line", session(&[&call(2, tool, long)])),
        ("64-level-deep argument", session(&[&call(2, tool, deep)])),
    ]
}
