//! `portcullis mcp` as a process: the built binary, copied into a directory
//! of its own and run from there with an environment holding only `PATH`
//! (plus what each test adds), in front of a fake HTTP service on loopback
//! that counts TCP connections. stdout is checked byte by byte with the
//! transcript oracle; stderr is captured separately.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use common::hostile::{hostile_case_exit, hostile_cases};
use common::{Fixture, Launch, Run, Step, call, frame, http_policy, session};
use portcullis_testkit::fakes::FakeHttp;
use serde_json::json;

const TOKEN: &str = "tok-7d1f0c5e-canary-9b2a";

impl Fixture {
    fn http(server: &FakeHttp) -> Self {
        Self::new(&http_policy(server.port()))
    }

    /// `portcullis mcp --policy <policy>` with the test token set.
    fn mcp(&self) -> Launch {
        Launch::new(self.cwd.path(), &["mcp", "--policy"])
            .arg(&self.policy)
            .env("TEST_TOKEN", TOKEN)
    }
}

fn assert_answered_ok(run: &Run, id: i64, expected: &str) {
    let (text, is_error) = run.tool_result(id);
    assert!(!is_error, "id {id} failed: {text}\n{}", run.context());
    assert!(
        text.contains(expected),
        "id {id}: {text:?}\n{}",
        run.context()
    );
}

#[test]
fn a_valid_call_opens_exactly_one_connection_with_the_bearer_token() {
    let server = FakeHttp::start();
    let fx = Fixture::http(&server);
    let run = fx.mcp().run(&session(&[&call(
        2,
        "service_status",
        json!({"service": "api"}),
    )]));
    run.assert_code(0);
    assert_eq!(run.assert_clean_stdout(), 2, "{}", run.context());
    assert_answered_ok(&run, 2, "status ok for /status/api");
    assert_eq!(server.connections(), 1, "{}", run.context());
    let requests = server.requests();
    let head = requests[0].to_ascii_lowercase();
    assert!(head.starts_with("get /status/api http/1.1\r\n"), "{head}");
    assert!(
        requests[0]
            .lines()
            .any(|l| l.eq_ignore_ascii_case(&format!("authorization: Bearer {TOKEN}"))),
        "no bearer token in {:?}",
        requests[0]
    );
}

#[test]
fn modern_and_templated_host_calls_each_open_one_connection() {
    let server = FakeHttp::start();
    let fx = Fixture::http(&server);
    let modern = frame(&json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {
            "name": "service_status", "arguments": {"service": "db"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    }));
    let run = fx.mcp().run(&modern);
    run.assert_code(0);
    assert_answered_ok(&run, 7, "status ok for /status/db");
    assert_eq!(server.connections(), 1, "{}", run.context());

    let run = fx.mcp().run(&session(&[&call(
        2,
        "region_probe",
        json!({"host": "127.0.0.1"}),
    )]));
    run.assert_code(0);
    assert_answered_ok(&run, 2, "status ok for /probe");
    assert_eq!(server.connections(), 2, "{}", run.context());
    // The templated-host tool has no credential: no Authorization header.
    assert!(
        !server.requests()[1]
            .to_ascii_lowercase()
            .contains("authorization")
    );
}

#[test]
fn hostile_inputs_open_no_connection_and_close_the_session() {
    let server = FakeHttp::start();
    let fx = Fixture::http(&server);
    let mut cases = hostile_cases("service_status", &json!({"service": "api"}));
    cases.push((
        "denied host after template expansion",
        session(&[&call(2, "region_probe", json!({"host": "localhost"}))]),
    ));
    for (name, input) in cases {
        let run = fx.mcp().run(&input);
        run.assert_clean_stdout();
        assert_eq!(
            server.connections(),
            0,
            "case {name:?} reached the service\n{}",
            run.context()
        );
        assert_eq!(
            run.code(),
            Some(hostile_case_exit(name)),
            "case {name:?}\n{}",
            run.context()
        );
        // Whatever was answered, no call succeeded.
        for f in run.frames() {
            assert!(
                f["result"]["content"].is_null() || f["result"]["isError"] == json!(true),
                "case {name:?} produced a tool result: {f}"
            );
        }
    }
}

