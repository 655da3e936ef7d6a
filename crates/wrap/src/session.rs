//! The sans-IO wrap session: client bytes, upstream bytes and the clock
//! in; [`Effect`]s out.
//!
//! [`Wrap::from_client`], [`Wrap::from_upstream`], [`Wrap::client_eof`],
//! [`Wrap::upstream_eof`] and [`Wrap::tick`] each return the effects the
//! driver must carry out, in order. No threads, no I/O: time is a number
//! of milliseconds the driver passes in. The client direction is judged in
//! [`crate::client`], the upstream direction in [`crate::upstream`]; this
//! file holds the state both share and the ways a session ends.
//!
//! Ids: every client request forwarded gets an upstream id of ours (an
//! integer, counting up), and every upstream request forwarded gets a
//! client-facing id of ours; each table maps back to the peer's own id and
//! holds at most [`Config::max_in_flight`] entries, so what the session
//! keeps does not grow with its length. A response is forwarded only when
//! its id is in the table, and the entry leaves with it: no request is
//! answered twice, and nothing is answered that was not asked. The ids of
//! requests that ended without their answer (timed out, cancelled) are
//! remembered a while longer, as many as may be in flight, so the answer
//! that was already on its way is told apart from one that answers nothing.
//!
//! Every forwarded `tools/call` is an [`Effect::ForwardCall`]: its intent
//! record goes to the journal before its line goes to the upstream, and
//! exactly one [`Outcome`] record follows when the call ends, whichever way
//! (answered, cancelled, timed out, upstream gone, session drained). Once
//! the driver reports the journal unavailable
//! ([`Wrap::journal_unavailable`]) the session fails closed: no `tools/call`
//! is forwarded again, each is answered with a denial.
//!
//! Closing on an invalid client frame (under `on_invalid = "close"`) is a
//! GOAWAY (RFC 9113 §6.8): the frame stops the reading of client input,
//! and the session drains — what was accepted before it is still answered,
//! by the upstream within [`Config::grace_ms`] or else with an error — before
//! the error frame for the invalid one and the end.

use std::collections::{BTreeMap, VecDeque};

use portcullis_gateway::id::IdMemory;
use portcullis_gateway::mcp::{Revision, SessionState};
use portcullis_gateway::reply;
use portcullis_wire::{
    ErrorObject, FrameEvent, FrameReader, Id, Limits, Object, Rejection, RpcMessage,
    parse_message_borrowed, utf8,
};
use serde_json::{Map, Value};

use crate::config::Config;
use crate::effect::{AnsweredBy, AuditRecord, Counters, Effect, End, Outcome, Quarantined};
use crate::encode::{Line, Message};
use crate::flood::{FloodKey, Floods, Run};
use crate::tools::ToolTable;
use crate::upstream::LinePrefix;

/// The error code a request gets when the upstream cannot answer it
/// (gone, too slow).
pub const UPSTREAM_ERROR: i64 = -32603;

/// The text of the tool error every `tools/call` gets once the audit
/// journal cannot be written.
pub const JOURNAL_DENIAL: &str = "denied: audit journal unavailable";

/// A frame's bytes and the message read from them.
pub(crate) type ReadFrame<'a> = (&'a [u8], RpcMessage<'a, Object<'a>>);

/// One frame from either side read as one message: the frame reader's
/// verdict, then UTF-8 and one strict JSON-RPC message, the stages of
/// `portcullis mcp`. A refusal comes with the frame's bytes (none when
/// the frame reader refused it).
pub(crate) fn read_frame<'a>(
    event: FrameEvent<'a>,
    limits: &Limits,
) -> Result<ReadFrame<'a>, (&'a [u8], Rejection)> {
    let frame = match event {
        FrameEvent::Rejected(rejection) => return Err((&[], rejection)),
        FrameEvent::Frame(bytes) => bytes,
    };
    utf8::decode(frame)
        .and_then(|text| parse_message_borrowed(text, limits))
        .map(|message| (frame, message))
        .map_err(|rejection| (frame, rejection))
}

/// What a forwarded client request is, for its answer's sake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Asked {
    Initialize,
    ToolsList,
    Other,
}

#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) client_id: Id,
    pub(crate) asked: Asked,
    pub(crate) method: String,
    pub(crate) line: u64,
    pub(crate) deadline: u64,
    /// Set for a `tools/call` whose intent went out: its outcome is owed.
    pub(crate) call: Option<CallStarted>,
}

