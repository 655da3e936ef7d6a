//! The sans-IO session: bytes in, effects out.
//!
//! [`Gateway::receive`], [`Gateway::complete`] and
//! [`Gateway::end_of_input`] each return the [`Effect`]s the driver must
//! carry out, in order. No threads, no I/O, no clock: the same input gives
//! the same effects, whatever the chunking.
//!
//! Error-reply rules: a refused request whose id could be read gets an
//! error with that id. When no id could be read, `"id": null` is never
//! written: the error omits `id` where the negotiated revision permits it
//! (2025-11-25 and later) and only under `close` (so keep-open can never
//! start an error storm with a peer that answers garbage with garbage);
//! otherwise nothing is written. A reused id is never echoed (the client
//! would pair the error with its earlier request). Notifications are never
//! answered.
//!
//! What a session keeps does not grow with the size of what it is sent: a
//! request id longer than [`Config::max_id_bytes`] is refused, accepted ids
//! are remembered as fixed-size digests (at most [`Config::max_session_ids`]
//! entries, see [`crate::ids`]), and the ledger holds fingerprints, never
//! ids or arguments (a driver empties it with [`Gateway::drain_ledger`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use portcullis_wire::codes::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND};
use portcullis_wire::{
    ErrorObject, FrameEvent, FrameReader, Id, Limits, Outbound, Rejection, RpcMessage, Stage,
    encode, parse_message, utf8,
};
use serde_json::{Map, Value, json};

use crate::authz::{AuthorizedAction, authorize};
use crate::executor::Outcome;
use crate::ids::{IdMemory, Remember};
use crate::ledger::{Drained, JournalEntry, Ledger, RejectionRecord};
use crate::mcp::{self, Era, Refusal, Revision};
use crate::policy::{OnDenied, OnInvalid, Policy};
use crate::reply;

/// Session settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// What to do after an invalid frame.
    pub on_invalid: OnInvalid,
    /// What to do after a refused well-formed call.
    pub on_denied: OnDenied,
    /// Frame and nesting limits.
    pub limits: Limits,
    /// Longest accepted string request id, in bytes.
    pub max_id_bytes: usize,
    /// Request-id memory entries per session (see [`crate::ids`]).
    pub max_session_ids: usize,
}

impl Config {
    /// The settings a policy's `[server]` section asks for.
    pub fn from_policy(policy: &Policy) -> Self {
        Self {
            on_invalid: policy.server.on_invalid,
            on_denied: policy.server.on_denied,
            limits: Limits {
                max_frame_bytes: policy.server.max_frame_bytes,
                max_depth: policy.server.max_depth,
            },
            max_id_bytes: policy.server.max_id_bytes,
            max_session_ids: policy.server.max_session_ids,
        }
    }
}

/// Correlates an `Execute` with its `complete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub u64);

/// Why the session closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseReason {
    /// 1-based input line of the frame that closed it.
    pub line: u64,
    /// Stage that refused it.
    pub stage: Stage,
    /// JSON-RPC code.
    pub code: i64,
    /// Reason (never argument values).
    pub reason: String,
}

/// Something the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Write this complete frame (ends with `\n`) to stdout.
    Write(Vec<u8>),
    /// Run this action; report back with [`Gateway::complete`].
    Execute(Ticket, AuthorizedAction),
    /// Stop waiting for this action: the client cancelled it and nothing
    /// more will be written for it.
    Cancel(Ticket),
    /// The session is over: flush what was written and exit nonzero.
    Close(CloseReason),
}

#[derive(Debug)]
struct InFlight {
    id: Id,
    revision: Revision,
}

#[derive(Debug)]
struct Session {
    era: Option<Era>,
    revision: Option<Revision>,
    initialized: bool,
    seen_ids: IdMemory,
    in_flight: BTreeMap<u64, InFlight>,
    next_ticket: u64,
    closed: bool,
}

/// One MCP session's boundary.
#[derive(Debug)]
pub struct Gateway {
    reader: FrameReader,
    core: Core,
}

