//! The client direction: every frame passes the stages of `portcullis mcp`
//! (framing cap, UTF-8, strict JSON, JSON-RPC, then the gateway's MCP stage
//! `admit`: lifecycle, era, id length and reuse), then the wrapper's own
//! routing: a fixed set of methods (plus the policy's `[wrap] methods`) is
//! forwarded, `tools/call` only through the tool gate, a response only when
//! it answers an upstream request in flight. What is forwarded is the
//! canonical encoding of the parsed message under an upstream id of ours.
//!
//! Refusals follow the gateway's error-reply rules
//! ([`portcullis_gateway::session::error_reply`]): echo the id when it
//! could be read and was never used; otherwise never `"id": null` (omit
//! the id where the revision permits and only under `close`, else write
//! nothing); never answer a notification or a response. Under `close`, the
//! first invalid frame stops the reading of client input and the session
//! drains (see [`crate::session`]): its error frame is written last, after
//! every request accepted before it is answered.
//!
//! A client answer to a request the upstream has cancelled is dropped and
//! journaled, never refused: the cancellation and the answer cross on the
//! wire, and clients answer what was cancelled.
//!
//! A `tools/call` the gate lets through goes out as an
//! [`Effect::ForwardCall`] with its intent; once the journal is unavailable
//! none goes out, each is answered with a denial before the gate is asked.
//! A call the client cancels before its `ForwardCall` was carried out (both
//! in one chunk) is taken back: it never reaches the upstream.

use portcullis_gateway::mcp::{self, McpRequest, Revision};
use portcullis_gateway::session::error_reply;
use portcullis_gateway::{OnInvalid, reply};
use portcullis_wire::codes::{INVALID_REQUEST, METHOD_NOT_FOUND};
use portcullis_wire::{ErrorObject, FrameEvent, Id, Rejection, RpcMessage, Stage};
use serde_json::{Map, Value};

use crate::effect::{AuditRecord, Effect, End, Intent};
use crate::encode::{Line, Message};
use crate::flood::FloodKey;
use crate::session::{
    Asked, CallEnd, CallStarted, Draining, Pending, UPSTREAM_ERROR, Wrap, read_frame,
};

/// Client requests forwarded whatever the policy says.
pub const FORWARDED_REQUESTS: [&str; 4] = ["initialize", "ping", "tools/list", "tools/call"];
/// Client notifications forwarded whatever the policy says
/// (`notifications/cancelled` is forwarded with the upstream's id).
pub const FORWARDED_NOTIFICATIONS: [&str; 4] = [
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
];

impl Wrap {
    pub(crate) fn client_event(
        &mut self,
        line: u64,
        event: FrameEvent<'_>,
        effects: &mut Vec<Effect>,
    ) {
        if self.closed || self.draining.is_some() {
            return;
        }
        self.counters.client_frames += 1;
        let (frame, message) = match read_frame(event, &self.config.limits) {
            Ok(read) => read,
            Err((_, rejection)) => return self.refuse(line, rejection, effects),
        };
        match message {
            RpcMessage::Response { id, result } => {
                self.client_answer(line, frame, &id, Ok(result), effects)
            }
            RpcMessage::Error {
                id: Some(id),
                error,
            } => {
                self.client_answer(line, frame, &id, Err(error), effects);
            }
            RpcMessage::Error { id: None, .. } => {
                let refusal = "an error without an id answers no request";
                self.refuse(line, mcp_rejection(frame, refusal, None), effects);
            }
            RpcMessage::Request {
                ref id, ref method, ..
            } if method == "server/discover"
                && !self.config.methods.contains("server/discover") =>
            {
                // Answered here, before admission, so that a client probing for
                // the modern era falls back to `initialize` in the same session.
                let id = id.clone();
                if self.mcp.claim_id_for_error(&id) {
                    self.error_to_client(
                        Some(&id),
                        METHOD_NOT_FOUND,
                        "method not found: server/discover".into(),
                        effects,
                    );
                } else {
                    let reason = "request id reused or too long";
                    self.refuse(line, mcp_rejection(frame, reason, None), effects);
                }
            }
            message => {
                let method = match &message {
                    RpcMessage::Request { method, .. }
                    | RpcMessage::Notification { method, .. } => method.to_string(),
                    _ => String::new(),
                };
                let params = match &message {
                    RpcMessage::Request { params, .. }
                    | RpcMessage::Notification { params, .. } => {
                        params.clone().map(|params| params.into_map())
                    }
                    _ => None,
                };
                match mcp::admit(&mut self.mcp, message) {
                    Ok(request) => self.route(line, &method, params, request, effects),
                    Err(refusal) => {
                        let rejection = portcullis_wire::Rejection::new(
                            Stage::Mcp,
                            refusal.code,
                            refusal.message,
                            frame,
                        )
                        .with_id(refusal.id);
                        self.refuse(line, rejection, effects);
                    }
                }
            }
        }
    }

