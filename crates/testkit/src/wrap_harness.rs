//! The `wrap_session` harness: arbitrary client bytes interleaved with
//! arbitrary upstream bytes (from a recording fake upstream that answers
//! what it received), clock ticks and ends of input, through the sans-IO
//! wrap core under the session policy the input's fourth-last byte
//! chooses ([`mode_of`]; the fuzzer steers it like any other byte, and a
//! replay runs both). The properties, judged by [`oracle`] (which shares no
//! code with the core):
//!
//! - every line the upstream receives is the canonical encoding of a
//!   client frame valid by the oracle's own reading (ids aside), never
//!   sent twice; a `tools/call` only for a tool the client was shown,
//!   whose latest listing still matches what was shown first, with
//!   arguments its schema accepts; an answer only to a request the
//!   upstream sent, once;
//! - the client's stdout is strictly framed (and passes the transcript
//!   checker), never carries `"id": null`, and each response answers
//!   exactly one earlier client request;
//! - no upstream byte outside a valid frame reaches the client: whatever
//!   the client receives that the wrapper did not write itself equals a
//!   valid upstream message (ids aside; a tools list a subset of one);
//! - under `on_invalid = "close"` the first invalid client frame is a
//!   GOAWAY: nothing from its line on reaches the upstream, every request
//!   before it is answered exactly once, then comes its error frame, last;
//! - a client answer to a request the upstream cancelled is dropped, never
//!   refused, and the upstream never receives an answer to a request it
//!   cancelled; each upstream request is forwarded to the client or
//!   answered with an error, in the step that brought it;
//! - nothing is written after the session's end, and once the clock passes
//!   every deadline (the harness ends each run so), every client request
//!   that reached the upstream has been answered;
//! - the in-flight caps hold exactly, in both directions: a client request
//!   over the cap is refused, never forwarded, and an upstream request over
//!   it is answered with an error, never shown; a cancellation reaches the
//!   upstream only for a request it has in flight, under the id that
//!   request went up with (never the client's own);
//! - trust: every tool shown matches its pin; a pinned tool is callable
//!   only once this session's listing has shown it; trust on first use
//!   pins the first complete listing and then closes. Keep-open runs start
//!   with no pins file, with a pins file, or with a pins file and a policy
//!   allowlist, as the input's third-last byte chooses;
//! - at each clock tick, no client request is still in flight past its
//!   time limit;
//! - memory stays bounded: buffered bytes by the frame cap, id tables and
//!   the memory of requests that ended unanswered by the in-flight cap,
//!   kept schemas by twice the frame cap, whatever the session's length;
//! - the audit trail ([`journal`]): each `tools/call` goes up with its
//!   intent (its id, tool and arguments hash as the oracle computes them),
//!   each intent gets exactly one outcome, quarantine and drop records and
//!   the lines shown on stderr stay within a few per interval; and with the
//!   journal failing at a point the input chooses (its first record, an
//!   intent, any later record), the session fails closed: no `tools/call`
//!   reaches the upstream after it, and the calls are answered with the
//!   denial.
//!
//! The harness plays the driver: it "writes" each record to a journal that
//! fails at the chosen point and stays failed, forwards a call's line only
//! once its intent was written, and tells the core of a failure as the
//! driver does.

pub mod journal;
pub mod ops;
pub mod oracle;
pub mod schemas;

use std::sync::LazyLock;

use arbitrary::Unstructured;
use portcullis_gateway::OnInvalid;
use portcullis_wrap::{AuditRecord, Config, Counters, Effect, End, Wrap};

use self::journal::{FloodRecord, JournalOracle};
use self::ops::{FakeUpstream, Op, UpstreamWrite};
use self::oracle::Oracle;

