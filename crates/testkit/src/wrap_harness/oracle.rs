//! The judge of a wrap session. It shares no code with the wrap core: it
//! splits lines itself, parses them with serde_json (lenient, then its own
//! checks: an object, `"jsonrpc":"2.0"`, a string or integer id, no
//! duplicate keys, judged in the same pass by `harness`'s reading), and
//! validates tool arguments with `jsonschema` directly.
//!
//! Beyond what each line may be, it judges how a session ends and that no
//! one is left waiting:
//!
//! - under `on_invalid = "close"`, the first refused client frame is a
//!   GOAWAY: no client frame from its line on reaches the upstream or is
//!   answered (but for its own error frame); every request before it is
//!   answered exactly once (unless the client cancelled it) before that
//!   error frame, which is the last line the client receives, and the
//!   session closes on that line;
//! - a client answer to a request the upstream cancelled (the client was
//!   told) is never refused, and never reaches the upstream: the upstream
//!   receives no answer to a request it cancelled, and no more answers for
//!   an id than requests it sent under it;
//! - once the clock has passed every deadline, every client request that
//!   reached the upstream has been answered, unless the client cancelled it;
//! - a `tools/call` reaches the upstream only with its intent, and none
//!   once the journal failed; from then on a `tools/call` not forwarded
//!   before is answered, if with a result, only with the denial, and the
//!   call whose intent failed is answered with it (unless the client
//!   cancelled it);
//! - requests in flight each way never pass the cap, and one is refused
//!   for want of room only while the cap is reached ([`in_flight`]);
//! - the upstream is told to cancel a request in flight only by the
//!   client, under the upstream id that request went up with; the
//!   wrapper's own cancellations name requests it has just answered (with
//!   the clock, [`Oracle::clock`]: past their time limit), and after a
//!   tick no request stays in flight past its time limit;
//! - the client is shown a tool only while it matches its pin, and an
//!   unpinned one only while trust on first use is open or the policy
//!   allows it ([`trust`]; a pins file and an allowlist through
//!   [`Oracle::held_to_pins`] and [`Oracle::allowing`]); a `tools/call`
//!   reaches the upstream only for a tool shown in this session whose
//!   latest listing matches its pin.

mod in_flight;
#[cfg(test)]
mod tests;
mod trust;

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use self::in_flight::{ToClient, ToUpstream};
use self::trust::Trust;
use super::REQUEST_TIMEOUT_MS;
use crate::harness::value_and_duplicates;

/// Splits a byte stream into complete lines, as the oracle sees them.
#[derive(Debug, Default)]
pub struct Lines {
    partial: Vec<u8>,
}

impl Lines {
    /// The complete lines in `bytes` (newline and one `\r` stripped).
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        const KEPT: usize = (1 << 20) + 1;
        let mut lines = Vec::new();
        let mut rest = bytes;
        loop {
            let (piece, newline) = match memchr::memchr(b'\n', rest) {
                Some(at) => (&rest[..at], Some(at)),
                None => (rest, None),
            };
            let room = KEPT.saturating_sub(self.partial.len());
            self.partial
                .extend_from_slice(&piece[..piece.len().min(room)]);
            let Some(at) = newline else {
                return lines;
            };
            let mut line = std::mem::take(&mut self.partial);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            lines.push(line);
            rest = &rest[at + 1..];
        }
    }
}

/// A line that is one JSON-RPC 2.0 message by the oracle's own reading.
pub fn valid_message(line: &[u8], max_bytes: usize) -> Option<Map<String, Value>> {
    if line.is_empty() || line.len() > max_bytes {
        return None;
    }
    let (value, duplicates) = read(line)?;
    message_of(value, duplicates).ok()
}

/// serde_json's lenient reading of `line`, and whether an object in it
/// repeats a key; `None` if it is not UTF-8 JSON.
fn read(line: &[u8]) -> Option<(Value, bool)> {
    value_and_duplicates(std::str::from_utf8(line).ok()?)
}

/// The message a reading is, or the value back when it is none.
fn message_of(value: Value, duplicates: bool) -> Result<Map<String, Value>, Value> {
    if duplicates || !is_message(&value) {
        return Err(value);
    }
    match value {
        Value::Object(message) => Ok(message),
        other => Err(other),
    }
}

fn is_message(value: &Value) -> bool {
    let Value::Object(message) = value else {
        return false;
    };
    // One pass over the members: each judged by its key.
    let mut version = false;
    for (key, member) in message {
        let ok = match key.as_str() {
            "jsonrpc" => {
                version = member.as_str() == Some("2.0");
                version
            }
            "id" => match member {
                Value::String(_) => true,
                Value::Number(n) => n.as_i64().is_some_and(|n| n.unsigned_abs() < 1 << 53),
                _ => false,
            },
            "params" => member.is_object(),
            "method" | "result" | "error" => true,
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    version
}

/// Numbers compared as doubles, so `10` and `1e1` are one value.
pub fn normalized(value: &Value) -> Value {
    match value {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(a) => Value::Array(a.iter().map(normalized).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), normalized(v))).collect())
        }
        other => other.clone(),
    }
}

/// Whether two messages are equal but for their ids (and whether they have
/// one).
fn same_but_id(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    let others = |m: &Map<String, Value>| m.len() - usize::from(m.contains_key("id"));
    others(a) == others(b)
        && a.iter()
            .all(|(k, v)| k == "id" || b.get(k).is_some_and(|w| w == v))
}

