//! JSON-RPC 2.0 classification of one strict JSON frame.
//!
//! The top-level object is read by the strict reader into a typed, borrowed
//! envelope rather than a `Value`: `jsonrpc` and `method` borrow from the
//! frame, `id` is typed as it is read, `params` stays a [`Json`] borrowing
//! from the frame, and only `result` and `error` become values. The
//! envelope never fails on a wrong member type; it records it, so that the
//! JSON stage (syntax, duplicates, depth, numbers) is fully decided before
//! the message shape is judged and the request id can be echoed when the
//! shape is wrong.
//!
//! Rules: `"jsonrpc"` is exactly `"2.0"`; `id` is a string or an integer
//! within ±(2^53−1) (never null, boolean, fraction or exponent form); no
//! batches; no members beyond the five JSON-RPC defines; `params`, when
//! present, is an object (MCP never uses positional params).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::codes::{INVALID_REQUEST, PARSE_ERROR};
use crate::json::{Json, Object};
use crate::limits::Limits;
use crate::rejection::{Fingerprint, Rejection, Stage};
use crate::strict_json::{Fault, Skim, display_name, refusal};

pub use crate::id::Id;

mod envelope;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorObject {
    /// Error code.
    pub code: i64,
    /// Short description.
    pub message: String,
    /// Optional structured detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// One classified inbound message. Strings borrow from the frame text;
/// `params` is a `serde_json::Map` ([`parse_message`]) or an [`Object`]
/// borrowing from the frame ([`parse_message_borrowed`]).
#[derive(Debug, Clone, PartialEq)]
pub enum RpcMessage<'a, P = Map<String, Value>> {
    /// A call that expects a response.
    Request {
        /// The request id.
        id: Id,
        /// The method name.
        method: Cow<'a, str>,
        /// The params object, when present.
        params: Option<P>,
    },
    /// A call that must never be answered.
    Notification {
        /// The method name.
        method: Cow<'a, str>,
        /// The params object, when present.
        params: Option<P>,
    },
    /// A successful response.
    Response {
        /// The id of the request it answers.
        id: Id,
        /// The result value.
        result: Value,
    },
    /// An error response; the id may be absent when it could not be read.
    Error {
        /// The id of the request it answers, if known.
        id: Option<Id>,
        /// The error.
        error: ErrorObject,
    },
}

impl<'a, P> RpcMessage<'a, P> {
    /// The same message with its params object turned into another form.
    pub fn map_params<Q>(self, f: impl Fn(P) -> Q) -> RpcMessage<'a, Q> {
        match self {
            RpcMessage::Request { id, method, params } => RpcMessage::Request {
                id,
                method,
                params: params.map(f),
            },
            RpcMessage::Notification { method, params } => RpcMessage::Notification {
                method,
                params: params.map(f),
            },
            RpcMessage::Response { id, result } => RpcMessage::Response { id, result },
            RpcMessage::Error { id, error } => RpcMessage::Error { id, error },
        }
    }

    /// Stable name of the message kind.
    pub fn kind(&self) -> &'static str {
        match self {
            RpcMessage::Request { .. } => "request",
            RpcMessage::Notification { .. } => "notification",
            RpcMessage::Response { .. } => "response",
            RpcMessage::Error { .. } => "error",
        }
    }

    /// The id, if the message has one.
    pub fn id(&self) -> Option<&Id> {
        match self {
            RpcMessage::Request { id, .. } | RpcMessage::Response { id, .. } => Some(id),
            RpcMessage::Error { id, .. } => id.as_ref(),
            RpcMessage::Notification { .. } => None,
        }
    }
}

/// Parse and classify one frame's text (already UTF-8 checked).
pub fn parse_message<'a>(text: &'a str, limits: &Limits) -> Result<RpcMessage<'a>, Rejection> {
    parse_message_borrowed(text, limits).map(|message| message.map_params(Object::into_map))
}

