//! `portcullis mcp --audit` and `portcullis audit verify`, run as
//! processes (see `common`): what the journal holds, and (issue 29) that
//! genuine journals of several sessions verify, keyed and not, while each
//! manipulation of a journal fails naming its line.

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::time::Instant;

use common::{Fixture, Launch, Step, call, http_policy, session, stdout_text};
use portcullis_testkit::fakes::FakeHttp;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

const TOKEN: &str = "tok-audit-canary-51f3";
/// An argument value that must never appear in the journal.
const ARG: &str = "zqx-arg-value";
/// The key of keyed journals.
const KEY: &str = "audit-policy-key-0123456789abcdef";

impl Fixture {
    fn mcp(&self, audit: &Path) -> Launch {
        Launch::new(self.cwd.path(), &["mcp", "--policy"])
            .arg(&self.policy)
            .arg("--audit")
            .arg(audit)
            .env("TEST_TOKEN", TOKEN)
    }

    fn mcp_keyed(&self, audit: &Path) -> Launch {
        self.mcp(audit)
            .args(&["--audit-key-env", "AUDIT_KEY"])
            .env("AUDIT_KEY", KEY)
    }

    /// `audit verify <args> FILE`, the key in `AUDIT_KEY`.
    fn verify(&self, args: &[&str], journal: &Path) -> common::Run {
        Launch::new(self.cwd.path(), &["audit", "verify"])
            .args(args)
            .arg(journal)
            .env("AUDIT_KEY", KEY)
            .run(b"")
    }
}

/// The records of a journal that are not a session's start or end.
fn actions(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .filter(|r| !matches!(r["kind"].as_str(), Some("session_start" | "session_end")))
        .cloned()
        .collect()
}