fn without(message: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    let mut m = message.clone();
    for k in keys {
        m.remove(*k);
    }
    m
}

/// The id of a line read leniently as a JSON object, when it is a string
/// or an integer: what an error for the line may carry.
fn readable_id(value: &Value) -> Option<String> {
    match value.as_object()?.get("id")? {
        id @ Value::String(_) => Some(id.to_string()),
        id @ Value::Number(n) if n.is_i64() || n.is_u64() => Some(id.to_string()),
        _ => None,
    }
}

/// The integer id of a line that may be a response, read leniently (any
/// JSON object with an integer `id` and no `method`): whatever the wrapper
/// may take for an answer, and more.
fn answer_id(value: &Value) -> Option<i64> {
    let object = value.as_object()?;
    if object.contains_key("method") {
        return None;
    }
    object.get("id")?.as_i64()
}

fn cancel_params(message: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut params = message.get("params")?.as_object()?.clone();
    params.remove("requestId");
    Some(params)
}

/// A client request, by its id.
#[derive(Debug, Clone, Copy)]
struct Asked {
    /// The line of the first request with this id.
    line: u64,
    answered: bool,
    /// It is a `tools/call`.
    call: bool,
    /// Its index among the valid client messages.
    index: usize,
}

/// The text of the denial every call gets once the journal failed.
pub const JOURNAL_DENIAL: &str = "denied: audit journal unavailable";

/// Everything the oracle has seen, and its verdicts.
#[derive(Debug, Default)]
pub struct Oracle {
    pub(crate) max_bytes: usize,
    /// Whether the first refused client frame closes the session.
    closes_on_invalid: bool,
    client_lines: Lines,
    /// Client lines seen so far.
    client_line: u64,
    upstream_lines: Lines,
    /// Valid client messages, by the oracle's reading, and their lines.
    client_sent: Vec<Map<String, Value>>,
    client_sent_lines: Vec<u64>,
    /// Ids of valid client requests: where they came and whether they
    /// were answered.
    client_requests: HashMap<String, Asked>,
    /// Ids the client cancelled, and the line of the first cancellation.
    client_cancelled: HashMap<String, u64>,
    /// Under close: the line of the first refused client frame.
    invalid_line: Option<u64>,
    /// The error frame for it was written: nothing may follow.
    final_written: bool,
    /// The client was told the upstream cancelled these requests (its
    /// ids), each with the count of such cancellations before it.
    told_cancelled: HashMap<String, usize>,
    told_cancelled_count: usize,
    /// How many cancelled requests the wrapper remembers at least (as many
    /// as may be in flight).
    max_in_flight: usize,
    /// Client answers to requests of the upstream, by id.
    client_answered_asks: HashSet<String>,
    /// Lines of client answers to requests the upstream had cancelled.
    late_answer_lines: HashSet<u64>,
    /// Requests the upstream sent, by id: how many.
    upstream_requests: HashMap<String, usize>,
    /// Upstream requests it cancelled while they were unanswered.
    upstream_cancelled: HashSet<String>,
    /// Answers the upstream received, by id: how many.
    upstream_answer_count: HashMap<String, usize>,
    /// During one upstream step: requests forwarded to the client, and the
    /// ids of error answers the upstream received.
    step_forwarded: usize,
    step_refused: HashSet<String>,
    /// Valid upstream messages.
    upstream_sent: Vec<Map<String, Value>>,
    /// Ids of upstream requests (its own ids) that reached the upstream's answer side.
    upstream_ids_received: HashSet<i64>,
    /// Answers the upstream received, by the upstream-request id.
    upstream_answered: HashSet<String>,
    /// Ids the client was asked with.
    client_asked: HashSet<String>,
    /// The first definition of each tool the client was shown.
    first_shown: HashMap<String, Value>,
    /// The latest definition of each tool the upstream listed (and the
    /// wrapper processed).
    latest: HashMap<String, Value>,
    /// Client frames already forwarded, by index.
    forwarded: HashSet<usize>,
    /// The requests among them, by method: what the core's counters must
    /// say after every step, so kept as they come rather than counted anew.
    forwarded_by_method: std::collections::BTreeMap<String, u64>,
    /// The journal failed: no call goes up, calls are denied.
    journal_failed: bool,
    /// The client lines written when the wrapper was told: the calls on
    /// later lines reach a wrapper that knows.
    told_after_line: Option<u64>,
    /// Client frames whose call was held back when its intent failed, by
    /// index.
    withheld: HashSet<usize>,
    /// Ids of calls held back that are owed the denial.
    denial_owed: HashSet<String>,
    /// Denials the wrapper wrote itself because the journal failed: answers
    /// carrying the denial to calls that never reached the upstream.
    pub(crate) journal_denials: u64,
    /// Client requests in flight to the upstream.
    flights: ToUpstream,
    /// Upstream requests in flight to the client.
    asks: ToClient,
    /// Client requests the wrapper answered itself without forwarding
    /// them, by index.
    answered_here: HashSet<usize>,
    /// Client lines the wrapper refused (its audit records).
    refused_lines: HashSet<u64>,
    /// The id of each client line that is not a request and has one the
    /// oracle can read (an object's `id`, a string or an integer), by line:
    /// the error refusing such a line may carry it.
    invalid_ids: HashMap<u64, String>,
    /// Ids carried by errors for refused lines: an id is answered once.
    echoed_ids: HashSet<String>,
    /// The first line of the client's latest read.
    read_from: u64,
    /// The effects being judged are those of an upstream read.
    upstream_step: bool,
    /// Upstream ids of requests the wrapper answered itself (timed out,
    /// closing), with when they went up.
    ended_here: HashMap<i64, Option<u64>>,
    /// Which tools the client may be shown.
    trust: Trust,
    /// The clock, in ms, once the harness tells it.
    now: Option<u64>,
    /// Where each received line's canonical form is written to compare.
    scratch: Vec<u8>,
}

