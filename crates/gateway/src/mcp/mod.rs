//! The MCP stage: [`admit`] takes one well-formed JSON-RPC message and
//! either admits it as an [`McpRequest`] or refuses it with a [`Refusal`].
//!
//! Every protocol rule of the session lives here: request-id length and
//! reuse (the id memory, [`crate::id`]), the era a request belongs to
//! ([`revision`]), the lifecycle (`initialize` once, before anything but
//! `ping`), method routing and params parsing ([`params`]). What comes out
//! is typed; what the session does with it (answer, check, authorize) is
//! the next stage's business.

pub mod params;
pub mod revision;

use portcullis_wire::codes::{INVALID_PARAMS, INVALID_REQUEST};
use portcullis_wire::{Id, Object, RpcMessage};
use serde_json::Value;

use crate::id::{IdMemory, Remember};

pub use params::{Initialize, ToolsCall, cancelled_request, initialize_params, tools_call_params};
pub use revision::{
    Era, LEGACY_VERSIONS, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SKIM,
    MODERN_VERSIONS, REQUEST_METHODS, Revision, UNSUPPORTED_PROTOCOL_VERSION, era_of, modern_meta,
    negotiate,
};

/// A protocol-level refusal of one message (stage `mcp`).
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// JSON-RPC code.
    pub code: i64,
    /// Message (never argument values).
    pub message: String,
    /// Structured data for the error object.
    pub data: Option<Value>,
    /// The id to answer, when it may be echoed (never for a reused id or a
    /// message that has none).
    pub id: Option<Id>,
}

impl Refusal {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
            id: None,
        }
    }

    fn with_id(mut self, id: Id) -> Self {
        self.id = Some(id);
        self
    }
}

/// What the MCP stage knows of a session: era, revision, handshake and the
/// ids already used.
#[derive(Debug)]
pub struct SessionState {
    era: Option<Era>,
    revision: Option<Revision>,
    initialized: bool,
    seen_ids: IdMemory,
    max_id_bytes: usize,
    max_session_ids: usize,
}

impl SessionState {
    /// A fresh session: string ids up to `max_id_bytes`, at most
    /// `max_session_ids` id-memory entries.
    pub fn new(max_id_bytes: usize, max_session_ids: usize) -> Self {
        Self {
            era: None,
            revision: None,
            initialized: false,
            seen_ids: IdMemory::new(max_session_ids),
            max_id_bytes,
            max_session_ids,
        }
    }

    /// The negotiated or declared revision, once known.
    pub fn revision(&self) -> Option<Revision> {
        self.revision
    }

    /// The length of a string id longer than `max_id_bytes`.
    fn overlong(&self, id: &Id) -> Option<usize> {
        match id {
            Id::Str(s) if s.len() > self.max_id_bytes => Some(s.len()),
            _ => None,
        }
    }

    /// Whether an error may echo `id`: only an id never used in this
    /// session, which is then used up. Echoing an id the client already
    /// used would pair the error with its earlier request, and echoing an
    /// id twice would answer one request twice.
    pub fn claim_id_for_error(&mut self, id: &Id) -> bool {
        if self.overlong(id).is_some() {
            return false;
        }
        matches!(self.seen_ids.remember(id), Remember::Fresh)
    }
}

/// An admitted message, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum McpRequest<'a> {
    /// A first `initialize`; the session is now legacy at `revision`.
    Initialize {
        /// Request id.
        id: Id,
        /// The negotiated revision.
        revision: Revision,
    },
    /// `ping`, answered with an empty result.
    Ping {
        /// Request id.
        id: Id,
        /// Revision to answer in.
        revision: Revision,
    },
    /// `server/discover`.
    Discover {
        /// Request id.
        id: Id,
        /// Revision to answer in.
        revision: Revision,
    },
    /// `tools/list`.
    ToolsList {
        /// Request id.
        id: Id,
        /// Revision to answer in.
        revision: Revision,
    },
    /// `tools/call` with well-formed params.
    ToolsCall {
        /// Request id.
        id: Id,
        /// Revision to answer in.
        revision: Revision,
        /// Tool name and arguments, borrowed from the frame.
        call: ToolsCall<'a>,
    },
    /// A well-formed request for a method this gateway does not serve: an
    /// answer (method not found), not a rejection, since clients probe.
    Unknown {
        /// Request id.
        id: Id,
        /// The method asked for.
        method: String,
    },
    /// `notifications/cancelled` for this request id.
    Cancelled(Id),
    /// A notification this gateway does not act on (progress, roots
    /// changes, an invalid or stale cancellation...).
    Ignored,
}

/// The MCP stage: admit `message` into the session `state` or refuse it.
pub fn admit<'a>(
    state: &mut SessionState,
    message: RpcMessage<'a, Object<'a>>,
) -> Result<McpRequest<'a>, Refusal> {
    match message {
        RpcMessage::Response { .. } | RpcMessage::Error { .. } => Err(Refusal::new(
            INVALID_REQUEST,
            "a response from the client is invalid: the gateway sends no requests",
        )),
        RpcMessage::Notification { method, params } => {
            notification(state, &method, params.as_ref())
        }
        RpcMessage::Request { id, method, params } => request(state, id, &method, params),
    }
}

