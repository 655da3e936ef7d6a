//! The sans-IO session: bytes in, effects out.
//!
//! [`Gateway::receive`], [`Gateway::complete`] and
//! [`Gateway::end_of_input`] each return the [`Effect`]s the driver must
//! carry out, in order. No threads, no I/O, no clock: the same input gives
//! the same effects, whatever the chunking. This file only sequences the
//! stages — [`portcullis_wire`] framing and parsing, [`mcp::admit`],
//! [`schema::check`], [`authz::authorize`] — and turns their verdicts into
//! effects.
//!
//! How refusals are recorded and answered is in `refuse`.
//!
//! Ending: the first frame that ends the session (an invalid frame under
//! `on_invalid = "close"`, a refused call under `on_denied = "close"`)
//! stops reading there — nothing after it is parsed, acted on or answered.
//! When actions are in flight the session drains first
//! ([`Gateway::is_draining`]): each accepted request is still answered
//! once, by its [`Gateway::complete`]; only after the last one does the
//! ending frame's own answer (if it gets one) follow, then
//! [`Effect::Close`]. So the ending frame's answer is always the last frame
//! written, as a graceful HTTP/2 GOAWAY lets the streams below it finish.
//!
//! What a session keeps does not grow with the size of what it is sent: a
//! request id longer than [`Config::max_id_bytes`] is refused, accepted ids
//! are remembered as fixed-size digests (at most [`Config::max_session_ids`]
//! entries, see [`crate::id`]), and the session keeps only
//! [`Counters`]: every record leaves as an effect.

mod config;
mod in_flight;
mod refuse;

use std::sync::Arc;

use portcullis_wire::codes::METHOD_NOT_FOUND;
use portcullis_wire::{
    ErrorObject, FrameEvent, FrameReader, Id, Limits, Object, Outbound, RpcMessage, Stage,
    Unworded, parse_message_skimmed, utf8,
};
use serde_json::Value;

pub use config::Config;
pub use refuse::error_reply;

use crate::authz::{self, AuthorizedAction};
use crate::effect::{CloseReason, Effect, Frame, Ticket};
use crate::executor::Outcome;
use crate::ledger::Counters;
use crate::mcp::{self, McpRequest, Revision, SessionState};
use crate::policy::Policy;
use crate::secrets::SecretStore;
use crate::{reply, schema};
use in_flight::{InFlight, Tickets};

/// One MCP session's boundary.
#[derive(Debug)]
pub struct Gateway {
    reader: FrameReader,
    core: Core,
}

#[derive(Debug)]
struct Core {
    policy: Arc<Policy>,
    secrets: Arc<SecretStore>,
    config: Config,
    mcp: SessionState,
    in_flight: Tickets,
    next_ticket: u64,
    /// Set by the frame that ends the session while actions were in
    /// flight; taken when the last of them is completed.
    draining: Option<Ending>,
    closed: bool,
    counters: Counters,
}

/// What closes a draining session once nothing is in flight.
#[derive(Debug)]
struct Ending {
    /// The answer to the frame that ended the session, if it gets one.
    last: Option<Outbound>,
    reason: CloseReason,
}

impl Gateway {
    /// A fresh session under `policy`, with the credential values
    /// `secrets` (only authorization sees them).
    pub fn new(
        policy: impl Into<Arc<Policy>>,
        secrets: impl Into<Arc<SecretStore>>,
        config: Config,
    ) -> Self {
        Self {
            reader: FrameReader::new(config.limits.max_frame_bytes),
            core: Core {
                policy: policy.into(),
                secrets: secrets.into(),
                config,
                mcp: SessionState::new(config.max_id_bytes, config.max_session_ids),
                in_flight: Tickets::default(),
                next_ticket: 0,
                draining: None,
                closed: false,
                counters: Counters::default(),
            },
        }
    }

    /// Feed bytes read from stdin, in any chunking.
    pub fn receive(&mut self, bytes: &[u8]) -> Vec<Effect> {
        // Room for a read full of small requests, so the vector is not
        // copied as it grows (a 64 KiB read holds a few hundred).
        let mut effects = Vec::with_capacity(bytes.len() / 256 + 1);
        if self.core.reading() {
            let core = &mut self.core;
            self.reader
                .feed(bytes, |line, event| core.event(line, event, &mut effects));
        }
        effects
    }