/// [`parse_message`] with `params` borrowing from `text`: the same
/// verdicts, without building a `Value` for what the reader only looks at.
pub fn parse_message_borrowed<'a>(
    text: &'a str,
    limits: &Limits,
) -> Result<RpcMessage<'a, Object<'a>>, Rejection> {
    read_message(text, limits, None).map_err(Unworded::word)
}

/// [`parse_message_borrowed`] with one member of `params` read for the
/// members `skim` names only: the same verdict on every text (the rest of
/// that member is checked by every rule, and dropped unbuilt), and the
/// same message but for what was dropped. The gateway reads MCP's `_meta`
/// so: a client's progress token and trace context, which it has no use
/// for, are never built into a tree. A refusal comes back [`Unworded`]:
/// the gateway words it only when a reply or a close will show it.
pub fn parse_message_skimmed<'a>(
    text: &'a str,
    limits: &Limits,
    skim: &Skim,
) -> Result<RpcMessage<'a, Object<'a>>, Unworded<'a>> {
    read_message(text, limits, Some(skim))
}

fn read_message<'a>(
    text: &'a str,
    limits: &Limits,
    skim: Option<&Skim>,
) -> Result<RpcMessage<'a, Object<'a>>, Unworded<'a>> {
    let envelope = envelope::read(text, limits.effective_depth(), limits.max_values, skim)
        .map_err(|fault| {
            Unworded(Refused::Json {
                text,
                limits: *limits,
                fault,
            })
        })?;
    classify(envelope).map_err(|(reason, id)| {
        Rejection::new(Stage::Rpc, INVALID_REQUEST, reason, text.as_bytes())
            .with_id(id)
            .into()
    })
}

/// A refusal whose reason is worded only when asked for: a JSON-stage
/// reason is the reference reading's (serde_json's words, line and
/// column), which means reading the frame a second time, and a frame
/// refused before its id was read is, under `keep-open`, neither answered
/// nor the cause of a close, so nobody reads its reason. What a ledger
/// records (stage, code, fingerprint) needs no wording.
#[derive(Debug)]
pub struct Unworded<'a>(Refused<'a>);

#[derive(Debug)]
enum Refused<'a> {
    Json {
        text: &'a str,
        limits: Limits,
        fault: Fault,
    },
    Worded(Rejection),
}

impl Unworded<'_> {
    /// The stage that refused the frame.
    pub fn stage(&self) -> Stage {
        match &self.0 {
            Refused::Json { .. } => Stage::Json,
            Refused::Worded(rejection) => rejection.stage,
        }
    }

    /// The JSON-RPC error code the refusal maps to.
    pub fn code(&self) -> i64 {
        match &self.0 {
            Refused::Json { .. } => PARSE_ERROR,
            Refused::Worded(rejection) => rejection.code,
        }
    }

    /// The request id, when one was read (never at the JSON stage).
    pub fn id(&self) -> Option<&Id> {
        match &self.0 {
            Refused::Json { .. } => None,
            Refused::Worded(rejection) => rejection.id.as_ref(),
        }
    }

    /// The frame's fingerprint, as the worded rejection carries it.
    pub fn fingerprint(&self) -> Fingerprint {
        match &self.0 {
            Refused::Json { text, .. } => Fingerprint::of(text.as_bytes()),
            Refused::Worded(rejection) => rejection.fingerprint,
        }
    }

    /// The rejection, worded.
    pub fn word(self) -> Rejection {
        match self.0 {
            Refused::Json {
                text,
                limits,
                fault,
            } => refusal(text, &limits, fault),
            Refused::Worded(rejection) => rejection,
        }
    }
}

impl From<Rejection> for Unworded<'_> {
    fn from(rejection: Rejection) -> Self {
        Self(Refused::Worded(rejection))
    }
}

