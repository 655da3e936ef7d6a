//! The `wrap_session` harness: arbitrary client bytes interleaved with
//! arbitrary upstream bytes (from a recording fake upstream that answers
//! what it received), clock ticks and ends of input, through the sans-IO
//! wrap core under both session policies. The properties, judged by
//! [`oracle`] (which shares no code with the core):
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
//! - memory stays bounded: buffered bytes by the frame cap, id tables and
//!   the memory of requests that ended unanswered by the in-flight cap,
//!   kept schemas by twice the frame cap, whatever the session's length.

pub mod ops;
pub mod oracle;

use arbitrary::Unstructured;
use portcullis_gateway::OnInvalid;
use portcullis_wrap::{AuditRecord, Config, Counters, Effect, End, Wrap};
use serde_json::Value;

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

/// The harness.
pub fn wrap_session(data: &[u8]) {
    let Ok(ops) = ops::ops(&mut Unstructured::new(data)) else {
        return;
    };
    for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
        run(&ops, mode);
    }
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
}

/// What a run carries between steps.
struct Run {
    mode: OnInvalid,
    oracle: Oracle,
    upstream: FakeUpstream,
    client_stdout: Vec<u8>,
    upstream_input_open: bool,
    /// The upstream's last write left a line unfinished.
    upstream_mid_line: bool,
    client_ended: bool,
    closed: bool,
    reached: Reached,
}

impl Run {
    fn take(&mut self, effects: Vec<Effect>) {
        let mode = self.mode;
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
                    let sent: Value = serde_json::from_slice(line.as_bytes()).unwrap_or_default();
                    if sent["method"] == "tools/call" {
                        self.reached.calls_forwarded += 1;
                    }
                    assert!(
                        self.upstream_input_open,
                        "{mode:?}: a write to the upstream after its input was closed"
                    );
                    self.oracle.upstream_received(line.as_bytes());
                    self.upstream.receive(line.as_bytes());
                }
                Effect::EndUpstreamInput => self.upstream_input_open = false,
                Effect::Audit(AuditRecord::ClientRejected { line, .. }) => {
                    self.oracle.client_refused(line);
                }
                Effect::Close(end) => {
                    match end {
                        End::UpstreamExited { .. } => self.reached.upstream_exited = true,
                        End::ClientInvalid { line, .. } => {
                            self.oracle.closed_on_invalid(line);
                            self.reached.closed_on_invalid = Some(line);
                        }
                        End::Finished => {}
                    }
                    self.closed = true;
                }
                Effect::Quarantine(_)
                | Effect::Audit(_)
                | Effect::Notice(_)
                | Effect::PinsChanged(_) => {}
            }
        }
    }
}

/// Run `ops` under `mode`, asserting every property; then move the clock
/// past every deadline and judge that no one is left waiting.
pub fn run(ops: &[Op], mode: OnInvalid) -> Reached {
    let mut config = Config::default();
    config.limits.max_frame_bytes = MAX_FRAME_BYTES;
    config.on_invalid = mode;
    config.max_in_flight = MAX_IN_FLIGHT;
    config.request_timeout_ms = REQUEST_TIMEOUT_MS;
    config.grace_ms = GRACE_MS;
    let mut wrap = Wrap::new(config);
    let mut run = Run {
        mode,
        oracle: Oracle::new(MAX_FRAME_BYTES, MAX_IN_FLIGHT, mode == OnInvalid::Close),
        upstream: FakeUpstream::default(),
        client_stdout: Vec::new(),
        upstream_input_open: true,
        upstream_mid_line: false,
        client_ended: false,
        closed: false,
        reached: Reached::default(),
    };
    let mut now = 0u64;
    for op in ops {
        match op {
            Op::Client(bytes) => {
                if !run.client_ended {
                    run.oracle.client_wrote(bytes);
                }
                let effects = wrap.from_client(bytes, now);
                run.take(effects);
            }
            Op::Upstream(write) => {
                let bytes = run.upstream.bytes(write);
                let effects = wrap.from_upstream(&bytes, now);
                run.oracle.upstream_wrote(&bytes, answers_a_list(&effects));
                run.oracle.step_begins();
                // A request judged alone: one that finishes a line begun
                // earlier is not one message.
                let judged = !run.closed && run.upstream_input_open && !run.upstream_mid_line;
                if !bytes.is_empty() {
                    run.upstream_mid_line = !bytes.ends_with(b"\n");
                }
                run.take(effects);
                if let UpstreamWrite::Request { id, .. } = write
                    && judged
                    && (id.is_string() || id.is_i64())
                {
                    run.oracle.assert_request_settled(id);
                }
            }
            Op::Tick(ms) => {
                now += u64::from(*ms);
                run.take(wrap.tick(now));
            }
            Op::ClientEof => {
                run.client_ended = true;
                run.take(wrap.client_eof(now));
            }
            Op::UpstreamEof => run.take(wrap.upstream_eof(now)),
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
    }
    let counters = wrap.counters().clone();
    run.take(wrap.tick(now.saturating_add(PAST_EVERY_DEADLINE_MS)));
    run.oracle.finish();
    assert!(
        mode == OnInvalid::KeepOpen || !wrap.is_draining(),
        "{mode:?}: still closing after its grace period"
    );
    if let Err(v) = portcullis_wire::check_transcript(&run.client_stdout) {
        panic!("{mode:?}: {v}");
    }
    let mut reached = run.reached;
    reached.counters = counters;
    reached.calls_denied = usize::try_from(reached.counters.calls_denied).unwrap_or(usize::MAX);
    reached
}

fn answers_a_list(effects: &[Effect]) -> bool {
    effects.iter().any(|e| match e {
        Effect::ToClient(line) => serde_json::from_slice::<serde_json::Value>(line.as_bytes())
            .is_ok_and(|v| v["result"]["tools"].is_array()),
        _ => false,
    })
}