#[derive(Debug)]
struct Core {
    policy: Arc<Policy>,
    config: Config,
    session: Session,
    ledger: Ledger,
}

impl Gateway {
    /// A fresh session under `policy`.
    pub fn new(policy: impl Into<Arc<Policy>>, config: Config) -> Self {
        Self {
            reader: FrameReader::new(config.limits.max_frame_bytes),
            core: Core {
                policy: policy.into(),
                config,
                session: Session {
                    era: None,
                    revision: None,
                    initialized: false,
                    seen_ids: IdMemory::new(config.max_session_ids),
                    in_flight: BTreeMap::new(),
                    next_ticket: 0,
                    closed: false,
                },
                ledger: Ledger::default(),
            },
        }
    }

    /// Feed bytes read from stdin, in any chunking.
    pub fn receive(&mut self, bytes: &[u8]) -> Vec<Effect> {
        let mut effects = Vec::new();
        if self.core.session.closed {
            return effects;
        }
        let core = &mut self.core;
        self.reader
            .feed(bytes, |line, event| core.event(line, event, &mut effects));
        effects
    }

    /// Report the outcome of an `Execute`.
    pub fn complete(&mut self, ticket: Ticket, outcome: Outcome) -> Vec<Effect> {
        let mut effects = Vec::new();
        self.core.complete(ticket, outcome, &mut effects);
        effects
    }

    /// stdin reached end of file.
    pub fn end_of_input(&mut self) -> Vec<Effect> {
        let mut effects = Vec::new();
        if self.core.session.closed {
            return effects;
        }
        let core = &mut self.core;
        self.reader
            .finish(|line, event| core.event(line, event, &mut effects));
        effects
    }

    /// The rejection ledger, execution journal and counters: every record
    /// not yet taken by [`Gateway::drain_ledger`].
    pub fn ledger(&self) -> &Ledger {
        &self.core.ledger
    }

    /// Take the rejection records and journal entries kept so far, leaving
    /// the counters. A long-running driver calls it once it has audited
    /// them, so the ledger does not grow with the session.
    pub fn drain_ledger(&mut self) -> Drained {
        self.core.ledger.drain()
    }

    /// Whether the session has closed.
    pub fn is_closed(&self) -> bool {
        self.core.session.closed
    }

    /// The negotiated or declared revision, once known.
    pub fn revision(&self) -> Option<Revision> {
        self.core.session.revision
    }

    /// Actions handed out and not yet completed or cancelled.
    pub fn in_flight(&self) -> usize {
        self.core.session.in_flight.len()
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.core.policy
    }
}

impl Core {
    fn event(&mut self, line: u64, event: FrameEvent<'_>, effects: &mut Vec<Effect>) {
        if self.session.closed {
            return;
        }
        self.ledger.counters.frames_received += 1;
        match event {
            FrameEvent::Rejected(rejection) => self.refuse(line, rejection, None, effects),
            FrameEvent::Frame(bytes) => {
                let parsed =
                    utf8::decode(bytes).and_then(|text| parse_message(text, &self.config.limits));
                match parsed {
                    Err(rejection) => self.refuse(line, rejection, None, effects),
                    Ok(message) => self.message(line, bytes, message, effects),
                }
            }
        }
    }

    fn message(
        &mut self,
        line: u64,
        frame: &[u8],
        message: RpcMessage<'_>,
        effects: &mut Vec<Effect>,
    ) {
        match message {
            RpcMessage::Response { .. } | RpcMessage::Error { .. } => {
                let r = Rejection::new(
                    Stage::Mcp,
                    INVALID_REQUEST,
                    "a response from the client is invalid: the gateway sends no requests",
                    frame,
                );
                self.refuse(line, r, None, effects);
            }
            RpcMessage::Notification { method, params } => {
                self.notification(line, frame, &method, params.as_ref(), effects)
            }
            RpcMessage::Request { id, method, params } => {
                self.request(line, frame, id, &method, params, effects)
            }
        }
    }

