//! `portcullis replay` as the README documents it: the `--json` shape,
//! stand-in credentials unless `--env-credentials`, chunking that changes
//! nothing, and exit codes 0 (ran) and 2 (bad policy or I/O).

mod common;

use common::{Fixture, Launch, Run, example};
use serde_json::Value;

fn replay(fx: &Fixture, args: &[&str]) -> Run {
    Launch::new(fx.cwd.path(), &["replay"]).args(args).run(b"")
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn json_report(run: &Run) -> Value {
    run.assert_code(0);
    let text = std::str::from_utf8(&run.stdout).expect("utf-8");
    assert_eq!(text.lines().count(), 1, "one object\n{}", run.context());
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}\n{}", run.context()))
}

/// The README's example command, and the keys it documents.
#[test]
fn json_report_has_the_documented_shape() {
    let fx = Fixture::new("");
    let policy = example("policy.toml");
    let valid = example("sessions/legacy-valid.jsonl");
    let report = json_report(&replay(
        &fx,
        &["--policy", path(&policy), "--json", path(&valid)],
    ));
    let keys: Vec<&str> = report
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "stdout",
        "actions",
        "rejections",
        "closed",
        "close_reason",
        "revision",
        "transcript_ok",
    ] {
        assert!(keys.contains(&key), "missing {key}: {report}");
    }
    assert!(report["stdout"].as_str().unwrap().ends_with('\n'));
    let action = &report["actions"][0];
    assert_eq!(action["tool"], "service_status");
    assert_eq!(action["kind"], "http");
    assert!(
        action["target"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1:8080/status/api")
    );
    assert_eq!(report["rejections"], Value::Array(vec![]));
    assert_eq!(report["closed"], false);
    assert_eq!(report["revision"], "2025-11-25");
    assert_eq!(report["transcript_ok"], true);

    let debug = example("sessions/debug-line.jsonl");
    let report = json_report(&replay(
        &fx,
        &["--policy", path(&policy), "--json", path(&debug)],
    ));
    let rejection = &report["rejections"][0];
    assert_eq!(rejection["stage"], "json");
    assert_eq!(rejection["code"], -32700);
    let fingerprint = rejection["fingerprint"].as_str().unwrap();
    assert!(
        fingerprint.len() == 64 && fingerprint.bytes().all(|b| b.is_ascii_hexdigit()),
        "{fingerprint}"
    );
    assert_eq!(report["closed"], true);
    assert_eq!(report["close_reason"]["stage"], "json");
    assert_eq!(report["actions"], Value::Array(vec![]));
}

/// "stand-in credentials unless `--env-credentials`": with the example's
/// credentials absent from the environment, the call is authorized with a
/// stand-in, and denied at authorization with `--env-credentials`.
#[test]
fn stand_in_credentials_unless_env_credentials() {
    let fx = Fixture::new("");
    let policy = example("policy.toml");
    let valid = example("sessions/legacy-valid.jsonl");
    let stand_in = json_report(&replay(
        &fx,
        &["--policy", path(&policy), "--json", path(&valid)],
    ));
    assert_eq!(stand_in["actions"].as_array().unwrap().len(), 1);
    let env = json_report(&replay(
        &fx,
        &[
            "--policy",
            path(&policy),
            "--json",
            "--env-credentials",
            path(&valid),
        ],
    ));
    assert_eq!(env["actions"], Value::Array(vec![]), "{env}");
    assert_eq!(env["rejections"][0]["stage"], "authz", "{env}");
}

/// Any `--chunk` gives the same report as one read.
#[test]
fn chunking_changes_nothing() {
    let fx = Fixture::new("");
    let policy = example("policy.toml");
    for session in [
        "legacy-valid",
        "same-line-banner",
        "truncated-eof",
        "two-objects",
    ] {
        let input = example(&format!("sessions/{session}.jsonl"));
        let args = ["--policy", path(&policy), "--json", path(&input)];
        let whole = replay(&fx, &args);
        for n in ["1", "7", "4096"] {
            let split = replay(&fx, &[&args[..], &["--chunk", n]].concat());
            assert_eq!(
                json_report(&whole),
                json_report(&split),
                "{session} --chunk {n}"
            );
        }
    }
}

/// Exit 2 for a bad policy or unreadable input, with nothing on stdout.
#[test]
fn bad_policy_or_input_is_exit_2() {
    let fx = Fixture::new("[server]\nname = 1\n");
    let valid = example("sessions/legacy-valid.jsonl");
    let example_policy = example("policy.toml");
    for args in [
        vec!["--policy", path(&fx.policy), path(&valid)],
        vec!["--policy", "/nonexistent/policy.toml", path(&valid)],
        vec![
            "--policy",
            path(&example_policy),
            "/nonexistent/input.jsonl",
        ],
        vec![
            "--policy",
            path(&example_policy),
            "--chunk",
            "0",
            path(&valid),
        ],
    ] {
        let run = replay(&fx, &args);
        run.assert_code(2);
        assert!(run.stdout.is_empty(), "{}", run.context());
    }
}

/// The human report names actions, rejections, close and the transcript.
#[test]
fn human_report_lists_what_happened() {
    let fx = Fixture::new("");
    let policy = example("policy.toml");
    let valid = example("sessions/legacy-valid.jsonl");
    let run = replay(&fx, &["--policy", path(&policy), path(&valid)]);
    run.assert_code(0);
    let text = String::from_utf8(run.stdout.clone()).unwrap();
    assert!(text.starts_with("stdout ("), "{text}");
    assert!(
        text.contains("actions: 1\n  service_status [http]"),
        "{text}"
    );
    assert!(text.contains("rejections: 0"), "{text}");
    assert!(text.contains("closed: no"), "{text}");
    assert!(text.contains("transcript: 2 frames, clean"), "{text}");
}