/// `record` laid out as the writers lay it out: the chain members first,
/// the kind's own by name, `mac` last.
fn layout(record: &Value) -> String {
    let map = record.as_object().expect("an object");
    let head = ["kind", "time", "session", "seq", "prev"];
    let mut members: Vec<String> = Vec::new();
    let mut add = |name: &str, value: &Value| members.push(format!("{}:{value}", json!(name)));
    for name in head {
        if let Some(value) = map.get(name) {
            add(name, value);
        }
    }
    for (name, value) in map {
        if !head.contains(&name.as_str()) && name != "mac" {
            add(name, value);
        }
    }
    if let Some(value) = map.get("mac") {
        add("mac", value);
    }
    format!("{{{}}}", members.join(","))
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("read the journal")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

fn kinds(records: &[Value]) -> Vec<&str> {
    records
        .iter()
        .map(|r| r["kind"].as_str().unwrap_or("?"))
        .collect()
}

#[test]
fn the_intent_is_on_disk_before_the_request_and_the_outcome_after() {
    let fx = Fixture::new("");
    let audit = fx.file("audit.jsonl");
    let server = FakeHttp::with(std::time::Duration::from_millis(10), Some(audit.clone()));
    std::fs::write(&fx.policy, http_policy(server.port())).expect("policy");
    let run = fx.mcp(&audit).run(&session(&[&call(
        2,
        "service_status",
        json!({"service": ARG}),
    )]));
    run.assert_code(0);
    let (_, is_error) = run.tool_result(2);
    assert!(!is_error, "{}", run.context());
    assert_eq!(server.connections(), 1);

    // What the journal held when the request arrived: the intent, no outcome.
    let seen = server.observed();
    assert!(seen[0].contains("\"kind\":\"intent\""), "{seen:?}");
    assert!(!seen[0].contains("\"kind\":\"outcome\""), "{seen:?}");

    let all = records(&audit);
    assert_eq!(
        kinds(&all),
        ["session_start", "intent", "outcome", "session_end"]
    );
    let (intent, outcome) = (&all[1], &all[2]);
    assert_eq!(intent["tool"], "service_status");
    assert_eq!(intent["target_kind"], "http");
    assert_eq!(intent["host"], "127.0.0.1");
    assert_eq!(intent["port"], server.port());
    assert_eq!(intent["line"], 3);
    assert_eq!(intent["ticket"], outcome["ticket"]);
    assert_eq!(intent["session"], outcome["session"]);
    assert_eq!(outcome["is_error"], false);
    assert_eq!(outcome["executed"], true);
    let time = intent["time"].as_str().expect("time");
    assert!(
        time.len() == 24 && time.ends_with('Z') && &time[10..11] == "T",
        "{time}"
    );

    let text = std::fs::read_to_string(&audit).expect("journal");
    assert!(
        !text.contains(ARG),
        "an argument value is in the journal: {text}"
    );
    assert!(
        !text.contains(TOKEN),
        "the credential is in the journal: {text}"
    );

    let verify = fx.run(&["audit", "verify", audit.to_str().expect("utf-8")]);
    verify.assert_code(0);
    let report = stdout_text(&verify);
    for line in [
        "  session_start: 1\n",
        "  intent: 1\n",
        "  outcome: 1\n",
        "  session_end: 1\n",
        "interrupted: 0\n",
        "problems: 0\n",
    ] {
        assert!(report.contains(line), "{report}");
    }
    assert!(!report.contains("rejection"), "{report}");
}

#[test]
fn rejections_are_journaled_without_bytes_or_values() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    let audit = fx.file("audit.jsonl");
    let input = session(&[&call(
        2,
        "service_status",
        json!({"service": "api", "extra": ARG}),
    )]);
    let run = fx.mcp(&audit).run(&input);
    // A refused call is a tool error, not the end of the session: the
    // session ends at end of input (exit 0), the refusal still journaled.
    run.assert_code(0);
    assert_eq!(server.connections(), 0);
    let all = records(&audit);
    assert_eq!(kinds(&all), ["session_start", "rejection", "session_end"]);
    assert_eq!(all[1]["line"], 3);
    assert_eq!(all[1]["stage"], "schema");
    assert_eq!(all[1]["code"], -32602);
    assert_eq!(all[1]["fingerprint"].as_str().map(str::len), Some(64));
    let text = std::fs::read_to_string(&audit).expect("journal");
    assert!(!text.contains(ARG), "{text}");

    // A second session appends to the same file.
    let run = fx.mcp(&audit).run(b"debug: hello\n");
    run.assert_code(3);
    let all = records(&audit);
    assert_eq!(kinds(&actions(&all)), ["rejection", "rejection"]);
    assert_eq!(all.len(), 6);
    assert_ne!(all[1]["session"], all[4]["session"]);
}

#[test]
fn an_unwritable_journal_denies_the_action_without_running_it() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    // Opening /dev/full succeeds; every write fails (ENOSPC).
    let run = fx.mcp(Path::new("/dev/full")).run(&session(&[&call(
        2,
        "service_status",
        json!({"service": "api"}),
    )]));
    run.assert_code(0);
    assert_eq!(
        run.tool_result(2),
        ("denied: audit journal unavailable".to_owned(), true)
    );
    assert_eq!(server.connections(), 0, "{}", run.context());
}

