//! The `transcript_check` fuzz target: arbitrary server output bytes into
//! [`check_transcript`], compared with an oracle written here from the
//! contract alone (serde_json's `Value`, the testkit's own duplicate-key
//! detector and a token scan for integers): every line `\n`-terminated,
//! non-empty UTF-8, one I-JSON value that is a JSON-RPC 2.0 response, error
//! response, request or notification a server may send.
//!
//! Both must agree on accept or reject and on the first offending line;
//! their wording of the reason may differ.

use portcullis_wire::check_transcript;
use serde_json::{Map, Value};

use crate::harness::has_duplicate_keys;

/// Arbitrary bytes as captured stdout: the checker's verdict equals the
/// oracle's.
pub fn transcript_check(data: &[u8]) {
    let expected = first_bad_line(data);
    match (check_transcript(data), expected) {
        (Ok(frames), Ok(lines)) => assert_eq!(frames, lines, "frame count"),
        (Err(v), Err(line)) => assert_eq!(
            v.line, line,
            "the checker and the oracle blame different lines: {v}"
        ),
        (Ok(_), Err(line)) => panic!(
            "the checker accepted stdout the oracle refuses at line {line}: {}",
            portcullis_wire::transcript::render_bytes(data)
        ),
        (Err(v), Ok(_)) => panic!("the checker refused stdout the oracle accepts: {v}"),
    }
}

/// `Ok(frames)`, or the 1-based number of the first line that is not a
/// permitted frame (an unterminated tail counts as a line).
fn first_bad_line(stdout: &[u8]) -> Result<usize, usize> {
    let mut lines = stdout.split_inclusive(|&b| b == b'\n');
    let mut count = 0;
    for line in lines.by_ref() {
        count += 1;
        let Some(body) = line.strip_suffix(b"\n") else {
            return Err(count);
        };
        if !permitted(body) {
            return Err(count);
        }
    }
    Ok(count)
}

const MAX_SAFE: i128 = (1 << 53) - 1;
const MAX_DEPTH: usize = 127;

fn permitted(line: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(line) else {
        return false;
    };
    if text.is_empty() || has_duplicate_keys(text) != Some(false) || !integers_safe(text) {
        return false;
    }
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    if depth(&value) > MAX_DEPTH || !finite(&value) {
        return false;
    }
    match value {
        Value::Object(m) => server_message(&m),
        _ => false,
    }
}

/// The kinds of message a server may write, each with exactly its members.
fn server_message(m: &Map<String, Value>) -> bool {
    let has = |k: &str| m.contains_key(k);
    let allowed = ["jsonrpc", "id", "method", "params", "result", "error"];
    if m.get("jsonrpc") != Some(&Value::String("2.0".into()))
        || m.keys().any(|k| !allowed.contains(&k.as_str()))
    {
        return false;
    }
    let id_ok = match m.get("id") {
        None => true,
        Some(Value::String(_)) => true,
        Some(Value::Number(n)) => n.as_i64().is_some() || n.as_u64().is_some(),
        Some(_) => false,
    };
    if !id_ok {
        return false;
    }
    match (has("method"), has("result"), has("error")) {
        // A request or notification to the client.
        (true, false, false) => {
            m["method"].is_string() && m.get("params").is_none_or(Value::is_object)
        }
        // A response: answers an id, carries an object.
        (false, true, false) => !has("params") && has("id") && m["result"].is_object(),
        // An error response, the id absent when the request's was unreadable.
        (false, false, true) => !has("params") && error_object(&m["error"]),
        _ => false,
    }
}

fn error_object(e: &Value) -> bool {
    let Some(e) = e.as_object() else {
        return false;
    };
    e.keys()
        .all(|k| k == "code" || k == "message" || k == "data")
        && e.get("code").and_then(Value::as_i64).is_some()
        && e.get("message").is_some_and(Value::is_string)
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn finite(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.as_f64().is_none_or(f64::is_finite),
        Value::Array(a) => a.iter().all(finite),
        Value::Object(o) => o.values().all(finite),
        _ => true,
    }
}

/// Every number token written without fraction or exponent lies within
/// ±(2^53−1). Scans the text outside strings.
fn integers_safe(text: &str) -> bool {
    let mut in_string = false;
    let mut escaped = false;
    let mut token = String::new();
    let flush = |token: &mut String| {
        let ok = token.is_empty()
            || token.contains(['.', 'e', 'E'])
            || token
                .trim_start_matches('-')
                .parse::<u128>()
                .ok()
                .and_then(|m| i128::try_from(m).ok())
                .is_some_and(|m| m <= MAX_SAFE);
        token.clear();
        ok
    };
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '0'..='9' | '-' | '+' | '.' | 'e' | 'E' => token.push(c),
            _ => {
                if !flush(&mut token) {
                    return false;
                }
                in_string = c == '"';
            }
        }
    }
    flush(&mut token)
}
