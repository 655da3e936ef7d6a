//! `run_session`: the stdin entry point, driven exactly as the binary does
//! (by the gateway's replay driver), with every check a harness makes.

pub use portcullis_gateway::replay::{
    Chunking, Completion, Recorder, SessionReport, run_session_scheduled, run_session_unchecked,
};
use portcullis_gateway::{BoundPolicy, RejectionRecord};
use portcullis_wire::transcript::check_transcript;
use portcullis_wire::{Fingerprint, Stage};

/// Feed `bytes` through a fresh gateway under `policy` with a [`Recorder`],
/// split into reads by `chunking`, then end of input. Panics (with the
/// first offending line's raw bytes) if stdout is not a clean transcript.
pub fn run_session(policy: &BoundPolicy, bytes: &[u8], chunking: &Chunking) -> SessionReport {
    run_session_with(policy, bytes, chunking, &Recorder::default())
}

/// [`run_session`] with a given recorder (for custom canned outcomes).
pub fn run_session_with(
    policy: &BoundPolicy,
    bytes: &[u8],
    chunking: &Chunking,
    recorder: &Recorder,
) -> SessionReport {
    let report = run_session_unchecked(policy, bytes, chunking, recorder);
    checked(policy, report, bytes, recorder)
}

/// Checks every harness call makes: stdout is a clean transcript, and no
/// credential value bound in `policy` appears in stdout or in the report
/// (ledgers, journal, close reason, actions) in any spelling the input or
/// the executor's canned outcome did not itself supply.
fn checked(
    policy: &BoundPolicy,
    report: SessionReport,
    input: &[u8],
    recorder: &Recorder,
) -> SessionReport {
    check_stdout(&report.stdout, input);
    check_records(policy, &report, input, recorder, true);
    report
}

/// The checks that read stdout alone: a clean transcript, and no request
/// answered twice. Pure functions of the bytes, so two sessions with equal
/// stdout get the same verdicts.
fn check_stdout(stdout: &[u8], input: &[u8]) {
    if let Err(violation) = check_transcript(stdout) {
        panic!("{violation}\n(session input: {} bytes)", input.len());
    }
    // No request is answered twice: every id appears in at most one
    // response (result or error) on stdout.
    if let Some(twice) = id_answered_twice(stdout) {
        panic!(
            "id {twice} is answered twice on stdout\n(session input: {} bytes)",
            input.len()
        );
    }
}

/// Faithful expansion of every action, and the leak check over the report
/// (and over stdout when `with_stdout`).
fn check_records(
    policy: &BoundPolicy,
    report: &SessionReport,
    input: &[u8],
    recorder: &Recorder,
    with_stdout: bool,
) {
    // Every recorded action is a faithful expansion of its tool's template.
    if let Err(why) = crate::faithful::check_report(policy, input, report) {
        panic!("{why}");
    }
    let secrets: Vec<&str> = policy
        .credentials
        .keys()
        .filter_map(|name| policy.secrets().get(name))
        .map(|s| s.expose())
        .collect();
    // Everything but stdout (checked on its own bytes; its Debug form is a
    // long list of numbers that cannot hold a spelling anyway) and the
    // rejection records (numbers and a hash, proved below), written into a
    // buffer each thread keeps, so a session costs no allocation for it.
    report.rejections.iter().for_each(holds_no_text);
    thread_local! {
        static LEDGER: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    LEDGER.with(|ledger| {
        use std::fmt::Write as _;
        let mut ledger = ledger.borrow_mut();
        ledger.clear();
        let _ = write!(
            ledger,
            "{:?} {:?} {:?} {:?} {:?}",
            report.actions, report.journal, report.counters, report.closed, report.revision
        );
        let stdout: &[(&str, &[u8])] = if with_stdout {
            &[("stdout", &report.stdout)]
        } else {
            &[]
        };
        let places: Vec<(&str, &[u8])> = stdout
            .iter()
            .copied()
            .chain([("the session report", ledger.as_bytes())])
            .collect();
        crate::canary::assert_no_leak(
            secrets,
            &places,
            &[input, recorder.outcome().text.as_bytes()],
        );
    });
}

/// A rejection record is a line number, a stage, a code and a hash of the
/// frame: no text a credential could be spelled in, so the leak check does
/// not format them (in a refused-heavy session they were most of what it
/// formatted). The fields are named with their types: a field added to the
/// record, or one made text, stops this compiling until the leak check
/// looks at it.
fn holds_no_text(record: &RejectionRecord) {
    let RejectionRecord {
        line,
        stage,
        code,
        fingerprint,
    } = record;
    let _: (&u64, &Stage, &i64, &Fingerprint) = (line, stage, code, fingerprint);
}

/// [`run_session`] with outcomes reported at end of input
/// ([`Completion::AtEndOfInput`]), the schedule under which any two
/// chunkings of the same bytes must give the same session.
pub fn run_session_deferred(
    policy: &BoundPolicy,
    bytes: &[u8],
    chunking: &Chunking,
) -> SessionReport {
    let recorder = Recorder::default();
    let report =
        run_session_scheduled(policy, bytes, chunking, &recorder, Completion::AtEndOfInput);
    checked(policy, report, bytes, &recorder)
}

/// [`run_session_deferred`] for a session expected to equal `checked`, a
/// checked session of the same bytes: when its stdout is the same, the
/// checks that read stdout alone are not repeated (the same bytes get the
/// same verdicts); the report's own checks always run.
pub fn run_session_deferred_like(
    policy: &BoundPolicy,
    bytes: &[u8],
    chunking: &Chunking,
    checked: &SessionReport,
) -> SessionReport {
    let recorder = Recorder::default();
    let report =
        run_session_scheduled(policy, bytes, chunking, &recorder, Completion::AtEndOfInput);
    let same_stdout = report.stdout == checked.stdout;
    if !same_stdout {
        check_stdout(&report.stdout, bytes);
    }
    check_records(policy, &report, bytes, &recorder, !same_stdout);
    report
}

/// Every stdout line of `report`, parsed (the transcript check has already
/// passed, so each line is one JSON message).
pub fn stdout_messages(report: &SessionReport) -> Vec<serde_json::Value> {
    report
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("the transcript check passed"))
        .collect()
}