/// The journal's reader goes away after the first action's outcome: the
/// next intent cannot be written, so that action and every later one are
/// denied and none runs (failing closed mid-session, not only with a
/// journal that never took a record).
#[test]
fn a_journal_that_breaks_mid_session_denies_every_later_action() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    let fifo = fx.file("audit.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || {
        let file = std::fs::File::open(&reader_path).expect("open the FIFO");
        let mut records = Vec::new();
        for line in BufReader::new(file).lines() {
            let record: Value = serde_json::from_str(&line.expect("a line")).expect("JSON");
            let done = record["kind"] == "outcome";
            records.push(record);
            if done {
                break;
            }
        }
        records
    });
    let launch = fx.mcp(&fifo);
    let started = Instant::now();
    let mut child = launch.spawn();
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = common::drain(child.stdout.take().expect("stdout"));
    let stderr = common::drain(child.stderr.take().expect("stderr"));
    let first = session(&[&call(2, "service_status", json!({"service": "api"}))]);
    stdin.write_all(&first).expect("the first call");
    let records = reader.join().expect("the journal's reader");
    assert_eq!(kinds(&records), ["session_start", "intent", "outcome"]);
    for id in 3..=4 {
        let later = call(id, "service_status", json!({"service": "db"}));
        stdin.write_all(&later).expect("a later call");
    }
    drop(stdin);
    let status = common::wait_limited(&mut child, common::LAUNCH_LIMIT, &launch.describe());
    let run = common::Run {
        status,
        stdout: stdout.join().expect("stdout"),
        stderr: stderr.join().expect("stderr"),
        launch: launch.describe(),
        elapsed: started.elapsed(),
    };
    run.assert_code(0);
    assert!(!run.tool_result(2).1, "{}", run.context());
    for id in 3..=4 {
        assert_eq!(
            run.tool_result(id),
            ("denied: audit journal unavailable".to_owned(), true),
            "{}",
            run.context()
        );
    }
    assert_eq!(server.connections(), 1, "{}", run.context());
}

#[test]
fn a_journal_in_a_missing_directory_is_a_startup_error() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    let run = fx
        .mcp(Path::new("/nonexistent-dir/audit.jsonl"))
        .run(&session(&[&call(
            2,
            "service_status",
            json!({"service": "api"}),
        )]));
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{}", run.context());
    assert!(run.stderr_text().contains("/nonexistent-dir/audit.jsonl"));
    assert_eq!(server.connections(), 0);
}

#[test]
fn close_waits_for_running_actions_and_journals_their_outcome() {
    let server = FakeHttp::with(std::time::Duration::from_millis(500), None);
    let fx = Fixture::new(&http_policy(server.port()));
    let audit = fx.file("audit.jsonl");
    let input = session(&[&call(2, "slow_status", json!({"service": "a"})), b"oops\n"]);
    let run = fx.mcp(&audit).run(&input);
    run.assert_code(3);
    assert_eq!(server.connections(), 1);
    // The call was accepted before the invalid line: it is answered
    // before the session closes.
    assert!(!run.tool_result(2).1, "{}", run.context());
    let all = records(&audit);
    assert_eq!(kinds(&actions(&all)), ["intent", "rejection", "outcome"]);
    assert_eq!(actions(&all)[2]["executed"], true);
    fx.verify(&[], &audit).assert_code(0);
}

