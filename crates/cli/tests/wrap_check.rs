//! `portcullis check -- portcullis wrap -- <broken server>` passes where
//! `portcullis check -- <broken server>` fails: the deliberately broken
//! fixture servers of the release gate (`check_fixtures/server.py MODE`),
//! each checked bare (exit 1) and through the wrapper (exit 0).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Launch, binary, drain, python, wait_limited};

const CHECK_LIMIT: Duration = Duration::from_secs(240);

fn fixture_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check_fixtures/server.py")
}

/// `portcullis check <options> -- <server...>`: exit code and report.
fn check(dir: &Path, options: &[&str], server: &[&str]) -> (Option<i32>, String) {
    let out = dir.join("out");
    let launch = Launch::new(
        dir,
        &[
            "check",
            "--timeout-ms",
            "3000",
            "--exit-timeout-ms",
            "3000",
            "--idle-ms",
            "150",
        ],
    )
    .args(&["--out", out.to_str().unwrap()])
    .args(options)
    .arg("--")
    .args(server);
    let mut child = launch.spawn();
    drop(child.stdin.take());
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let status = wait_limited(&mut child, CHECK_LIMIT, &launch.describe());
    let _ = stderr.join();
    let report = String::from_utf8_lossy(&stdout.join().unwrap()).into_owned();
    (status.code(), format!("{}\n{report}", launch.describe()))
}

/// Bare: the check fails. Wrapped (with `wrap_options`): it passes.
fn wrapping_repairs(mode: &str, check_options: &[&str], wrap_options: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let python = python();
    let server = fixture_server();
    let server = [python.to_str().unwrap(), server.to_str().unwrap(), mode];
    let (bare, report) = check(dir.path(), check_options, &server);
    assert_eq!(
        bare,
        Some(1),
        "the bare {mode} server must fail the check:\n{report}"
    );
    let bin = binary().to_str().unwrap().to_owned();
    let mut wrapped = vec![bin.as_str(), "wrap", "--log-level", "warn"];
    wrapped.extend_from_slice(wrap_options);
    wrapped.push("--");
    wrapped.extend_from_slice(&server);
    let (code, report) = check(dir.path(), check_options, &wrapped);
    assert_eq!(
        code,
        Some(0),
        "the wrapped {mode} server must pass the check:\n{report}"
    );
}

#[test]
fn a_banner_before_the_initialize_answer_is_quarantined() {
    wrapping_repairs("banner", &[], &[]);
}

#[test]
fn a_log_line_between_answers_is_quarantined() {
    wrapping_repairs("log-between", &[], &[]);
}

#[test]
fn an_id_null_error_is_dropped() {
    wrapping_repairs("null-id", &[], &[]);
}

#[test]
fn an_answer_to_a_notification_is_dropped() {
    wrapping_repairs("answers-notify", &[], &[]);
}

/// Two messages on one line are one invalid line: quarantined whole, so the
/// answer inside it is lost; the wrapper's request timeout answers the
/// request instead (here shorter than the check's own).
#[test]
fn two_frames_on_one_line_are_quarantined_and_the_request_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("wrap.toml");
    std::fs::write(
        &policy,
        "[server]\nname = \"w\"\n[wrap]\nrequest_timeout_ms = 1000\n",
    )
    .unwrap();
    wrapping_repairs("two-frames", &[], &["--policy", policy.to_str().unwrap()]);
}

#[test]
fn a_leak_under_debug_is_quarantined_in_every_matrix_condition() {
    wrapping_repairs("debug-leak", &["--matrix"], &[]);
}
