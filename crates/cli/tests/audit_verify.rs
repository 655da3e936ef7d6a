//! `portcullis audit verify` as a process (issue 29): it streams the
//! journal (a 200 MB line is one problem, read through with a peak
//! resident set of a few MiB, where reading the file whole took 415 MB);
//! it verifies `mcp` and `wrap` sessions written to one file under one
//! key; its `--json` report is the documented object; a journal a running
//! session still writes passes with `--allow-cut-short` only; a key
//! variable unset or too short is exit 2, naming the variable and never
//! its value.

mod common;

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use common::{Fixture, Launch, Step, drain, example, python, vm_hwm_kib, wait_limited};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

const KEY: &str = "audit-verify-test-key-0123456789";
/// Bytes of the over-long line.
const LONG_LINE_BYTES: u64 = 200 * 1024 * 1024;
/// The verifier's peak resident set while it reads the over-long line: a
/// few MiB of its own (a debug build's code and data) and one 64 KiB
/// line, nowhere near the line's 200 MiB.
const PEAK_BOUND_KIB: u64 = 32 * 1024;

/// `portcullis mcp` on an example session, journaling to `audit`.
fn mcp_session(fx: &Fixture, audit: &Path, key: bool) {
    let mut launch = Launch::new(fx.cwd.path(), &["mcp", "--policy"])
        .arg(example("policy.toml"))
        .arg("--audit")
        .arg(audit);
    if key {
        launch = launch
            .args(&["--audit-key-env", "AUDIT_KEY"])
            .env("AUDIT_KEY", KEY);
    }
    let input = std::fs::read(example("sessions/unknown-argument.jsonl")).expect("example");
    let run = launch.run(&input);
    assert_eq!(run.code(), Some(0), "{}", run.context());
}

fn verify(fx: &Fixture, args: &[&str], journal: &Path) -> common::Run {
    Launch::new(fx.cwd.path(), &["audit", "verify"])
        .args(args)
        .arg(journal)
        .env("AUDIT_KEY", KEY)
        .run(b"")
}