    fn route(
        &mut self,
        line: u64,
        method: &str,
        params: Option<Map<String, Value>>,
        request: McpRequest<'_>,
        effects: &mut Vec<Effect>,
    ) {
        match request {
            McpRequest::Initialize { id, .. } => {
                self.forward(
                    line,
                    id,
                    method,
                    params.as_ref(),
                    Asked::Initialize,
                    None,
                    effects,
                );
            }
            McpRequest::ToolsList { id, .. } => {
                self.forward(
                    line,
                    id,
                    method,
                    params.as_ref(),
                    Asked::ToolsList,
                    None,
                    effects,
                );
            }
            McpRequest::Ping { id, .. } | McpRequest::Discover { id, .. } => {
                self.forward(
                    line,
                    id,
                    method,
                    params.as_ref(),
                    Asked::Other,
                    None,
                    effects,
                );
            }
            McpRequest::ToolsCall { id, revision, call } if self.journal_down => {
                self.deny_for_journal(line, &id, revision, Some(&call.name), effects);
            }
            McpRequest::ToolsCall { id, revision, call } => {
                match self.tools.check_call(&call.name, call.arguments.into_map()) {
                    Ok(()) => self.forward(
                        line,
                        id,
                        method,
                        params.as_ref(),
                        Asked::Other,
                        Some(revision),
                        effects,
                    ),
                    Err(denial) => {
                        self.counters.calls_denied += 1;
                        let text = denial.to_string();
                        effects.push(Effect::Audit(AuditRecord::CallDenied {
                            line,
                            tool: call.name.to_string(),
                            reason: text.clone(),
                        }));
                        if matches!(denial, crate::tools::Denial::Changed(_)) {
                            effects.push(Effect::Notice(format!(
                                "denied a call to \"{}\": the tool changed since it was pinned",
                                crate::tools::bounded_name(&call.name)
                            )));
                        }
                        let result = reply::call_tool(revision, &text, true);
                        self.send_client(
                            Message::Response {
                                id: &id,
                                result: &result,
                            },
                            effects,
                        );
                    }
                }
            }
            McpRequest::Unknown { id, method: asked } => {
                if self.config.methods.contains(&asked) {
                    self.forward(
                        line,
                        id,
                        method,
                        params.as_ref(),
                        Asked::Other,
                        None,
                        effects,
                    );
                } else {
                    let message = format!(
                        "method not found: {}",
                        portcullis_wire::strict_json::display_name(&asked)
                    );
                    self.error_to_client(Some(&id), METHOD_NOT_FOUND, message, effects);
                }
            }
            McpRequest::Cancelled(client_id) => {
                let found = self
                    .pending
                    .iter()
                    .find(|(_, p)| p.client_id == client_id)
                    .map(|(n, _)| *n);
                let Some(upstream_id) = found else { return };
                let Some(p) = self.pending.remove(&upstream_id) else {
                    return;
                };
                if self.take_back_call(upstream_id, &p.method, effects) {
                    return;
                }
                self.call_ended(upstream_id, &p, CallEnd::Cancelled, effects);
                self.ended_requests.insert(upstream_id);
                let mut params = params.unwrap_or_default();
                params.insert("requestId".into(), Value::from(upstream_id));
                self.send_upstream(
                    Message::Notification {
                        method,
                        params: Some(&params),
                    },
                    effects,
                );
            }
            McpRequest::Ignored => {
                let forwarded = FORWARDED_NOTIFICATIONS.contains(&method)
                    && method != "notifications/cancelled"
                    || self.config.methods.contains(method);
                if forwarded {
                    self.send_upstream(
                        Message::Notification {
                            method,
                            params: params.as_ref(),
                        },
                        effects,
                    );
                }
            }
        }
    }

