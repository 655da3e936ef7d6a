//! The canonical encoding of a judged message: the JSON-RPC members in the
//! order the specification lists them (`jsonrpc`, `id`, `method`, `params`,
//! `result`, `error`), each value compact serde_json with its object keys
//! sorted, one line, one `\n`. Neither side ever receives the bytes
//! the other side sent; it receives this encoding of what was judged, so
//! a duplicate-key trick, an odd escape or an exotic number spelling that
//! one parser reads differently from another cannot reach it. There is no
//! way to ask for `"id": null`: an id is an [`Id`] or it is absent.

use portcullis_wire::{ErrorObject, Id};
use serde::Serialize;
use serde_json::{Map, Value};

/// One complete outbound line (ends with `\n`), made only by [`Message::encode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line(Vec<u8>);

impl Line {
    /// The bytes to write.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The bytes to write, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// A message to encode.
#[derive(Debug, Clone, Copy)]
pub enum Message<'a> {
    /// A request.
    Request {
        /// Its id.
        id: &'a Id,
        /// Its method.
        method: &'a str,
        /// Its params.
        params: Option<&'a Map<String, Value>>,
    },
    /// A notification.
    Notification {
        /// Its method.
        method: &'a str,
        /// Its params.
        params: Option<&'a Map<String, Value>>,
    },
    /// A successful response.
    Response {
        /// The id of the request it answers.
        id: &'a Id,
        /// The result.
        result: &'a Value,
    },
    /// An error response; `id: None` omits the member.
    Error {
        /// The id of the request it answers.
        id: Option<&'a Id>,
        /// The error.
        error: &'a ErrorObject,
    },
}

#[derive(Serialize)]
struct Wire<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Id>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
}

impl Message<'_> {
    /// One compact line. `None` only if serde_json could not serialize the
    /// parsed values (it always can) or its output held a raw newline (it
    /// never does): the caller then sends nothing rather than a broken line.
    pub fn encode(self) -> Option<Line> {
        let mut wire = Wire {
            jsonrpc: "2.0",
            id: None,
            method: None,
            params: None,
            result: None,
            error: None,
        };
        match self {
            Message::Request { id, method, params } => {
                wire.id = Some(id);
                wire.method = Some(method);
                wire.params = params;
            }
            Message::Notification { method, params } => {
                wire.method = Some(method);
                wire.params = params;
            }
            Message::Response { id, result } => {
                wire.id = Some(id);
                wire.result = Some(result);
            }
            Message::Error { id, error } => {
                wire.id = id;
                // As a value, so its members are sorted like every other
                // object's.
                wire.error = Some(serde_json::to_value(error).ok()?);
            }
        }
        let mut bytes = serde_json::to_vec(&wire).ok()?;
        if memchr_newline(&bytes) {
            return None;
        }
        bytes.push(b'\n');
        Some(Line(bytes))
    }
}

fn memchr_newline(bytes: &[u8]) -> bool {
    bytes.contains(&b'\n')
}
