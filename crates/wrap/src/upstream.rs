//! The upstream direction: every line the upstream writes on its stdout is
//! judged as strictly as a client frame (framing cap, UTF-8, strict JSON,
//! JSON-RPC). A line that is not exactly one message is quarantined: shown
//! on stderr with its line number, counted, never forwarded. A response is
//! forwarded only when its id is one of ours in flight, under the client's
//! id, and only once; a request gets a client-facing id of ours; a
//! notification is forwarded when the client may receive it. What the
//! client receives is the canonical encoding of the parsed message, with
//! the tools a `tools/list` answer may show (see [`crate::tools`]).
//!
//! Every request the upstream sends is answered once: by the client, or
//! by the wrapper with an error when it refuses to forward it (a method the
//! upstream may not ask, an id too long or already used, one request past
//! the in-flight cap, a session that is closing) — the refusal is counted
//! and journaled as well. An answer longer than the frame cap is refused
//! like any over-long line, and when the id of a request in flight can be
//! read from its first bytes, that request is answered with an error at
//! once rather than when its time runs out.
//!
//! Quarantines and drops are journaled and shown aggregated
//! ([`crate::flood`]): an upstream cannot grow the journal or our stderr by
//! the line.

use portcullis_gateway::id::Remember;
use portcullis_gateway::mcp::cancelled_request;
use portcullis_wire::codes::{INVALID_REQUEST, METHOD_NOT_FOUND};
use portcullis_wire::strict_json::display_name;
use portcullis_wire::{ErrorObject, FrameEvent, Id, Object, RpcMessage, Stage};
use serde_json::{Map, Value};

use crate::effect::{AuditRecord, Dropped, Effect};
use crate::encode::Message;
use crate::flood::FloodKey;
use crate::session::{Asked, CallEnd, UPSTREAM_ERROR, Wrap, read_frame, shown};

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

/// Bytes of an upstream line kept to read the id of an over-long answer:
/// room for `{"jsonrpc": "2.0", "id": <any integer id>, "result"` with
/// generous spacing (the ids the upstream answers are ours, integers).
pub const PREFIX_BYTES: usize = 256;

/// The first [`PREFIX_BYTES`] bytes of the upstream line being read, and
/// how long the line is so far.
#[derive(Debug, Default)]
pub(crate) struct LinePrefix {
    bytes: Vec<u8>,
    seen: usize,
}

impl LinePrefix {
    pub(crate) fn extend(&mut self, segment: &[u8]) {
        let body = segment.strip_suffix(b"\n").unwrap_or(segment);
        let room = PREFIX_BYTES.saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&body[..room.min(body.len())]);
        self.seen = self.seen.saturating_add(body.len());
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.seen = 0;
    }
}