/// Frame cap in the harness: small, so over-long lines are cheap to reach.
pub const MAX_FRAME_BYTES: usize = 2048;
/// In-flight cap in the harness.
pub const MAX_IN_FLIGHT: usize = 4;
/// Per-request time limit in the harness, in ms.
pub const REQUEST_TIMEOUT_MS: u64 = 30_000;
/// After an invalid frame, the upstream's time to answer, in ms.
pub const GRACE_MS: u64 = 5_000;
/// The tick that ends every run: past every deadline.
const PAST_EVERY_DEADLINE_MS: u64 = 1 << 40;

/// The harness the fuzz target runs: one session, under the policy the
/// input chooses. One session per execution, rather than both policies in
/// turn, halves an execution's cost and lets libFuzzer keep an input for
/// what it reaches under its own policy.
pub fn wrap_session(data: &[u8]) {
    let Ok(ops) = ops::ops(&mut Unstructured::new(data)) else {
        return;
    };
    session_under(data, &ops, mode_of(data));
}

/// The harness under both policies in turn: what a replay of a corpus or
/// regression input runs, so an input found under one policy is still
/// judged under it, whatever byte chose it then.
pub fn wrap_session_both_modes(data: &[u8]) {
    let Ok(ops) = ops::ops(&mut Unstructured::new(data)) else {
        return;
    };
    for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
        session_under(data, &ops, mode);
    }
}

/// The session policy of an input's fuzzed run, as its fourth-last byte
/// chooses (an input shorter than that closes on invalid frames).
pub fn mode_of(data: &[u8]) -> OnInvalid {
    match data.len().checked_sub(4).and_then(|at| data.get(at)) {
        Some(b) if b & 1 == 1 => OnInvalid::KeepOpen,
        _ => OnInvalid::Close,
    }
}

/// One session of `ops` under `mode`: the journal fails where the input
/// says for that policy, and a keep-open run starts with the trust it
/// chooses.
fn session_under(data: &[u8], ops: &[Op], mode: OnInvalid) {
    let (nth, trust) = match mode {
        OnInvalid::Close => (0, Trust::FirstUse),
        OnInvalid::KeepOpen => (1, trust_of(data)),
    };
    run_trusting(ops, mode, journal_fails_at(data, nth), trust);
}

/// What a session starts trusting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// No pins file: the first complete listing is pinned.
    FirstUse,
    /// A pins file holding `echo` (the first of [`ops::tool_defs`]) and
    /// `add`.
    PinsFile,
    /// A pins file holding `echo`, and the policy's `[wrap] tools`
    /// allowing `add`.
    PinsFileAndAllowlist,
}

/// The trust of an input's keep-open run, as its third-last byte chooses.
pub fn trust_of(data: &[u8]) -> Trust {
    match data
        .len()
        .checked_sub(3)
        .and_then(|at| data.get(at))
        .map(|b| b % 3)
    {
        Some(1) => Trust::PinsFile,
        Some(2) => Trust::PinsFileAndAllowlist,
        _ => Trust::FirstUse,
    }
}

/// The pins file a session trusting `trust` starts with, made once for
/// each (every run of that trust reads it).
fn pins_of(trust: Trust) -> &'static portcullis_wrap::Pins {
    static PINS: LazyLock<[portcullis_wrap::Pins; 2]> = LazyLock::new(|| {
        let defs = ops::tool_defs();
        let pins = |tools: &[&serde_json::Value]| {
            tools
                .iter()
                .filter_map(|d| {
                    Some((
                        d["name"].as_str()?.to_owned(),
                        portcullis_wrap::Pin::of(d.as_object()?),
                    ))
                })
                .collect()
        };
        [pins(&[&defs[0], &defs[3]]), pins(&[&defs[0]])]
    });
    &PINS[usize::from(trust == Trust::PinsFileAndAllowlist)]
}

/// Where the journal fails in the `nth` run of an input, as its bytes
/// choose: a quarter of the values of one of its last two bytes name a
/// write (0: the session's first record, then each record and intent in
/// turn); the others none. The ops are decoded from the same bytes, so the
/// failure point moves with them without shifting how any seed decodes.
pub fn journal_fails_at(data: &[u8], nth: usize) -> Option<usize> {
    let byte = *data
        .len()
        .checked_sub(1 + nth)
        .and_then(|at| data.get(at))?;
    (byte & 0b11 == 0).then_some(usize::from(byte >> 2) % 24)
}