    fn notification(
        &mut self,
        line: u64,
        frame: &[u8],
        method: &str,
        params: Option<&Map<String, Value>>,
        effects: &mut Vec<Effect>,
    ) {
        if mcp::REQUEST_METHODS.contains(&method) {
            let r = Rejection::new(
                Stage::Mcp,
                INVALID_REQUEST,
                format!(
                    "{method} sent as a notification (no id): requests need an id and are never executed without one"
                ),
                frame,
            );
            return self.refuse(line, r, None, effects);
        }
        match method {
            "notifications/initialized"
                if self.session.era != Some(Era::Modern) && !self.session.initialized =>
            {
                let r = Rejection::new(
                    Stage::Mcp,
                    INVALID_REQUEST,
                    "notifications/initialized before initialize",
                    frame,
                );
                self.refuse(line, r, None, effects);
            }
            "notifications/cancelled" => {
                // Invalid or stale cancellations are ignored, as the spec asks.
                let Some(id) = mcp::cancelled_request(params) else {
                    return;
                };
                let ticket = self
                    .session
                    .in_flight
                    .iter()
                    .find(|(_, f)| f.id == id)
                    .map(|(t, _)| *t);
                if let Some(ticket) = ticket {
                    self.session.in_flight.remove(&ticket);
                    effects.push(Effect::Cancel(Ticket(ticket)));
                }
            }
            // Other client notifications (progress, roots changes...) carry
            // nothing this gateway acts on.
            _ => {}
        }
    }

    fn request(
        &mut self,
        line: u64,
        frame: &[u8],
        id: Id,
        method: &str,
        params: Option<Map<String, Value>>,
        effects: &mut Vec<Effect>,
    ) {
        let reject = |code: i64, reason: String, id: Option<Id>| {
            Rejection::new(Stage::Mcp, code, reason, frame).with_id(id)
        };
        if let Id::Str(s) = &id
            && s.len() > self.config.max_id_bytes
        {
            let r = reject(
                INVALID_REQUEST,
                format!(
                    "request id too long: {} bytes, at most {} (server.max_id_bytes)",
                    s.len(),
                    self.config.max_id_bytes
                ),
                Some(id),
            );
            return self.refuse(line, r, None, effects);
        }
        match self.session.seen_ids.remember(&id) {
            Remember::Fresh => {}
            Remember::Reused => {
                let r = reject(
                    INVALID_REQUEST,
                    "request id reused within the session".into(),
                    None,
                );
                return self.refuse(line, r, None, effects);
            }
            Remember::Full => {
                let r = reject(
                    INVALID_REQUEST,
                    format!(
                        "the session remembers at most {} request ids (server.max_session_ids) and they are used up: number requests consecutively or start a new session",
                        self.config.max_session_ids
                    ),
                    Some(id),
                );
                return self.refuse(line, r, None, effects);
            }
        }
        let era = mcp::era_of(method, params.as_ref());
        if let Some(current) = self.session.era
            && current != era
        {
            let r = reject(
                INVALID_REQUEST,
                format!("mixes protocol eras: the session is {current:?}, this request is {era:?}"),
                Some(id),
            );
            return self.refuse(line, r, None, effects);
        }
        let revision = match era {
            Era::Legacy => {
                match method {
                    "initialize" => {
                        return self.initialize(line, frame, id, params.as_ref(), effects);
                    }
                    "ping" => {
                        self.session.era = Some(Era::Legacy);
                        let revision = self.session.revision.unwrap_or(Revision::V2025_11_25);
                        return self.respond(id, reply::empty(revision), effects);
                    }
                    _ if !self.session.initialized => {
                        let r = reject(
                            INVALID_REQUEST,
                            format!(
                                "{} before initialize: only initialize and ping are served until the handshake",
                                shown(method)
                            ),
                            Some(id),
                        );
                        return self.refuse(line, r, None, effects);
                    }
                    _ => {}
                }
                self.session.revision.unwrap_or(Revision::V2025_11_25)
            }
            Era::Modern => match mcp::modern_meta(params.as_ref()) {
                Ok(revision) => {
                    self.session.era = Some(Era::Modern);
                    self.session.revision = Some(revision);
                    revision
                }
                Err(refusal) => return self.refuse_request(line, frame, id, refusal, effects),
            },
        };
        match method {
            "server/discover" => {
                let result = reply::discover(&self.policy, revision);
                self.respond(id, result, effects)
            }
            "tools/list" => {
                let result = reply::tools_list(&self.policy, revision);
                self.respond(id, result, effects)
            }
            "tools/call" => self.call(line, frame, id, params, revision, effects),
            // A modern `ping` carries `_meta` like every modern request; its
            // version was checked above.
            "ping" => self.respond(id, reply::empty(revision), effects),
            other => {
                // A well-formed request for a method this gateway does not
                // serve is an answer, not a rejection: clients probe.
                let error = ErrorObject {
                    code: METHOD_NOT_FOUND,
                    message: format!("method not found: {}", shown(other)),
                    data: None,
                };
                self.write(
                    Outbound::Error {
                        id: Some(id),
                        error,
                    },
                    effects,
                );
            }
        }
    }