/// The id of the response a line starts as, read from its first bytes:
/// `{`, then members in any order of which only `jsonrpc` (a plain string)
/// and one integer `id` may come before `result` or `error`. Anything else
/// (a request, a string id, the id after the result, escapes, a prefix too
/// short) is `None`: only an id that is surely a response's is read.
pub fn leading_response_id(prefix: &[u8]) -> Option<i64> {
    let mut at = 0;
    let skip_space = |at: &mut usize| {
        while prefix
            .get(*at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        {
            *at += 1;
        }
    };
    let plain_string = |at: &mut usize| -> Option<&[u8]> {
        if prefix.get(*at) != Some(&b'"') {
            return None;
        }
        let start = *at + 1;
        let len = prefix.get(start..)?.iter().position(|&b| b == b'"')?;
        let text = &prefix[start..start + len];
        if text.iter().any(|&b| b == b'\\' || b < 0x20) {
            return None;
        }
        *at = start + len + 1;
        Some(text)
    };
    skip_space(&mut at);
    if prefix.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let mut id = None;
    loop {
        skip_space(&mut at);
        let key = plain_string(&mut at)?;
        skip_space(&mut at);
        if prefix.get(at) != Some(&b':') {
            return None;
        }
        at += 1;
        skip_space(&mut at);
        match key {
            b"jsonrpc" => {
                plain_string(&mut at)?;
            }
            b"id" if id.is_none() => {
                let start = at;
                if prefix.get(at) == Some(&b'-') {
                    at += 1;
                }
                let digits = prefix
                    .get(at..)?
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits == 0 || digits > 16 || (digits > 1 && prefix[at] == b'0') {
                    return None;
                }
                at += digits;
                let text = std::str::from_utf8(&prefix[start..at]).ok()?;
                id = Some(text.parse::<i64>().ok()?);
            }
            b"result" | b"error" => return id,
            _ => return None,
        }
        skip_space(&mut at);
        if prefix.get(at) != Some(&b',') {
            return None;
        }
        at += 1;
    }
}

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
                let over_long = r.stage == Stage::Framing
                    && self.upstream_prefix.seen > self.config.limits.max_frame_bytes;
                // A line that starts as the answer to a request in flight
                // answers it now, whatever made the rest of it unreadable:
                // the client must not wait out its time limit for an answer
                // that will never be forwarded.
                let answers = if over_long {
                    leading_response_id(&self.upstream_prefix.bytes)
                } else {
                    leading_response_id(&frame[..frame.len().min(PREFIX_BYTES)])
                };
                let stage = r.stage;
                self.quarantine(line, r.stage, r.reason, frame, r.fingerprint, effects);
                if let Some(upstream_id) = answers {
                    self.unforwardable_answer(upstream_id, over_long, stage, effects);
                }
            }
        }
    }

    /// An upstream line that starts as the answer to a request in flight
    /// but cannot be forwarded (over the frame cap, or refused at a stage):
    /// that request is answered with an error now.
    fn unforwardable_answer(
        &mut self,
        upstream_id: i64,
        over_long: bool,
        stage: Stage,
        effects: &mut Vec<Effect>,
    ) {
        let Some(p) = self.pending.remove(&upstream_id) else {
            return;
        };
        self.call_ended(upstream_id, &p, CallEnd::WrapperError, effects);
        let method = display_name(&p.method);
        let why = if over_long {
            format!(
                "exceeds max_frame_bytes ({})",
                self.config.limits.max_frame_bytes
            )
        } else {
            format!(
                "was refused at the {} stage and quarantined",
                stage.as_str()
            )
        };
        effects.push(Effect::Notice(format!(
            "the upstream's answer to {method} {why}; the client gets an error instead"
        )));
        let message = format!("the upstream server's answer to {method} {why}");
        self.error_to_client(Some(&p.client_id), UPSTREAM_ERROR, message, effects);
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
        let found = match id {
            Id::Int(n) => self.pending.remove(n).map(|p| (*n, p)),
            Id::Str(_) => None,
        };
        let Some((upstream_id, pending)) = found else {
            let late = matches!(id, Id::Int(n) if self.ended_requests.take(*n));
            let why = if late {
                Dropped::LateResponse
            } else {
                Dropped::UnmatchedResponse
            };
            return self.drop_message(line, why, effects);
        };
        let end = match &answer {
            Err(_) => CallEnd::Answered { is_error: true },
            Ok(Value::Object(result)) => CallEnd::Answered {
                is_error: result.get("isError") == Some(&Value::Bool(true)),
            },
            Ok(_) => CallEnd::WrapperError,
        };
        self.call_ended(upstream_id, &pending, end, effects);
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
                                "rug pull: tool \"{}\" changed since it was pinned; withheld from the client and its calls are denied",
                                crate::tools::bounded_name(tool)
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
            self.drop_message(line, Dropped::RequestNotAllowed, effects);
            let message = format!("method not found: {}", display_name(method));
            return self.error_to_upstream(&id, METHOD_NOT_FOUND, message, effects);
        }
        let max_id = self.config.max_id_bytes;
        let max_in_flight = self.config.max_in_flight;
        // The id is remembered only for a request that is otherwise taken;
        // every id ever taken, not only those in flight: one answered
        // earlier, used again, would be answered twice.
        let refusal = if self.draining.is_some() {
            Some((UPSTREAM_ERROR, "the client's session is closing".to_owned()))
        } else if matches!(&id, Id::Str(s) if s.len() > max_id) {
            let message = format!("request id longer than max_id_bytes ({max_id})");
            Some((INVALID_REQUEST, message))
        } else if self.asked_client.len() >= max_in_flight {
            let message = format!(
                "too many requests in flight to the client (at most {max_in_flight}); wait for answers"
            );
            Some((UPSTREAM_ERROR, message))
        } else {
            match self.upstream_ids.remember(&id) {
                Remember::Fresh => None,
                Remember::Reused => Some((
                    INVALID_REQUEST,
                    "request id already used in this session".to_owned(),
                )),
                Remember::Full => Some((
                    UPSTREAM_ERROR,
                    "too many request ids in this session".to_owned(),
                )),
            }
        };
        if let Some((code, message)) = refusal {
            self.drop_message(line, Dropped::RequestRefused, effects);
            return self.error_to_upstream(&id, code, message, effects);
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
            self.cancelled_asks.insert(ours);
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
        if !self.flood_first(FloodKey::Dropped(why), line, None) {
            return;
        }
        effects.push(Effect::Audit(AuditRecord::Dropped {
            line,
            why,
            count: 1,
            last_line: line,
        }));
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
        if !self.flood_first(FloodKey::Quarantined(stage), line, Some(fingerprint)) {
            return;
        }
        effects.push(Effect::Audit(AuditRecord::Quarantined {
            line,
            stage,
            fingerprint,
            count: 1,
            last_line: line,
        }));
        effects.push(shown(line, reason, bytes));
    }
}
