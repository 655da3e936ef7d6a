//! What a client (or something pretending to be one) does: the operations
//! a scenario is made of, and how fuzzer bytes decode into them.

use arbitrary::{Arbitrary, Unstructured};
use portcullis_gateway::OnInvalid;
use serde_json::{Value, json};

/// The arguments of a call to a `{service}` tool (HTTP `service_status`
/// or SSH `restart_service`), valid or not.
#[derive(Debug, Clone, Copy, Arbitrary, PartialEq, Eq)]
pub enum Service {
    /// `api`
    Api,
    /// `web-1`
    Web1,
    /// `Uppercase` (fails the pattern)
    BadCase,
    /// `../etc` (fails the pattern)
    Traversal,
    /// `api web` (two remote words if it ever reached a shell; fails the
    /// pattern)
    Spaced,
    /// `-api` (an option to the remote command; fails the pattern)
    LeadingDash,
    /// 33 letters (longer than the pattern allows)
    TooLong,
    /// `7` (an integer where the schema asks for a string)
    WrongType,
    /// `api` plus a property the schema does not name (closed by default)
    ExtraProperty,
    /// `{}` (the required property missing)
    Missing,
}

impl Service {
    pub(super) fn text(self) -> &'static str {
        match self {
            Service::Api | Service::ExtraProperty => "api",
            Service::Web1 => "web-1",
            Service::BadCase => "Uppercase",
            Service::Traversal => "../etc",
            Service::Spaced => "api web",
            Service::LeadingDash => "-api",
            Service::TooLong => "abcdefghijklmnopqrstuvwxyzabcdefg",
            Service::WrongType | Service::Missing => "",
        }
    }
    pub(super) fn arguments(self) -> Value {
        match self {
            Service::WrongType => json!({ "service": 7 }),
            Service::ExtraProperty => json!({ "service": "api", "unit": "x" }),
            Service::Missing => json!({}),
            _ => json!({ "service": self.text() }),
        }
    }
    pub(super) fn valid(self) -> bool {
        matches!(self, Service::Api | Service::Web1)
    }
}

/// A wrong id.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum BadId {
    /// `true`
    Bool,
    /// `null`
    Null,
    /// `1.5`
    Float,
    /// `{}`
    Object,
    /// `9007199254740992`
    Huge,
}

/// One thing a client (or something pretending to be one) does.
#[derive(Debug, Clone, Arbitrary)]
pub enum Op {
    /// Legacy `initialize`.
    Initialize,
    /// `notifications/initialized`.
    Initialized,
    /// Legacy `ping`.
    Ping,
    /// Legacy `tools/list`.
    ToolsList,
    /// Legacy `tools/call service_status`.
    Call(Service),
    /// The same, with CRLF line ending.
    CallCrlf(Service),
    /// Modern `tools/call service_status` with `_meta`.
    ModernCall(Service),
    /// Legacy `tools/call restart_service` (the SSH tool).
    Restart(Service),
    /// Modern `tools/call restart_service` with `_meta`.
    ModernRestart(Service),
    /// A `service_status` call whose arguments carry an array nested so the
    /// frame is exactly at the depth limit (`false`: refused by the schema,
    /// which names no `deep` property) or one past it (`true`: refused as
    /// JSON, before anything reads the request).
    DeepArguments(bool),
    /// Modern `server/discover`.
    Discover,
    /// Modern call with an unsupported protocol version.
    ModernBadVersion,
    /// `region_probe` to 127.0.0.1 (allowed) or localhost (denied).
    Probe(bool),
    /// A debug line.
    DebugLine,
    /// A startup banner line.
    Banner,
    /// A valid call followed by a banner on the same line.
    SameLineBanner,
    /// Two valid calls on one line.
    Concatenated,
    /// A line longer than `max_frame_bytes`.
    OverLong,
    /// A frame with invalid UTF-8.
    BadUtf8,
    /// A call with a duplicate `name` key.
    DuplicateName,
    /// A call with a wrong id type.
    WrongId(BadId),
    /// A call with an argument the schema does not name.
    UnknownArgument,
    /// `tools/call` without an id.
    NotificationCall,
    /// A call reusing the previous request id.
    ReusedId,
    /// A call to a tool that does not exist.
    UnknownTool,
    /// A request for a method the gateway does not serve.
    UnknownMethod,
    /// `notifications/cancelled` for some id.
    Cancel(u8),
    /// An empty line.
    EmptyLine,
    /// `"params":"run"`.
    ParamsString,
    /// A truncated frame; nothing after it is sent.
    Truncate,
}

/// Decode a scenario from fuzzer bytes: a mode byte, then ops.
pub fn from_fuzz(data: &[u8]) -> Option<(OnInvalid, Vec<Op>)> {
    let mut u = Unstructured::new(data);
    let mode = if bool::arbitrary(&mut u).ok()? {
        OnInvalid::KeepOpen
    } else {
        OnInvalid::Close
    };
    let ops: Vec<Op> = Vec::arbitrary(&mut u).ok()?;
    Some((mode, ops.into_iter().take(64).collect()))
}

/// A value only for docs and tests: the ops of a complete valid session.
pub fn valid_session() -> Vec<Op> {
    vec![
        Op::Initialize,
        Op::Initialized,
        Op::ToolsList,
        Op::Call(Service::Api),
    ]
}
