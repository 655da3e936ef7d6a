//! Claims of the README's "Running the gateway" section that had no guard
//! of their own, checked against the built binary (see `common`).

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

use common::{Fixture, Launch, call, http_policy, session};
use portcullis_testkit::fakes::FakeHttp;
use serde_json::json;

fn mcp(fx: &Fixture) -> Launch {
    Launch::new(fx.cwd.path(), &["mcp", "--policy"]).arg(&fx.policy)
}

/// "JSON Lines, appended (the file is created 0600)".
#[test]
fn the_audit_journal_is_created_owner_only() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    let audit = fx.file("audit.jsonl");
    let input = session(&[&call(2, "service_status", json!({"service": "api"}))]);
    mcp(&fx)
        .env("TEST_TOKEN", "t")
        .arg("--audit")
        .arg(&audit)
        .run(&input)
        .assert_code(0);
    let mode = std::fs::metadata(&audit)
        .expect("journal")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
}

/// `--workers` is 1 to 64 and `--grace-ms` at most 3600000: the bounds are
/// accepted, one past them is a usage error (exit 2, nothing on stdout).
#[test]
fn workers_and_grace_are_bounded_as_documented() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    for (flag, ok, bad) in [
        ("--workers", "1", "0"),
        ("--workers", "64", "65"),
        ("--grace-ms", "3600000", "3600001"),
    ] {
        let run = mcp(&fx).args(&[flag, ok]).run(b"");
        run.assert_code(0);
        let run = mcp(&fx).args(&[flag, bad]).run(b"");
        run.assert_code(2);
        assert!(run.stdout.is_empty(), "{flag} {bad}\n{}", run.context());
    }
}

/// "a credential the environment cannot supply is a warning at startup (by
/// name), and tools that need it are denied".
#[test]
fn a_missing_credential_is_a_startup_warning_and_its_tools_are_denied() {
    let server = FakeHttp::start();
    // keep-open, so the session goes on past the denial.
    let fx = Fixture::new(&http_policy(server.port()).replacen(
        "on_invalid = \"close\"",
        "on_invalid = \"keep-open\"",
        1,
    ));
    let input = session(&[
        &call(2, "service_status", json!({"service": "api"})),
        &call(3, "region_probe", json!({"host": "127.0.0.1"})),
    ]);
    let run = mcp(&fx).run(&input);
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("WARN") && stderr.contains("status_token"),
        "{}",
        run.context()
    );
    let (text, is_error) = run.tool_result(2);
    assert!(is_error && text.starts_with("denied"), "{text}");
    // A tool without a credential still runs.
    let (_, is_error) = run.tool_result(3);
    assert!(!is_error, "{}", run.context());
    assert_eq!(server.connections(), 1, "{}", run.context());
}

/// "a bounded queue (16 per worker; a call arriving when it is full is
/// answered `busy: …` as a tool error)".
#[test]
fn a_call_arriving_at_a_full_queue_is_answered_busy() {
    let server = FakeHttp::with(Duration::from_millis(100), None);
    let fx = Fixture::new(&http_policy(server.port()));
    // One worker: one call running, sixteen queued, the rest refused.
    let calls: Vec<Vec<u8>> = (0..20)
        .map(|i| call(2 + i, "slow_status", json!({"service": "a"})))
        .collect();
    let parts: Vec<&[u8]> = calls.iter().map(Vec::as_slice).collect();
    let run = mcp(&fx)
        .env("TEST_TOKEN", "t")
        .args(&["--workers", "1"])
        .run(&session(&parts));
    run.assert_code(0);
    let busy: Vec<i64> = (2..22)
        .filter(|&id| {
            let (text, is_error) = run.tool_result(id);
            text.starts_with("busy: ") && is_error
        })
        .collect();
    // At most 20 - 16 slots - 0 running; at least one unless the worker
    // drained calls while the core was still reading the twenty.
    assert!(
        (1..=4).contains(&busy.len()),
        "busy answers {busy:?}\n{}",
        run.context()
    );
    assert_eq!(server.connections(), 20 - busy.len(), "{}", run.context());
}
