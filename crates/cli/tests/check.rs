//! `portcullis check`, the stdio release gate: against `portcullis mcp`
//! itself every condition and a fuzz pass hold; against each deliberately
//! broken fixture server (`check_fixtures/server.py MODE`) the check exits
//! 1 and quotes the first offending stdout bytes exactly.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Fixture, Launch, Run, binary, drain, http_policy, python, vm_hwm_kib, wait_limited};
use serde_json::Value;

/// Nothing listens here: `check` calls a tool only when asked to.
const CLOSED_PORT: u16 = 9;
/// How long one `portcullis check` run may take before the test kills it.
const CHECK_LIMIT: Duration = Duration::from_secs(120);

fn fixture_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check_fixtures/server.py")
}

/// `portcullis check <options> -- <server...>` from an empty directory.
fn check(cwd: &Path, options: &[&str], server: &[&str]) -> Run {
    check_measured(cwd, options, server).0
}

/// [`check`], and the checker's peak resident set in KiB: its `VmHWM`,
/// sampled from `/proc` until it exits (0 without `/proc`).
fn check_measured(cwd: &Path, options: &[&str], server: &[&str]) -> (Run, u64) {
    let launch = Launch::new(cwd, &["check"])
        .args(options)
        .arg("--")
        .args(server);
    // `check` bounds every step itself; this limit only catches a checker
    // that hangs, and leaves room for the 30 s fuzz pass.
    let started = Instant::now();
    let mut child = launch.spawn();
    drop(child.stdin.take());
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let mut peak_kib = 0;
    let status = loop {
        if let Some(kib) = vm_hwm_kib(child.id()) {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if started.elapsed() >= CHECK_LIMIT {
            break wait_limited(&mut child, Duration::ZERO, &launch.describe());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let run = Run {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        launch: launch.describe(),
        elapsed: started.elapsed(),
    };
    (run, peak_kib)
}

/// `check` against the fixture server in `mode`, with short bounds.
fn check_fixture(mode: &str, options: &[&str]) -> (Run, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let python = python();
    let server = fixture_server();
    let mut all = vec![
        "--timeout-ms",
        "1500",
        "--exit-timeout-ms",
        "1500",
        "--idle-ms",
        "100",
        "--out",
        out.to_str().expect("utf-8 path"),
    ];
    all.extend_from_slice(options);
    let run = check(
        dir.path(),
        &all,
        &[
            python.to_str().expect("utf-8 path"),
            server.to_str().expect("utf-8 path"),
            mode,
        ],
    );
    (run, dir)
}

fn report(run: &Run) -> String {
    String::from_utf8_lossy(&run.stdout).into_owned()
}

/// Assert the check failed (exit 1) and its report quotes `bytes`.
fn assert_caught(run: &Run, bytes: &str) {
    let text = report(run);
    assert_eq!(run.code(), Some(1), "{}\n{text}", run.context());
    assert!(
        text.contains(bytes),
        "report does not quote {bytes}:\n{text}"
    );
}

/// `portcullis check <options> -- portcullis mcp --policy <test policy>`.
fn check_gateway(options: &[&str]) -> (Run, Fixture) {
    let fixture = Fixture::new(&http_policy(CLOSED_PORT));
    let bin = binary().to_str().expect("utf-8 path").to_owned();
    let policy = fixture.policy.to_str().expect("utf-8 path").to_owned();
    let run = check(
        fixture.cwd.path(),
        options,
        &[&bin, "mcp", "--policy", &policy],
    );
    (run, fixture)
}

fn json_report(run: &Run) -> Value {
    serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", report(run)))
}

#[test]
fn portcullis_mcp_passes_every_matrix_condition() {
    let (run, _fixture) = check_gateway(&["--matrix", "--idle-ms", "300", "--format", "json"]);
    let value = json_report(&run);
    assert_eq!(run.code(), Some(0), "{}\n{value:#}", run.context());
    let cases = value["cases"].as_array().expect("cases");
    let names: Vec<&str> = cases.iter().filter_map(|c| c["name"].as_str()).collect();
    for expected in [
        "script",
        "verbose-env",
        "empty-home",
        "empty-cwd",
        "idle-start",
        "stdin-closed",
        "garbage-1",
        "garbage-12",
    ] {
        assert!(
            names.contains(&expected),
            "no {expected} condition in {names:?}"
        );
    }
    for case in cases {
        assert_eq!(case["passed"], true, "{case:#}");
    }
}

#[test]
fn portcullis_mcp_passes_in_the_modern_era_and_against_the_official_schema() {
    let mut options = vec!["--era", "modern"];
    let dir = std::env::var("MCP_SCHEMA_DIR").ok();
    if let Some(dir) = &dir {
        options.extend(["--schema-dir", dir.as_str()]);
    }
    let (run, _fixture) = check_gateway(&options);
    assert_eq!(run.code(), Some(0), "{}\n{}", run.context(), report(&run));
    assert!(
        report(&run).contains("negotiated revision 2026-07-28"),
        "{}",
        report(&run)
    );
}

#[test]
fn a_call_is_added_to_the_script_and_answered() {
    let out = tempfile::tempdir().expect("tempdir");
    let out_dir = out.path().to_str().expect("utf-8").to_owned();
    let (run, _fixture) = check_gateway(&[
        "--call",
        "service_status",
        "--args",
        r#"{"service":"api"}"#,
        "--out",
        &out_dir,
    ]);
    assert_eq!(run.code(), Some(0), "{}\n{}", run.context(), report(&run));
    let stdout = std::fs::read(out.path().join("script.stdout")).expect("saved stdout");
    let answered = stdout
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .any(|v| v["id"] == 4 && v.get("result").is_some());
    assert!(
        answered,
        "no answer to the tools/call:\n{}",
        String::from_utf8_lossy(&stdout)
    );
}

#[test]
fn a_user_script_with_a_delay_step_is_sent_as_written() {
    let fixture = Fixture::new("");
    let script = fixture.file("script.ndjson");
    std::fs::write(
        &script,
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"delay_ms":400}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#,
            "\n"
        ),
    )
    .expect("write script");
    let (run, _f) = check_gateway(&[
        "--format",
        "json",
        "--script",
        script.to_str().expect("utf-8"),
    ]);
    let value = json_report(&run);
    assert_eq!(run.code(), Some(0), "{value:#}");
    assert!(
        value["cases"][0]["millis"].as_u64().expect("millis") >= 400,
        "{value:#}"
    );
}

#[test]
fn portcullis_mcp_survives_a_short_fuzz_pass() {
    fuzz_gateway(Duration::from_secs(8));
}

/// The issue's 30 s pass: `cargo test -p portcullis-cli --test check -- --ignored`.
#[test]
#[ignore = "30 s; run by .ci/run or by hand"]
fn portcullis_mcp_survives_a_30_second_fuzz_pass() {
    fuzz_gateway(Duration::from_secs(30));
}

fn fuzz_gateway(duration: Duration) {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/stdin_bytes");
    let fuzz = format!("{}s", duration.as_secs());
    let (run, _fixture) = check_gateway(&[
        "--fuzz",
        &fuzz,
        "--corpus",
        corpus.to_str().expect("utf-8"),
        "--format",
        "json",
    ]);
    let value = json_report(&run);
    assert_eq!(run.code(), Some(0), "{value:#}");
    let fuzz = value["cases"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "fuzz"))
        .expect("a fuzz case");
    let notes = fuzz["notes"][0].as_str().expect("notes");
    let batches: usize = notes
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("batch count");
    assert!(batches >= 10, "too few batches for a fuzz pass: {notes}");
    assert!(
        notes.contains("from 5") || notes.contains("files under"),
        "corpus not used: {notes}"
    );
}