/// A forwarded `tools/call`, for its outcome record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallStarted {
    /// When its intent went out, in ms.
    pub(crate) at: u64,
    /// The revision to answer it in, should the wrapper answer it.
    pub(crate) revision: Revision,
}

/// How a forwarded call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallEnd {
    /// The upstream's answer was forwarded.
    Answered { is_error: bool },
    /// The wrapper answered it with an error.
    WrapperError,
    /// The client cancelled it.
    Cancelled,
    /// Its time ran out (the wrapper answered it with an error).
    TimedOut,
}

/// A session closing on an invalid client frame, waiting for the upstream
/// to answer what was accepted before it.
#[derive(Debug)]
pub(crate) struct Draining {
    /// The error frame for the invalid one, written last (none when its id
    /// could not be echoed and may not be omitted).
    pub(crate) reply: Option<Line>,
    /// How the session ends once drained.
    pub(crate) end: End,
    /// When the upstream's time is up, in ms.
    pub(crate) deadline: u64,
}

/// Integer ids of ours remembered after their request ended without its
/// answer, oldest forgotten first: at most `capacity`, whatever the
/// session's length.
#[derive(Debug)]
pub(crate) struct Recent {
    ids: VecDeque<i64>,
    capacity: usize,
}

impl Recent {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            ids: VecDeque::new(),
            capacity,
        }
    }

    pub(crate) fn insert(&mut self, id: i64) {
        if self.capacity == 0 {
            return;
        }
        if self.ids.len() >= self.capacity {
            self.ids.pop_front();
        }
        self.ids.push_back(id);
    }

    /// Whether `id` was remembered; it is forgotten now (one late answer
    /// per request).
    pub(crate) fn take(&mut self, id: i64) -> bool {
        match self.ids.iter().position(|n| *n == id) {
            Some(at) => {
                self.ids.remove(at);
                true
            }
            None => false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }
}

/// One wrap session's boundary.
#[derive(Debug)]
pub struct Wrap {
    pub(crate) config: Config,
    pub(crate) client_reader: FrameReader,
    pub(crate) upstream_reader: FrameReader,
    pub(crate) mcp: SessionState,
    pub(crate) tools: ToolTable,
    /// Client requests forwarded, by the upstream id we gave them.
    pub(crate) pending: BTreeMap<i64, Pending>,
    pub(crate) next_upstream_id: i64,
    /// Upstream requests forwarded, by the client-facing id we gave them.
    pub(crate) asked_client: BTreeMap<i64, Id>,
    /// Every id the upstream's requests used: an id is used once per session
    /// (MCP), so a reused one would draw a second answer for one id.
    pub(crate) upstream_ids: IdMemory,
    pub(crate) next_client_id: i64,
    /// Upstream ids of client requests that timed out or that the client
    /// cancelled: the upstream's answer may still come, and is dropped.
    pub(crate) ended_requests: Recent,
    /// Client-facing ids of upstream requests the upstream cancelled: the
    /// client's answer may still come, and is dropped.
    pub(crate) cancelled_asks: Recent,
    /// The first bytes of the upstream line being read, enough to read the
    /// id of an answer that turns out longer than the frame cap.
    pub(crate) upstream_prefix: LinePrefix,
    pub(crate) now: u64,
    pub(crate) client_ended: bool,
    pub(crate) draining: Option<Draining>,
    pub(crate) closed: bool,
    /// The driver reported the audit journal unavailable: no `tools/call`
    /// is forwarded any more.
    pub(crate) journal_down: bool,
    /// Quarantines and drops being aggregated.
    pub(crate) floods: Floods,
    pub(crate) counters: Counters,
}

impl Wrap {
    /// A fresh session.
    pub fn new(config: Config) -> Self {
        let max_frame = config.limits.max_frame_bytes;
        Self {
            client_reader: FrameReader::new(max_frame),
            upstream_reader: FrameReader::new(max_frame),
            mcp: SessionState::new(config.max_id_bytes, config.max_session_ids),
            upstream_ids: IdMemory::new(config.max_session_ids),
            tools: ToolTable::new(
                config.pins.clone(),
                config.allowed_tools.clone(),
                config.max_tools,
                config
                    .limits
                    .max_frame_bytes
                    .saturating_mul(crate::config::SCHEMA_BYTES_PER_FRAME),
            )
            .compiling_with(config.compile_schema),
            ended_requests: Recent::new(config.max_in_flight),
            cancelled_asks: Recent::new(config.max_in_flight),
            upstream_prefix: LinePrefix::default(),
            config,
            pending: BTreeMap::new(),
            next_upstream_id: 1,
            asked_client: BTreeMap::new(),
            next_client_id: 1,
            now: 0,
            client_ended: false,
            draining: None,
            closed: false,
            journal_down: false,
            floods: Floods::default(),
            counters: Counters::default(),
        }
    }