    /// Report the outcome of an `Execute`. While draining, the completion
    /// of the last action in flight also brings the ending frame's answer
    /// and [`Effect::Close`].
    pub fn complete(&mut self, ticket: Ticket, outcome: Outcome) -> Vec<Effect> {
        let mut effects = Vec::new();
        self.core.complete(ticket, outcome, &mut effects);
        effects
    }

    /// stdin reached end of file.
    pub fn end_of_input(&mut self) -> Vec<Effect> {
        let mut effects = Vec::new();
        if self.core.reading() {
            let core = &mut self.core;
            self.reader
                .finish(|line, event| core.event(line, event, &mut effects));
        }
        effects
    }

    /// What the session counted so far (the records themselves left as
    /// [`Effect::Rejected`] and [`Effect::Execute`]).
    pub fn counters(&self) -> &Counters {
        &self.core.counters
    }

    /// Whether the session has closed.
    pub fn is_closed(&self) -> bool {
        self.core.closed
    }

    /// Whether a frame has ended the session while actions were in flight:
    /// nothing more is read, and the session closes once the last of them
    /// is completed. A driver stops reading and waits for those actions.
    pub fn is_draining(&self) -> bool {
        self.core.draining.is_some()
    }

    /// The negotiated or declared revision, once known.
    pub fn revision(&self) -> Option<Revision> {
        self.core.mcp.revision()
    }

    /// Actions handed out and not yet completed or cancelled.
    pub fn in_flight(&self) -> usize {
        self.core.in_flight.len()
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.core.policy
    }
}

/// A frame's UTF-8, strict JSON and JSON-RPC stages, as the session runs
/// them: `_meta` skimmed to what MCP routing reads ([`mcp::META_SKIM`]).
pub fn read_frame<'a>(
    frame: &'a [u8],
    limits: &Limits,
) -> Result<RpcMessage<'a, Object<'a>>, Unworded<'a>> {
    utf8::decode(frame)
        .map_err(Unworded::from)
        .and_then(|text| parse_message_skimmed(text, limits, &mcp::META_SKIM))
}

impl Core {
    /// Whether input is still read: not closed, and not draining.
    fn reading(&self) -> bool {
        !self.closed && self.draining.is_none()
    }

    fn event(&mut self, line: u64, event: FrameEvent<'_>, effects: &mut Vec<Effect>) {
        if !self.reading() {
            return;
        }
        self.counters.frames_received += 1;
        let frame = match event {
            FrameEvent::Rejected(rejection) => return self.refuse(line, rejection, None, effects),
            FrameEvent::Frame(bytes) => bytes,
        };
        let message = match read_frame(frame, &self.config.limits) {
            Ok(message) => message,
            Err(refused) => return self.refuse_read(line, refused, effects),
        };
        match mcp::admit(&mut self.mcp, message) {
            Ok(request) => self.serve(line, frame, request, effects),
            Err(refusal) => self.refuse_mcp(line, frame, refusal, effects),
        }
    }

    fn serve(
        &mut self,
        line: u64,
        frame: &[u8],
        request: McpRequest<'_>,
        effects: &mut Vec<Effect>,
    ) {
        match request {
            McpRequest::Initialize { id, revision } => {
                let result = reply::initialize(&self.policy, revision);
                self.respond(id, result, effects);
            }
            McpRequest::Ping { id, revision } => self.respond(id, reply::empty(revision), effects),
            McpRequest::Discover { id, revision } => {
                let result = reply::discover(&self.policy, revision);
                self.respond(id, result, effects);
            }
            McpRequest::ToolsList { id, revision } => {
                let result = reply::tools_list(&self.policy, revision);
                self.respond(id, result, effects);
            }
            McpRequest::ToolsCall { id, revision, call } => {
                self.call(line, frame, id, revision, call, effects);
            }
            McpRequest::Unknown { id, method } => {
                let error = ErrorObject {
                    code: METHOD_NOT_FOUND,
                    message: format!("method not found: {}", mcp::shown(&method)),
                    data: None,
                };
                let id = Some(id);
                self.write(Outbound::Error { id, error }, effects);
            }
            McpRequest::Cancelled(id) => {
                if let Some(ticket) = self.in_flight.remove_id(&id) {
                    effects.push(Effect::Cancel(Ticket(ticket)));
                }
            }
            McpRequest::Ignored => {}
        }
    }

