//! `audit verify` as the command runs it: the text report, the `--json`
//! object (the contract of docs/audit.md), the problems on stderr, the
//! exit status, the key's variable and a file or a read that fails.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use super::super::verify::{self, Options, key_from_variable, verify_stream};
use super::super::{AuditArgs, AuditCommand};
use super::{FP, Forge, KEY, T0, T1, T2, intent, join, mcp_session, rejection, wrap_intent};

/// The ids (`<pid>-<hex>`) of the sessions of [`journal`].
const A: &str = "11-a1";
const B: &str = "12-b2";
const C: &str = "13-c3";

/// What `audit verify` printed and returned.
struct Verified {
    status: ExitCode,
    stdout: String,
    stderr: String,
}

fn run_verify(path: &Path, options: &Options) -> anyhow::Result<Verified> {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = verify::verify(path, options, &mut out, &mut err)?;
    Ok(Verified {
        status,
        stdout: String::from_utf8(out).expect("UTF-8"),
        stderr: String::from_utf8(err).expect("UTF-8"),
    })
}

/// A journal of three sessions and 22 blank lines: a keyed mcp session,
/// closed, whose intent has no outcome; a wrap session cut short with a
/// call open; a record of a session whose start is missing.
fn journal(dir: &Path) -> PathBuf {
    let mut lines = Vec::new();
    let mut mcp = Forge::new(A, Some(KEY));
    lines.push(mcp.start("mcp"));
    let mut wrap = Forge::new(B, None);
    lines.push(wrap.start("wrap"));
    lines.push(mcp.line("intent", T1, intent(0)));
    lines.push(wrap.line("wrap_intent", T1, wrap_intent(1)));
    lines.push(mcp.end(T2));
    let mut stray = Forge::new(C, None);
    stray.seq = 4;
    stray.prev = FP.to_owned();
    lines.push(stray.line("rejection", T0, rejection()));
    let mut bytes = join(&lines);
    bytes.extend(vec![b'\n'; 22]);
    let path = dir.join("audit.jsonl");
    std::fs::write(&path, bytes).expect("write the journal");
    path
}

fn options(json: bool, key_env: Option<&str>) -> Options {
    Options {
        key_env: key_env.map(str::to_owned),
        json,
        allow_cut_short: false,
    }
}

#[test]
fn the_text_report_lists_counts_sessions_macs_interrupted_actions_and_problems() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = journal(dir.path());
    let v = run_verify(&path, &options(false, None)).expect("a verdict");
    assert_eq!(v.status, ExitCode::from(1));
    let p = path.display();
    let mut expected = format!(
        "{p}: 28 lines, 6 records, 3 sessions\n\
         records by kind:\n  \
           session_start: 2\n  \
           session_end: 1\n  \
           rejection: 1\n  \
           intent: 1\n  \
           wrap_intent: 1\n\
         sessions: 3\n  \
           session {A}: mcp, keyed, lines 1 to 5, 3 records, closed\n  \
           session {B}: wrap, not keyed, lines 2 to 4, 2 records, cut short\n  \
           session {C}: no session_start, keyed unknown, lines 6 to 6, 1 records, cut short\n\
         macs: 3 present, not checked (no --key-env)\n\
         interrupted: 2\n  \
           line 3: session {A} ticket 0 tool \"service_status\": no outcome (interrupted)\n  \
           line 4: session {B} call 1 tool \"echo\": no outcome (interrupted)\n\
         problems: 25\n  \
           line 6: the first record of its session is not its session_start (seq 0): the session's start is missing\n"
    );
    for line in 7..=25 {
        expected.push_str(&format!("  line {line}: empty line\n"));
    }
    expected.push_str("  ... and 5 more\n");
    assert_eq!(v.stdout, expected);
    // stderr: the same first 20 problems, each with the file, then the
    // count of the rest (the sessions cut short among them).
    let said: Vec<&str> = v.stderr.lines().collect();
    assert_eq!(said.len(), 21, "{}", v.stderr);
    assert_eq!(
        said[0],
        format!(
            "portcullis: {p}: line 6: the first record of its session is not its session_start (seq 0): the session's start is missing"
        )
    );
    assert_eq!(said[19], format!("portcullis: {p}: line 25: empty line"));
    assert_eq!(
        said[20],
        format!("portcullis: {p}: ... and 5 more problems")
    );
}