#[test]
fn stdout_stays_clean_with_tracing_backtraces_and_no_home_and_secrets_stay_out_of_logs() {
    let server = FakeHttp::start();
    let fx = Fixture::http(&server);
    // A valid call, then (once it is answered) a refused frame that carries
    // the credential value as an argument: neither may put it in the logs.
    let leak = call(
        3,
        "service_status",
        json!({"service": TOKEN, "token": TOKEN}),
    );
    let run = fx
        .mcp()
        .env("RUST_LOG", "trace")
        .env("RUST_BACKTRACE", "full")
        .run_steps(vec![
            Step::Write(session(&[&call(
                2,
                "service_status",
                json!({"service": "api"}),
            )])),
            Step::Sleep(Duration::from_millis(1200)),
            Step::Write(leak),
        ]);
    // The second call is refused by the schema: a tool error; the session
    // then ends at end of input.
    run.assert_code(0);
    assert_eq!(run.assert_clean_stdout(), 3, "{}", run.context());
    assert_answered_ok(&run, 2, "status ok");
    let (_, is_error) = run.tool_result(3);
    assert!(is_error);
    assert_eq!(server.connections(), 1);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("TRACE") || stderr.contains("DEBUG"),
        "no trace logging:\n{stderr}"
    );
    assert!(
        !stderr.contains(TOKEN),
        "the credential leaked into stderr:\n{stderr}"
    );
    assert!(
        !run.stdout
            .windows(TOKEN.len())
            .any(|w| w == TOKEN.as_bytes())
    );
}

#[test]
fn a_missing_policy_file_is_exit_2_with_nothing_on_stdout() {
    let fx = Fixture::new("");
    let run = Launch::new(
        fx.cwd.path(),
        &["mcp", "--policy", "/nonexistent/policy.toml"],
    )
    .env("RUST_LOG", "trace")
    .run(&session(&[]));
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{}", run.context());
    assert!(
        run.stderr_text().contains("/nonexistent/policy.toml"),
        "{}",
        run.context()
    );
}

#[test]
fn an_invalid_policy_file_is_exit_2_naming_file_and_field() {
    let server = FakeHttp::start();
    let text = http_policy(server.port()).replacen("method = \"GET\"", "method = \"TRACE\"", 1);
    let fx = Fixture::new(&text);
    let run = fx.mcp().env("RUST_LOG", "trace").run(&session(&[]));
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{}", run.context());
    let stderr = run.stderr_text();
    assert!(
        stderr.contains(&fx.policy.display().to_string()),
        "{stderr}"
    );
    assert!(stderr.contains("tools.http.method"), "{stderr}");
    assert!(stderr.contains("service_status"), "{stderr}");
}

#[test]
fn usage_errors_are_exit_2_with_nothing_on_stdout() {
    let fx = Fixture::new("");
    let run = Launch::new(
        fx.cwd.path(),
        &["mcp", "--policy", "p.toml", "--workers", "0"],
    )
    .run(b"");
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{}", run.context());
}

#[test]
fn stdin_closed_at_once_is_exit_0_with_empty_stdout() {
    let server = FakeHttp::start();
    let fx = Fixture::http(&server);
    let run = fx.mcp().env("RUST_LOG", "trace").run(b"");
    run.assert_code(0);
    assert!(run.stdout.is_empty(), "{}", run.context());
}

#[test]
fn a_long_idle_before_the_first_request_changes_nothing() {
    let server = FakeHttp::start();
    let fx = Fixture::http(&server);
    let run = fx.mcp().run_steps(vec![
        Step::Sleep(Duration::from_secs(2)),
        Step::Write(session(&[&call(
            2,
            "service_status",
            json!({"service": "api"}),
        )])),
    ]);
    run.assert_code(0);
    assert_answered_ok(&run, 2, "status ok");
    assert_eq!(server.connections(), 1);
}