    fn call(
        &mut self,
        line: u64,
        frame: &[u8],
        id: Id,
        revision: Revision,
        call: mcp::ToolsCall<'_>,
        effects: &mut Vec<Effect>,
    ) {
        let policy = Arc::clone(&self.policy);
        let Some(tool) = policy.tool(&call.name) else {
            return self.refuse_mcp(line, frame, mcp::unknown_tool(id), effects);
        };
        let verdict = schema::check_arguments(tool, call.arguments)
            .map_err(|e| (Stage::Schema, e.to_string()))
            .and_then(|checked| {
                authz::authorize(&checked, &self.secrets)
                    .map_err(|denial| (Stage::Authz, format!("denied: {denial}")))
            });
        match verdict {
            Ok(action) => self.execute(line, id, revision, action, effects),
            Err((stage, text)) => {
                self.refuse_call(line, frame, stage, (id, revision), text, effects)
            }
        }
    }

    fn execute(
        &mut self,
        line: u64,
        id: Id,
        revision: Revision,
        action: AuthorizedAction,
        effects: &mut Vec<Effect>,
    ) {
        let ticket = Ticket(self.next_ticket);
        self.next_ticket += 1;
        self.in_flight.push(ticket.0, InFlight { id, revision });
        self.counters.executor_calls += 1;
        effects.push(Effect::Execute {
            ticket,
            line,
            action,
        });
    }

    fn complete(&mut self, ticket: Ticket, outcome: Outcome, effects: &mut Vec<Effect>) {
        self.counters.executor_completions += 1;
        if self.closed {
            return;
        }
        if let Some(f) = self.in_flight.remove(ticket.0) {
            let result = reply::call_tool(f.revision, &outcome.text, outcome.is_error);
            self.respond(f.id, result, effects);
        }
        if self.in_flight.is_empty()
            && let Some(ending) = self.draining.take()
        {
            self.finish(ending, effects);
        }
    }

    /// End the session at the frame `ending` describes: nothing after it
    /// is read. The actions in flight are answered first (as they
    /// complete), then `ending.last`, then `Close`.
    fn end(&mut self, ending: Ending, effects: &mut Vec<Effect>) {
        if self.in_flight.is_empty() {
            self.finish(ending, effects);
        } else {
            self.draining = Some(ending);
        }
    }

    fn finish(&mut self, ending: Ending, effects: &mut Vec<Effect>) {
        if let Some(last) = ending.last {
            self.write(last, effects);
        }
        // `write` closes by itself when it cannot encode.
        if !self.closed {
            self.close(ending.reason, effects);
        }
    }

    fn respond(&mut self, id: Id, result: Value, effects: &mut Vec<Effect>) {
        self.write(Outbound::Response { id, result }, effects);
    }

    fn write(&mut self, message: Outbound, effects: &mut Vec<Effect>) {
        match Frame::encode(&message) {
            Ok(frame) => effects.push(Effect::Write(frame)),
            Err(err) => {
                // Unreachable with serde_json values; if it ever happens the
                // session cannot keep its stdout promise, so it ends.
                let reason = CloseReason {
                    line: 0,
                    stage: Stage::Mcp,
                    code: portcullis_wire::codes::INTERNAL_ERROR,
                    reason: format!("cannot encode a reply: {err}"),
                };
                self.close(reason, effects);
            }
        }
    }

    fn close(&mut self, reason: CloseReason, effects: &mut Vec<Effect>) {
        self.closed = true;
        self.counters.sessions_closed += 1;
        effects.push(Effect::Close(reason));
    }
}
