//! The reference check: a deliberately simple, independent judge of which
//! frames may become actions. It shares no code with the wire layer or the
//! gateway: plain line splitting, lenient `serde_json::Value`, a count of
//! its values, and a handful of field checks. It over-approximates (it
//! knows nothing of schemas, duplicates or allowlists), so the property is
//! one-sided: every executed frame must be one it accepts. [`owed_before`] and [`written`]
//! read, just as plainly, which requests a session owes an answer and
//! what it wrote.

use serde_json::Value;

/// Per input line (1-based index into the returned vector, offset by one):
/// whether the line is a complete valid `tools/call` of at most
/// `max_values` JSON values in a valid session, and for which tool.
pub fn executable_lines(input: &[u8], tools: &[&str], max_values: usize) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut session_started = false;
    let mut pieces = input.split(|&b| b == b'\n').peekable();
    while let Some(raw) = pieces.next() {
        // The piece after the last newline is not a line at all.
        if pieces.peek().is_none() {
            break;
        }
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let verdict = judge(raw, tools, max_values, &mut session_started);
        out.push(verdict);
    }
    out
}

fn judge(
    raw: &[u8],
    tools: &[&str],
    max_values: usize,
    session_started: &mut bool,
) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?;
    let value: Value = serde_json::from_str(text).ok()?;
    // Lenient reading keeps one of repeated keys, so this count is at most
    // the frame's: the judge stays an over-approximation.
    if values_in(&value) > max_values {
        return None;
    }
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

/// Every scalar, array and object of `value`, once.
pub fn values_in(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(values_in).sum(),
        Value::Object(members) => members.values().map(values_in).sum(),
        _ => 0,
    }
}

/// A request id as the reference compares it: a JSON integer by value
/// (`-0` and `0` are one id), a string by its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IdKey {
    /// An integer id.
    Int(i64),
    /// A string id.
    Str(String),
    /// Anything else (no valid request carries it), as JSON text.
    Other(String),
}

impl IdKey {
    /// The key of an `id` value.
    pub fn of(value: &Value) -> Self {
        match value {
            Value::String(s) => IdKey::Str(s.clone()),
            Value::Number(n) => n
                .as_i64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0)
                        .map(|f| f as i64)
                })
                .map_or_else(|| IdKey::Other(n.to_string()), IdKey::Int),
            other => IdKey::Other(other.to_string()),
        }
    }
}

/// What the input lines before a point ask to be answered, by a lenient
/// reading (plain `serde_json`): meant for lines the session accepted, so
/// each line that holds an object with both `method` and `id` is a request
/// owed exactly one answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owed {
    /// The ids of the requests, in input order.
    pub requests: Vec<IdKey>,
    /// The `requestId`s named by `notifications/cancelled` lines: a call
    /// cancelled while in flight is owed no answer.
    pub cancelled: Vec<IdKey>,
}

/// The requests (and cancellations) on the complete input lines numbered
/// below `before` (1-based), or on every complete line when it is `None`.
pub fn owed_before(input: &[u8], before: Option<u64>) -> Owed {
    let mut owed = Owed::default();
    let mut pieces = input.split(|&b| b == b'\n').peekable();
    let mut number = 0u64;
    while let Some(raw) = pieces.next() {
        number += 1;
        if pieces.peek().is_none() || before.is_some_and(|b| number >= b) {
            break;
        }
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(raw) else {
            continue;
        };
        let method = object.get("method").and_then(Value::as_str);
        match (method, object.get("id")) {
            (Some(_), Some(id)) => owed.requests.push(IdKey::of(id)),
            (Some("notifications/cancelled"), None) => {
                if let Some(id) = object.get("params").and_then(|p| p.get("requestId")) {
                    owed.cancelled.push(IdKey::of(id));
                }
            }
            _ => {}
        }
    }
    owed
}

/// One stdout frame as the reference reads it: its `id` (`None` when the
/// member is absent) and whether it is an error response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The frame's `id`.
    pub id: Option<IdKey>,
    /// Whether it has an `error` member.
    pub error: bool,
}

/// Every stdout line that reads as a JSON object, in order.
pub fn written(stdout: &[u8]) -> Vec<Written> {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|line| match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(frame)) => Some(Written {
                id: frame.get("id").map(IdKey::of),
                error: frame.contains_key("error"),
            }),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_lines_with_a_method_and_an_id_and_cancellations_name_theirs() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n\
{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n\
{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}\r\n\
{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":-0}}\n\
{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\
{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n\
{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}";
        let all = owed_before(input, None);
        assert_eq!(
            all.requests,
            [IdKey::Int(1), IdKey::Str("a".into()), IdKey::Int(3)]
        );
        assert_eq!(all.cancelled, [IdKey::Int(0)]);
        let early = owed_before(input, Some(3));
        assert_eq!(early.requests, [IdKey::Int(1)]);
        assert!(early.cancelled.is_empty());
    }

    /// The reference reads a line as the boundary promises: one CR before
    /// the newline is not part of it; any other byte is, and a byte that is
    /// not JSON whitespace after the value makes the line no call at all.
    #[test]
    fn only_one_cr_before_the_newline_is_left_out_of_a_line() {
        let init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n";
        let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}"#;
        for (ending, executable) in [
            ("\n", true),
            ("\r\n", true),
            ("\r\r\n", true),
            (" \t\r\n", true),
            ("\x0c\n", false),
            ("\x0c\r\n", false),
            ("\x0b\n", false),
            ("\u{a0}\n", false),
            ("\0\n", false),
        ] {
            let input = format!("{init}{call}{ending}");
            let lines = executable_lines(input.as_bytes(), &["t"], 100);
            assert_eq!(lines[1].is_some(), executable, "{ending:?}");
        }
    }

    #[test]
    fn written_frames_keep_their_id_and_whether_they_are_errors() {
        let stdout = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\
{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"x\"}}\n\
{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"error\":{\"code\":-32600,\"message\":\"x\"}}\n";
        assert_eq!(
            written(stdout),
            [
                Written {
                    id: Some(IdKey::Int(1)),
                    error: false
                },
                Written {
                    id: None,
                    error: true
                },
                Written {
                    id: Some(IdKey::Str("b".into())),
                    error: true
                },
            ]
        );
    }
}