#[test]
fn stray_prints_and_a_panicking_tool_never_reach_stdout() {
    let server = FakeHttp::start();
    let fx = Fixture::http(&server);
    let input = session(&[
        &call(2, "panic_tool", json!({"service": "api"})),
        &call(3, "service_status", json!({"service": "api"})),
    ]);
    let run = fx
        .mcp()
        .arg("--stray-print-test")
        .env("RUST_BACKTRACE", "full")
        .run(&input);
    run.assert_code(0);
    assert_eq!(run.assert_clean_stdout(), 3, "{}", run.context());
    assert_eq!(run.tool_result(2), ("internal error".to_owned(), true));
    assert_answered_ok(&run, 3, "status ok");
    // The panicking tool never reached the network; the other call did.
    assert_eq!(server.connections(), 1);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("stray-print-test: println! at startup"),
        "{stderr}"
    );
    assert!(
        stderr.contains("stray-print-test: println! at tool path"),
        "{stderr}"
    );
    assert!(
        stderr.contains("deliberate panic in the tool path"),
        "{stderr}"
    );
}

#[test]
fn the_stray_print_flag_is_hidden_from_help() {
    let fx = Fixture::new("");
    let run = Launch::new(fx.cwd.path(), &["mcp", "--help"]).run(b"");
    run.assert_code(0);
    let help = String::from_utf8(run.stdout.clone()).expect("utf-8 help");
    assert!(help.contains("--policy"), "{help}");
    assert!(!help.contains("stray"), "{help}");
}

#[test]
fn stdout_closed_by_the_reader_mid_stream_is_exit_4_without_panic() {
    let server = FakeHttp::start();
    let fx = Fixture::http(&server);
    let launch = fx.mcp().env("RUST_BACKTRACE", "full");
    let mut child = launch
        .command()
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = common::drain(child.stderr.take().expect("stderr"));
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(&common::handshake())
        .expect("write handshake");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout
        .read_line(&mut first)
        .expect("read the initialize answer");
    assert!(first.contains("\"id\":1"), "{first}");
    drop(stdout);
    // Keep asking; every answer now hits a closed pipe.
    for id in 2..50 {
        let ping = frame(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        if stdin.write_all(&ping).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(stdin);
    let status = common::wait_limited(&mut child, common::LAUNCH_LIMIT, &launch.describe());
    let stderr = String::from_utf8_lossy(&stderr.join().expect("stderr")).into_owned();
    assert_eq!(
        status.code(),
        Some(4),
        "launch: {}\nstderr:\n{stderr}",
        launch.describe()
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("cannot write to stdout"), "{stderr}");
}

#[test]
fn calls_run_concurrently_and_a_cancelled_call_is_never_answered() {
    let server = FakeHttp::start();
    let fx = Fixture::http(&server);
    let cancel = frame(&json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 3, "reason": "changed my mind"}
    }));
    let input = session(&[
        &call(2, "slow_status", json!({"service": "a"})),
        &call(3, "slow_status", json!({"service": "b"})),
        &call(4, "slow_status", json!({"service": "c"})),
        &cancel,
    ]);
    let run = fx.mcp().run(&input);
    run.assert_code(0);
    assert_eq!(run.assert_clean_stdout(), 3, "{}", run.context());
    assert_answered_ok(&run, 2, "/slow/a");
    assert_answered_ok(&run, 4, "/slow/c");
    assert!(
        run.answer(3).is_none(),
        "the cancelled call was answered\n{}",
        run.context()
    );
    assert!(
        server.peak_concurrency() >= 2,
        "calls did not overlap\n{}",
        run.context()
    );
}

#[test]
fn the_driver_stops_waiting_for_a_hung_tool() {
    let server = FakeHttp::start();
    let fx = Fixture::http(&server);
    let input = session(&[
        &call(2, "hang_tool", json!({"service": "a"})),
        &call(3, "service_status", json!({"service": "b"})),
    ]);
    let run = fx
        .mcp()
        .args(&["--stray-print-test", "--grace-ms", "2000"])
        .run(&input);
    run.assert_code(0);
    assert_eq!(run.tool_result(2), ("timed out".to_owned(), true));
    assert_answered_ok(&run, 3, "status ok");
    // hang_tool's timeout is 200 ms and the driver gives up 1 s after it;
    // after EOF it waits for the hung worker only until the grace period
    // (2 s) ends.
    assert!(run.elapsed < Duration::from_secs(8), "{:?}", run.elapsed);
}