/// What a run reached, for tests that check the corpus goes deep.
#[derive(Debug, Clone, Default)]
pub struct Reached {
    /// The core's counters at the end.
    pub counters: Counters,
    /// `tools/call` lines the upstream received.
    pub calls_forwarded: usize,
    /// Tool errors the wrapper wrote for denied calls.
    pub calls_denied: usize,
    /// Whether the session ended with the upstream gone.
    pub upstream_exited: bool,
    /// The client line whose invalid frame closed the session (once the
    /// run's last tick passed every deadline).
    pub closed_on_invalid: Option<u64>,
    /// Lines the client received (the run's last tick included).
    pub client_lines: usize,
    /// Intents the core gave with its calls (recorded or not).
    pub intents: usize,
    /// Outcome records.
    pub outcomes: usize,
    /// Audit records (quarantines and drops aggregated as they are).
    pub records: usize,
    /// Whether the journal failed.
    pub journal_failed: bool,
}

/// What a run carries between steps.
struct Run {
    mode: OnInvalid,
    oracle: Oracle,
    audit: JournalOracle,
    /// Records written to the journal (the first is the session's start).
    journal_writes: usize,
    /// The write that fails; the journal stays failed after it.
    journal_fails_at: Option<usize>,
    journal_down: bool,
    /// The core was told: no step after may forward a call.
    core_told: bool,
    now: u64,
    upstream: FakeUpstream,
    client_stdout: Vec<u8>,
    upstream_input_open: bool,
    /// The upstream's last write left a line unfinished.
    upstream_mid_line: bool,
    client_ended: bool,
    closed: bool,
    reached: Reached,
    /// Lines the upstream received, and client frames refused (audit
    /// records): what the core's counters must say.
    upstream_received: u64,
    client_refused: u64,
    /// Newlines the client wrote, and those the upstream wrote while the
    /// session was open: every line ended while open is read once, and at
    /// most one more (an over-long line refused before its newline, or a
    /// last line without one) on top.
    client_newlines: u64,
    upstream_newlines_open: u64,
    /// Requests left unanswered when the upstream exited, by its record.
    upstream_unanswered: Option<usize>,
}

impl Run {
    /// Write one record to the journal: `false` once it has failed.
    fn journal_write(&mut self) -> bool {
        if self.journal_down {
            return false;
        }
        let nth = self.journal_writes;
        self.journal_writes += 1;
        if self.journal_fails_at == Some(nth) {
            self.journal_down = true;
            self.oracle.journal_failed();
            return false;
        }
        true
    }

    /// A journal write failed while a batch is carried out: noted, as the
    /// driver does, for `call` (an intent not recorded) always, for any
    /// other record once.
    fn journal_failed(&self, failed: &mut Vec<Option<i64>>, call: Option<i64>) {
        let told = self.core_told || !failed.is_empty();
        if call.is_some() || !told {
            failed.push(call);
        }
    }

    /// Tell the core of the failures noted in a batch, once the batch is
    /// carried out, as the driver does.
    fn tell_core(&mut self, wrap: &mut Wrap, failed: Vec<Option<i64>>) {
        for call in failed {
            self.core_told = true;
            self.oracle.journal_failure_told();
            let effects = wrap.journal_unavailable(call, self.now);
            self.take(wrap, effects);
        }
    }