    /// Bytes the client wrote (our stdin), in any chunking, at `now` ms.
    /// Nothing is read after an invalid frame under `on_invalid = "close"`.
    pub fn from_client(&mut self, bytes: &[u8], now: u64) -> Vec<Effect> {
        self.now = self.now.max(now);
        let mut effects = Vec::new();
        self.flush_floods(&mut effects);
        if !self.closed && !self.client_ended && self.draining.is_none() {
            let mut reader = std::mem::replace(&mut self.client_reader, FrameReader::new(0));
            reader.feed(bytes, |line, event| {
                self.client_event(line, event, &mut effects);
            });
            self.client_reader = reader;
        }
        effects
    }

    /// Bytes the upstream wrote on its stdout, in any chunking, at `now` ms.
    pub fn from_upstream(&mut self, bytes: &[u8], now: u64) -> Vec<Effect> {
        self.now = self.now.max(now);
        let mut effects = Vec::new();
        self.flush_floods(&mut effects);
        if !self.closed {
            let mut reader = std::mem::replace(&mut self.upstream_reader, FrameReader::new(0));
            // One line's bytes at a time, so that when the reader refuses a
            // line as over-long, `upstream_prefix` holds that line's start.
            let mut rest = bytes;
            while !rest.is_empty() {
                let end = rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(rest.len(), |at| at + 1);
                let (segment, after) = rest.split_at(end);
                self.upstream_prefix.extend(segment);
                reader.feed(segment, |line, event| {
                    self.upstream_event(line, event, &mut effects);
                });
                if segment.ends_with(b"\n") {
                    self.upstream_prefix.clear();
                }
                rest = after;
            }
            self.upstream_reader = reader;
            self.settle_draining(&mut effects);
        }
        effects
    }

    /// The client closed our stdin: a partial last frame is refused, and
    /// the upstream's stdin is closed. The session goes on until the
    /// upstream has answered what is in flight and ended its stdout.
    pub fn client_eof(&mut self, now: u64) -> Vec<Effect> {
        self.now = self.now.max(now);
        let mut effects = Vec::new();
        self.flush_floods(&mut effects);
        if self.closed || self.client_ended || self.draining.is_some() {
            return effects;
        }
        let mut reader = std::mem::replace(&mut self.client_reader, FrameReader::new(0));
        reader.finish(|line, event| self.client_event(line, event, &mut effects));
        self.client_reader = reader;
        self.client_ended = true;
        if !self.closed {
            effects.push(Effect::EndUpstreamInput);
        }
        effects
    }

    /// The upstream's stdout ended (it exited or closed it): every request
    /// in flight is answered with an error and the session ends.
    pub fn upstream_eof(&mut self, now: u64) -> Vec<Effect> {
        self.now = self.now.max(now);
        let mut effects = Vec::new();
        self.flush_floods(&mut effects);
        if self.closed {
            return effects;
        }
        // A last line without its newline is truncated, never over-long.
        self.upstream_prefix.clear();
        let mut reader = std::mem::replace(&mut self.upstream_reader, FrameReader::new(0));
        reader.finish(|line, event| self.upstream_event(line, event, &mut effects));
        self.upstream_reader = reader;
        if self.closed {
            return effects;
        }
        let pending = std::mem::take(&mut self.pending);
        let unanswered = pending.len();
        for (upstream_id, p) in pending {
            let message = format!(
                "the upstream server exited before answering {}",
                portcullis_wire::strict_json::display_name(&p.method)
            );
            self.error_to_client(Some(&p.client_id), UPSTREAM_ERROR, message, &mut effects);
            self.call_ended(upstream_id, &p, CallEnd::WrapperError, &mut effects);
        }
        self.asked_client.clear();
        effects.push(Effect::Audit(AuditRecord::UpstreamExited { unanswered }));
        if let Some(draining) = self.draining.take() {
            self.end_draining(draining, &mut effects);
            return effects;
        }
        let end = if self.client_ended && unanswered == 0 {
            End::Finished
        } else {
            End::UpstreamExited { unanswered }
        };
        self.close(end, &mut effects);
        effects
    }

