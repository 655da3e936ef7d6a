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

/// The report as one in-memory session gives it, rendered the way replay
/// rendered it from a `serde_json::Value` (JSON) or from the whole of
/// stdout (human): the document the streamed report must equal, byte for
/// byte.
fn report_from_memory(
    policy: &std::path::Path,
    capture: &[u8],
    chunk: Option<usize>,
    json: bool,
) -> Vec<u8> {
    use portcullis_gateway::replay::{Chunking, Recorder, run_session_unchecked};
    use portcullis_gateway::{Policy, SecretStore};
    use serde_json::json;
    use std::fmt::Write as _;

    let policy = Policy::load(policy).expect("policy");
    let secrets = SecretStore::stand_ins(&policy);
    let policy = policy.bind_secrets(secrets);
    let chunking = chunk.map_or(Chunking::Whole, |n| Chunking::Sizes(vec![n]));
    let report = run_session_unchecked(&policy, capture, &chunking, &Recorder::default());
    let transcript = portcullis_wire::check_transcript(&report.stdout);
    let mut text = String::new();
    if json {
        let value = json!({
            "stdout": String::from_utf8_lossy(&report.stdout),
            "actions": report.actions.iter().map(|a| json!({"tool": a.tool(), "kind": a.kind(), "target": a.describe_target()})).collect::<Vec<_>>(),
            "rejections": report.rejections.iter().map(|r| json!({"stage": r.stage.as_str(), "code": r.code, "fingerprint": r.fingerprint.to_hex(), "line": r.line})).collect::<Vec<_>>(),
            "closed": report.closed.is_some(),
            "close_reason": report.closed.as_ref().map(|c| json!({"line": c.line, "stage": c.stage.as_str(), "code": c.code, "reason": c.reason})),
            "revision": report.revision.map(|r| r.as_str()),
            "transcript_ok": transcript.is_ok(),
        });
        writeln!(text, "{value}").unwrap();
    } else {
        writeln!(text, "stdout ({} bytes):", report.stdout.len()).unwrap();
        for line in String::from_utf8_lossy(&report.stdout).lines() {
            writeln!(text, "  {line}").unwrap();
        }
        writeln!(text, "actions: {}", report.actions.len()).unwrap();
        for a in &report.actions {
            writeln!(
                text,
                "  {} [{}] {}",
                a.tool(),
                a.kind(),
                a.describe_target()
            )
            .unwrap();
        }
        writeln!(text, "rejections: {}", report.rejections.len()).unwrap();
        for r in &report.rejections {
            writeln!(
                text,
                "  line {}: {} {} {}",
                r.line, r.stage, r.code, r.fingerprint
            )
            .unwrap();
        }
        match &report.closed {
            Some(c) => writeln!(
                text,
                "closed: line {} [{} {}] {}",
                c.line, c.stage, c.code, c.reason
            ),
            None => writeln!(text, "closed: no"),
        }
        .unwrap();
        match transcript {
            Ok(n) => writeln!(text, "transcript: {n} frames, clean"),
            Err(v) => writeln!(text, "transcript: {v}"),
        }
        .unwrap();
    }
    text.into_bytes()
}

/// The report is streamed (written part by part as the session runs,
/// never held whole) and is still the document a session held in memory
/// gives: for every example session, under a policy that closes on
/// invalid input and one that keeps the session open, in one read and in
/// reads of 1 and 7 bytes, `--json` prints one JSON object with the
/// members `actions`, `close_reason`, `closed`, `rejections`, `revision`,
/// `stdout`, `transcript_ok` in that order, byte for byte the compact
/// serialization of that value, and the human report is the same text.
#[test]
fn the_streamed_report_is_the_document_an_in_memory_session_gives() {
    let close = example("policy.toml");
    let text = std::fs::read_to_string(&close).expect("example policy");
    assert!(
        text.contains(r#"on_invalid = "close""#),
        "the example policy closes on invalid input"
    );
    let keep_open =
        Fixture::new(&text.replace(r#"on_invalid = "close""#, r#"on_invalid = "keep-open""#));
    let mut captures: Vec<_> = std::fs::read_dir(example("sessions"))
        .expect("examples/sessions")
        .map(|e| e.expect("entry").path())
        .collect();
    captures.sort();
    captures.push(example("hard-cases.jsonl"));
    let mut rejected = 0;
    for capture in &captures {
        let bytes = std::fs::read(capture).expect("capture");
        for policy in [close.as_path(), keep_open.policy.as_path()] {
            for chunk in [None, Some(1), Some(7)] {
                for json in [true, false] {
                    let mut args = vec!["--policy", path(policy)];
                    let n = chunk.map(|n| n.to_string());
                    if let Some(n) = &n {
                        args.extend(["--chunk", n]);
                    }
                    if json {
                        args.push("--json");
                    }
                    args.push(path(capture));
                    let run = replay(&keep_open, &args);
                    run.assert_code(0);
                    let expected = report_from_memory(policy, &bytes, chunk, json);
                    assert_eq!(
                        String::from_utf8_lossy(&run.stdout),
                        String::from_utf8_lossy(&expected),
                        "{}",
                        run.context()
                    );
                    if json {
                        // The member order is pinned by the bytes above; a
                        // parsed `Value` sorts its keys.
                        let value = json_report(&run);
                        assert_eq!(value.as_object().map(|o| o.len()), Some(7), "{value}");
                        rejected += value["rejections"].as_array().map_or(0, Vec::len);
                    }
                }
            }
        }
    }
    assert!(rejected > 0, "some example session is refused somewhere");
}