    fn take(&mut self, wrap: &mut Wrap, effects: Vec<Effect>) {
        let mode = self.mode;
        let after_told = self.core_told;
        let mut failed = Vec::new();
        for effect in effects {
            assert!(
                !self.closed,
                "{mode:?}: an effect after the session's end: {effect:?}"
            );
            match effect {
                Effect::ToClient(line) => {
                    self.oracle.client_received(line.as_bytes());
                    self.client_stdout.extend_from_slice(line.as_bytes());
                    self.reached.client_lines += 1;
                }
                Effect::ToUpstream(line) => {
                    assert!(
                        self.upstream_input_open,
                        "{mode:?}: a write to the upstream after its input was closed"
                    );
                    self.oracle.upstream_received(line.as_bytes(), false);
                    self.upstream.receive(line.as_bytes());
                    self.upstream_received += 1;
                }
                Effect::ForwardCall { intent, line } => {
                    assert!(
                        !after_told,
                        "{mode:?}: a call forwarded after the core was told the journal failed: {intent:?}"
                    );
                    self.reached.intents += 1;
                    let recorded = self.journal_write();
                    self.audit.intent(&intent, line.as_bytes(), recorded);
                    if recorded {
                        self.reached.calls_forwarded += 1;
                        assert!(
                            self.upstream_input_open,
                            "{mode:?}: a write to the upstream after its input was closed"
                        );
                        self.oracle.upstream_received(line.as_bytes(), true);
                        self.upstream.receive(line.as_bytes());
                        self.upstream_received += 1;
                    } else {
                        self.oracle.call_withheld(line.as_bytes());
                        self.journal_failed(&mut failed, Some(intent.call));
                    }
                }
                Effect::EndUpstreamInput => {
                    assert!(
                        self.client_ended && self.upstream_input_open,
                        "{mode:?}: the upstream's input closed twice, or before the client's ended"
                    );
                    self.upstream_input_open = false;
                }
                Effect::Audit(record) => {
                    self.reached.records += 1;
                    self.judge_record(&record);
                    if !self.journal_write() {
                        self.journal_failed(&mut failed, None);
                    }
                }
                Effect::Close(end) => {
                    match end {
                        End::UpstreamExited { unanswered } => {
                            assert!(
                                !self.client_ended || unanswered > 0,
                                "{mode:?}: the upstream exited after the client's end with nothing unanswered, and the session did not finish"
                            );
                            self.reached.upstream_exited = true;
                        }
                        End::Finished => assert!(
                            self.client_ended && self.upstream_unanswered == Some(0),
                            "{mode:?}: finished before the client's end, or with requests unanswered ({:?})",
                            self.upstream_unanswered
                        ),
                        End::ClientInvalid { line, .. } => {
                            self.oracle.closed_on_invalid(line);
                            self.reached.closed_on_invalid = Some(line);
                        }
                    }
                    self.closed = true;
                }
                Effect::Quarantine(_) => self.audit.shown(self.now),
                Effect::Notice(_) | Effect::PinsChanged(_) => {}
            }
        }
        self.tell_core(wrap, failed);
    }

    /// The core's counters, which a user reads in the session's summary,
    /// say what the peers saw.
    fn counters_agree(&self, counters: &Counters) {
        let mode = self.mode;
        assert_eq!(
            counters.to_client, self.reached.client_lines as u64,
            "{mode:?}: lines to the client counted"
        );
        assert_eq!(
            counters.to_upstream, self.upstream_received,
            "{mode:?}: lines to the upstream counted"
        );
        assert_eq!(
            counters.client_rejected, self.client_refused,
            "{mode:?}: refused client frames counted"
        );
        assert_eq!(
            &counters.forwarded,
            self.oracle.forwarded_requests(),
            "{mode:?}: client requests forwarded counted by method"
        );
        let forwarded: u64 = counters.forwarded.values().sum();
        assert!(
            counters.client_frames >= forwarded + counters.client_rejected
                && counters.client_frames <= self.client_newlines + 1,
            "{mode:?}: {} client frames counted, {forwarded} forwarded, {} refused, {} newlines",
            counters.client_frames,
            counters.client_rejected,
            self.client_newlines
        );
        assert!(
            (self.upstream_newlines_open..=self.upstream_newlines_open + 1)
                .contains(&counters.upstream_lines),
            "{mode:?}: {} upstream lines counted, {} ended while open",
            counters.upstream_lines,
            self.upstream_newlines_open
        );
        assert_eq!(
            counters.journal_denials, self.oracle.journal_denials,
            "{mode:?}: calls denied for the journal counted"
        );
    }

