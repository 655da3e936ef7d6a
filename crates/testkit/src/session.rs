//! `run_session`: the stdin entry point, driven exactly as the binary does
//! (by the gateway's replay driver), with every check a harness makes.

use portcullis_gateway::BoundPolicy;
pub use portcullis_gateway::replay::{
    Chunking, Completion, Recorder, SessionReport, run_session_scheduled, run_session_unchecked,
};
use portcullis_wire::transcript::check_transcript;

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
    if let Err(violation) = check_transcript(&report.stdout) {
        panic!("{violation}\n(session input: {} bytes)", input.len());
    }
    // No request is answered twice: every id appears in at most one
    // response (result or error) on stdout.
    if let Some(twice) = id_answered_twice(&report.stdout) {
        panic!(
            "id {twice} is answered twice on stdout\n(session input: {} bytes)",
            input.len()
        );
    }
    // Every recorded action is a faithful expansion of its tool's template.
    if let Err(why) = crate::faithful::check_report(policy, input, &report) {
        panic!("{why}");
    }
    let secrets: Vec<&str> = policy
        .credentials
        .keys()
        .filter_map(|name| policy.secrets().get(name))
        .map(|s| s.expose())
        .collect();
    // Everything but stdout (checked on its own bytes just below; its Debug
    // form is a long list of numbers that cannot hold a spelling anyway).
    let ledger = format!(
        "{:?} {:?} {:?} {:?} {:?} {:?}",
        report.actions,
        report.rejections,
        report.journal,
        report.counters,
        report.closed,
        report.revision
    );
    crate::canary::assert_no_leak(
        secrets,
        &[
            ("stdout", &report.stdout),
            ("the session report", ledger.as_bytes()),
        ],
        &[input, recorder.outcome().text.as_bytes()],
    );
    report
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
/// lenient parse (independent of the gateway's id handling).
fn id_answered_twice(stdout: &[u8]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    for line in stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(serde_json::Value::Object(message)) = serde_json::from_slice(line) else {
            continue;
        };
        if message.contains_key("method") {
            continue;
        }
        if let Some(id) = message.get("id")
            && !seen.insert(id.to_string())
        {
            return Some(id.to_string());
        }
    }
    None
}
