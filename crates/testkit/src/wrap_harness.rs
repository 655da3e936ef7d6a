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
//! - memory stays bounded: buffered bytes by the frame cap, id tables by
//!   the in-flight cap, kept schemas by twice the frame cap, whatever the
//!   session's length.

pub mod ops;
pub mod oracle;

use arbitrary::Unstructured;
use portcullis_gateway::OnInvalid;
use portcullis_wrap::{Config, Counters, Effect, End, Wrap};

use self::ops::{FakeUpstream, Op};
use self::oracle::Oracle;

/// Frame cap in the harness: small, so over-long lines are cheap to reach.
pub const MAX_FRAME_BYTES: usize = 2048;
/// In-flight cap in the harness.
pub const MAX_IN_FLIGHT: usize = 4;

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
}

/// Run `ops` under `mode`, asserting every property.
pub fn run(ops: &[Op], mode: OnInvalid) -> Reached {
    let mut reached = Reached::default();
    let mut config = Config::default();
    config.limits.max_frame_bytes = MAX_FRAME_BYTES;
    config.on_invalid = mode;
    config.max_in_flight = MAX_IN_FLIGHT;
    config.request_timeout_ms = 30_000;
    let mut wrap = Wrap::new(config);
    let mut oracle = Oracle::new(MAX_FRAME_BYTES);
    let mut upstream = FakeUpstream::default();
    let mut client_stdout = Vec::new();
    let mut now = 0u64;
    let mut upstream_input_open = true;
    for op in ops {
        let effects = match op {
            Op::Client(bytes) => {
                oracle.client_wrote(bytes);
                wrap.from_client(bytes, now)
            }
            Op::Upstream(write) => {
                let bytes = upstream.bytes(write);
                let effects = wrap.from_upstream(&bytes, now);
                oracle.upstream_wrote(&bytes, answers_a_list(&effects));
                effects
            }
            Op::Tick(ms) => {
                now += u64::from(*ms);
                wrap.tick(now)
            }
            Op::ClientEof => wrap.client_eof(now),
            Op::UpstreamEof => wrap.upstream_eof(now),
        };
        for effect in effects {
            match effect {
                Effect::ToClient(line) => {
                    oracle.client_received(line.as_bytes());
                    client_stdout.extend_from_slice(line.as_bytes());
                }
                Effect::ToUpstream(line) => {
                    let sent: serde_json::Value =
                        serde_json::from_slice(line.as_bytes()).unwrap_or_default();
                    if sent["method"] == "tools/call" {
                        reached.calls_forwarded += 1;
                    }
                    assert!(
                        upstream_input_open,
                        "{mode:?}: a write to the upstream after its input was closed"
                    );
                    oracle.upstream_received(line.as_bytes());
                    upstream.receive(line.as_bytes());
                }
                Effect::EndUpstreamInput => upstream_input_open = false,
                Effect::Close(End::UpstreamExited { .. }) => reached.upstream_exited = true,
                Effect::Quarantine(_)
                | Effect::Audit(_)
                | Effect::Notice(_)
                | Effect::PinsChanged(_)
                | Effect::Close(_) => {}
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
            wrap.id_entries() <= 2 * MAX_IN_FLIGHT,
            "{mode:?}: {} id entries",
            wrap.id_entries()
        );
    }
    if let Err(v) = portcullis_wire::check_transcript(&client_stdout) {
        panic!("{mode:?}: {v}");
    }
    reached.counters = wrap.counters().clone();
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
