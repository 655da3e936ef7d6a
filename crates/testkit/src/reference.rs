//! The reference check: a deliberately simple, independent judge of which
//! frames may become actions. It shares no code with the wire layer or the
//! gateway: plain line splitting, lenient `serde_json::Value`, and a
//! handful of field checks. It over-approximates (it knows nothing of
//! schemas, duplicates or allowlists), so the property is one-sided: every
//! executed frame must be one it accepts.

use serde_json::Value;

/// Per input line (1-based index into the returned vector, offset by one):
/// whether the line is a complete valid `tools/call` in a valid session,
/// and for which tool.
pub fn executable_lines(input: &[u8], tools: &[&str]) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut session_started = false;
    let mut pieces = input.split(|&b| b == b'\n').peekable();
    while let Some(raw) = pieces.next() {
        // The piece after the last newline is not a line at all.
        if pieces.peek().is_none() {
            break;
        }
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let verdict = judge(raw, tools, &mut session_started);
        out.push(verdict);
    }
    out
}

fn judge(raw: &[u8], tools: &[&str], session_started: &mut bool) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?;
    let value: Value = serde_json::from_str(text).ok()?;
    let object = value.as_object()?;
    if object.get("jsonrpc")? != "2.0" {
        return None;
    }
    if object
        .keys()
        .any(|k| !["jsonrpc", "id", "method", "params"].contains(&k.as_str()))
    {
        return None;
    }
    let id_ok = match object.get("id")? {
        Value::String(_) => true,
        Value::Number(n) => n.as_i64().is_some_and(|i| i.unsigned_abs() < (1 << 53)),
        _ => false,
    };
    if !id_ok {
        return None;
    }
    let method = object.get("method")?.as_str()?;
    let params = object.get("params").and_then(Value::as_object);
    if method == "initialize" {
        *session_started = true;
        return None;
    }
    if method != "tools/call" {
        return None;
    }
    let params = params?;
    let modern = params
        .get("_meta")
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .is_some_and(|v| v == "2026-07-28");
    if !*session_started && !modern {
        return None;
    }
    let name = params.get("name")?.as_str()?;
    if !tools.contains(&name) {
        return None;
    }
    if !params.get("arguments").is_none_or(Value::is_object) {
        return None;
    }
    Some(name.to_owned())
}