impl Oracle {
    pub(crate) fn new(max_bytes: usize, max_in_flight: usize, closes_on_invalid: bool) -> Self {
        Self {
            max_bytes,
            max_in_flight,
            closes_on_invalid,
            flights: ToUpstream::new(max_in_flight),
            asks: ToClient::new(max_in_flight),
            ..Self::default()
        }
    }

    /// The session starts with pins made from `tools` (a pins file): trust
    /// on first use is off, and only these tools are shown, each only while
    /// it matches.
    pub fn held_to_pins(&mut self, tools: &[Value]) {
        self.trust.held_to(tools);
    }

    /// The policy's `[wrap] tools` names `names`: they are let through
    /// while not pinned, and pinned on first sight.
    pub fn allowing(&mut self, names: &[&str]) {
        self.trust.allow(names);
    }

    /// The step about to be judged happens at `now` ms (the time passed to
    /// the wrapper with it).
    pub fn clock(&mut self, now: u64) {
        self.now = Some(now);
    }

    /// The wrapper was told the clock reached the time of the last
    /// [`Self::clock`], and its effects were judged: no client request is
    /// still in flight past its time limit.
    pub fn ticked(&self) {
        let Some(now) = self.now else { return };
        let overdue = self.flights.overdue(now, REQUEST_TIMEOUT_MS);
        if let Some((upstream_id, flight)) = overdue.first() {
            panic!(
                "at {now} ms the client request {} (upstream id {upstream_id}, up since {} ms) is still in flight past its time limit of {REQUEST_TIMEOUT_MS} ms",
                flight.client_id,
                flight.since.unwrap_or_default()
            );
        }
    }

    /// The client wrote `bytes`.
    pub(crate) fn client_wrote(&mut self, bytes: &[u8]) {
        self.upstream_step = false;
        self.read_from = self.client_line + 1;
        self.asks.client_read_begins();
        for line in self.client_lines.feed(bytes) {
            self.client_line += 1;
            let number = self.client_line;
            let within = !line.is_empty() && line.len() <= self.max_bytes;
            let (valid, lenient) = match read(&line) {
                Some((value, duplicates)) if within => match message_of(value, duplicates) {
                    Ok(m) => (Some(m), None),
                    Err(value) => (None, Some(value)),
                },
                reading => (None, reading.map(|(value, _)| value)),
            };
            // A line that is not a request (an answer, or invalid) may be
            // refused with an error under its id.
            let id = match &valid {
                Some(m) if m.contains_key("method") => None,
                // A message has only string and integer ids.
                Some(m) => m.get("id").map(Value::to_string),
                None => lenient.as_ref().and_then(readable_id),
            };
            if let Some(id) = id {
                self.invalid_ids.insert(number, id);
            }
            let answers = match &valid {
                Some(m) if m.contains_key("method") => None,
                Some(m) => m.get("id").and_then(Value::as_i64),
                None => lenient.as_ref().and_then(answer_id),
            };
            if let Some(id) = answers {
                let answer = valid.as_ref().map(|m| without(m, &["id"]));
                self.asks.client_answers(number, id, answer);
            }
            let Some(m) = valid else {
                continue;
            };
            match (m.get("id"), m.get("method")) {
                (Some(id), Some(method)) => {
                    let index = self.client_sent.len();
                    self.client_requests.entry(id.to_string()).or_insert(Asked {
                        line: number,
                        answered: false,
                        call: method == "tools/call",
                        index,
                    });
                }
                (Some(id), None) => {
                    // Remembered for sure: fewer cancellations since than
                    // the wrapper remembers.
                    let id = id.to_string();
                    let remembered = self
                        .told_cancelled
                        .get(&id)
                        .is_some_and(|seq| self.told_cancelled_count - seq < self.max_in_flight);
                    if self.client_answered_asks.insert(id) && remembered {
                        self.late_answer_lines.insert(number);
                    }
                }
                (None, Some(method)) if method == "notifications/cancelled" => {
                    if let Some(id) = m.get("params").and_then(|p| p.get("requestId")) {
                        self.client_cancelled
                            .entry(id.to_string())
                            .or_insert(number);
                    }
                }
                (None, _) => {}
            }
            self.client_sent.push(m);
            self.client_sent_lines.push(number);
        }
    }

    /// The wrapper refused the client frame on `line` (its audit record).
    pub(crate) fn client_refused(&mut self, line: u64) {
        assert!(
            !self.late_answer_lines.contains(&line),
            "line {line}, an answer to a request the upstream cancelled, was refused as invalid"
        );
        self.refused_lines.insert(line);
        self.asks.client_refused(line);
        if self.closes_on_invalid && self.invalid_line.is_none() {
            self.invalid_line = Some(line);
            self.asks.drained();
        }
    }