    /// Forward a client request under an upstream id of ours; `call` holds
    /// the revision of a `tools/call` (which goes out with its intent).
    #[expect(
        clippy::too_many_arguments,
        reason = "one request's parts, as the router took them apart"
    )]
    fn forward(
        &mut self,
        line: u64,
        client_id: Id,
        method: &str,
        params: Option<&Map<String, Value>>,
        asked: Asked,
        call: Option<Revision>,
        effects: &mut Vec<Effect>,
    ) {
        if self.pending.len() >= self.config.max_in_flight {
            let message = format!(
                "too many requests in flight (at most {}); wait for answers",
                self.config.max_in_flight
            );
            return self.error_to_client(Some(&client_id), UPSTREAM_ERROR, message, effects);
        }
        let upstream_id = self.next_upstream_id;
        self.next_upstream_id += 1;
        let id = Id::Int(upstream_id);
        let request = Message::Request {
            id: &id,
            method,
            params,
        };
        let sent = effects.len();
        let started = match call {
            Some(revision) => self
                .send_call(line, upstream_id, request, params, effects)
                .then_some(CallStarted {
                    at: self.now,
                    revision,
                }),
            None => {
                self.send_upstream(request, effects);
                None
            }
        };
        if effects.len() > sent {
            *self
                .counters
                .forwarded
                .entry(method.to_owned())
                .or_default() += 1;
        }
        self.pending.insert(
            upstream_id,
            Pending {
                client_id,
                asked,
                method: method.to_owned(),
                line,
                deadline: self.now.saturating_add(self.config.request_timeout_ms),
                call: started,
            },
        );
    }

    /// A `tools/call` out with its intent; `false` when nothing could be
    /// sent (the session is over, or the upstream's input is closed).
    fn send_call(
        &mut self,
        line: u64,
        upstream_id: i64,
        request: Message<'_>,
        params: Option<&Map<String, Value>>,
        effects: &mut Vec<Effect>,
    ) -> bool {
        if self.closed || self.client_ended {
            return false;
        }
        let Some(encoded) = request.encode() else {
            return false;
        };
        let tool = params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let arguments = params.and_then(|p| p.get("arguments"));
        self.counters.to_upstream += 1;
        effects.push(Effect::ForwardCall {
            intent: Intent {
                line,
                call: upstream_id,
                tool: tool.to_owned(),
                arguments_sha256: crate::canonical::arguments_sha256(arguments),
                timeout_ms: self.config.request_timeout_ms,
            },
            line: encoded,
        });
        true
    }

    /// A call cancelled while its `ForwardCall` is still among the effects
    /// of this step (not carried out yet): taken back, so it never reaches
    /// the upstream and has neither intent nor outcome. `false` when it
    /// already went out.
    fn take_back_call(
        &mut self,
        upstream_id: i64,
        method: &str,
        effects: &mut Vec<Effect>,
    ) -> bool {
        let Some(at) = effects.iter().position(
            |e| matches!(e, Effect::ForwardCall { intent, .. } if intent.call == upstream_id),
        ) else {
            return false;
        };
        effects.remove(at);
        self.counters.unforward(method);
        true
    }

    /// A client response: forwarded only when it answers an upstream
    /// request in flight (under the upstream's own id).
    fn client_answer(
        &mut self,
        line: u64,
        frame: &[u8],
        id: &Id,
        answer: Result<Value, ErrorObject>,
        effects: &mut Vec<Effect>,
    ) {
        let upstream_id = match id {
            Id::Int(n) => self.asked_client.get(n).map(|_| *n),
            Id::Str(_) => None,
        };
        let Some(n) = upstream_id else {
            if let Id::Int(n) = id
                && self.cancelled_asks.take(*n)
            {
                self.counters.late_answers += 1;
                if self.flood_first(FloodKey::LateAnswer, line, None) {
                    effects.push(Effect::Audit(AuditRecord::LateAnswer {
                        line,
                        count: 1,
                        last_line: line,
                    }));
                }
                return;
            }
            let reason = "a response that answers no request in flight";
            return self.refuse(line, mcp_rejection(frame, reason, None), effects);
        };
        if let Ok(result) = &answer
            && !result.is_object()
        {
            let reason = "a result must be an object";
            return self.refuse(line, mcp_rejection(frame, reason, None), effects);
        }
        let Some(upstream_id) = self.asked_client.remove(&n) else {
            return;
        };
        match &answer {
            Ok(result) => self.send_upstream(
                Message::Response {
                    id: &upstream_id,
                    result,
                },
                effects,
            ),
            Err(error) => self.send_upstream(
                Message::Error {
                    id: Some(&upstream_id),
                    error,
                },
                effects,
            ),
        }
    }

    /// Record a refused client frame and answer it per the error-reply rules.
    fn refuse(&mut self, line: u64, rejection: Rejection, effects: &mut Vec<Effect>) {
        self.counters.client_rejected += 1;
        effects.push(Effect::Audit(AuditRecord::ClientRejected {
            line,
            stage: rejection.stage,
            code: rejection.code,
            fingerprint: rejection.fingerprint,
        }));
        let on_invalid = self.config.on_invalid;
        let reply = error_reply(&mut self.mcp, on_invalid, &rejection, None);
        if on_invalid != OnInvalid::Close {
            if let Some((id, error)) = reply {
                self.send_client(
                    Message::Error {
                        id: id.as_ref(),
                        error: &error,
                    },
                    effects,
                );
            }
            return;
        }
        let reply = reply.and_then(|(id, error)| {
            Message::Error {
                id: id.as_ref(),
                error: &error,
            }
            .encode()
        });
        let end = End::ClientInvalid {
            line,
            stage: rejection.stage,
            code: rejection.code,
            reason: rejection.reason,
        };
        self.start_draining(line, reply, end, effects);
    }

    /// The invalid frame on `line` closes the session once what was
    /// accepted before it is answered.
    fn start_draining(
        &mut self,
        line: u64,
        reply: Option<Line>,
        end: End,
        effects: &mut Vec<Effect>,
    ) {
        self.draining = Some(Draining {
            reply,
            end,
            deadline: self.now.saturating_add(self.config.grace_ms),
        });
        // No client answer will be read any more: the upstream hears so
        // now rather than waiting on one.
        let asked = std::mem::take(&mut self.asked_client);
        for id in asked.into_values() {
            let message = "the client's session closed before it answered".to_owned();
            self.error_to_upstream(&id, UPSTREAM_ERROR, message, effects);
        }
        if !self.pending.is_empty() {
            effects.push(Effect::Notice(format!(
                "invalid client frame on line {line}: no more client input is read; waiting up to {} ms for the upstream to answer {} request(s) in flight",
                self.config.grace_ms,
                self.pending.len()
            )));
        }
        self.settle_draining(effects);
    }
}

fn mcp_rejection(frame: &[u8], reason: &str, id: Option<Id>) -> Rejection {
    Rejection::new(Stage::Mcp, INVALID_REQUEST, reason, frame).with_id(id)
}
