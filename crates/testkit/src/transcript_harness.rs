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
        (Err(v), Err((line, raw))) => {
            assert_eq!(
                v.line, line,
                "the checker and the oracle blame different lines: {v}"
            );
            assert_eq!(v.raw, raw, "the violation carries the line's raw bytes");
            check_shown(&v.to_string(), line, raw);
        }
        (Ok(_), Err((line, _))) => panic!(
            "the checker accepted stdout the oracle refuses at line {line}: {}",
            portcullis_wire::transcript::render_bytes(data)
        ),
        (Err(v), Ok(_)) => panic!("the checker refused stdout the oracle accepts: {v}"),
    }
}

/// A violation as a maintainer reads it: the line number, then the raw
/// bytes as a `b"..."` literal of printable ASCII that decodes back to the
/// first 512 bytes, with the full length when cut.
fn check_shown(shown: &str, line: usize, raw: &[u8]) {
    let prefix = format!("non-protocol stdout on line {line}: b\"");
    let literal = shown
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("violation does not start with {prefix:?}: {shown}"));
    let (decoded, rest) = decode_literal(literal);
    assert!(
        literal[..literal.len() - rest.len()]
            .bytes()
            .all(|b| (0x20..=0x7e).contains(&b)),
        "the violation shows unprintable bytes: {shown:?}"
    );
    let shown_len = raw.len().min(512);
    assert_eq!(
        decoded,
        raw[..shown_len],
        "the shown bytes are not the line's"
    );
    if raw.len() > 512 {
        let total = format!("... ({} bytes in all): ", raw.len());
        assert!(
            rest.starts_with(&total),
            "a cut line must say its length: {rest}"
        );
    } else {
        assert!(
            rest.starts_with(": "),
            "unexpected text after the bytes: {rest}"
        );
    }
}

/// Decode a Rust-style byte string body up to its closing quote; returns
/// the bytes and the text after the quote.
fn decode_literal(text: &str) -> (Vec<u8>, &str) {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => return (out, &text[i + 1..]),
            b'\\' => {
                let (byte, len) = match bytes.get(i + 1) {
                    Some(b'n') => (b'\n', 2),
                    Some(b'r') => (b'\r', 2),
                    Some(b't') => (b'\t', 2),
                    Some(b'\\') => (b'\\', 2),
                    Some(b'"') => (b'"', 2),
                    Some(b'x') => {
                        let hex = &text[i + 2..i + 4];
                        (u8::from_str_radix(hex, 16).expect("hex escape"), 4)
                    }
                    other => panic!("unknown escape {other:?} in {text:?}"),
                };
                out.push(byte);
                i += len;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    panic!("unterminated byte literal: {text:?}")
}

/// `Ok(frames)`, or the 1-based number and the raw bytes of the first line
/// that is not a permitted frame (an unterminated tail counts as a line).
fn first_bad_line(stdout: &[u8]) -> Result<usize, (usize, &[u8])> {
    let mut count = 0;
    for line in stdout.split_inclusive(|&b| b == b'\n') {
        count += 1;
        let Some(body) = line.strip_suffix(b"\n") else {
            return Err((count, line));
        };
        if !permitted(body) {
            return Err((count, line));
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