    fn judge_record(&mut self, record: &AuditRecord) {
        let flood = match record {
            AuditRecord::ClientRejected { line, .. } => {
                self.client_refused += 1;
                self.oracle.client_refused(*line);
                None
            }
            AuditRecord::Outcome(outcome) => {
                self.audit.outcome(outcome);
                None
            }
            AuditRecord::UpstreamExited { unanswered } => {
                self.upstream_unanswered = Some(*unanswered);
                None
            }
            AuditRecord::Quarantined { .. }
            | AuditRecord::Dropped { .. }
            | AuditRecord::LateAnswer { .. } => {
                // Read from the record's JSON, as a journal reader would, in
                // one pass over its members.
                let json = record.to_json();
                let (mut kind, mut stage, mut why) = ("", "", "");
                let [
                    mut line,
                    mut last_line,
                    mut upstream_line,
                    mut last_upstream_line,
                ] = [None; 4];
                let mut count = 0;
                let mut upstream = false;
                for (key, value) in json.as_object().into_iter().flatten() {
                    let text = || value.as_str().unwrap_or_default();
                    match key.as_str() {
                        "kind" => kind = text(),
                        "stage" => stage = text(),
                        "why" => why = text(),
                        "line" => line = value.as_u64(),
                        "last_line" => last_line = value.as_u64(),
                        "upstream_line" => {
                            upstream = true;
                            upstream_line = value.as_u64();
                        }
                        "last_upstream_line" => last_upstream_line = value.as_u64(),
                        "count" => count = value.as_u64().unwrap_or_default(),
                        _ => {}
                    }
                }
                let (first, last) = if upstream {
                    (upstream_line, last_upstream_line)
                } else {
                    (line, last_line)
                };
                Some(FloodRecord {
                    key: format!("{kind}/{stage}{why}"),
                    first: first.unwrap_or_default(),
                    last: last.unwrap_or_default(),
                    count,
                })
            }
            _ => None,
        };
        if let Some(flood) = flood {
            self.audit.flood_record(&flood, self.now);
        }
    }
}

/// Run `ops` under `mode` with a journal that never fails, asserting
/// every property; then move the clock past every deadline and judge that
/// no one is left waiting.
pub fn run(ops: &[Op], mode: OnInvalid) -> Reached {
    run_with_journal(ops, mode, None)
}

/// [`run`], with the journal failing at its `journal_fails_at`th write
/// (0: the session's first record).
pub fn run_with_journal(ops: &[Op], mode: OnInvalid, journal_fails_at: Option<usize>) -> Reached {
    run_trusting(ops, mode, journal_fails_at, Trust::FirstUse)
}