    /// The clock moved to `now` ms: requests past their deadline are
    /// answered with an error, and the upstream is told to cancel them.
    pub fn tick(&mut self, now: u64) -> Vec<Effect> {
        self.now = self.now.max(now);
        let mut effects = Vec::new();
        self.flush_floods(&mut effects);
        if self.closed {
            return effects;
        }
        let late: Vec<i64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= self.now)
            .map(|(id, _)| *id)
            .collect();
        for upstream_id in late {
            let Some(p) = self.pending.remove(&upstream_id) else {
                continue;
            };
            self.counters.timeouts += 1;
            effects.push(Effect::Audit(AuditRecord::TimedOut {
                line: p.line,
                method: p.method.clone(),
            }));
            let message = format!(
                "the upstream server did not answer {} within {} ms",
                portcullis_wire::strict_json::display_name(&p.method),
                self.config.request_timeout_ms
            );
            self.error_to_client(Some(&p.client_id), UPSTREAM_ERROR, message, &mut effects);
            self.call_ended(upstream_id, &p, CallEnd::TimedOut, &mut effects);
            self.cancel_upstream(upstream_id, "timed out", &mut effects);
            self.ended_requests.insert(upstream_id);
        }
        if self
            .draining
            .as_ref()
            .is_some_and(|d| d.deadline <= self.now)
        {
            let pending = std::mem::take(&mut self.pending);
            for (upstream_id, p) in pending {
                let message = format!(
                    "the session closed on an invalid client frame before the upstream server answered {}",
                    portcullis_wire::strict_json::display_name(&p.method)
                );
                self.error_to_client(Some(&p.client_id), UPSTREAM_ERROR, message, &mut effects);
                self.call_ended(upstream_id, &p, CallEnd::WrapperError, &mut effects);
                self.cancel_upstream(upstream_id, "the session is closing", &mut effects);
            }
        }
        self.settle_draining(&mut effects);
        effects
    }

    /// The earliest deadline of a request in flight, of the grace period
    /// of a closing session, or of an aggregation interval with events to
    /// write, in ms.
    pub fn next_deadline(&self) -> Option<u64> {
        if self.closed {
            return None;
        }
        let drained_by = self.draining.as_ref().map(|d| d.deadline);
        self.pending
            .values()
            .map(|p| p.deadline)
            .chain(drained_by)
            .chain(self.floods.next_flush())
            .min()
    }

    /// The driver could not write to the audit journal, at `now` ms:
    /// `call`, the upstream id of a [`Effect::ForwardCall`] whose intent
    /// could not be recorded (its line was not written), or `None` for any
    /// other record (or a journal broken from its start). From now on the
    /// session forwards no `tools/call`: each is answered with the tool
    /// error [`JOURNAL_DENIAL`], and so is `call`. Nothing turns this off.
    ///
    /// Call it after carrying out the whole batch of effects in which the
    /// write failed (once per failed intent, once for any other record):
    /// the core made that batch before the failure, and the effects this
    /// returns (the denial, perhaps the end of a closing session) come
    /// after it.
    pub fn journal_unavailable(&mut self, call: Option<i64>, now: u64) -> Vec<Effect> {
        self.now = self.now.max(now);
        let mut effects = Vec::new();
        self.journal_down = true;
        let Some(upstream_id) = call else {
            return effects;
        };
        let Some(p) = self.pending.remove(&upstream_id) else {
            return effects;
        };
        let Some(started) = p.call else {
            // Not a call forwarded with an intent: put it back.
            self.pending.insert(upstream_id, p);
            return effects;
        };
        // The line never reached the upstream.
        self.counters.unforward(&p.method);
        self.deny_for_journal(p.line, &p.client_id, started.revision, None, &mut effects);
        self.call_ended(upstream_id, &p, CallEnd::WrapperError, &mut effects);
        self.settle_draining(&mut effects);
        effects
    }

    /// Whether the session fails closed for want of a journal.
    pub fn is_journal_down(&self) -> bool {
        self.journal_down
    }

    /// The driver is ending the session, at `now` ms, whatever state it is
    /// in (a signal, the client gone): every forwarded call still in flight
    /// gets its outcome (ended by the wrapper, unanswered), every
    /// aggregated run its record. Only audit records and notices come out;
    /// nothing more is written to either peer.
    pub fn finish(&mut self, now: u64) -> Vec<Effect> {
        self.now = self.now.max(now);
        let mut effects = Vec::new();
        if self.closed {
            return effects;
        }
        let pending = std::mem::take(&mut self.pending);
        for (upstream_id, p) in pending {
            self.call_ended(upstream_id, &p, CallEnd::WrapperError, &mut effects);
        }
        self.flush_all_floods(&mut effects);
        self.closed = true;
        effects
    }

    /// What the session counted.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Whether the session is over.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Whether the session is closing on an invalid client frame: no client
    /// input is read, the requests accepted before it are being answered.
    pub fn is_draining(&self) -> bool {
        self.draining.is_some() && !self.closed
    }

    /// Client requests waiting for the upstream.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// The revision the client's first request fixed, once known.
    pub fn revision(&self) -> Option<Revision> {
        self.mcp.revision()
    }

    /// Bytes held for incomplete lines, both directions (each at most
    /// `max_frame_bytes + 1`).
    pub fn buffered(&self) -> usize {
        self.client_reader.buffered() + self.upstream_reader.buffered()
    }

    /// Serialized bytes of the input schemas the tool gate keeps (at most
    /// [`crate::config::SCHEMA_BYTES_PER_FRAME`] × `max_frame_bytes`).
    pub fn schema_bytes(&self) -> usize {
        self.tools.schema_bytes()
    }

    /// Entries in the two id tables and the two memories of requests that
    /// ended without their answer (each at most `max_in_flight`).
    pub fn id_entries(&self) -> usize {
        self.pending.len()
            + self.asked_client.len()
            + self.ended_requests.len()
            + self.cancelled_asks.len()
    }

    pub(crate) fn send_client(&mut self, message: Message<'_>, effects: &mut Vec<Effect>) {
        if self.closed {
            return;
        }
        if let Some(line) = message.encode() {
            self.counters.to_client += 1;
            effects.push(Effect::ToClient(line));
        }
    }

    pub(crate) fn send_upstream(&mut self, message: Message<'_>, effects: &mut Vec<Effect>) {
        if self.closed || self.client_ended_upstream_input() {
            return;
        }
        if let Some(line) = message.encode() {
            self.counters.to_upstream += 1;
            effects.push(Effect::ToUpstream(line));
        }
    }

    /// After the client's EOF the upstream's stdin is closed: nothing more
    /// can be written to it.
    fn client_ended_upstream_input(&self) -> bool {
        self.client_ended
    }

    pub(crate) fn error_to_client(
        &mut self,
        id: Option<&Id>,
        code: i64,
        message: String,
        effects: &mut Vec<Effect>,
    ) {
        let error = ErrorObject {
            code,
            message,
            data: None,
        };
        self.send_client(Message::Error { id, error: &error }, effects);
    }

    pub(crate) fn error_to_upstream(
        &mut self,
        id: &Id,
        code: i64,
        message: String,
        effects: &mut Vec<Effect>,
    ) {
        let error = ErrorObject {
            code,
            message,
            data: None,
        };
        self.send_upstream(
            Message::Error {
                id: Some(id),
                error: &error,
            },
            effects,
        );
    }

    /// Once a closing session has nothing left in flight, it ends.
    pub(crate) fn settle_draining(&mut self, effects: &mut Vec<Effect>) {
        if self.closed || !self.pending.is_empty() {
            return;
        }
        if let Some(draining) = self.draining.take() {
            self.end_draining(draining, effects);
        }
    }

    /// The last steps of a closing session: the error frame for the invalid
    /// frame, then the end.
    fn end_draining(&mut self, draining: Draining, effects: &mut Vec<Effect>) {
        if let Some(line) = draining.reply
            && !self.closed
        {
            self.counters.to_client += 1;
            effects.push(Effect::ToClient(line));
        }
        self.close(draining.end, effects);
    }

    pub(crate) fn cancel_upstream(
        &mut self,
        upstream_id: i64,
        reason: &str,
        effects: &mut Vec<Effect>,
    ) {
        let mut params = Map::new();
        params.insert("requestId".into(), Value::from(upstream_id));
        params.insert("reason".into(), Value::String(reason.to_owned()));
        self.send_upstream(
            Message::Notification {
                method: "notifications/cancelled",
                params: Some(&params),
            },
            effects,
        );
    }

    pub(crate) fn close(&mut self, end: End, effects: &mut Vec<Effect>) {
        if !self.closed {
            self.flush_all_floods(effects);
            self.closed = true;
            effects.push(Effect::Close(end));
        }
    }

    /// Answer the `tools/call` from client `line` with the journal denial.
    pub(crate) fn deny_for_journal(
        &mut self,
        line: u64,
        client_id: &Id,
        revision: Revision,
        tool: Option<&str>,
        effects: &mut Vec<Effect>,
    ) {
        self.counters.journal_denials += 1;
        self.counters.calls_denied += 1;
        // A call whose intent failed has no denial record: its outcome says
        // the wrapper ended it.
        if let Some(tool) = tool {
            effects.push(Effect::Audit(AuditRecord::CallDenied {
                line,
                tool: tool.to_owned(),
                reason: "audit journal unavailable".to_owned(),
            }));
        }
        let result = reply::call_tool(revision, JOURNAL_DENIAL, true);
        self.send_client(
            Message::Response {
                id: client_id,
                result: &result,
            },
            effects,
        );
    }

    /// The forwarded call `upstream_id` ended: its outcome, once (only a
    /// `tools/call` whose intent went out has one).
    pub(crate) fn call_ended(
        &mut self,
        upstream_id: i64,
        pending: &Pending,
        end: CallEnd,
        effects: &mut Vec<Effect>,
    ) {
        let Some(started) = pending.call else { return };
        let (is_error, answered_by) = match end {
            CallEnd::Answered { is_error } => (is_error, AnsweredBy::Upstream),
            CallEnd::WrapperError | CallEnd::TimedOut => (true, AnsweredBy::Wrapper),
            CallEnd::Cancelled => (false, AnsweredBy::Wrapper),
        };
        effects.push(Effect::Audit(AuditRecord::Outcome(Outcome {
            call: upstream_id,
            is_error,
            answered_by,
            cancelled: end == CallEnd::Cancelled,
            timed_out: end == CallEnd::TimedOut,
            elapsed_ms: self.now.saturating_sub(started.at),
        })));
    }

    /// A quarantine, a drop or a late answer on `line`: whether it is the
    /// first of its interval (record and show it now) or counted into it.
    pub(crate) fn flood_first(
        &mut self,
        key: FloodKey,
        line: u64,
        fingerprint: Option<portcullis_wire::Fingerprint>,
    ) -> bool {
        self.floods.note(key, line, fingerprint, self.now)
    }

    /// Write the runs of the aggregation intervals that are over.
    pub(crate) fn flush_floods(&mut self, effects: &mut Vec<Effect>) {
        if self.closed || self.floods.next_flush().is_none_or(|at| at > self.now) {
            // Intervals without a run close lazily, on their key's next event.
            return;
        }
        for (key, run) in self.floods.due(self.now) {
            write_run(key, run, effects);
        }
    }

    fn flush_all_floods(&mut self, effects: &mut Vec<Effect>) {
        for (key, run) in self.floods.all() {
            write_run(key, run, effects);
        }
    }
}