    /// Every client request before `line` was answered or cancelled.
    fn assert_answered_before(&self, line: u64, when: &str) {
        for (id, asked) in &self.client_requests {
            let cancelled = self.client_cancelled.get(id).is_some_and(|at| *at < line);
            assert!(
                asked.line >= line || asked.answered || cancelled,
                "{when}, the request {id} on line {} (before the invalid line {line}) was never answered",
                asked.line
            );
        }
    }

    /// The session closed on the invalid client frame on `line`.
    pub(crate) fn closed_on_invalid(&mut self, line: u64) {
        assert!(
            self.closes_on_invalid,
            "the session closed on an invalid frame under keep-open"
        );
        assert_eq!(
            self.invalid_line,
            Some(line),
            "the session closed on a frame other than the first refused one"
        );
        self.assert_answered_before(line, "at the close");
    }

    /// After the clock passed every deadline: every client request that
    /// reached the upstream is answered, unless the client cancelled it.
    pub(crate) fn finish(&self) {
        for id in &self.denial_owed {
            assert!(
                self.client_cancelled.contains_key(id),
                "the call {id}, held back when its intent could not be journaled, was never answered with the denial"
            );
        }
        for index in &self.forwarded {
            let Some(id) = self.client_sent[*index].get("id") else {
                continue;
            };
            if self.client_sent[*index].get("method").is_none() {
                continue;
            }
            let id = id.to_string();
            let answered = self.client_requests.get(&id).is_some_and(|a| a.answered);
            assert!(
                answered || self.client_cancelled.contains_key(&id),
                "the request {id} reached the upstream and was never answered, though every deadline passed"
            );
        }
    }

    /// Client requests that reached the upstream, by method.
    pub(crate) fn forwarded_requests(&self) -> &std::collections::BTreeMap<String, u64> {
        &self.forwarded_by_method
    }

    /// An upstream step begins.
    pub(crate) fn step_begins(&mut self) {
        self.step_forwarded = 0;
        self.step_refused.clear();
        self.upstream_step = true;
    }

    /// After an upstream step that wrote one request under `id`, with the
    /// session open and the upstream's input open: the request reached the
    /// client, or the upstream got an error answer for it.
    pub(crate) fn assert_request_settled(&self, id: &Value) {
        assert!(
            self.step_forwarded > 0 || self.step_refused.contains(&id.to_string()),
            "the upstream's request {id} was neither forwarded nor answered"
        );
    }

    /// The upstream wrote `bytes`; `listed` when the wrapper answered a
    /// tools/list from them.
    pub(crate) fn upstream_wrote(&mut self, bytes: &[u8], listed: bool) {
        for line in self.upstream_lines.feed(bytes) {
            let Some(m) = valid_message(&line, self.max_bytes) else {
                continue;
            };
            match (m.get("id"), m.get("method")) {
                (Some(id), Some(_)) => {
                    *self.upstream_requests.entry(id.to_string()).or_default() += 1;
                    self.upstream_cancelled.remove(&id.to_string());
                }
                (None, Some(method)) if method == "notifications/cancelled" => {
                    if let Some(id) = m.get("params").and_then(|p| p.get("requestId")) {
                        let id = id.to_string();
                        let asked = self.upstream_requests.get(&id).copied().unwrap_or(0);
                        let answered = self.upstream_answer_count.get(&id).copied().unwrap_or(0);
                        if answered < asked {
                            self.upstream_cancelled.insert(id);
                        }
                    }
                }
                _ => {}
            }
            if listed
                && let Some(tools) = m
                    .get("result")
                    .and_then(|r| r.get("tools"))
                    .and_then(Value::as_array)
            {
                let mut seen = HashSet::new();
                for tool in tools {
                    if let Some(name) = tool.get("name").and_then(Value::as_str)
                        && seen.insert(name.to_owned())
                    {
                        self.latest.insert(name.to_owned(), normalized(tool));
                    }
                }
            }
            self.upstream_sent.push(m);
        }
    }

    /// The journal failed: the wrapper must hold every call back.
    pub(crate) fn journal_failed(&mut self) {
        self.journal_failed = true;
    }

    /// The wrapper was told the journal failed.
    pub(crate) fn journal_failure_told(&mut self) {
        self.told_after_line.get_or_insert(self.client_line);
    }

    /// The `tools/call` `line` was held back: its intent could not be
    /// journaled. Its client request is owed the denial.
    pub(crate) fn call_withheld(&mut self, line: &[u8]) {
        assert!(
            self.journal_failed,
            "a call held back while the journal works"
        );
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let Some(m) = valid_message(body, usize::MAX) else {
            panic!(
                "a call held back that is not a valid message: {}",
                show(line)
            );
        };
        let Some(index) = self.frame_asking(&m) else {
            panic!(
                "a call held back that no valid client frame asked for: {}",
                show(line)
            );
        };
        let id = self.client_sent[index]["id"].clone();
        self.withheld.insert(index);
        // In flight until the wrapper, told of the failure, answers it.
        let upstream_id = m.get("id").and_then(Value::as_i64).unwrap_or_default();
        self.flights.went_up(upstream_id, id.clone(), self.now);
        self.denial_owed.insert(id.to_string());
    }