/// [`run_with_journal`], the session starting with `trust`.
pub fn run_trusting(
    ops: &[Op],
    mode: OnInvalid,
    journal_fails_at: Option<usize>,
    trust: Trust,
) -> Reached {
    let defs = ops::tool_defs();
    let (pinned, allowed): (Vec<serde_json::Value>, Vec<&str>) = match trust {
        Trust::FirstUse => (Vec::new(), Vec::new()),
        Trust::PinsFile => (vec![defs[0].clone(), defs[3].clone()], Vec::new()),
        Trust::PinsFileAndAllowlist => (vec![defs[0].clone()], vec!["add"]),
    };
    let mut config = Config::default();
    if trust != Trust::FirstUse {
        config.pins = Some(pins_of(trust).clone());
    }
    if !allowed.is_empty() {
        config.allowed_tools = Some(allowed.iter().map(|n| (*n).to_owned()).collect());
    }
    config.limits.max_frame_bytes = MAX_FRAME_BYTES;
    config.on_invalid = mode;
    config.max_in_flight = MAX_IN_FLIGHT;
    config.request_timeout_ms = REQUEST_TIMEOUT_MS;
    config.grace_ms = GRACE_MS;
    config.compile_schema = schemas::compile;
    let mut wrap = Wrap::new(config);
    let mut run = Run {
        mode,
        oracle: Oracle::new(MAX_FRAME_BYTES, MAX_IN_FLIGHT, mode == OnInvalid::Close),
        audit: JournalOracle::new(REQUEST_TIMEOUT_MS),
        journal_writes: 0,
        journal_fails_at,
        journal_down: false,
        core_told: false,
        now: 0,
        upstream: FakeUpstream::default(),
        client_stdout: Vec::new(),
        upstream_input_open: true,
        upstream_mid_line: false,
        client_ended: false,
        closed: false,
        reached: Reached::default(),
        upstream_received: 0,
        client_refused: 0,
        client_newlines: 0,
        upstream_newlines_open: 0,
        upstream_unanswered: None,
    };
    if trust != Trust::FirstUse {
        run.oracle.held_to_pins(&pinned);
    }
    if !allowed.is_empty() {
        run.oracle.allowing(&allowed);
    }
    // The session's first record.
    if !run.journal_write() {
        run.tell_core(&mut wrap, vec![None]);
    }
    let mut now = 0u64;
    for op in ops {
        if let Op::Tick(ms) = op {
            run.oracle.clock(now + u64::from(*ms));
        } else {
            run.oracle.clock(now);
        }
        match op {
            // Once the session has ended no one reads either side: the
            // core still gets every write (it must write nothing more), the
            // oracle no longer judges them.
            Op::Client(bytes) => {
                run.client_newlines += newlines(bytes);
                if !run.client_ended && !run.closed {
                    run.oracle.client_wrote(bytes);
                }
                let effects = wrap.from_client(bytes, now);
                run.take(&mut wrap, effects);
            }
            Op::Upstream(write) => {
                let bytes = run.upstream.bytes(write);
                if !run.closed {
                    run.upstream_newlines_open += newlines(&bytes);
                }
                let effects = wrap.from_upstream(&bytes, now);
                if !run.closed {
                    run.oracle.upstream_wrote(&bytes, answers_a_list(&effects));
                }
                run.oracle.step_begins();
                // A request judged alone: one that finishes a line begun
                // earlier is not one message.
                let judged = !run.closed && run.upstream_input_open && !run.upstream_mid_line;
                if !bytes.is_empty() {
                    run.upstream_mid_line = !bytes.ends_with(b"\n");
                }
                run.take(&mut wrap, effects);
                if let UpstreamWrite::Request { id, .. } = write
                    && judged
                    && (id.is_string() || id.is_i64())
                {
                    run.oracle.assert_request_settled(id);
                }
            }
            Op::Tick(ms) => {
                now += u64::from(*ms);
                run.now = now;
                let effects = wrap.tick(now);
                run.take(&mut wrap, effects);
                run.oracle.ticked();
            }
            Op::ClientEof => {
                run.client_ended = true;
                let effects = wrap.client_eof(now);
                run.take(&mut wrap, effects);
            }
            Op::UpstreamEof => {
                let effects = wrap.upstream_eof(now);
                run.take(&mut wrap, effects);
            }
        }
        assert!(
            wrap.buffered() <= 2 * (MAX_FRAME_BYTES + 1),
            "{mode:?}: {} bytes buffered",
            wrap.buffered()
        );
        assert!(
            wrap.schema_bytes() <= 2 * MAX_FRAME_BYTES,
            "{mode:?}: {} schema bytes kept",
            wrap.schema_bytes()
        );
        assert!(
            wrap.id_entries() <= 4 * MAX_IN_FLIGHT,
            "{mode:?}: {} id entries",
            wrap.id_entries()
        );
        run.counters_agree(wrap.counters());
    }
    let counters = wrap.counters().clone();
    let end = now.saturating_add(PAST_EVERY_DEADLINE_MS);
    run.now = end;
    run.oracle.clock(end);
    let effects = wrap.tick(end);
    run.take(&mut wrap, effects);
    run.oracle.ticked();
    run.oracle.finish();
    // The driver's end: only records and notices, and every intent settled.
    let last = wrap.finish(end);
    assert!(
        last.iter()
            .all(|e| matches!(e, Effect::Audit(_) | Effect::Notice(_))),
        "{mode:?}: the driver's end wrote to a peer: {last:?}"
    );
    run.take(&mut wrap, last);
    run.audit.finish();
    assert!(
        mode == OnInvalid::KeepOpen || !wrap.is_draining(),
        "{mode:?}: still closing after its grace period"
    );
    if let Err(v) = portcullis_wire::check_transcript(&run.client_stdout) {
        panic!("{mode:?}: {v}");
    }
    let mut reached = run.reached;
    reached.counters = counters;
    reached.outcomes = run.audit.outcomes;
    reached.journal_failed = run.journal_down;
    reached.calls_denied = usize::try_from(reached.counters.calls_denied).unwrap_or(usize::MAX);
    reached
}