/// The record and the stderr summary of the events of `key` counted
/// after the first of an interval.
fn write_run(key: FloodKey, run: Run, effects: &mut Vec<Effect>) {
    let Run {
        first_line,
        last_line,
        count,
        fingerprint,
    } = run;
    let lines = if count == 1 {
        format!("line {first_line}")
    } else {
        format!("lines {first_line} to {last_line}")
    };
    match key {
        FloodKey::Quarantined(stage) => {
            effects.push(Effect::Audit(AuditRecord::Quarantined {
                line: first_line,
                stage,
                fingerprint: fingerprint.unwrap_or_else(|| portcullis_wire::Fingerprint::of(b"")),
                count,
                last_line,
            }));
            effects.push(Effect::Notice(format!(
                "quarantined {count} more upstream stdout line(s) refused at the {} stage ({lines}); not shown, not forwarded",
                stage.as_str()
            )));
        }
        FloodKey::Dropped(why) => {
            effects.push(Effect::Audit(AuditRecord::Dropped {
                line: first_line,
                why,
                count,
                last_line,
            }));
            if why == crate::effect::Dropped::UnmatchedResponse {
                effects.push(Effect::Notice(format!(
                    "dropped {count} more upstream response(s) that match no request in flight (upstream {lines})"
                )));
            }
        }
        FloodKey::LateAnswer => effects.push(Effect::Audit(AuditRecord::LateAnswer {
            line: first_line,
            count,
            last_line,
        })),
    }
}

/// The stderr effect for the first quarantined line of an interval.
pub(crate) fn shown(line: u64, reason: String, bytes: &[u8]) -> Effect {
    Effect::Quarantine(Quarantined {
        line,
        reason,
        bytes: bytes.to_vec(),
    })
}