    /// The first valid client frame not yet forwarded, held back, refused
    /// or answered by the wrapper whose message is `m` but for its id, with
    /// an id exactly when `m` has one: frames are judged in order, so the
    /// frame a line went up for is the first of its kind still waiting.
    fn frame_asking(&self, m: &Map<String, Value>) -> Option<usize> {
        let has_id = m.contains_key("id");
        (0..self.client_sent.len()).find(|i| {
            let c = &self.client_sent[*i];
            !self.forwarded.contains(i)
                && !self.withheld.contains(i)
                && !self.answered_here.contains(i)
                && !self.refused_lines.contains(&self.client_sent_lines[*i])
                && c.contains_key("id") == has_id
                && same_but_id(c, m)
        })
    }

    /// Judge one line the upstream received; `with_intent` when it came
    /// with an intent (a `tools/call` must).
    pub(crate) fn upstream_received(&mut self, line: &[u8], with_intent: bool) {
        let body = line
            .strip_suffix(b"\n")
            .expect("a line to the upstream ends with a newline");
        let (value, duplicates) = read(body).unwrap_or_else(|| {
            panic!(
                "the upstream received a line that is not JSON: {}",
                show(line)
            )
        });
        assert!(
            is_canonical(&value, body, &mut self.scratch),
            "the upstream received a non-canonical line: {}",
            show(line)
        );
        let m = message_of(value, duplicates)
            .unwrap_or_else(|_| panic!("the upstream received an invalid message: {}", show(line)));
        let method = m.get("method").and_then(Value::as_str);
        let is_call = method == Some("tools/call");
        assert_eq!(
            is_call,
            with_intent,
            "a tools/call reaches the upstream with its intent, and only one does: {}",
            show(line)
        );
        assert!(
            !(is_call && self.journal_failed),
            "a tools/call reached the upstream after the journal failed: {}",
            show(line)
        );
        match (method, m.get("id")) {
            (Some("notifications/cancelled"), None) => self.judge_cancel(&m, line),
            (Some(_), id) => {
                if let Some(id) = id {
                    let n = id.as_i64().unwrap_or_else(|| {
                        panic!("the upstream received a string id: {}", show(line))
                    });
                    assert!(
                        self.upstream_ids_received.insert(n),
                        "the upstream received id {n} twice"
                    );
                }
                let Some(index) = self.frame_asking(&m) else {
                    panic!(
                        "the upstream received a message no valid client frame asked for: {}",
                        show(line)
                    );
                };
                let client = &self.client_sent[index];
                if let Some(invalid) = self.invalid_line {
                    assert!(
                        self.client_sent_lines[index] < invalid,
                        "the client frame on line {} reached the upstream, after the invalid line {invalid}: {}",
                        self.client_sent_lines[index],
                        show(line)
                    );
                }
                if self.forwarded.insert(index)
                    && let (Some(_), Some(method)) = (client.get("id"), method)
                {
                    *self
                        .forwarded_by_method
                        .entry(method.to_owned())
                        .or_insert(0) += 1;
                }
                if let Some(n) = id.and_then(Value::as_i64) {
                    self.flights.went_up(n, client["id"].clone(), self.now);
                }
                if method == Some("tools/call") {
                    self.judge_call(client, line);
                }
            }
            (None, Some(id)) => {
                let key = id.to_string();
                let asked = self.upstream_requests.get(&key).copied().unwrap_or(0);
                assert!(
                    asked > 0,
                    "the upstream received an answer to a request it never sent: {}",
                    show(line)
                );
                let count = self.upstream_answer_count.entry(key.clone()).or_default();
                *count += 1;
                assert!(
                    *count <= asked,
                    "the upstream received {count} answers for {id}, which it asked {asked} time(s)"
                );
                assert!(
                    !self.upstream_cancelled.contains(&key),
                    "the upstream received an answer to {id}, which it had cancelled: {}",
                    show(line)
                );
                self.upstream_answered.insert(key.clone());
                let code = m
                    .get("error")
                    .and_then(|e| e.get("code"))
                    .and_then(Value::as_i64);
                let ours = matches!(code, Some(-32601 | -32600 | -32603));
                if self.upstream_step {
                    // Refused as it was read: with -32603 only for want of
                    // room (the session is not closing, and a harness session
                    // is far from the wrapper's 100,000 request ids).
                    if code == Some(-32603) && self.invalid_line.is_none() {
                        self.asks.assert_full(&key);
                    }
                } else {
                    self.asks.answer_went_up(&without(&m, &["id"]));
                }
                if ours {
                    self.step_refused.insert(key);
                }
                let before_invalid = |at: &u64| self.invalid_line.is_none_or(|i| *at < i);
                assert!(
                    ours || self
                        .client_sent
                        .iter()
                        .zip(&self.client_sent_lines)
                        .any(|(c, at)| before_invalid(at)
                            && c.contains_key("id")
                            && !c.contains_key("method")
                            && same_but_id(c, &m)),
                    "the upstream received an answer the client never gave (before any invalid line): {}",
                    show(line)
                );
            }
            (None, None) => panic!(
                "the upstream received an error without an id: {}",
                show(line)
            ),
        }
    }