#[test]
fn audit_verify_reports_interrupted_and_malformed_journals() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    let audit = fx.file("audit.jsonl");
    // A hung tool and a short grace period: the process ends while the
    // action runs, leaving its intent without an outcome.
    let run = fx
        .mcp(&audit)
        .args(&["--stray-print-test", "--grace-ms", "100"])
        .run_steps(vec![
            Step::Write(session(&[
                &call(2, "service_status", json!({"service": "a"})),
                &call(3, "hang_tool", json!({"service": "b"})),
            ])),
            // Let the quick call finish before stdin ends.
            Step::Sleep(std::time::Duration::from_millis(600)),
        ]);
    run.assert_code(0);
    let (_, is_error) = run.tool_result(2);
    assert!(!is_error, "{}", run.context());
    // Answered "interrupted" at the end of the grace period (or "timed
    // out" if the driver's own deadline came first on a slow machine).
    let (text, is_error) = run.tool_result(3);
    assert!(is_error, "{text}");
    let path = audit.to_str().expect("utf-8");

    let verify = fx.run(&["audit", "verify", path]);
    verify.assert_code(0);
    let report = stdout_text(&verify);
    for line in [
        "  intent: 2\n",
        "  outcome: 1\n",
        "interrupted: 1\n",
        "problems: 0\n",
        "records, closed\n",
    ] {
        assert!(report.contains(line), "{report}");
    }
    // Interrupted in a closed session: mcp ended it while the action ran.
    assert!(
        report.contains("tool \"hang_tool\": no outcome (interrupted)"),
        "{report}"
    );

    // A truncated journal: the last record cut short.
    let text = std::fs::read_to_string(&audit).expect("journal");
    let truncated = fx.file("truncated.jsonl");
    std::fs::write(&truncated, &text[..text.len() - 10]).expect("write");
    let verify = fx.run(&["audit", "verify", truncated.to_str().expect("utf-8")]);
    verify.assert_code(1);
    let lines = text.lines().count();
    assert!(
        verify
            .stderr_text()
            .contains(&format!("line {lines}: truncated final line")),
        "{}",
        verify.context()
    );

    // Malformed lines: not JSON, an unknown kind, an orphan outcome.
    let malformed = fx.file("malformed.jsonl");
    let extra = concat!(
        "not json\n",
        "{\"kind\":\"party\",\"time\":\"t\",\"session\":\"s\"}\n",
        "{\"kind\":\"outcome\",\"time\":\"t\",\"session\":\"s\",\"ticket\":9,\"is_error\":false}\n",
    );
    std::fs::write(&malformed, format!("{text}{extra}")).expect("write");
    let verify = fx.run(&["audit", "verify", malformed.to_str().expect("utf-8")]);
    verify.assert_code(1);
    let report = stdout_text(&verify);
    assert!(report.contains("problems: 3\n"), "{report}");
    assert!(report.contains("interrupted: 1\n"), "{report}");
    for n in lines + 1..=lines + 3 {
        assert!(report.contains(&format!("  line {n}: ")), "{report}");
    }

    let verify = fx.run(&["audit", "verify", "/nonexistent/audit.jsonl"]);
    verify.assert_code(2);
    assert!(verify.stdout.is_empty());
}

/// Two sessions of `portcullis mcp` in `audit`: a call (lines 1-4:
/// start, intent, outcome, end), then a refused line (lines 5-7: start,
/// rejection, end).
fn two_sessions(fx: &Fixture, audit: &Path, keyed: bool) -> Vec<String> {
    let launch = |fx: &Fixture| {
        if keyed {
            fx.mcp_keyed(audit)
        } else {
            fx.mcp(audit)
        }
    };
    let run = launch(fx).run(&session(&[&call(
        2,
        "service_status",
        json!({"service": "api"}),
    )]));
    run.assert_code(0);
    let run = launch(fx).run(b"debug: hello\n");
    run.assert_code(3);
    let text = std::fs::read_to_string(audit).expect("journal");
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let all: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(
        kinds(&all),
        [
            "session_start",
            "intent",
            "outcome",
            "session_end",
            "session_start",
            "rejection",
            "session_end"
        ]
    );
    lines
}

