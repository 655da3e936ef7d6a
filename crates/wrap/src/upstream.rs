//! The upstream direction: every line the upstream writes on its stdout is
//! judged as strictly as a client frame (framing cap, UTF-8, strict JSON,
//! JSON-RPC). A line that is not exactly one message is quarantined: shown
//! on stderr with its line number, counted, never forwarded. A response is
//! forwarded only when its id is one of ours in flight, under the client's
//! id, and only once; a request gets a client-facing id of ours; a
//! notification is forwarded when the client may receive it. What the
//! client receives is the canonical encoding of the parsed message, with
//! the tools a `tools/list` answer may show (see [`crate::tools`]).

use portcullis_gateway::id::Remember;
use portcullis_gateway::mcp::cancelled_request;
use portcullis_wire::{ErrorObject, FrameEvent, Id, Object, RpcMessage, Stage};
use serde_json::{Map, Value};

use crate::effect::{AuditRecord, Dropped, Effect, Quarantined};
use crate::encode::Message;
use crate::session::{Asked, UPSTREAM_ERROR, Wrap, read_frame};

/// Requests the upstream may send the client.
pub const UPSTREAM_REQUESTS: [&str; 4] = [
    "ping",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
];

/// Notifications the upstream may send the client
/// (`notifications/cancelled` is forwarded with our id for the request).
pub const UPSTREAM_NOTIFICATIONS: [&str; 8] = [
    "notifications/cancelled",
    "notifications/progress",
    "notifications/message",
    "notifications/tools/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/prompts/list_changed",
    "notifications/elicitation/complete",
];

impl Wrap {
    pub(crate) fn upstream_event(
        &mut self,
        line: u64,
        event: FrameEvent<'_>,
        effects: &mut Vec<Effect>,
    ) {
        if self.closed {
            return;
        }
        self.counters.upstream_lines += 1;
        match read_frame(event, &self.config.limits) {
            Ok((frame, message)) => self.upstream_message(line, frame, message, effects),
            Err((frame, r)) => {
                self.quarantine(line, r.stage, r.reason, frame, r.fingerprint, effects);
            }
        }
    }

    fn upstream_message(
        &mut self,
        line: u64,
        frame: &[u8],
        message: RpcMessage<'_, Object<'_>>,
        effects: &mut Vec<Effect>,
    ) {
        match message {
            RpcMessage::Response { id, result } => {
                self.upstream_answer(line, frame, &id, Ok(result), effects)
            }
            RpcMessage::Error {
                id: Some(id),
                error,
            } => {
                self.upstream_answer(line, frame, &id, Err(error), effects);
            }
            RpcMessage::Error { id: None, .. } => {
                self.drop_message(line, Dropped::ErrorWithoutId, effects)
            }
            RpcMessage::Request { id, method, params } => {
                let params = params.map(Object::into_map);
                self.upstream_request(line, id, &method, params.as_ref(), effects);
            }
            RpcMessage::Notification { method, params } => {
                self.upstream_notification(line, &method, params, effects);
            }
        }
    }

    fn upstream_answer(
        &mut self,
        line: u64,
        frame: &[u8],
        id: &Id,
        answer: Result<Value, ErrorObject>,
        effects: &mut Vec<Effect>,
    ) {
        let Some(pending) = (match id {
            Id::Int(n) => self.pending.remove(n),
            Id::Str(_) => None,
        }) else {
            return self.drop_message(line, Dropped::UnmatchedResponse, effects);
        };
        let client_id = pending.client_id;
        let result = match answer {
            Err(error) => {
                return self.send_client(
                    Message::Error {
                        id: Some(&client_id),
                        error: &error,
                    },
                    effects,
                );
            }
            Ok(Value::Object(result)) => result,
            Ok(_) => {
                let fingerprint = portcullis_wire::Fingerprint::of(frame);
                self.quarantine(
                    line,
                    Stage::Mcp,
                    "a result must be an object".into(),
                    frame,
                    fingerprint,
                    effects,
                );
                let message =
                    "the upstream server sent an invalid result (not an object)".to_owned();
                return self.error_to_client(Some(&client_id), UPSTREAM_ERROR, message, effects);
            }
        };
        let result = match pending.asked {
            Asked::ToolsList => match self.tools.filter(&result) {
                Some(filtered) => {
                    for record in filtered.records {
                        if let AuditRecord::RugPull { tool, .. } = &record {
                            self.counters.rug_pulls += 1;
                            effects.push(Effect::Notice(format!(
                                "rug pull: tool {tool:?} changed since it was pinned; withheld from the client and its calls are denied"
                            )));
                        }
                        effects.push(Effect::Audit(record));
                    }
                    if filtered.pins_changed {
                        effects.push(Effect::PinsChanged(self.tools.pins().clone()));
                    }
                    filtered.result
                }
                None => {
                    let fingerprint = portcullis_wire::Fingerprint::of(frame);
                    self.quarantine(
                        line,
                        Stage::Mcp,
                        "a tools/list result must have a tools array".into(),
                        frame,
                        fingerprint,
                        effects,
                    );
                    let message =
                        "the upstream server sent an invalid tools/list result".to_owned();
                    return self.error_to_client(
                        Some(&client_id),
                        UPSTREAM_ERROR,
                        message,
                        effects,
                    );
                }
            },
            Asked::Initialize | Asked::Other => Value::Object(result),
        };
        self.send_client(
            Message::Response {
                id: &client_id,
                result: &result,
            },
            effects,
        );
    }