    /// A cancellation the upstream received. Of a request in flight, it is
    /// the client's cancellation of that very request (its id for it),
    /// under the upstream id it went up with; of any other, the wrapper's
    /// own, for a request it has just answered.
    fn judge_cancel(&mut self, m: &Map<String, Value>, line: &[u8]) {
        let target = m
            .get("params")
            .and_then(|p| p.get("requestId"))
            .and_then(Value::as_i64);
        let Some(target) = target.filter(|n| self.upstream_ids_received.contains(n)) else {
            panic!(
                "the upstream was told to cancel a request it never received: {}",
                show(line)
            );
        };
        let params = cancel_params(m);
        if let Some(flight) = self.flights.cancelled(target) {
            let from_client = self.client_sent.iter().any(|c| {
                c.get("method") == Some(&Value::from("notifications/cancelled"))
                    && c.get("params")
                        .and_then(|p| p.get("requestId"))
                        .is_some_and(|id| *id == flight.client_id)
                    && cancel_params(c) == params
            });
            assert!(
                from_client,
                "the upstream was told to cancel {target} (the client's {}), which the client never cancelled: {}",
                flight.client_id,
                show(line)
            );
            return;
        }
        let reason = params.as_ref().and_then(|p| p.get("reason"));
        let timed_out = reason == Some(&Value::from("timed out"));
        let closing =
            self.invalid_line.is_some() && reason == Some(&Value::from("the session is closing"));
        let ended_here = self.ended_here.remove(&target);
        assert!(
            (timed_out || closing) && ended_here.is_some(),
            "the upstream was told to cancel {target}, not in flight, and not a request the wrapper just answered for want of time: {}",
            show(line)
        );
        if timed_out && let (Some(now), Some(Some(since))) = (self.now, ended_here) {
            assert!(
                since.saturating_add(REQUEST_TIMEOUT_MS) <= now,
                "the upstream was told {target} timed out at {now} ms, though it went up at {since} ms and its time limit is {REQUEST_TIMEOUT_MS} ms: {}",
                show(line)
            );
        }
    }

    fn judge_call(&self, client: &Map<String, Value>, line: &[u8]) {
        let params = &client["params"];
        let name = params["name"].as_str().expect("a tools/call names a tool");
        let Some(shown) = self.first_shown.get(name) else {
            panic!(
                "tools/call {name:?} reached the upstream but the client was never shown it: {}",
                show(line)
            );
        };
        if let Some(latest) = self.latest.get(name) {
            assert!(
                self.trust.matches_pin(latest),
                "tools/call {name:?} reached the upstream though its latest listing does not match its pin (rug pull): {}",
                show(line)
            );
        }
        let schema = &shown["inputSchema"];
        let arguments = params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let valid = accepts(schema, &arguments);
        assert!(
            valid,
            "tools/call {name:?} reached the upstream with arguments outside its schema: {}",
            show(line)
        );
    }

    /// Judge one line the client received.
    pub(crate) fn client_received(&mut self, line: &[u8]) {
        assert!(
            !self.final_written,
            "a line after the error frame for the invalid frame: {}",
            show(line)
        );
        assert_eq!(
            line.iter().filter(|&&b| b == b'\n').count(),
            1,
            "one newline per line: {}",
            show(line)
        );
        let body = line
            .strip_suffix(b"\n")
            .expect("a line to the client ends with a newline");
        let (value, duplicates) = read(body).unwrap_or_else(|| {
            panic!(
                "the client received a line that is not JSON: {}",
                show(line)
            )
        });
        assert!(
            is_canonical(&value, body, &mut self.scratch),
            "non-canonical line to the client: {}",
            show(line)
        );
        assert!(
            value.get("id") != Some(&Value::Null),
            "\"id\": null reached the client: {}",
            show(line)
        );
        let m = message_of(value, duplicates)
            .unwrap_or_else(|_| panic!("the client received an invalid message: {}", show(line)));
        let method = m.get("method").and_then(Value::as_str);
        match (method, m.get("id")) {
            (None, Some(id)) if !self.client_requests.contains_key(&id.to_string()) => {
                self.refusal_answered(&m, &id.to_string(), line);
            }
            (None, Some(id)) => {
                let asked = self
                    .client_requests
                    .get_mut(&id.to_string())
                    .unwrap_or_else(|| {
                        panic!(
                            "the client received an answer to a request it never sent: {}",
                            show(line)
                        )
                    });
                assert!(
                    !asked.answered,
                    "the client received a second answer for id {id}: {}",
                    show(line)
                );
                asked.answered = true;
                let asked = *asked;
                let asked_on = asked.line;
                self.request_ended(&m, &asked, id);
                let held_back = asked.call
                    && !self.forwarded.contains(&asked.index)
                    && self.told_after_line.is_some_and(|told| asked_on > told);
                let owed = self.denial_owed.remove(&id.to_string());
                if !self.forwarded.contains(&asked.index)
                    && m.get("result").is_some_and(is_journal_denial)
                {
                    self.journal_denials += 1;
                }
                if owed || (held_back && m.contains_key("result")) {
                    assert!(
                        m.get("result").is_some_and(is_journal_denial),
                        "a call not forwarded after the journal failed was answered with other than the denial: {}",
                        show(line)
                    );
                }
                self.line_answered(asked_on, &format!("the request {id}"), line);
                let listing =
                    self.client_sent[asked.index].get("method") == Some(&Value::from("tools/list"));
                self.judge_answer(&m, listing, line);
            }
            (None, None) => {
                assert!(
                    m.contains_key("error"),
                    "a result without an id: {}",
                    show(line)
                );
                let invalid = self.invalid_line.unwrap_or_else(|| {
                    panic!(
                        "an error without an id, and no frame was refused under close: {}",
                        show(line)
                    )
                });
                self.invalid_answered(invalid, line);
            }
            (Some(_), Some(id)) => {
                self.step_forwarded += 1;
                self.asks.asked(id.as_i64().unwrap_or_else(|| {
                    panic!("the client was asked under a string id: {}", show(line))
                }));
                assert!(
                    self.client_asked.insert(id.to_string()),
                    "the client was asked twice with id {id}"
                );
                assert!(
                    self.upstream_sent
                        .iter()
                        .any(|u| u.contains_key("id") && same_but_id(u, &m)),
                    "the client received a request the upstream never sent: {}",
                    show(line)
                );
            }
            (Some(method), None) => {
                if method == "notifications/cancelled"
                    && let Some(id) = m.get("params").and_then(|p| p.get("requestId"))
                    && self.client_asked.contains(&id.to_string())
                {
                    self.told_cancelled
                        .insert(id.to_string(), self.told_cancelled_count);
                    self.told_cancelled_count += 1;
                    if let Some(n) = id.as_i64() {
                        self.asks.cancelled(n);
                    }
                }
                let from_upstream = self.upstream_sent.iter().any(|u| {
                    !u.contains_key("id")
                        && u.get("method") == Some(&Value::from(method))
                        && if method == "notifications/cancelled" {
                            cancel_params(u) == cancel_params(&m)
                        } else {
                            u.get("params") == m.get("params")
                        }
                });
                assert!(
                    from_upstream,
                    "the client received a notification the upstream never sent: {}",
                    show(line)
                );
            }
        }
    }