fn write_lines(fx: &Fixture, name: &str, lines: &[String]) -> std::path::PathBuf {
    let path = fx.file(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn audit_verify_refuses_each_forged_member_of_a_real_journal() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    let audit = fx.file("audit.jsonl");
    let lines = two_sessions(&fx, &audit, false);
    let genuine: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let verify = fx.verify(&[], &audit);
    verify.assert_code(0);
    assert!(verify.stderr_text().is_empty(), "{}", verify.context());

    // (record index, member, forged value or None to drop it, what stderr says)
    let forgeries: Vec<(usize, &str, Option<Value>, &str)> = vec![
        (
            1,
            "time",
            Some(json!("garbage")),
            "field \"time\" is not an RFC 3339 UTC time",
        ),
        (
            1,
            "time",
            Some(json!("2026-11-30T01:26:00.123+01:00")),
            "field \"time\" is not an RFC 3339 UTC time",
        ),
        (
            5,
            "stage",
            Some(json!("nonsense")),
            "field \"stage\" is not a stage name",
        ),
        (1, "host", None, "missing field \"host\""),
        (
            1,
            "target_fingerprint",
            None,
            "missing field \"target_fingerprint\"",
        ),
        (
            1,
            "target_fingerprint",
            Some(json!("00")),
            "field \"target_fingerprint\" is not 64 lowercase hex digits",
        ),
        (
            5,
            "fingerprint",
            Some(json!("z".repeat(64))),
            "field \"fingerprint\" is not 64 lowercase hex digits",
        ),
        (
            1,
            "port",
            Some(json!(70000)),
            "field \"port\" is out of range",
        ),
        (
            1,
            "timeout_ms",
            Some(json!("30000")),
            "field \"timeout_ms\" is not an integer",
        ),
        (
            1,
            "target_kind",
            Some(json!("smtp")),
            "field \"target_kind\" is neither",
        ),
        (1, "forged", Some(json!(true)), "unknown member \"forged\""),
        (
            2,
            "is_error",
            Some(json!("no")),
            "field \"is_error\" is not a boolean",
        ),
        (
            2,
            "elapsed_ms",
            Some(json!(-1)),
            "field \"elapsed_ms\" is out of range",
        ),
        (2, "late", None, "missing field \"late\""),
        (5, "code", Some(json!(0)), "field \"code\" is out of range"),
        (5, "line", Some(json!(0)), "field \"line\" is out of range"),
        (
            5,
            "session",
            Some(json!("someone else")),
            "field \"session\" is not a session id",
        ),
        (5, "seq", Some(json!(-1)), "field \"seq\" is out of range"),
        (
            5,
            "prev",
            Some(json!("0")),
            "field \"prev\" is not 64 lowercase hex digits",
        ),
        (4, "version", None, "missing field \"version\""),
        (
            3,
            "records",
            Some(json!(2)),
            "records is not the session_end's own seq",
        ),
    ];
    for (index, member, value, says) in forgeries {
        let mut forged = genuine.clone();
        let record = forged[index].as_object_mut().expect("an object");
        match &value {
            Some(v) => {
                record.insert(member.to_owned(), v.clone());
            }
            None => {
                record.remove(member);
            }
        }
        let mut text = lines.clone();
        text[index] = layout(&forged[index]);
        let path = write_lines(&fx, "forged.jsonl", &text);
        let verify = fx.verify(&[], &path);
        verify.assert_code(1);
        let stderr = verify.stderr_text();
        let expected = format!("line {}: {says}", index + 1);
        assert!(
            stderr.contains(&expected),
            "{member} = {value:?}: expected {expected:?} on stderr:\n{stderr}"
        );
        // The genuine lines pass but for what the forged one breaks: the
        // chain at the session's next line, the pairing of a refused
        // intent's outcome.
        for other in stderr.lines().filter(|l| !l.contains(&expected)) {
            let next = format!("line {}: ", index + 2);
            assert!(
                other.contains(&next)
                    && (other.contains("prev is not the SHA-256")
                        || other.contains("seq skips")
                        || other.contains("no open intent")),
                "{member}: a genuine line is refused:\n{stderr}"
            );
        }
    }
}

#[test]
fn genuine_journals_of_several_sessions_verify_keyed_and_not() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    for keyed in [false, true] {
        let audit = fx.file(if keyed { "keyed.jsonl" } else { "plain.jsonl" });
        let launch = |fx: &Fixture| {
            if keyed {
                fx.mcp_keyed(&audit)
            } else {
                fx.mcp(&audit)
            }
        };
        launch(&fx)
            .run(&session(&[&call(
                2,
                "service_status",
                json!({"service": "a"}),
            )]))
            .assert_code(0);
        launch(&fx).run(b"debug: hello\n").assert_code(3);
        launch(&fx)
            .run(&session(&[
                &call(2, "service_status", json!({"service": "b"})),
                &call(3, "restart_service", json!({"service": "c"})),
                &call(4, "service_status", json!({"service": "d", "x": 1})),
            ]))
            .assert_code(0);
        let args: &[&str] = if keyed {
            &["--key-env", "AUDIT_KEY", "--json"]
        } else {
            &["--json"]
        };
        let verify = fx.verify(args, &audit);
        let report: Value = serde_json::from_slice(&verify.stdout).expect("one JSON report");
        assert_eq!(
            verify.code(),
            Some(0),
            "{report:#}\n{}",
            verify.stderr_text()
        );
        assert!(verify.stderr.is_empty(), "{}", verify.context());
        assert_eq!(report["ok"], true);
        let sessions = report["sessions"].as_array().expect("sessions");
        assert_eq!(sessions.len(), 3, "{report:#}");
        for s in sessions {
            assert_eq!(s["command"], "mcp", "{report:#}");
            assert_eq!(s["keyed"], keyed, "{report:#}");
            assert_eq!(s["closed"], true, "{report:#}");
            assert_eq!(s["interrupted"], json!([]), "{report:#}");
        }
        assert_eq!(report["kinds"]["intent"], 3, "{report:#}");
        assert_eq!(report["kinds"]["outcome"], 3, "{report:#}");
        assert_eq!(report["kinds"]["rejection"], 2, "{report:#}");
        // Under the key, an unkeyed journal fails, once per session.
        if !keyed {
            let verify = fx.verify(&["--key-env", "AUDIT_KEY"], &audit);
            verify.assert_code(1);
            let refused = verify
                .stderr_text()
                .lines()
                .filter(|l| l.contains("its session is not keyed"))
                .count();
            assert_eq!(refused, 3, "{}", verify.context());
        }
    }
}