    fn initialize(
        &mut self,
        line: u64,
        frame: &[u8],
        id: Id,
        params: Option<&Map<String, Value>>,
        effects: &mut Vec<Effect>,
    ) {
        if self.session.initialized {
            let refusal = Refusal::new(INVALID_REQUEST, "a second initialize is invalid");
            return self.refuse_request(line, frame, id, refusal, effects);
        }
        match mcp::initialize_params(params) {
            Err(refusal) => self.refuse_request(line, frame, id, refusal, effects),
            Ok(init) => {
                let revision = mcp::negotiate(&init.requested);
                self.session.era = Some(Era::Legacy);
                self.session.revision = Some(revision);
                self.session.initialized = true;
                let result = reply::initialize(&self.policy, revision);
                self.respond(id, result, effects);
            }
        }
    }

    fn call(
        &mut self,
        line: u64,
        frame: &[u8],
        id: Id,
        params: Option<Map<String, Value>>,
        revision: Revision,
        effects: &mut Vec<Effect>,
    ) {
        let call = match mcp::tools_call_params(params) {
            Ok(call) => call,
            Err(refusal) => return self.refuse_request(line, frame, id, refusal, effects),
        };
        let policy = Arc::clone(&self.policy);
        let Some(tool) = policy.tool(&call.name) else {
            let refusal = Refusal::new(INVALID_PARAMS, "unknown tool");
            return self.refuse_request(line, frame, id, refusal, effects);
        };
        let checked = match tool.schema.check(&tool.name, call.arguments) {
            Ok(checked) => checked,
            Err(errors) => {
                let text = format!(
                    "arguments do not match the input schema of {}:\n{}",
                    tool.name,
                    errors.join("\n")
                );
                return self.refuse_call(line, frame, Stage::Schema, id, revision, text, effects);
            }
        };
        match authorize(&policy, checked) {
            Err(denial) => {
                let text = format!("denied: {denial}");
                self.refuse_call(line, frame, Stage::Authz, id, revision, text, effects)
            }
            Ok(action) => {
                let ticket = self.session.next_ticket;
                self.session.next_ticket += 1;
                self.session
                    .in_flight
                    .insert(ticket, InFlight { id, revision });
                self.ledger.executed(JournalEntry {
                    ticket,
                    line,
                    tool: action.tool().to_owned(),
                    kind: action.kind(),
                    target: portcullis_wire::Fingerprint::of(action.describe_target().as_bytes()),
                    outcome: None,
                });
                effects.push(Effect::Execute(Ticket(ticket), action));
            }
        }
    }

    fn complete(&mut self, ticket: Ticket, outcome: Outcome, effects: &mut Vec<Effect>) {
        self.ledger.completed(ticket.0, outcome.is_error);
        if self.session.closed {
            return;
        }
        if let Some(f) = self.session.in_flight.remove(&ticket.0) {
            let result = reply::call_tool(f.revision, &outcome.text, outcome.is_error);
            self.respond(f.id, result, effects);
        }
    }