/// [`run_session`] on the whole input, then stdout checked against the
/// official MCP schema of the negotiated revision (when `MCP_SCHEMA_DIR`
/// names it), with each response matched to its request.
pub fn run_session_official(policy: &BoundPolicy, input: &[u8]) -> SessionReport {
    let report = run_session(policy, input, &Chunking::Whole);
    if let Some(revision) = report.revision {
        let requests = crate::mcp_schema::requests_of(input);
        crate::mcp_schema::check_stdout(&report.stdout, revision, &requests)
            .unwrap_or_else(|e| panic!("official schema: {e}"));
    }
    report
}

/// The first id that two responses on `stdout` carry, read with a plain
/// lenient parse (independent of the gateway's id handling): serde_json
/// reads each line's top-level `method` and `id` and skips the rest
/// without building it (skipping does not validate the skipped strings;
/// [`check_stdout`] runs it after the strict transcript check).
fn id_answered_twice(stdout: &[u8]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    for line in stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(message) = serde_json::from_slice::<ReplyId>(line) else {
            continue;
        };
        if message.is_request {
            continue;
        }
        if let Some(id) = message.id
            && !seen.insert(id.to_string())
        {
            return Some(id.to_string());
        }
    }
    None
}

/// A stdout message's top-level `id` (the last one when repeated, as a
/// `serde_json::Value` would keep it) and whether it has a `method`.
#[derive(Debug, Default)]
struct ReplyId {
    is_request: bool,
    id: Option<serde_json::Value>,
}

impl<'de> serde::Deserialize<'de> for ReplyId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, IgnoredAny, MapAccess, Visitor};

        enum Key {
            Id,
            Method,
            Other,
        }
        impl<'de> serde::Deserialize<'de> for Key {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct KeyVisitor;
                impl Visitor<'_> for KeyVisitor {
                    type Value = Key;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a member name")
                    }
                    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                        Ok(match key {
                            "id" => Key::Id,
                            "method" => Key::Method,
                            _ => Key::Other,
                        })
                    }
                }
                d.deserialize_str(KeyVisitor)
            }
        }

        struct MessageVisitor;
        impl<'de> Visitor<'de> for MessageVisitor {
            type Value = ReplyId;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReplyId, A::Error> {
                let mut out = ReplyId::default();
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Id => out.id = Some(map.next_value()?),
                        Key::Method => {
                            out.is_request = true;
                            map.next_value::<IgnoredAny>()?;
                        }
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(MessageVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_in_two_responses_is_answered_twice_and_requests_do_not_count() {
        let twice = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\
{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n\
{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-1,\"message\":\"x\"},\"id\":1}\n";
        assert_eq!(id_answered_twice(twice).as_deref(), Some("1"));
        let once = b"{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{\"id\":1}}\n\
{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\
{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n[1]\n";
        assert_eq!(id_answered_twice(once), None);
        // An escaped member name is the same member.
        let escaped = b"{\"\\u0069d\":7,\"result\":{}}\n{\"id\":7,\"result\":{}}\n";
        assert_eq!(id_answered_twice(escaped).as_deref(), Some("7"));
    }
}
