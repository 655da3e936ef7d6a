//! Closing on invalid input with calls in flight, through the real
//! binary (RFC 9113 §6.8, a graceful GOAWAY): reading stops at the first
//! invalid frame; every request accepted before it is answered exactly
//! once — a call still running when `--grace-ms` ends is answered
//! `interrupted: …`, as at end of input — then that frame's error is the
//! last frame written, and the process exits 3. SIGTERM stays immediate.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Fixture, Launch, Run, call, frame, http_policy, session};
use portcullis_testkit::fakes::FakeHttp;
use serde_json::{Value, json};

const TOKEN: &str = "tok-graceful-close";

fn mcp(fx: &Fixture, audit: &Path, grace_ms: u64) -> Launch {
    Launch::new(fx.cwd.path(), &["mcp", "--policy"])
        .arg(&fx.policy)
        .arg("--audit")
        .arg(audit)
        .args(&["--grace-ms", &grace_ms.to_string()])
        .env("TEST_TOKEN", TOKEN)
}

/// The session of the report in one write: ping (2), tools/list (3), a
/// slow call (4), a garbled line, then a ping (5) that must never be read.
fn one_write() -> Vec<u8> {
    session(&[
        &frame(&json!({"jsonrpc":"2.0","id":2,"method":"ping"})),
        &frame(&json!({"jsonrpc":"2.0","id":3,"method":"tools/list"})),
        &call(4, "slow_status", json!({"service": "a"})),
        b"garbled\n",
        &frame(&json!({"jsonrpc":"2.0","id":5,"method":"ping"})),
    ])
}