    /// The client received `m`, the answer to its request `asked` (id
    /// `key`): a request in flight has ended; one never forwarded was
    /// answered by the wrapper, and with -32603 only for want of room.
    fn request_ended(&mut self, m: &Map<String, Value>, asked: &Asked, key: &Value) {
        let code = m
            .get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_i64);
        if let Some((upstream_id, flight)) = self.flights.answered(key) {
            if code == Some(-32603) {
                self.ended_here.insert(upstream_id, flight.since);
            }
            return;
        }
        let index = asked.index;
        if self.forwarded.contains(&index) || self.withheld.contains(&index) {
            return;
        }
        self.answered_here.insert(index);
        if code == Some(-32603) && !self.refused_lines.contains(&asked.line) {
            let taken_back = self.calls_taken_back_before(asked.line);
            assert!(
                self.flights.len() + taken_back >= self.flights.cap(),
                "the request {key} on line {} was refused with -32603 while {} requests were in flight (the cap is {})",
                asked.line,
                self.flights.len() + taken_back,
                self.flights.cap()
            );
        }
    }

    /// Calls of the client's latest read before `line` that may have taken
    /// room and been taken back since, unseen: a call not forwarded, held
    /// back, refused or answered, cancelled later in the same read.
    fn calls_taken_back_before(&self, line: u64) -> usize {
        let in_read = |at: u64| at >= self.read_from && at <= self.client_line;
        let cancelled: HashSet<String> = self
            .client_sent
            .iter()
            .zip(&self.client_sent_lines)
            .filter(|(c, at)| {
                in_read(**at) && c.get("method") == Some(&Value::from("notifications/cancelled"))
            })
            .filter_map(|(c, _)| c.get("params")?.get("requestId").map(Value::to_string))
            .collect();
        (0..self.client_sent.len())
            .filter(|i| {
                let (c, at) = (&self.client_sent[*i], self.client_sent_lines[*i]);
                in_read(at)
                    && at < line
                    && c.get("method") == Some(&Value::from("tools/call"))
                    && c.get("id")
                        .is_some_and(|id| cancelled.contains(&id.to_string()))
                    && !self.forwarded.contains(i)
                    && !self.withheld.contains(i)
                    && !self.answered_here.contains(i)
                    && !self.refused_lines.contains(&at)
            })
            .count()
    }

    /// The error frame for the invalid frame on `invalid`: it comes after
    /// every request before it is answered, and nothing comes after it.
    /// The client received `m`, an answer under `id`, which no request of
    /// the client's carries: it must be the error for a refused line with
    /// that id, the first answer under it.
    fn refusal_answered(&mut self, m: &Map<String, Value>, id: &str, line: &[u8]) {
        let refused = self
            .refused_lines
            .iter()
            .filter(|l| self.invalid_ids.get(l).is_some_and(|i| i == id))
            .min()
            .copied()
            .unwrap_or_else(|| {
                panic!(
                    "the client received an answer to a request it never sent: {}",
                    show(line)
                )
            });
        assert!(
            m.contains_key("error") && !m.contains_key("result"),
            "a refused line was answered with other than an error: {}",
            show(line)
        );
        assert!(
            self.echoed_ids.insert(id.to_owned()),
            "the client received a second answer for id {id}: {}",
            show(line)
        );
        self.line_answered(refused, "the refused line", line);
    }

    /// Under close, a client line is answered only up to the invalid
    /// line, and the answer to the invalid line itself is the last.
    fn line_answered(&mut self, on: u64, what: &str, line: &[u8]) {
        if let Some(invalid) = self.invalid_line {
            assert!(
                on <= invalid,
                "{what} on line {on}, after the invalid line {invalid}, was answered: {}",
                show(line)
            );
            if on == invalid {
                self.invalid_answered(invalid, line);
            }
        }
    }

    fn invalid_answered(&mut self, invalid: u64, line: &[u8]) {
        self.assert_answered_before(
            invalid,
            &format!("when the invalid frame was answered ({})", show(line)),
        );
        self.final_written = true;
    }

    /// Judge an answer the client received; `listing` when it answers a
    /// `tools/list`.
    fn judge_answer(&mut self, m: &Map<String, Value>, listing: bool, line: &[u8]) {
        if listing
            && let Some(tools) = m
                .get("result")
                .and_then(|r| r.get("tools"))
                .and_then(Value::as_array)
        {
            let complete = !m["result"]
                .as_object()
                .is_some_and(|r| r.contains_key("nextCursor"));
            self.trust.shown(tools, complete, &show(line));
        }
        let sent = &self.upstream_sent;
        let answers = |key: &'static str| {
            sent.iter()
                .filter(|u| u.contains_key("id") && !u.contains_key("method"))
                .filter_map(move |u| u.get(key))
        };
        if let Some(error) = m.get("error") {
            let code = error
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or_default();
            let ours = matches!(code, -32700 | -32603 | -32602 | -32601 | -32600 | -32022);
            assert!(
                ours || answers("error").any(|e| e == error),
                "an error neither ours nor the upstream's: {}",
                show(line)
            );
            return;
        }
        let result = &m["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        if result["isError"] == true
            && (text.starts_with("denied:") || text.starts_with("arguments do not match"))
        {
            return;
        }
        if let Some(tools) = result.get("tools").and_then(Value::as_array) {
            let listed = answers("result").any(|r| {
                let upstream = r.get("tools").and_then(Value::as_array);
                upstream.is_some_and(|u| tools.iter().all(|t| u.contains(t)))
            });
            assert!(
                listed,
                "a tools/list answer with tools the upstream never listed: {}",
                show(line)
            );
            let tools = tools.clone();
            for tool in &tools {
                let name = tool["name"].as_str().unwrap_or_default().to_owned();
                self.first_shown.entry(name).or_insert_with(|| tool.clone());
            }
            return;
        }
        assert!(
            answers("result").any(|r| r == result),
            "a result the upstream never sent: {}",
            show(line)
        );
    }
}