fn notification(
    state: &SessionState,
    method: &str,
    params: Option<&Object<'_>>,
) -> Result<McpRequest<'static>, Refusal> {
    if REQUEST_METHODS.contains(&method) {
        return Err(Refusal::new(
            INVALID_REQUEST,
            format!(
                "{method} sent as a notification (no id): requests need an id and are never executed without one"
            ),
        ));
    }
    match method {
        "notifications/initialized" if state.era != Some(Era::Modern) && !state.initialized => {
            Err(Refusal::new(
                INVALID_REQUEST,
                "notifications/initialized before initialize",
            ))
        }
        // Invalid or stale cancellations are ignored, as the spec asks.
        "notifications/cancelled" => {
            Ok(cancelled_request(params).map_or(McpRequest::Ignored, McpRequest::Cancelled))
        }
        _ => Ok(McpRequest::Ignored),
    }
}

fn request<'a>(
    state: &mut SessionState,
    id: Id,
    method: &str,
    params: Option<Object<'a>>,
) -> Result<McpRequest<'a>, Refusal> {
    if let Some(len) = state.overlong(&id) {
        let message = format!(
            "request id too long: {len} bytes, at most {} (server.max_id_bytes)",
            state.max_id_bytes
        );
        let refusal = Refusal::new(INVALID_REQUEST, message);
        // Remembered by its digest like any id, so the same overlong id is
        // echoed at most once: a second echo would answer one request twice.
        return Err(match state.seen_ids.remember(&id) {
            Remember::Fresh => refusal.with_id(id),
            Remember::Reused | Remember::Full => refusal,
        });
    }
    match state.seen_ids.remember(&id) {
        Remember::Fresh => {}
        Remember::Reused => {
            return Err(Refusal::new(
                INVALID_REQUEST,
                "request id reused within the session",
            ));
        }
        Remember::Full => {
            let message = format!(
                "the session remembers at most {} request ids (server.max_session_ids) and they are used up: number requests consecutively or start a new session",
                state.max_session_ids
            );
            return Err(Refusal::new(INVALID_REQUEST, message).with_id(id));
        }
    }
    match lifecycle(state, method, params.as_ref()) {
        Ok(revision) => route(id, method, params, revision),
        Err(refusal) => Err(refusal.with_id(id)),
    }
}

/// The revision a request is served in, or why it cannot be served now.
/// `ping` is served before the handshake too. A modern `ping` carries
/// `_meta` like every modern request; a meta-less one is legacy and fixes
/// the era like any legacy request, so every reply is valid for the
/// session's revision.
fn lifecycle(
    state: &mut SessionState,
    method: &str,
    params: Option<&Object<'_>>,
) -> Result<Revision, Refusal> {
    let era = era_of(method, params);
    let legacy_default = state.revision.unwrap_or(Revision::V2025_11_25);
    if let Some(current) = state.era
        && current != era
    {
        return Err(Refusal::new(
            INVALID_REQUEST,
            format!("mixes protocol eras: the session is {current:?}, this request is {era:?}"),
        ));
    }
    match era {
        Era::Legacy if method == "initialize" => initialize(state, params),
        Era::Legacy if method == "ping" => {
            state.era = Some(Era::Legacy);
            Ok(legacy_default)
        }
        Era::Legacy if !state.initialized => Err(Refusal::new(
            INVALID_REQUEST,
            format!(
                "{} before initialize: only initialize and ping are served until the handshake",
                shown(method)
            ),
        )),
        Era::Legacy => Ok(legacy_default),
        Era::Modern => {
            let revision = modern_meta(params)?;
            state.era = Some(Era::Modern);
            state.revision = Some(revision);
            Ok(revision)
        }
    }
}

fn initialize(state: &mut SessionState, params: Option<&Object<'_>>) -> Result<Revision, Refusal> {
    if state.initialized {
        return Err(Refusal::new(
            INVALID_REQUEST,
            "a second initialize is invalid",
        ));
    }
    let init = initialize_params(params)?;
    let revision = negotiate(&init.requested);
    state.era = Some(Era::Legacy);
    state.revision = Some(revision);
    state.initialized = true;
    Ok(revision)
}

fn route<'a>(
    id: Id,
    method: &str,
    params: Option<Object<'a>>,
    revision: Revision,
) -> Result<McpRequest<'a>, Refusal> {
    Ok(match method {
        "initialize" => McpRequest::Initialize { id, revision },
        "ping" => McpRequest::Ping { id, revision },
        "server/discover" => McpRequest::Discover { id, revision },
        "tools/list" => McpRequest::ToolsList { id, revision },
        "tools/call" => match tools_call_params(params) {
            Ok(call) => McpRequest::ToolsCall { id, revision, call },
            Err(refusal) => return Err(refusal.with_id(id)),
        },
        other => McpRequest::Unknown {
            id,
            method: other.to_owned(),
        },
    })
}

/// A method name for a message: shown when it looks like a name.
pub(crate) fn shown(method: &str) -> std::borrow::Cow<'_, str> {
    portcullis_wire::strict_json::display_name(method)
}

/// A refusal for a call naming a tool the policy does not have (stage
/// `mcp`: the session checks it against the policy after admission).
pub(crate) fn unknown_tool(id: Id) -> Refusal {
    Refusal::new(INVALID_PARAMS, "unknown tool").with_id(id)
}