#[test]
fn a_200_mb_line_is_one_problem_read_with_a_small_peak_rss() {
    if !Path::new("/proc/self/status").exists() {
        eprintln!("no /proc: cannot read the verifier's peak resident set; skipping");
        return;
    }
    let fx = Fixture::new("");
    let genuine = fx.file("genuine.jsonl");
    mcp_session(&fx, &genuine, false);
    let before = std::fs::read(&genuine).expect("journal");
    std::fs::remove_file(&genuine).expect("remove");
    mcp_session(&fx, &genuine, false);
    let after = std::fs::read(&genuine).expect("journal");
    // One session's lines, a 200 MB line (a hole in the file: zeros that
    // take no disk), the other session's lines.
    let journal = fx.file("long-line.jsonl");
    let mut file = std::fs::File::create(&journal).expect("create");
    file.write_all(&before).expect("write");
    file.seek(SeekFrom::Current(i64::try_from(LONG_LINE_BYTES).unwrap()))
        .expect("seek");
    file.write_all(b"\n").expect("write");
    file.write_all(&after).expect("write");
    drop(file);
    let lines_before = before.iter().filter(|&&b| b == b'\n').count() as u64;

    let launch = Launch::new(fx.cwd.path(), &["audit", "verify", "--json"]).arg(&journal);
    let started = Instant::now();
    let mut child = launch.spawn();
    let pid = child.id();
    drop(child.stdin.take());
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let mut peak_kib = 0;
    let mut samples = 0;
    while child.try_wait().expect("wait").is_none() {
        if let Some(kib) = vm_hwm_kib(pid) {
            peak_kib = peak_kib.max(kib);
            samples += 1;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "verify did not finish"
        );
        thread::sleep(Duration::from_millis(2));
    }
    let status = wait_limited(&mut child, Duration::from_secs(1), &launch.describe());
    let stderr = String::from_utf8_lossy(&stderr.join().expect("stderr")).into_owned();
    let report: Value = serde_json::from_slice(&stdout.join().expect("stdout"))
        .unwrap_or_else(|e| panic!("one JSON report: {e}\n{stderr}"));
    eprintln!(
        "audit verify: peak RSS {peak_kib} KiB over a {} MiB line ({samples} samples, {:?})",
        LONG_LINE_BYTES >> 20,
        started.elapsed()
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(samples > 0, "the verifier ended before its memory was read");
    assert!(
        peak_kib <= PEAK_BOUND_KIB,
        "peak RSS {peak_kib} KiB exceeds {PEAK_BOUND_KIB} KiB over a {LONG_LINE_BYTES}-byte line"
    );
    assert_eq!(report["problems_total"], 1, "{report}");
    let problem = &report["problems"][0];
    assert_eq!(problem["line"], lines_before + 1, "{report}");
    let expected = format!("a line of {LONG_LINE_BYTES} bytes, longer than any record");
    assert!(
        problem["problem"].as_str().unwrap().starts_with(&expected),
        "{report}"
    );
    assert!(
        stderr.contains(&format!("line {}: {expected}", lines_before + 1)),
        "{stderr}"
    );
    // Both sessions around it verify.
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{report}");
    assert!(sessions.iter().all(|s| s["closed"] == true), "{report}");
}

/// A wrap session in front of the fake upstream in `mode`: initialize,
/// the tool list, a call to `echo`, a ping; stdin then ends.
fn wrap_session(fx: &Fixture, audit: &Path, mode: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wrap_fixtures/upstream.py");
    let line = |v: Value| format!("{v}\n").into_bytes();
    let run = Launch::new(fx.cwd.path(), &["wrap", "--audit"])
        .arg(audit)
        .args(&["--audit-key-env", "AUDIT_KEY", "--"])
        .arg(python())
        .arg(script)
        .arg(mode)
        .env("AUDIT_KEY", KEY)
        .run_steps(vec![
            Step::Write(line(json!({"jsonrpc":"2.0","id":0,"method":"initialize",
                "params":{"protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"test","version":"1"}}}))),
            Step::Write(line(
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            )),
            Step::Write(line(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))),
            Step::Sleep(Duration::from_millis(1500)),
            Step::Write(line(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                "params":{"name":"echo","arguments":{"message":"hi"}}}))),
            Step::Write(line(json!({"jsonrpc":"2.0","id":3,"method":"ping"}))),
            Step::Sleep(Duration::from_millis(1500)),
        ]);
    assert_eq!(run.code(), Some(0), "{}", run.context());
}

#[test]
fn mcp_and_wrap_sessions_in_one_keyed_file_verify() {
    let fx = Fixture::new("");
    let journal = fx.file("mixed.jsonl");
    wrap_session(&fx, &journal, "good");
    mcp_session(&fx, &journal, true);
    wrap_session(&fx, &journal, "junk");
    let run = verify(&fx, &["--key-env", "AUDIT_KEY", "--json"], &journal);
    let report: Value = serde_json::from_slice(&run.stdout).expect("one JSON report");
    assert_eq!(run.code(), Some(0), "{report:#}\n{}", run.stderr_text());
    assert!(run.stderr.is_empty(), "{}", run.stderr_text());
    assert_eq!(report["ok"], true);
    assert_eq!(report["macs_checked"], true);
    let commands: Vec<&Value> = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["command"])
        .collect();
    assert_eq!(commands, ["wrap", "mcp", "wrap"], "{report:#}");
    for kind in ["wrap_intent", "wrap_outcome", "wrap_pinned"] {
        assert_eq!(report["kinds"][kind], 2, "{kind}: {report:#}");
    }
    assert!(
        report["kinds"]["wrap_quarantine"].as_u64() > Some(0),
        "{report:#}"
    );
    assert_eq!(report["kinds"]["rejection"], 1, "{report:#}");
    // Under another key every line fails; without one, the macs are not
    // checked and the file passes.
    let run = Launch::new(fx.cwd.path(), &["audit", "verify", "--key-env", "OTHER"])
        .arg(&journal)
        .env("OTHER", "another-key-of-enough-bytes")
        .run(b"");
    run.assert_code(1);
    assert!(
        run.stderr_text().contains("line 1: mac does not match"),
        "{}",
        run.context()
    );
    let run = verify(&fx, &[], &journal);
    run.assert_code(0);
    assert!(common::stdout_text(&run).contains("present, not checked (no --key-env)"));
}

/// The `--json` report, held to its documented members.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Report {
    file: String,
    lines: u64,
    records: u64,
    kinds: std::collections::BTreeMap<String, u64>,
    sessions: Vec<SessionReport>,
    macs_checked: bool,
    problems: Vec<ProblemReport>,
    problems_total: u64,
    ok: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionReport {
    session: String,
    command: Option<String>,
    keyed: Option<bool>,
    first_line: u64,
    last_line: u64,
    records: u64,
    closed: bool,
    interrupted: Vec<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProblemReport {
    line: u64,
    problem: String,
}

/// One session's lines, chained here from the format alone.
struct Chain {
    session: String,
    seq: u64,
    prev: String,
}

impl Chain {
    fn new(session: &str) -> Self {
        Self {
            session: session.into(),
            seq: 0,
            prev: "0".repeat(64),
        }
    }

    fn line(&mut self, kind: &str, members: Value) -> String {
        let mut line = format!(
            "{{\"kind\":\"{kind}\",\"time\":\"2026-12-01T10:00:00.000Z\",\"session\":\"{}\",\"seq\":{},\"prev\":\"{}\"",
            self.session, self.seq, self.prev
        );
        for (name, value) in members.as_object().unwrap() {
            line.push_str(&format!(",\"{name}\":{value}"));
        }
        line.push('}');
        self.prev = hex::encode(Sha256::digest(line.as_bytes()));
        self.seq += 1;
        line + "\n"
    }
}

const FP: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

#[test]
fn the_json_report_is_the_documented_object() {
    let fx = Fixture::new("");
    let mut a = Chain::new("10-a");
    let mut w = Chain::new("11-b");
    let journal = [
        a.line(
            "session_start",
            json!({"command":"mcp","keyed":false,"version":"0.1.0"}),
        ),
        w.line(
            "session_start",
            json!({"command":"wrap","keyed":false,"version":"0.1.0"}),
        ),
        a.line(
            "intent",
            json!({"host":"127.0.0.1","line":3,"port":8080,
            "target_fingerprint":FP,"target_kind":"http","ticket":0,"timeout_ms":5000,
            "tool":"service_status"}),
        ),
        w.line(
            "wrap_intent",
            json!({"arguments_sha256":FP,"call":1,"line":4,
            "timeout_ms":30000,"tool":"echo"}),
        ),
        a.line("session_end", json!({"last":a.prev,"records":2})),
        "not a record\n".to_owned(),
    ]
    .concat();
    let path = fx.file("report.jsonl");
    std::fs::write(&path, &journal).unwrap();
    for (args, code) in [(&[][..], 1), (&["--allow-cut-short"][..], 1)] {
        let run = verify(&fx, &[args, &["--json"]].concat(), &path);
        run.assert_code(code);
        let report: Report = serde_json::from_slice(&run.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", common::stdout_text(&run)));
        assert_eq!(report.file, path.display().to_string());
        assert_eq!((report.lines, report.records), (6, 5));
        assert_eq!(report.kinds.len(), 16, "every kind: {:?}", report.kinds);
        assert_eq!(report.kinds["wrap_intent"], 1);
        assert_eq!(report.kinds["wrap_timeout"], 0);
        assert!(!report.macs_checked && !report.ok);
        let [mcp, wrap] = &report.sessions[..] else {
            panic!("{:?}", report.sessions)
        };
        assert_eq!(
            (&mcp.session[..], mcp.command.as_deref(), mcp.keyed),
            ("10-a", Some("mcp"), Some(false))
        );
        assert_eq!(
            (mcp.first_line, mcp.last_line, mcp.records, mcp.closed),
            (1, 5, 3, true)
        );
        assert_eq!(
            mcp.interrupted,
            [json!({"line":3,"ticket":0,"tool":"service_status"})]
        );
        assert_eq!(
            (wrap.first_line, wrap.last_line, wrap.closed),
            (2, 4, false)
        );
        assert_eq!(wrap.interrupted, [json!({"line":4,"call":1,"tool":"echo"})]);
        let mut expected = vec![(6, "not one strict JSON value")];
        if args.is_empty() {
            expected.push((4, "its session was cut short"));
        }
        assert_eq!(report.problems_total, expected.len() as u64);
        for (p, (line, what)) in report.problems.iter().zip(&expected) {
            assert_eq!(p.line, *line, "{p:?}");
            assert!(p.problem.starts_with(what), "{p:?}");
        }
    }
}

#[test]
fn a_journal_a_running_session_writes_passes_with_allow_cut_short_only() {
    let fx = Fixture::new("");
    let journal = fx.file("live.jsonl");
    let launch = Launch::new(fx.cwd.path(), &["mcp", "--policy"])
        .arg(example("policy.toml"))
        .arg("--audit")
        .arg(&journal);
    let mut child = launch.spawn();
    let mut stdin = child.stdin.take().expect("stdin");
    let input = std::fs::read(example("sessions/unknown-argument.jsonl")).expect("example");
    stdin.write_all(&input).expect("write");
    stdin.flush().expect("flush");
    let started = Instant::now();
    while std::fs::read_to_string(&journal)
        .unwrap_or_default()
        .lines()
        .count()
        < 2
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "nothing journaled"
        );
        thread::sleep(Duration::from_millis(20));
    }
    let run = verify(&fx, &[], &journal);
    run.assert_code(1);
    assert!(
        run.stderr_text()
            .contains("line 2: its session was cut short"),
        "{}",
        run.context()
    );
    let run = verify(&fx, &["--allow-cut-short"], &journal);
    run.assert_code(0);
    assert!(
        common::stdout_text(&run).contains("records, cut short\n"),
        "{}",
        run.context()
    );
    assert!(run.stderr.is_empty(), "{}", run.context());
    drop(stdin);
    let _ = child.stdout.take();
    wait_limited(&mut child, Duration::from_secs(30), &launch.describe());
    verify(&fx, &[], &journal).assert_code(0);
}

#[test]
fn a_key_variable_unset_or_short_is_exit_2_naming_it_never_its_value() {
    let fx = Fixture::new("");
    let journal = fx.file("audit.jsonl");
    mcp_session(&fx, &journal, true);
    let run = Launch::new(
        fx.cwd.path(),
        &["audit", "verify", "--key-env", "NO_SUCH_KEY"],
    )
    .arg(&journal)
    .run(b"");
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{}", run.context());
    assert!(
        run.stderr_text().contains("NO_SUCH_KEY is not set"),
        "{}",
        run.context()
    );
    let short = "short-key-15byt";
    let run = Launch::new(
        fx.cwd.path(),
        &["audit", "verify", "--key-env", "SHORT_KEY"],
    )
    .arg(&journal)
    .env("SHORT_KEY", short)
    .run(b"");
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{}", run.context());
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("SHORT_KEY has 15 bytes; at least 16"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(short),
        "the key's value is shown: {stderr}"
    );
    // The key's 16 bytes are enough to read; this one is the wrong key.
    let run = Launch::new(fx.cwd.path(), &["audit", "verify", "--key-env", "KEY16"])
        .arg(&journal)
        .env("KEY16", "sixteen-bytes-16")
        .run(b"");
    run.assert_code(1);
    assert!(!run.stderr_text().contains("sixteen-bytes-16"));
    let run = verify(&fx, &[], Path::new("/nonexistent/audit.jsonl"));
    run.assert_code(2);
    assert!(run.stdout.is_empty());
}

#[test]
fn the_first_20_problems_are_shown_and_the_rest_counted() {
    let fx = Fixture::new("");
    let path = fx.file("empty-lines.jsonl");
    std::fs::write(&path, "\n".repeat(25)).unwrap();
    let run = verify(&fx, &[], &path);
    run.assert_code(1);
    let report = common::stdout_text(&run);
    assert!(report.contains("problems: 25\n"), "{report}");
    assert!(
        report.contains("  line 20: empty line\n  ... and 5 more\n"),
        "{report}"
    );
    assert!(!report.contains("line 21:"), "{report}");
    let stderr = run.stderr_text();
    assert_eq!(stderr.lines().count(), 21, "{stderr}");
    assert!(stderr.ends_with("... and 5 more problems\n"), "{stderr}");
}