/// A session of one intent and its outcome dated before it, chained
/// correctly (the forger can compute SHA-256, but holds no key).
fn invented_session() -> Vec<String> {
    let session = "31337-18e0000000000000";
    let fp = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let mut prev = "0".repeat(64);
    let records = [
        (
            "session_start",
            "2026-12-01T10:00:00.000Z",
            json!({"command":"mcp","keyed":false,"version":"0.1.0"}),
        ),
        (
            "intent",
            "2026-12-01T10:00:02.000Z",
            json!({"host":"127.0.0.1","line":3,"port":8080,
            "target_fingerprint":fp,"target_kind":"http","ticket":0,"timeout_ms":5000,
            "tool":"restart_service"}),
        ),
        (
            "outcome",
            "2026-12-01T10:00:01.000Z",
            json!({"cancelled":false,"elapsed_ms":3,
            "executed":true,"is_error":false,"late":false,"ticket":0}),
        ),
        ("session_end", "2026-12-01T10:00:03.000Z", json!({})),
    ];
    let mut lines = Vec::new();
    for (seq, (kind, time, members)) in records.into_iter().enumerate() {
        let mut record = Map::new();
        record.insert("kind".into(), kind.into());
        record.insert("time".into(), time.into());
        record.insert("session".into(), session.into());
        record.insert("seq".into(), seq.into());
        record.insert("prev".into(), prev.clone().into());
        record.extend(members.as_object().expect("members").clone());
        if kind == "session_end" {
            record.insert("records".into(), seq.into());
            record.insert("last".into(), prev.clone().into());
        }
        let line = layout(&Value::Object(record));
        prev = hex::encode(Sha256::digest(line.as_bytes()));
        lines.push(line);
    }
    lines
}