    fn respond(&mut self, id: Id, result: Value, effects: &mut Vec<Effect>) {
        self.write(Outbound::Response { id, result }, effects);
    }

    fn write(&mut self, message: Outbound, effects: &mut Vec<Effect>) {
        match encode(&message) {
            Ok(frame) => effects.push(Effect::Write(frame)),
            Err(err) => {
                // Unreachable with serde_json values; if it ever happens the
                // session cannot keep its stdout promise, so it ends.
                self.close(
                    CloseReason {
                        line: 0,
                        stage: Stage::Mcp,
                        code: portcullis_wire::codes::INTERNAL_ERROR,
                        reason: format!("cannot encode a reply: {err}"),
                    },
                    effects,
                );
            }
        }
    }

    fn close(&mut self, reason: CloseReason, effects: &mut Vec<Effect>) {
        self.session.closed = true;
        self.ledger.counters.sessions_closed += 1;
        effects.push(Effect::Close(reason));
    }

    fn refuse_request(
        &mut self,
        line: u64,
        frame: &[u8],
        id: Id,
        refusal: Refusal,
        effects: &mut Vec<Effect>,
    ) {
        let rejection =
            Rejection::new(Stage::Mcp, refusal.code, refusal.message, frame).with_id(Some(id));
        self.refuse(line, rejection, refusal.data, effects);
    }

    /// Record a frame refused at the framing..mcp stages and answer it per
    /// the error-reply rules.
    fn refuse(
        &mut self,
        line: u64,
        rejection: Rejection,
        data: Option<Value>,
        effects: &mut Vec<Effect>,
    ) {
        self.ledger.reject(RejectionRecord {
            line,
            stage: rejection.stage,
            code: rejection.code,
            fingerprint: rejection.fingerprint,
        });
        let close = self.config.on_invalid == OnInvalid::Close;
        let may_omit_id = close
            && self
                .session
                .revision
                .is_some_and(Revision::allows_error_without_id);
        if rejection.id.is_some() || may_omit_id {
            let data = data.unwrap_or_else(|| {
                json!({ "stage": rejection.stage.as_str(), "fingerprint": rejection.fingerprint.to_hex() })
            });
            let error = ErrorObject {
                code: rejection.code,
                message: rejection.reason.clone(),
                data: Some(data),
            };
            self.write(
                Outbound::Error {
                    id: rejection.id.clone(),
                    error,
                },
                effects,
            );
        }
        if close {
            self.close(
                CloseReason {
                    line,
                    stage: rejection.stage,
                    code: rejection.code,
                    reason: rejection.reason,
                },
                effects,
            );
        }
    }

    /// Record a call refused at the schema or authz stage; it is answered as
    /// a tool error so the model can correct itself.
    #[allow(clippy::too_many_arguments)]
    fn refuse_call(
        &mut self,
        line: u64,
        frame: &[u8],
        stage: Stage,
        id: Id,
        revision: Revision,
        text: String,
        effects: &mut Vec<Effect>,
    ) {
        let fingerprint = portcullis_wire::Fingerprint::of(frame);
        self.ledger.reject(RejectionRecord {
            line,
            stage,
            code: INVALID_PARAMS,
            fingerprint,
        });
        self.respond(id, reply::call_tool(revision, &text, true), effects);
        // The frame was well formed and the peer is in step: the refusal is
        // an answer the model can act on, not a reason to end the session,
        // unless the policy opts in.
        if self.config.on_denied == OnDenied::Close {
            self.close(
                CloseReason {
                    line,
                    stage,
                    code: INVALID_PARAMS,
                    reason: text,
                },
                effects,
            );
        }
    }
}

/// A method name for a message: shown when it looks like a name.
fn shown(method: &str) -> std::borrow::Cow<'_, str> {
    portcullis_wire::strict_json::display_name(method)
}