#[test]
fn the_json_report_is_the_documented_object() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = journal(dir.path());
    let v = run_verify(&path, &options(true, None)).expect("a verdict");
    assert_eq!(v.status, ExitCode::from(1));
    assert_eq!(v.stdout.lines().count(), 1, "one line: {}", v.stdout);
    let report: Value = serde_json::from_str(&v.stdout).expect("one JSON object");
    let mut kinds = serde_json::Map::new();
    for kind in [
        "session_start",
        "session_end",
        "rejection",
        "intent",
        "outcome",
        "wrap_intent",
        "wrap_outcome",
        "wrap_rejection",
        "wrap_denied",
        "wrap_quarantine",
        "wrap_dropped",
        "wrap_pinned",
        "wrap_rug_pull",
        "wrap_withheld",
        "wrap_timeout",
        "wrap_upstream_exited",
    ] {
        kinds.insert(kind.to_owned(), 0.into());
    }
    for (kind, n) in [
        ("session_start", 2),
        ("session_end", 1),
        ("rejection", 1),
        ("intent", 1),
        ("wrap_intent", 1),
    ] {
        kinds.insert(kind.to_owned(), n.into());
    }
    let mut problems = vec![json!({"line": 6, "problem":
        "the first record of its session is not its session_start (seq 0): the session's start is missing"})];
    for line in 7..=28 {
        problems.push(json!({"line": line, "problem": "empty line"}));
    }
    let cut = "its session was cut short: this is its last record and no session_end follows";
    problems.push(json!({"line": 4, "problem": cut}));
    problems.push(json!({"line": 6, "problem": cut}));
    assert_eq!(
        report,
        json!({
            "file": path.display().to_string(),
            "lines": 28,
            "records": 6,
            "kinds": kinds,
            "sessions": [
                {"session": A, "command": "mcp", "keyed": true, "first_line": 1,
                 "last_line": 5, "records": 3, "closed": true,
                 "interrupted": [{"line": 3, "ticket": 0, "tool": "service_status"}]},
                {"session": B, "command": "wrap", "keyed": false, "first_line": 2,
                 "last_line": 4, "records": 2, "closed": false,
                 "interrupted": [{"line": 4, "call": 1, "tool": "echo"}]},
                {"session": C, "command": null, "keyed": null, "first_line": 6,
                 "last_line": 6, "records": 1, "closed": false, "interrupted": []},
            ],
            "macs_checked": false,
            "problems": problems,
            "problems_total": 25,
            "ok": false,
        })
    );
}

#[test]
fn a_journal_that_holds_is_exit_0_with_its_macs_checked_under_the_key() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("keyed.jsonl");
    std::fs::write(&path, join(&mcp_session(A, Some(KEY)))).expect("write");
    // The key's variable is read from the environment: unset here, so
    // check the key itself as verify takes it, then the report it gives.
    let verdict = verify_stream(
        std::fs::File::open(&path).expect("open"),
        Some(KEY.to_vec()),
        false,
    )
    .expect("a verdict");
    assert!(verdict.ok(), "{:#?}", verdict.problems);
    let mut out = Vec::new();
    verify::report_text(&mut out, &path, &verdict).expect("the report");
    let text = String::from_utf8(out).expect("UTF-8");
    assert!(text.contains("\nmacs: 5 checked under the key\n"), "{text}");
    assert!(text.ends_with("interrupted: 0\nproblems: 0\n"), "{text}");
    // Unkeyed, no mac at all.
    std::fs::write(&path, join(&mcp_session(A, None))).expect("write");
    let v = run_verify(&path, &options(false, None)).expect("a verdict");
    assert_eq!(v.status, ExitCode::SUCCESS);
    assert!(v.stdout.contains("\nmacs: none\n"), "{}", v.stdout);
    assert_eq!(v.stderr, "");
    let v = run_verify(&path, &options(true, None)).expect("a verdict");
    let report: Value = serde_json::from_str(&v.stdout).expect("JSON");
    assert_eq!(
        (report["ok"].clone(), report["problems_total"].clone()),
        (json!(true), json!(0))
    );
}

#[test]
fn the_key_variable_must_be_set_and_long_enough_and_is_never_shown() {
    const NAME: &str = "PORTCULLIS_VERIFY_TEST_KEY";
    let err = |value: Option<&str>| {
        format!(
            "{:#}",
            key_from_variable(NAME, value.map(std::ffi::OsString::from))
                .expect_err("an unusable key")
        )
    };
    assert_eq!(err(None), format!("the key variable {NAME} is not set"));
    assert_eq!(
        err(Some("fifteen-bytes!!")),
        format!("the key in {NAME} has 15 bytes; at least 16 are needed")
    );
    assert_eq!(
        key_from_variable(NAME, Some("sixteen-bytes!!!".into())).expect("a key"),
        b"sixteen-bytes!!!"
    );
    // Through the command: the variable is unset, nothing is printed.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = journal(dir.path());
    let (mut out, mut errs) = (Vec::new(), Vec::new());
    let failed = verify::verify(&path, &options(false, Some(NAME)), &mut out, &mut errs)
        .expect_err("an unset key variable");
    assert!(failed.to_string().contains(NAME), "{failed:#}");
    assert!(out.is_empty() && errs.is_empty());
}