/// Each manipulation of issue 29 fails `audit verify`, naming its line.
#[test]
fn each_manipulation_of_a_journal_fails_naming_its_line() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    let plain = two_sessions(&fx, &fx.file("plain.jsonl"), false);
    let keyed = two_sessions(&fx, &fx.file("keyed.jsonl"), true);
    let edit = |lines: &[String], index: usize, from: &str, to: &str| {
        let mut edited = lines.to_vec();
        assert!(edited[index].contains(from), "{}", edited[index]);
        edited[index] = edited[index].replacen(from, to, 1);
        edited
    };
    let without = |lines: &[String], gone: &[usize]| -> Vec<String> {
        lines
            .iter()
            .enumerate()
            .filter(|(i, _)| !gone.contains(i))
            .map(|(_, l)| l.clone())
            .collect()
    };
    let mut swapped = plain.clone();
    swapped.swap(1, 2);
    let mut forged_in = plain.clone();
    let mut forged: Value = serde_json::from_str(&plain[1]).expect("JSON");
    forged["kind"] = "rejection".into();
    let forged = forged.as_object_mut().expect("object");
    for gone in [
        "ticket",
        "host",
        "port",
        "target_fingerprint",
        "target_kind",
        "timeout_ms",
        "tool",
    ] {
        forged.remove(gone);
    }
    forged.insert("stage".into(), "schema".into());
    forged.insert("code".into(), (-32602).into());
    forged.insert("fingerprint".into(), "0".repeat(64).into());
    forged_in.insert(1, layout(&Value::Object(forged.clone())));
    let first_session = plain[..4].to_vec();
    let cases: Vec<(&str, Vec<String>, &[&str], &str)> = vec![
        (
            "an intent/outcome pair deleted",
            without(&plain, &[1, 2]),
            &[],
            "line 2: seq skips 2 record(s) of its session after line 1",
        ),
        (
            "a host edited",
            edit(
                &plain,
                1,
                "\"host\":\"127.0.0.1\"",
                "\"host\":\"127.0.0.2\"",
            ),
            &[],
            "line 3: prev is not the SHA-256 of line 2",
        ),
        (
            "is_error flipped",
            edit(&plain, 2, "\"is_error\":false", "\"is_error\":true"),
            &[],
            "line 4: prev is not the SHA-256 of line 3",
        ),
        (
            "executed flipped",
            edit(&plain, 2, "\"executed\":true", "\"executed\":false"),
            &[],
            "line 4: prev is not the SHA-256 of line 3",
        ),
        (
            "records reordered",
            swapped,
            &[],
            "line 2: seq skips 1 record(s)",
        ),
        (
            "the journal appended twice",
            [plain.clone(), plain.clone()].concat(),
            &[],
            "line 8: its session starts again (its session_start is on line 1)",
        ),
        (
            "an invented session with an outcome dated before its intent",
            [plain.clone(), invented_session()].concat(),
            &[],
            "line 10: time is earlier than on line 9",
        ),
        (
            "a session's tail deleted",
            without(&plain, &[2, 3]),
            &[],
            "line 2: its session was cut short",
        ),
        (
            "a forged record put in",
            forged_in,
            &[],
            "line 3: seq goes back: its session was at seq 1 on line 2",
        ),
        (
            "a session replayed",
            [plain.clone(), first_session].concat(),
            &[],
            "line 8: its session starts again (its session_start is on line 1)",
        ),
        // With the key: the last record edited, a forged session.
        (
            "a keyed session's last record edited",
            edit(&keyed, 3, "\"records\":3", "\"records\":3 "),
            &["--key-env", "AUDIT_KEY"],
            "line 4: not laid out as the writers write a record",
        ),
        (
            "a keyed session's end re-dated",
            {
                let end: Value = serde_json::from_str(&keyed[3]).expect("JSON");
                let time = end["time"].as_str().expect("time").to_owned();
                // Later than any record, so that only the mac tells (a
                // last digit set to 9 would change nothing when it is 9).
                edit(&keyed, 3, &time, "2099-12-31T23:59:59.999Z")
            },
            &["--key-env", "AUDIT_KEY"],
            "line 4: mac does not match",
        ),
        (
            "an invented session in a keyed journal",
            [keyed.clone(), invented_session()].concat(),
            &["--key-env", "AUDIT_KEY"],
            "line 8: its session is not keyed",
        ),
    ];
    for (what, lines, args, says) in cases {
        let path = write_lines(&fx, "manipulated.jsonl", &lines);
        let verify = fx.verify(args, &path);
        assert_eq!(verify.code(), Some(1), "{what}: {}", verify.context());
        let stderr = verify.stderr_text();
        assert!(
            stderr.contains(says),
            "{what}: expected {says:?} on stderr:\n{stderr}"
        );
    }
}