    fn upstream_request(
        &mut self,
        line: u64,
        id: Id,
        method: &str,
        params: Option<&Map<String, Value>>,
        effects: &mut Vec<Effect>,
    ) {
        if !UPSTREAM_REQUESTS.contains(&method) {
            return self.drop_message(line, Dropped::RequestNotAllowed, effects);
        }
        let too_long = matches!(&id, Id::Str(s) if s.len() > self.config.max_id_bytes);
        // The id is remembered only for a request that is otherwise taken;
        // every id ever taken, not only those in flight: one answered
        // earlier, used again, would be answered twice.
        if too_long
            || self.asked_client.len() >= self.config.max_in_flight
            || self.upstream_ids.remember(&id) != Remember::Fresh
        {
            return self.drop_message(line, Dropped::RequestRefused, effects);
        }
        let ours = self.next_client_id;
        self.next_client_id += 1;
        self.asked_client.insert(ours, id);
        self.send_client(
            Message::Request {
                id: &Id::Int(ours),
                method,
                params,
            },
            effects,
        );
    }

    fn upstream_notification(
        &mut self,
        line: u64,
        method: &str,
        params: Option<Object<'_>>,
        effects: &mut Vec<Effect>,
    ) {
        if !UPSTREAM_NOTIFICATIONS.contains(&method) {
            return self.drop_message(line, Dropped::NotificationNotAllowed, effects);
        }
        if method == "notifications/cancelled" {
            let asked = cancelled_request(params.as_ref());
            let ours = asked.and_then(|id| {
                self.asked_client
                    .iter()
                    .find(|(_, theirs)| **theirs == id)
                    .map(|(ours, _)| *ours)
            });
            let Some(ours) = ours else {
                return self.drop_message(line, Dropped::NotificationNotAllowed, effects);
            };
            self.asked_client.remove(&ours);
            let mut params = params.map(Object::into_map).unwrap_or_default();
            params.insert("requestId".into(), Value::from(ours));
            return self.send_client(
                Message::Notification {
                    method,
                    params: Some(&params),
                },
                effects,
            );
        }
        let params = params.map(Object::into_map);
        self.send_client(
            Message::Notification {
                method,
                params: params.as_ref(),
            },
            effects,
        );
    }

    fn drop_message(&mut self, line: u64, why: Dropped, effects: &mut Vec<Effect>) {
        self.counters.dropped += 1;
        effects.push(Effect::Audit(AuditRecord::Dropped { line, why }));
        if why == Dropped::UnmatchedResponse {
            effects.push(Effect::Notice(format!(
                "dropped upstream line {line}: a response that matches no request in flight"
            )));
        }
    }

    fn quarantine(
        &mut self,
        line: u64,
        stage: Stage,
        reason: String,
        bytes: &[u8],
        fingerprint: portcullis_wire::Fingerprint,
        effects: &mut Vec<Effect>,
    ) {
        self.counters.quarantined += 1;
        effects.push(Effect::Audit(AuditRecord::Quarantined {
            line,
            stage,
            fingerprint,
        }));
        effects.push(Effect::Quarantine(Quarantined {
            line,
            reason,
            bytes: bytes.to_vec(),
        }));
    }
}