/// The tool error every call gets once the journal failed.
/// Whether `schema`, compiled by `jsonschema` itself, accepts `arguments`
/// (an uncompilable schema accepts nothing). Compilations of short schemas
/// are kept on the thread for the sessions that follow: a handful of
/// schemas come back in every session, and compiling one cost more than
/// the rest of judging the call.
fn accepts(schema: &Value, arguments: &Value) -> bool {
    use std::cell::RefCell;
    use std::rc::Rc;
    const MAX_KEPT_TEXT: usize = 512;
    const MAX_KEPT: usize = 16;
    thread_local! {
        static KEPT: RefCell<HashMap<String, Option<Rc<jsonschema::Validator>>>> =
            RefCell::new(HashMap::new());
    }
    let text = schema.to_string();
    if text.len() > MAX_KEPT_TEXT {
        return jsonschema::validator_for(schema).is_ok_and(|v| v.is_valid(arguments));
    }
    let validator = KEPT.with_borrow_mut(|kept| {
        if let Some(v) = kept.get(&text) {
            return v.clone();
        }
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        let v = jsonschema::validator_for(schema).ok().map(Rc::new);
        kept.insert(text, v.clone());
        v
    });
    validator.is_some_and(|v| v.is_valid(arguments))
}

fn is_journal_denial(result: &Value) -> bool {
    result.get("isError") == Some(&Value::Bool(true))
        && result
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.len() == 1
                    && c[0].get("type") == Some(&Value::from("text"))
                    && c[0].get("text") == Some(&Value::from(JOURNAL_DENIAL))
            })
}

/// Whether `line` is the canonical line of `value`: the JSON-RPC members
/// in the order the specification lists them, each value compact with
/// sorted keys. Written into `out`, a buffer kept between lines.
fn is_canonical(value: &Value, line: &[u8], out: &mut Vec<u8>) -> bool {
    write_canonical(value, out);
    out.as_slice() == line
}

/// The canonical line of `value`, as [`is_canonical`] writes it.
#[cfg(test)]
fn canonical(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    const ORDER: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];
    // Each member put in its place in one pass over the object, rather than
    // looked up six times.
    let mut placed: [Option<&Value>; 6] = [None; 6];
    for (key, v) in value.as_object().into_iter().flatten() {
        if let Some(at) = ORDER.iter().position(|k| k == key) {
            placed[at] = Some(v);
        }
    }
    out.clear();
    out.push(b'{');
    for (key, v) in ORDER.iter().zip(placed) {
        if let Some(v) = v {
            if out.len() > 1 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"\":");
            serde_json::to_writer(&mut *out, v).expect("a Value serializes");
        }
    }
    out.push(b'}');
}

fn show(line: &[u8]) -> String {
    portcullis_wire::transcript::render_bytes(line)
}
