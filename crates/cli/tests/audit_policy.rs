//! `portcullis mcp --audit` and `portcullis audit verify`, run as
//! processes (see `common`).

mod common;

use std::path::Path;

use common::{Fixture, Launch, Step, call, http_policy, session, stdout_text};
use portcullis_testkit::fakes::FakeHttp;
use serde_json::{Value, json};

const TOKEN: &str = "tok-audit-canary-51f3";
/// An argument value that must never appear in the journal.
const ARG: &str = "zqx-arg-value";

impl Fixture {
    fn mcp(&self, audit: &Path) -> Launch {
        Launch::new(self.cwd.path(), &["mcp", "--policy"])
            .arg(&self.policy)
            .arg("--audit")
            .arg(audit)
            .env("TEST_TOKEN", TOKEN)
    }
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
    assert_eq!(kinds(&all), ["intent", "outcome"]);
    let (intent, outcome) = (&all[0], &all[1]);
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
        "rejections: 0",
        "intents: 1",
        "outcomes: 1",
        "interrupted: 0",
        "malformed: 0",
    ] {
        assert!(report.contains(line), "{report}");
    }
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
    assert_eq!(kinds(&all), ["rejection"]);
    assert_eq!(all[0]["line"], 3);
    assert_eq!(all[0]["stage"], "schema");
    assert_eq!(all[0]["code"], -32602);
    assert_eq!(all[0]["fingerprint"].as_str().map(str::len), Some(64));
    let text = std::fs::read_to_string(&audit).expect("journal");
    assert!(!text.contains(ARG), "{text}");

    // A second session appends to the same file.
    let run = fx.mcp(&audit).run(b"debug: hello\n");
    run.assert_code(3);
    let all = records(&audit);
    assert_eq!(kinds(&all), ["rejection", "rejection"]);
    assert_ne!(all[0]["session"], all[1]["session"]);
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
    assert_eq!(kinds(&all), ["intent", "rejection", "outcome"]);
    assert_eq!(all[2]["executed"], true);
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
        "intents: 2",
        "outcomes: 1",
        "interrupted: 1",
        "malformed: 0",
    ] {
        assert!(report.contains(line), "{report}");
    }
    assert!(report.contains("tool \"hang_tool\""), "{report}");

    // A truncated journal: the last record cut short.
    let text = std::fs::read_to_string(&audit).expect("journal");
    let truncated = fx.file("truncated.jsonl");
    std::fs::write(&truncated, &text[..text.len() - 10]).expect("write");
    let verify = fx.run(&["audit", "verify", truncated.to_str().expect("utf-8")]);
    verify.assert_code(1);
    assert!(
        stdout_text(&verify).contains("truncated final line"),
        "{}",
        stdout_text(&verify)
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
    assert!(report.contains("malformed: 3"), "{report}");
    assert!(report.contains("interrupted: 1"), "{report}");

    let verify = fx.run(&["audit", "verify", "/nonexistent/audit.jsonl"]);
    verify.assert_code(2);
    assert!(verify.stdout.is_empty());
}

#[test]
fn audit_verify_refuses_each_forged_member_of_a_real_journal() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    let audit = fx.file("audit.jsonl");
    let run = fx.mcp(&audit).run(&session(&[&call(
        2,
        "service_status",
        json!({"service": "api"}),
    )]));
    run.assert_code(0);
    let run = fx.mcp(&audit).run(b"debug: hello\n");
    run.assert_code(3);
    let genuine = records(&audit);
    assert_eq!(kinds(&genuine), ["intent", "outcome", "rejection"]);
    let verify = fx.run(&["audit", "verify", audit.to_str().expect("utf-8")]);
    verify.assert_code(0);
    assert!(verify.stderr_text().is_empty(), "{}", verify.context());

    // (record index, member, forged value or None to drop it, what stderr says)
    let forgeries: Vec<(usize, &str, Option<Value>, &str)> = vec![
        (
            0,
            "time",
            Some(json!("garbage")),
            "field \"time\" is not an RFC 3339 time",
        ),
        (
            0,
            "time",
            Some(json!("2026-11-30T01:26:00.123+01:00")),
            "field \"time\" is an RFC 3339 time but not in UTC",
        ),
        (
            2,
            "stage",
            Some(json!("nonsense")),
            "field \"stage\" is not a stage name",
        ),
        (0, "host", None, "missing field \"host\""),
        (
            0,
            "target_fingerprint",
            None,
            "missing field \"target_fingerprint\"",
        ),
        (
            0,
            "target_fingerprint",
            Some(json!("00")),
            "field \"target_fingerprint\" is not 64 lowercase hex digits",
        ),
        (
            2,
            "fingerprint",
            Some(json!("z".repeat(64))),
            "field \"fingerprint\" is not 64 lowercase hex digits",
        ),
        (
            0,
            "port",
            Some(json!(70000)),
            "field \"port\" is out of range",
        ),
        (
            0,
            "timeout_ms",
            Some(json!("30000")),
            "field \"timeout_ms\" is not an integer",
        ),
        (
            0,
            "target_kind",
            Some(json!("smtp")),
            "field \"target_kind\" is neither",
        ),
        (0, "forged", Some(json!(true)), "unknown member \"forged\""),
        (
            1,
            "is_error",
            Some(json!("no")),
            "field \"is_error\" is not a boolean",
        ),
        (
            1,
            "elapsed_ms",
            Some(json!(-1)),
            "field \"elapsed_ms\" is out of range",
        ),
        (1, "late", None, "missing field \"late\""),
        (2, "code", Some(json!(0)), "field \"code\" is out of range"),
        (2, "line", Some(json!(0)), "field \"line\" is out of range"),
        (
            2,
            "session",
            Some(json!("someone else")),
            "field \"session\" is not a session id",
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
        let text: String = forged.iter().map(|r| format!("{r}\n")).collect();
        let path = fx.file("forged.jsonl");
        std::fs::write(&path, text).expect("write");
        let verify = fx.run(&["audit", "verify", path.to_str().expect("utf-8")]);
        verify.assert_code(1);
        let stderr = verify.stderr_text();
        let expected = format!("line {}: {says}", index + 1);
        assert!(
            stderr.contains(&expected),
            "{member} = {value:?}: expected {expected:?} on stderr:\n{stderr}"
        );
        // The genuine lines pass; an outcome whose intent was refused is
        // an orphan, and reported as such.
        for other in stderr.lines().filter(|l| !l.contains(&expected)) {
            assert!(
                other.ends_with("has no open intent before it"),
                "{member}: a genuine line is refused:\n{stderr}"
            );
        }
    }
}