/// A top-level member read without judging its type yet.
#[derive(Debug)]
enum Text<'a> {
    Str(Cow<'a, str>),
    Other(&'static str),
}

#[derive(Debug)]
enum IdField {
    Valid(Id),
    Invalid(&'static str),
}

#[derive(Debug, Default)]
struct Members<'a> {
    jsonrpc: Option<Text<'a>>,
    id: Option<IdField>,
    method: Option<Text<'a>>,
    params: Option<Json<'a>>,
    result: Option<Value>,
    error: Option<Value>,
    unknown: Vec<Cow<'a, str>>,
}

#[derive(Debug)]
enum Envelope<'a> {
    Object(Members<'a>),
    Array,
    Scalar(&'static str),
}

type ShapeError = (String, Option<Id>);

fn classify(envelope: Envelope<'_>) -> Result<RpcMessage<'_, Object<'_>>, ShapeError> {
    let members = match envelope {
        Envelope::Object(members) => members,
        Envelope::Array => return Err(("batches (JSON arrays) are not supported".into(), None)),
        Envelope::Scalar(kind) => {
            return Err((format!("message is {kind}, not a JSON-RPC object"), None));
        }
    };
    let id = match members.id {
        None => None,
        Some(IdField::Valid(id)) => Some(id),
        Some(IdField::Invalid(why)) => {
            return Err((
                format!("\"id\" must be a string or an integer within ±(2^53−1), not {why}"),
                None,
            ));
        }
    };
    let fail = |reason: String| Err((reason, id.clone()));
    if let Some(name) = members.unknown.first() {
        return fail(format!("unknown top-level member {}", display_name(name)));
    }
    match &members.jsonrpc {
        None => return fail("missing \"jsonrpc\" member".into()),
        Some(Text::Str(v)) if v == "2.0" => {}
        Some(_) => return fail("\"jsonrpc\" must be exactly \"2.0\"".into()),
    }
    if let Some(method) = members.method {
        if members.result.is_some() || members.error.is_some() {
            return fail("a message with \"method\" must not carry \"result\" or \"error\"".into());
        }
        let method = match method {
            Text::Str(m) => m,
            Text::Other(kind) => return fail(format!("\"method\" must be a string, not {kind}")),
        };
        let params = match members.params {
            None => None,
            Some(Json::Object(object)) => Some(object),
            Some(other) => {
                return fail(format!(
                    "\"params\" must be an object, not {}",
                    other.kind()
                ));
            }
        };
        return Ok(match id {
            Some(id) => RpcMessage::Request { id, method, params },
            None => RpcMessage::Notification { method, params },
        });
    }
    if members.params.is_some() {
        return fail("\"params\" without \"method\"".into());
    }
    match (members.result, members.error) {
        (Some(_), Some(_)) => {
            fail("a response must not carry both \"result\" and \"error\"".into())
        }
        (Some(result), None) => match id {
            Some(id) => Ok(RpcMessage::Response { id, result }),
            None => fail("a response must carry an \"id\"".into()),
        },
        (None, Some(error)) => match error_object(error) {
            Ok(error) => Ok(RpcMessage::Error { id, error }),
            Err(reason) => fail(reason),
        },
        (None, None) => {
            fail("neither a request (\"method\") nor a response (\"result\" or \"error\")".into())
        }
    }
}

fn error_object(value: Value) -> Result<ErrorObject, String> {
    let Value::Object(mut map) = value else {
        return Err(format!(
            "\"error\" must be an object, not {}",
            value_kind(&value)
        ));
    };
    let code = match map.remove("code") {
        Some(Value::Number(n)) if n.is_i64() => n.as_i64().unwrap_or_default(),
        Some(_) => return Err("\"error.code\" must be an integer".into()),
        None => return Err("\"error\" lacks \"code\"".into()),
    };
    let message = match map.remove("message") {
        Some(Value::String(s)) => s,
        Some(_) => return Err("\"error.message\" must be a string".into()),
        None => return Err("\"error\" lacks \"message\"".into()),
    };
    let data = map.remove("data");
    if let Some(name) = map.keys().next() {
        return Err(format!(
            "unknown member {} in \"error\"",
            display_name(name)
        ));
    }
    Ok(ErrorObject {
        code,
        message,
        data,
    })
}

/// Name of a value's JSON type, for reasons.
pub fn value_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
