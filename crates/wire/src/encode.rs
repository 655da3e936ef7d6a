//! Frame encoder: one outbound message, one compact line, one `\n`.
//!
//! There is no way to ask it for `"id": null`: an error whose request id
//! could not be read has no id member at all, and whether such an error may
//! be sent is the session's decision (see the gateway's error-reply rules).

use serde::Serialize;
use serde_json::Value;
use thiserror::Error;

use crate::rpc::{ErrorObject, Id};

/// A message the gateway may write to stdout.
#[derive(Debug, Clone, PartialEq)]
pub enum Outbound {
    /// A successful response.
    Response {
        /// The id of the request it answers.
        id: Id,
        /// The result object.
        result: Value,
    },
    /// An error response. `id: None` omits the member (never `null`).
    Error {
        /// The id of the request it answers, when it could be read.
        id: Option<Id>,
        /// The error.
        error: ErrorObject,
    },
    /// A notification to the client.
    Notification {
        /// The method name.
        method: String,
        /// The params object, when present.
        params: Option<Value>,
    },
}

/// The encoder refused to produce a frame.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// serde_json failed to serialize the message.
    #[error("cannot serialize outbound message: {0}")]
    Serialize(#[from] serde_json::Error),
    /// The serialized message held a raw newline, which would split it into
    /// two lines on the wire. Compact serde_json output never does; this is
    /// the guard that keeps it so.
    #[error("serialized message contains a raw newline at byte {0}")]
    RawNewline(usize),
    /// An error code outside ±(2^53−1): peers that read JSON numbers as
    /// doubles would see a different code, and the transcript checker (the
    /// strict profile) refuses it.
    #[error("error code {0} is outside ±(2^53−1)")]
    UnsafeErrorCode(i64),
    /// An integer id outside ±(2^53−1), for the same reason.
    #[error("id {0} is outside ±(2^53−1)")]
    UnsafeId(i64),
    /// A result or params that is not an object: every MCP result and
    /// params value is an object, and the transcript checker requires it.
    #[error("{0} must be a JSON object")]
    NotAnObject(&'static str),
}

fn check_id(id: Option<&Id>) -> Result<(), EncodeError> {
    match id {
        Some(Id::Int(n)) if n.unsigned_abs() > crate::strict_json::MAX_SAFE_INTEGER as u64 => {
            Err(EncodeError::UnsafeId(*n))
        }
        _ => Ok(()),
    }
}

#[derive(Serialize)]
struct Wire<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Id>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

/// Serialize `message` as one compact line terminated by exactly one `\n`.
pub fn encode(message: &Outbound) -> Result<Vec<u8>, EncodeError> {
    let mut wire = Wire {
        jsonrpc: "2.0",
        id: None,
        method: None,
        params: None,
        result: None,
        error: None,
    };
    match message {
        Outbound::Response { id, result } => {
            check_id(Some(id))?;
            if !result.is_object() {
                return Err(EncodeError::NotAnObject("result"));
            }
            wire.id = Some(id);
            wire.result = Some(result);
        }
        Outbound::Error { id, error } => {
            if error.code.unsigned_abs() > crate::strict_json::MAX_SAFE_INTEGER as u64 {
                return Err(EncodeError::UnsafeErrorCode(error.code));
            }
            check_id(id.as_ref())?;
            wire.id = id.as_ref();
            wire.error = Some(error);
        }
        Outbound::Notification { method, params } => {
            if params.as_ref().is_some_and(|p| !p.is_object()) {
                return Err(EncodeError::NotAnObject("params"));
            }
            wire.method = Some(method);
            wire.params = params.as_ref();
        }
    }
    let mut bytes = serde_json::to_vec(&wire)?;
    if let Some(pos) = memchr::memchr(b'\n', &bytes) {
        return Err(EncodeError::RawNewline(pos));
    }
    bytes.push(b'\n');
    Ok(bytes)
}