fn newlines(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// Whether the wrapper answered a `tools/list` in `effects`: a line to the
/// client whose `result` has a `tools` array.
fn answers_a_list(effects: &[Effect]) -> bool {
    effects.iter().any(|e| match e {
        Effect::ToClient(line) => may_name_tools(line.as_bytes()) && lists_tools(line.as_bytes()),
        _ => false,
    })
}

/// A line without `tools` and without a `\u` escape cannot have a member
/// named `tools`; the others are read.
fn may_name_tools(line: &[u8]) -> bool {
    memchr::memmem::find(line, b"tools").is_some() || memchr::memmem::find(line, b"\\u").is_some()
}

fn lists_tools(line: &[u8]) -> bool {
    use serde::Deserialize;
    use serde::de::IgnoredAny;
    // Read without building the line's value; a line this shape does not
    // fit (a `result` or `tools` of another type, a repeated member) is
    // read whole.
    #[derive(Deserialize)]
    struct Answer {
        result: Option<Listing>,
    }
    #[derive(Deserialize)]
    struct Listing {
        tools: Option<Vec<IgnoredAny>>,
    }
    match serde_json::from_slice::<Answer>(line) {
        Ok(answer) => answer.result.is_some_and(|r| r.tools.is_some()),
        Err(_) => serde_json::from_slice::<serde_json::Value>(line)
            .is_ok_and(|v| v["result"]["tools"].is_array()),
    }
}

#[cfg(test)]
mod tests {
    use super::{lists_tools, may_name_tools};

    /// The cheap look at a line to the client never skips one that lists
    /// tools, however its key is spelled, and skips those that cannot.
    #[test]
    fn a_line_that_lists_tools_is_always_read() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"\u0074ools":[{"name":"echo"}]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"t\u006f\u006fl\u0073":[]}}"#,
        ] {
            assert!(
                may_name_tools(line.as_bytes()) && lists_tools(line.as_bytes()),
                "{line}"
            );
        }
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"to"}]}}"#,
        ] {
            assert!(!may_name_tools(line.as_bytes()), "{line}");
        }
        // Shapes the quick reading does not fit are read whole, and judged
        // as a value: only a `tools` array in a `result` object lists.
        for (line, lists) in [
            (r#"{"result":{"tools":[1,"x",{}]},"id":1}"#, true),
            (r#"{"result":{"tools":[],"tools":[]}}"#, true),
            (r#"{"result":{"tools":{}}}"#, false),
            (r#"{"result":{"tools":null}}"#, false),
            (r#"{"result":"tools"}"#, false),
            (r#"{"result":null,"tools":[]}"#, false),
            (r#"{"error":{"tools":[]}}"#, false),
            (r#"{"result":{"tools":[]}"#, false),
        ] {
            assert_eq!(lists_tools(line.as_bytes()), lists, "{line}");
        }
    }
}