#[test]
fn a_file_that_cannot_be_read_is_an_error_not_a_verdict() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let missing = dir.path().join("missing.jsonl");
    let failed = run_verify(&missing, &options(false, None))
        .err()
        .expect("a missing file");
    assert!(
        format!("{failed:#}").starts_with(&format!("cannot read {}", missing.display())),
        "{failed:#}"
    );
    // A directory opens, and fails on its first read.
    let failed = run_verify(dir.path(), &options(false, None))
        .err()
        .expect("a directory");
    assert!(
        format!("{failed:#}").starts_with("cannot read"),
        "{failed:#}"
    );
}

/// Reads `bytes`, after `interruptions` interrupted reads, then fails with
/// `error` once they are out (when given).
struct Faulty<'a> {
    bytes: &'a [u8],
    interruptions: usize,
    error: Option<io::ErrorKind>,
}

impl Read for Faulty<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.interruptions > 0 {
            self.interruptions -= 1;
            return Err(io::ErrorKind::Interrupted.into());
        }
        if self.bytes.is_empty()
            && let Some(kind) = self.error
        {
            return Err(kind.into());
        }
        let n = buf.len().min(self.bytes.len()).min(7);
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
fn an_interrupted_read_is_retried_and_a_failed_one_is_an_error() {
    let bytes = join(&mcp_session(A, None));
    let verdict = verify_stream(
        Faulty {
            bytes: &bytes,
            interruptions: 3,
            error: None,
        },
        None,
        false,
    )
    .expect("interrupted reads are retried");
    assert!(verdict.ok(), "{:#?}", verdict.problems);
    assert_eq!(verdict.verifier.lines, 5);
    let failed = verify_stream(
        Faulty {
            bytes: &bytes,
            interruptions: 0,
            error: Some(io::ErrorKind::BrokenPipe),
        },
        None,
        false,
    )
    .expect_err("a read error");
    assert_eq!(failed.kind(), io::ErrorKind::BrokenPipe);
}

#[test]
fn audit_verify_runs_from_its_arguments() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("audit.jsonl");
    let lines = mcp_session(A, None);
    std::fs::write(&path, join(&lines[..3])).expect("write");
    let args = |allow_cut_short| AuditArgs {
        command: AuditCommand::Verify {
            file: path.clone(),
            key_env: None,
            json: true,
            allow_cut_short,
        },
    };
    let mut out = Vec::new();
    // Cut short: a problem unless allowed.
    let status = super::super::run(&args(false), &mut out).expect("a verdict");
    assert_eq!(status, ExitCode::from(1));
    let report: Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(report["problems_total"], 1);
    let mut out = Vec::new();
    let status = super::super::run(&args(true), &mut out).expect("a verdict");
    assert_eq!(status, ExitCode::SUCCESS);
    let report: Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(report["sessions"][0]["closed"], false);
    assert_eq!(report["ok"], true);
}

/// A stdout or stderr that fails (a closed pipe): the error is returned,
/// never dropped, so the command exits with it.
struct Closed;

impl io::Write for Closed {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::ErrorKind::BrokenPipe.into())
    }

    fn flush(&mut self) -> io::Result<()> {
        Err(io::ErrorKind::BrokenPipe.into())
    }
}

#[test]
fn a_report_that_cannot_be_written_is_an_error() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = journal(dir.path());
    for json in [false, true] {
        let failed = verify::verify(&path, &options(json, None), Closed, Vec::new())
            .expect_err("stdout closed");
        assert_eq!(
            failed.downcast_ref::<io::Error>().map(io::Error::kind),
            Some(io::ErrorKind::BrokenPipe),
            "{failed:#}"
        );
    }
    let failed = verify::verify(&path, &options(false, None), Vec::new(), Closed)
        .expect_err("stderr closed");
    assert_eq!(
        failed.downcast_ref::<io::Error>().map(io::Error::kind),
        Some(io::ErrorKind::BrokenPipe),
        "{failed:#}"
    );
}

/// At exactly as many problems as are shown (20, as above) every one is
/// shown, in the report and on stderr, and neither says there are more.
#[test]
fn exactly_as_many_problems_as_are_shown_leaves_none_unsaid() {
    let shown = 20;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, vec![b'\n'; shown]).expect("write the journal");
    let v = run_verify(&path, &options(false, None)).expect("a verdict");
    assert_eq!(v.status, ExitCode::from(1));
    let report: Vec<&str> = v.stdout.lines().collect();
    let problems = report
        .iter()
        .position(|l| *l == format!("problems: {shown}"))
        .unwrap_or_else(|| panic!("{shown} problems counted: {}", v.stdout));
    assert_eq!(report.len(), problems + 1 + shown, "{}", v.stdout);
    assert_eq!(
        report.last().copied(),
        Some(format!("  line {shown}: empty line").as_str())
    );
    let said: Vec<&str> = v.stderr.lines().collect();
    assert_eq!(said.len(), shown, "{}", v.stderr);
    assert!(!v.stdout.contains("more") && !v.stderr.contains("more"));
}