#[test]
fn a_command_that_cannot_be_launched_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = check(dir.path(), &[], &["/nonexistent/mcp-server", "--stdio"]);
    assert_eq!(run.code(), Some(2), "{}", run.context());
    assert!(
        run.stderr_text().contains("cannot launch"),
        "{}",
        run.context()
    );
}

#[test]
fn a_correct_fixture_server_passes_the_matrix() {
    let (run, _dir) = check_fixture("good", &["--matrix"]);
    assert_eq!(run.code(), Some(0), "{}\n{}", run.context(), report(&run));
}

#[test]
fn a_banner_before_the_initialize_response_is_quoted() {
    let (run, _dir) = check_fixture("banner", &[]);
    assert_caught(&run, r#"non-protocol stdout on line 1: b"loading..\n""#);
}

#[test]
fn a_log_line_between_responses_is_quoted() {
    let (run, _dir) = check_fixture("log-between", &[]);
    assert_caught(
        &run,
        r#"non-protocol stdout on line 3: b"handled ping in 0.2 ms\n""#,
    );
}

#[test]
fn two_frames_on_one_line_are_quoted() {
    let (run, _dir) = check_fixture("two-frames", &[]);
    assert_caught(
        &run,
        r#"non-protocol stdout on line 3: b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}\n""#,
    );
}

#[test]
fn a_response_without_its_final_newline_before_exit_is_quoted() {
    let (run, _dir) = check_fixture("no-final-newline", &[]);
    assert_caught(
        &run,
        r#"non-protocol stdout on line 3: b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}": missing final newline"#,
    );
}

#[test]
fn an_id_null_error_is_quoted() {
    let (run, _dir) = check_fixture("null-id", &[]);
    assert_caught(
        &run,
        r#"non-protocol stdout on line 2: b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32601,\"message\":\"unknown method\"}}\n": "id": null"#,
    );
}

#[test]
fn a_leak_only_under_debug_is_caught_by_the_matrix_alone() {
    let (plain, _dir) = check_fixture("debug-leak", &[]);
    assert_eq!(
        plain.code(),
        Some(0),
        "{}\n{}",
        plain.context(),
        report(&plain)
    );
    let (matrix, _dir) = check_fixture("debug-leak", &["--matrix"]);
    assert_caught(
        &matrix,
        r#"non-protocol stdout on line 1: b"debug: initialize from {\"name\": \"portcullis-check\""#,
    );
    assert!(
        report(&matrix).contains("FAIL verbose-env"),
        "{}",
        report(&matrix)
    );
}

#[test]
fn a_reply_to_a_notification_is_quoted() {
    let (run, _dir) = check_fixture("answers-notify", &[]);
    assert_caught(
        &run,
        "a reply to the notification `notifications/initialized`",
    );
    assert_caught(
        &run,
        r#"on line 2: b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n""#,
    );
}

#[test]
fn a_server_that_never_answers_fails_within_the_bound() {
    let (run, _dir) = check_fixture("silent", &[]);
    assert_caught(
        &run,
        "no response to request id 1 (`initialize`) within 1500 ms",
    );
    assert!(
        run.elapsed < Duration::from_secs(10),
        "took {:?}",
        run.elapsed
    );
}

#[test]
fn a_server_that_lingers_after_stdin_closes_is_killed_and_fails() {
    let (run, _dir) = check_fixture("lingers", &[]);
    assert_caught(&run, "did not exit within 1500 ms after stdin closed");
}

#[test]
fn a_crash_on_a_duplicate_key_is_caught_by_the_garbage_probes() {
    let (plain, _dir) = check_fixture("dup-key-crash", &[]);
    assert_eq!(
        plain.code(),
        Some(0),
        "{}\n{}",
        plain.context(),
        report(&plain)
    );
    let (matrix, _dir) = check_fixture("dup-key-crash", &["--matrix"]);
    assert_caught(
        &matrix,
        r#"b"{\"jsonrpc\":\"2.0\",\"id\":70,\"method\":\"ping\",\"id\":71}\n""#,
    );
    assert_caught(&matrix, "exited with status 1 on hostile input");
    assert_caught(&matrix, r#"b"ValueError: duplicate key""#);
}

#[test]
fn a_fuzz_failure_is_minimized_to_a_script_that_replays_it() {
    let empty = tempfile::tempdir().expect("empty corpus");
    let corpus = empty.path().to_str().expect("utf-8").to_owned();
    let (run, dir) = check_fixture(
        "dup-key-crash",
        &[
            "--fuzz", "4s", "--seed", "7", "--corpus", &corpus, "--format", "json",
        ],
    );
    let value = json_report(&run);
    assert_eq!(run.code(), Some(1), "{value:#}");
    let fuzz = value["cases"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "fuzz"))
        .expect("a fuzz case");
    assert!(
        fuzz["notes"][0]
            .as_str()
            .expect("notes")
            .contains("built-in hard cases"),
        "{fuzz:#}"
    );
    let saved = dir.path().join("out/fuzz-failure-1.ndjson");
    let script =
        std::fs::read(&saved).unwrap_or_else(|e| panic!("{}: {e}\n{fuzz:#}", saved.display()));
    // Handshake (2 lines), the minimized frames, the liveness ping.
    let lines = script.split_inclusive(|&b| b == b'\n').count();
    assert!(
        lines <= 2 + 2 + 1,
        "not minimized ({lines} lines):\n{}",
        String::from_utf8_lossy(&script)
    );
    let replay_options = ["--hostile", "--script", saved.to_str().expect("utf-8")];
    let (replay, _dir) = check_fixture("dup-key-crash", &replay_options);
    assert_eq!(
        replay.code(),
        Some(1),
        "{}\n{}",
        replay.context(),
        report(&replay)
    );
    let (control, _dir) = check_fixture("good", &replay_options);
    assert_eq!(
        control.code(),
        Some(0),
        "{}\n{}",
        control.context(),
        report(&control)
    );
}

#[test]
fn the_json_report_names_the_line_and_its_bytes() {
    let (run, _dir) = check_fixture("banner", &["--format", "json"]);
    let value = json_report(&run);
    assert_eq!(run.code(), Some(1), "{value:#}");
    assert_eq!(value["passed"], false);
    let failure = &value["cases"][0]["failures"][0];
    assert_eq!(failure["check"], "framing", "{value:#}");
    assert_eq!(failure["line"], 1, "{value:#}");
    assert_eq!(failure["bytes"], r#"b"loading..\n""#, "{value:#}");
    let stdout = value["cases"][0]["stdout"]
        .as_str()
        .expect("stdout transcript path");
    assert!(
        std::fs::read(stdout)
            .expect("saved stdout")
            .starts_with(b"loading..\n")
    );
}

#[test]
fn the_junit_report_carries_the_failure_for_ci() {
    let (run, _dir) = check_fixture("banner", &["--format", "junit"]);
    let text = report(&run);
    assert_eq!(run.code(), Some(1), "{text}");
    assert!(text.starts_with("<?xml"), "{text}");
    assert!(
        text.contains(r#"<testcase classname="portcullis.check" name="script""#),
        "{text}"
    );
    assert!(text.contains(r#"<failure type="framing""#), "{text}");
    assert!(text.contains(r#"b&quot;loading..\n&quot;"#), "{text}");
}

#[test]
fn a_result_that_breaks_the_official_schema_is_quoted() {
    let Some(dir) = std::env::var_os("MCP_SCHEMA_DIR") else {
        eprintln!("MCP_SCHEMA_DIR is not set: skipping the --schema-dir test");
        return;
    };
    let dir = dir.to_str().expect("utf-8").to_owned();
    let (plain, _d) = check_fixture("bad-schema", &[]);
    assert_eq!(
        plain.code(),
        Some(0),
        "{}\n{}",
        plain.context(),
        report(&plain)
    );
    let (run, _d) = check_fixture("bad-schema", &["--schema-dir", &dir]);
    assert_caught(&run, "line 1: result is not a 2025-11-25 InitializeResult");
    assert_caught(
        &run,
        r#"b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}}}}\n""#,
    );
}

/// `check <options> -- stderr_flood.py MODE BYTES` (a server whose stdout
/// is correct and whose stderr carries BYTES of logs), with room for the
/// flood to drain: the run, the checker's peak RSS in KiB, and the output
/// directory.
fn check_flood(mode: &str, bytes: u64, options: &[&str]) -> (Run, u64, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let python = python();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check_fixtures/stderr_flood.py");
    let bytes = bytes.to_string();
    let mut all = vec![
        "--timeout-ms",
        "60000",
        "--exit-timeout-ms",
        "60000",
        "--out",
        out.to_str().expect("utf-8 path"),
    ];
    all.extend_from_slice(options);
    let (run, peak_kib) = check_measured(
        dir.path(),
        &all,
        &[
            python.to_str().expect("utf-8 path"),
            server.to_str().expect("utf-8 path"),
            mode,
            &bytes,
        ],
    );
    (run, peak_kib, dir)
}

/// A server that writes 1 GiB to stderr as fast as the pipe takes it,
/// while answering correctly, passes: stderr is drained to its end (the
/// server never blocks), but only its first and last MiB are kept, in
/// memory and in the saved transcript, and the report says how much was
/// dropped. The checker's peak RSS stays within 16 MiB of its peak
/// against the same server writing nothing to stderr; holding stderr
/// whole peaked at the flood's size.
#[test]
fn a_server_flooding_stderr_passes_with_stderr_cut_and_memory_bounded() {
    const FLOOD: u64 = 1024 * 1024 * 1024;
    const KEPT: u64 = 2 * 1024 * 1024;
    let (quiet, quiet_kib, _dir) = check_flood("answers", 0, &["--format", "json"]);
    assert_eq!(
        quiet.code(),
        Some(0),
        "{}\n{}",
        quiet.context(),
        report(&quiet)
    );
    assert_eq!(json_report(&quiet)["cases"][0]["stderr_cut"], Value::Null);

    let (run, peak_kib, _dir) = check_flood("answers", FLOOD, &["--format", "json"]);
    let value = json_report(&run);
    assert_eq!(run.code(), Some(0), "{}\n{value:#}", run.context());
    let case = &value["cases"][0];
    let cut = &case["stderr_cut"];
    assert_eq!(cut["total_bytes"], FLOOD, "{value:#}");
    assert_eq!(cut["kept_head_bytes"], KEPT / 2, "{value:#}");
    assert_eq!(cut["kept_tail_bytes"], KEPT / 2, "{value:#}");
    assert_eq!(cut["dropped_bytes"], FLOOD - KEPT, "{value:#}");

    let saved = std::fs::read(case["stderr"].as_str().expect("stderr transcript path"))
        .expect("saved stderr");
    assert!(
        saved.len() as u64 <= KEPT + 512,
        "the stderr transcript holds {} bytes",
        saved.len()
    );
    // The fixture's stderr is its log line repeated, cut at FLOOD bytes.
    let line = b"debug: handled a tick in 0.01 ms, nothing to report\n";
    let stream = |range: std::ops::Range<u64>| -> Vec<u8> {
        range
            .map(|i| line[(i % line.len() as u64) as usize])
            .collect()
    };
    assert!(
        saved.starts_with(&stream(0..KEPT / 2)),
        "the first MiB is kept as written"
    );
    assert!(
        saved.ends_with(&stream(FLOOD - KEPT / 2..FLOOD)),
        "the last MiB is kept as written"
    );
    let marker = format!("stderr cut here: {} of {FLOOD} bytes dropped", FLOOD - KEPT);
    assert!(
        String::from_utf8_lossy(&saved).contains(&marker),
        "the transcript says where it was cut"
    );

    if quiet_kib > 0 {
        let bound_kib = quiet_kib + 16 * 1024;
        eprintln!(
            "portcullis check: peak RSS {peak_kib} KiB over a 1 GiB stderr flood, bound {bound_kib} KiB"
        );
        assert!(
            peak_kib <= bound_kib,
            "peak RSS {peak_kib} KiB exceeds {bound_kib} KiB (the quiet server's {quiet_kib} KiB + 16 MiB)"
        );
    }
}

/// The human and JUnit reports say that stderr was cut and how many bytes
/// were dropped; against a server that logs little they say nothing of it.
#[test]
fn every_report_format_says_stderr_was_cut() {
    const FLOOD: u64 = 8 * 1024 * 1024;
    let dropped = format!(
        "stderr cut: {} of {FLOOD} bytes dropped",
        FLOOD - 2 * 1024 * 1024
    );
    let (human, _, _dir) = check_flood("answers", FLOOD, &[]);
    assert_eq!(
        human.code(),
        Some(0),
        "{}\n{}",
        human.context(),
        report(&human)
    );
    assert!(report(&human).contains(&dropped), "{}", report(&human));
    let (junit, _, _dir) = check_flood("answers", FLOOD, &["--format", "junit"]);
    assert_eq!(
        junit.code(),
        Some(0),
        "{}\n{}",
        junit.context(),
        report(&junit)
    );
    assert!(
        report(&junit).contains(&format!("<system-err>{dropped}")),
        "{}",
        report(&junit)
    );
    for format in ["human", "junit"] {
        let (quiet, _, _dir) = check_flood("answers", 4096, &["--format", format]);
        assert_eq!(
            quiet.code(),
            Some(0),
            "{}\n{}",
            quiet.context(),
            report(&quiet)
        );
        assert!(!report(&quiet).contains("stderr cut"), "{}", report(&quiet));
    }
}

/// A runtime prints its crash report last: after 64 MiB of logs, the
/// Python traceback of a server that dies on a duplicate key is past the
/// kept head, and is still found in the kept tail.
#[test]
fn a_crash_report_after_a_stderr_flood_is_found_in_the_kept_tail() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let script = scratch.path().join("duplicate-key.ndjson");
    std::fs::write(
        &script,
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":70,"method":"ping","id":71}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":900001,"method":"ping"}"#,
            "\n",
        ),
    )
    .expect("write the script");
    let options = [
        "--hostile",
        "--script",
        script.to_str().expect("utf-8 path"),
    ];
    let (run, _, _dir) = check_flood("crash-after", 64 * 1024 * 1024, &options);
    assert_caught(
        &run,
        r#"with a crash report on stderr ("Traceback (most recent call last)")"#,
    );
    assert_caught(&run, r#"(last stderr line: b"ValueError: duplicate key")"#);
    assert_caught(&run, "stderr cut: ");
}