fn journal(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("read the journal")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

/// `portcullis audit verify` on the journal: the chain and pairing judged
/// by the verifier's own reading.
fn verify(fx: &Fixture, audit: &Path) -> Run {
    fx.run(&["audit", "verify", audit.to_str().expect("utf-8 path")])
}

fn kinds(records: &[Value]) -> Vec<&str> {
    records
        .iter()
        .map(|r| r["kind"].as_str().unwrap_or("?"))
        .collect()
}

/// The ids of stdout's frames in order (`None` for a frame without one),
/// after the transcript check.
fn ids(run: &Run) -> Vec<Option<i64>> {
    run.frames()
        .iter()
        .map(|f| f.get("id").map(|id| id.as_i64().expect("integer id")))
        .collect()
}

/// The last frame is the parse error for the garbled line (2025-11-25
/// omits the id it could not read).
fn assert_ends_with_the_parse_error(run: &Run) {
    let frames = run.frames();
    let last = frames.last().expect("frames");
    assert_eq!(last["error"]["code"], -32700, "{}", run.context());
    assert!(last.get("id").is_none(), "{}", run.context());
}

#[test]
fn a_call_running_at_an_invalid_frame_is_answered_before_the_error_and_exit_3() {
    let server = FakeHttp::with(Duration::from_millis(600), None);
    let fx = Fixture::new(&http_policy(server.port()));
    let audit = fx.file("audit.jsonl");
    let run = mcp(&fx, &audit, 10_000).run(&one_write());
    run.assert_code(3);
    assert_eq!(
        ids(&run),
        [Some(1), Some(2), Some(3), Some(4), None],
        "{}",
        run.context()
    );
    let (text, is_error) = run.tool_result(4);
    assert!(!is_error && text.contains("/slow/a"), "{text}");
    assert_ends_with_the_parse_error(&run);
    assert_eq!(server.connections(), 1);
    let records = journal(&audit);
    assert_eq!(
        kinds(&records),
        [
            "session_start",
            "intent",
            "rejection",
            "outcome",
            "session_end"
        ]
    );
    assert_eq!(records[2]["line"], 6);
    assert_eq!(records[3]["executed"], true);
    assert_eq!(records[3]["is_error"], false);
    verify(&fx, &audit).assert_code(0);
}

#[test]
fn a_call_still_running_when_the_grace_period_ends_is_answered_interrupted_before_the_error() {
    let server = FakeHttp::with(Duration::from_secs(4), None);
    let fx = Fixture::new(&http_policy(server.port()));
    let audit = fx.file("audit.jsonl");
    let run = mcp(&fx, &audit, 300).run(&one_write());
    run.assert_code(3);
    assert_eq!(
        ids(&run),
        [Some(1), Some(2), Some(3), Some(4), None],
        "{}",
        run.context()
    );
    let (text, is_error) = run.tool_result(4);
    assert!(is_error && text.starts_with("interrupted: "), "{text}");
    assert_ends_with_the_parse_error(&run);
    assert!(
        run.elapsed < Duration::from_secs(3),
        "waited past the grace period: {:?}",
        run.elapsed
    );
    // Its outcome is unknown: the intent stays open, and the session still
    // closes its chain.
    assert_eq!(
        kinds(&journal(&audit)),
        ["session_start", "intent", "rejection", "session_end"]
    );
    let verdict = verify(&fx, &audit);
    verdict.assert_code(0);
    assert!(
        String::from_utf8_lossy(&verdict.stdout).contains("interrupted"),
        "{}",
        verdict.context()
    );
}

/// `on_denied = "close"` follows the same rule: the refused call's tool
/// error is written after the answer of the call already running.
#[test]
fn a_refused_call_under_on_denied_close_is_answered_after_the_running_call() {
    let server = FakeHttp::with(Duration::from_millis(600), None);
    let policy = http_policy(server.port()).replacen(
        "on_invalid = \"close\"",
        "on_invalid = \"close\"\non_denied = \"close\"",
        1,
    );
    let fx = Fixture::new(&policy);
    let audit = fx.file("audit.jsonl");
    let input = session(&[
        &call(2, "slow_status", json!({"service": "a"})),
        &call(3, "service_status", json!({"service": "Not-Valid"})),
        &frame(&json!({"jsonrpc":"2.0","id":4,"method":"ping"})),
    ]);
    let run = mcp(&fx, &audit, 10_000).run(&input);
    run.assert_code(3);
    assert_eq!(ids(&run), [Some(1), Some(2), Some(3)], "{}", run.context());
    assert!(!run.tool_result(2).1, "{}", run.context());
    assert!(run.tool_result(3).1, "{}", run.context());
    assert_eq!(server.connections(), 1);
    assert_eq!(
        kinds(&journal(&audit)),
        [
            "session_start",
            "intent",
            "rejection",
            "outcome",
            "session_end"
        ]
    );
    verify(&fx, &audit).assert_code(0);
}

#[test]
fn keep_open_answers_the_running_call_and_reads_on() {
    let server = FakeHttp::with(Duration::from_millis(300), None);
    let policy = http_policy(server.port()).replacen(
        "on_invalid = \"close\"",
        "on_invalid = \"keep-open\"",
        1,
    );
    let fx = Fixture::new(&policy);
    let audit = fx.file("audit.jsonl");
    let run = mcp(&fx, &audit, 10_000).run(&one_write());
    run.assert_code(0);
    let mut answered = ids(&run);
    // The ping after the garbled line is answered while the call runs.
    assert_eq!(answered.pop(), Some(Some(4)), "{}", run.context());
    assert_eq!(
        answered,
        [Some(1), Some(2), Some(3), Some(5)],
        "{}",
        run.context()
    );
}

/// SIGTERM while the session drains ends it at once: no grace period, and
/// nothing more is written (neither the call's answer nor the error).
#[test]
fn sigterm_while_draining_exits_143_at_once() {
    let server = FakeHttp::with(Duration::from_secs(5), None);
    let fx = Fixture::new(&http_policy(server.port()));
    let audit = fx.file("audit.jsonl");
    let launch = mcp(&fx, &audit, 10_000);
    let mut child = launch.spawn();
    let stdout = common::drain(child.stdout.take().expect("stdout"));
    let stderr = common::drain(child.stderr.take().expect("stderr"));
    let mut stdin = child.stdin.take().expect("stdin");
    std::io::Write::write_all(&mut stdin, &one_write()).expect("write stdin");
    let started = Instant::now();
    while server.connections() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the call never reached the server"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The garbled line is in the same read as the call, handled right
    // after it; give the core a moment to reach it.
    std::thread::sleep(Duration::from_millis(200));
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).expect("pid"))
        .expect("a live pid");
    let signalled = Instant::now();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let status = common::wait_limited(&mut child, Duration::from_secs(10), &launch.describe());
    let took = signalled.elapsed();
    drop(stdin);
    let stdout = stdout.join().expect("stdout reader");
    let stderr = String::from_utf8_lossy(&stderr.join().expect("stderr reader")).into_owned();
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(took < Duration::from_secs(4), "{took:?}\n{stderr}");
    assert!(
        stderr.contains("answering the actions in flight first"),
        "the session was not draining when signalled\n{stderr}"
    );
    let written: Vec<Value> = stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("a JSON frame"))
        .collect();
    let written: Vec<Option<i64>> = written
        .iter()
        .map(|f| f.get("id").and_then(Value::as_i64))
        .collect();
    assert_eq!(written, [Some(1), Some(2), Some(3)], "{stderr}");
}
