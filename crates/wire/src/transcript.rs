//! Transcript checker: the oracle for stdout.
//!
//! Takes raw stdout bytes exactly as captured, splits them itself, and
//! accepts them only if every line is one JSON-RPC 2.0 message a server may
//! send to a client, each terminated by `\n`. It shares no code with the
//! encoder on purpose: it is what the encoder is checked against. It reuses
//! the strict JSON profile of the inbound side, so duplicate keys or
//! unrepresentable numbers on stdout are caught too.

use std::fmt::{self, Write as _};

use crate::json::{Json, Object};

use crate::limits::{HARD_MAX_DEPTH, Limits};
use crate::strict_json::parse_json;

/// Why one stdout line is not a permitted protocol frame.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// The line is not valid UTF-8.
    NotUtf8,
    /// The line is not exactly one strict JSON value.
    NotJson(String),
    /// The value is not a JSON object.
    NotObject,
    /// The object lacks `"jsonrpc":"2.0"`.
    NoJsonRpc,
    /// `"id": null`, which no MCP revision permits.
    NullId,
    /// Not a response, error response, request or notification a server may
    /// send.
    Shape(String),
    /// An empty line.
    EmptyLine,
    /// Bytes after the last newline: the final frame was never completed.
    MissingFinalNewline,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::NotUtf8 => f.write_str("not UTF-8"),
            Violation::NotJson(why) => write!(f, "not JSON ({why})"),
            Violation::NotObject => f.write_str("not a JSON object"),
            Violation::NoJsonRpc => f.write_str("no \"jsonrpc\":\"2.0\""),
            Violation::NullId => f.write_str("\"id\": null"),
            Violation::Shape(why) => write!(f, "not a permitted server-to-client shape ({why})"),
            Violation::EmptyLine => f.write_str("empty line"),
            Violation::MissingFinalNewline => f.write_str("missing final newline"),
        }
    }
}

/// The first offending stdout line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptViolation {
    /// 1-based line number.
    pub line: usize,
    /// The raw bytes of the line, including its `\n` when it had one.
    pub raw: Vec<u8>,
    /// What is wrong with it.
    pub violation: Violation,
}

impl fmt::Display for TranscriptViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "non-protocol stdout on line {}: {}: {}",
            self.line,
            render_bytes(&self.raw),
            self.violation
        )
    }
}

impl std::error::Error for TranscriptViolation {}

/// Render bytes the way a maintainer wants to see them: `b"...\n"`, with
/// anything not printable ASCII escaped. Long lines are cut after 512 bytes.
pub fn render_bytes(bytes: &[u8]) -> String {
    const SHOWN: usize = 512;
    let mut out = String::from("b\"");
    for &b in bytes.iter().take(SHOWN) {
        match b {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    if bytes.len() > SHOWN {
        let _ = write!(out, "... ({} bytes in all)", bytes.len());
    }
    out
}

/// Check captured stdout. Returns the number of frames when every byte is
/// part of a permitted, newline-terminated frame.
pub fn check_transcript(stdout: &[u8]) -> Result<usize, TranscriptViolation> {
    let mut line = 0;
    let mut rest = stdout;
    while !rest.is_empty() {
        line += 1;
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            return Err(TranscriptViolation {
                line,
                raw: rest.to_vec(),
                violation: Violation::MissingFinalNewline,
            });
        };
        let (raw, next) = rest.split_at(end + 1);
        if let Err(violation) = check_line(&raw[..end]) {
            return Err(TranscriptViolation {
                line,
                raw: raw.to_vec(),
                violation,
            });
        }
        rest = next;
    }
    Ok(line)
}

/// Check one stdout line (without its `\n`).
pub fn check_line(line: &[u8]) -> Result<(), Violation> {
    if line.is_empty() {
        return Err(Violation::EmptyLine);
    }
    let text = std::str::from_utf8(line).map_err(|_| Violation::NotUtf8)?;
    // The checker judges what a server wrote, not what it may be sent:
    // no line is refused for its size or its count of values.
    let limits = Limits {
        max_frame_bytes: usize::MAX,
        max_depth: HARD_MAX_DEPTH,
        max_values: usize::MAX,
    };
    // Borrowed: a `Value` would copy every line stdout carries into a tree
    // of maps, and the fuzz harnesses check every line they write.
    let value = parse_json(text, &limits).map_err(|r| Violation::NotJson(r.reason))?;
    let Json::Object(message) = value else {
        return Err(Violation::NotObject);
    };
    if message.get("jsonrpc").and_then(Json::as_str) != Some("2.0") {
        return Err(Violation::NoJsonRpc);
    }
    check_shape(&message).map_err(|why| match why {
        ShapeError::NullId => Violation::NullId,
        ShapeError::Other(why) => Violation::Shape(why.to_owned()),
    })
}

enum ShapeError {
    NullId,
    Other(&'static str),
}

fn check_shape(message: &Object<'_>) -> Result<(), ShapeError> {
    use ShapeError::Other;
    const MEMBERS: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];
    if message.keys().any(|k| !MEMBERS.contains(&k)) {
        return Err(Other("unknown top-level member"));
    }
    let id = message.get("id");
    match id {
        None | Some(Json::String(_)) => {}
        Some(Json::Null) => return Err(ShapeError::NullId),
        Some(Json::Number(n)) if n.is_i64() || n.is_u64() => {}
        Some(_) => return Err(Other("id is neither a string nor an integer")),
    }
    if let Some(method) = message.get("method") {
        if !method.is_string() {
            return Err(Other("method is not a string"));
        }
        if message.contains_key("result") || message.contains_key("error") {
            return Err(Other("method together with result or error"));
        }
        return match message.get("params") {
            None | Some(Json::Object(_)) => Ok(()),
            Some(_) => Err(Other("params is not an object")),
        };
    }
    if message.contains_key("params") {
        return Err(Other("params without method"));
    }
    match (message.get("result"), message.get("error")) {
        (Some(_), Some(_)) => Err(Other("both result and error")),
        (None, None) => Err(Other("neither a request, a notification nor a response")),
        (Some(result), None) => {
            if id.is_none() {
                Err(Other("result without id"))
            } else if !result.is_object() {
                Err(Other("result is not an object"))
            } else {
                Ok(())
            }
        }
        (None, Some(error)) => {
            let Some(error) = error.as_object() else {
                return Err(Other("error is not an object"));
            };
            let code_ok = error
                .get("code")
                .is_some_and(|c| matches!(c, Json::Number(n) if n.is_i64()));
            let message_ok = error.get("message").is_some_and(Json::is_string);
            let only_known = error
                .keys()
                .all(|k| matches!(k, "code" | "message" | "data"));
            if code_ok && message_ok && only_known {
                Ok(())
            } else {
                Err(Other("error lacks an integer code and a string message"))
            }
        }
    }
}
