//! A credential value never appears in anything the binary writes: run
//! `portcullis mcp`, `replay`, `policy` and `audit verify` as processes
//! with canary credentials (testkit's [`canary`]) and look for every
//! spelling of them (raw, `Bearer <v>`, percent-encoded, base64) in stdout,
//! stderr (at `trace`, where a leak is likeliest) and the audit journal.
//! Valid, schema-refused, denied, unknown and garbage requests are all
//! driven, through both the HTTP and the SSH executor.

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener};
use std::thread;

use common::{Fixture, Launch, Run, call, frame, http_policy, session};
use portcullis_testkit::canary;
use portcullis_testkit::fakes::FakeHttp;
use serde_json::json;

/// The HTTP tools' bearer token.
fn token() -> String {
    canary::value("status_token")
}

/// The SSH tool's identity file text (not a usable key: `ssh` refuses it
/// and the call fails, which is the outcome most likely to quote it).
fn key_text() -> String {
    format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
        canary::value("deploy_key")
    )
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// The process-test HTTP policy (`on_invalid` as given) plus an SSH tool
/// whose identity file holds [`key_text`].
fn policy(fx: &Fixture, server: &FakeHttp, on_invalid: &str) -> String {
    let key = fx.file("deploy_key");
    std::fs::write(&key, key_text()).expect("write the identity file");
    let mut text = http_policy(server.port()).replacen(
        "on_invalid = \"close\"",
        &format!("on_invalid = \"{on_invalid}\""),
        1,
    );
    let port = closed_port();
    text.push_str(&format!(
        r#"
[credentials.deploy_key]
file = "{key}"

[[tools]]
name = "restart_unit"
timeout_ms = 3000
[tools.ssh]
host = "127.0.0.1"
port = {port}
user = "deploy"
argv = ["systemctl", "restart", "{{service}}"]
allow = ["127.0.0.1:{port}"]
credential = "deploy_key"
[tools.input_schema]
type = "object"
required = ["service"]
properties.service = {{ type = "string", pattern = "^[a-z][a-z0-9-]{{0,31}}$" }}
"#,
        key = key.display()
    ));
    text
}

/// Every kind of request: valid calls to both executors, schema refusals,
/// an authorization denial, an unknown tool and method, then garbage.
fn traffic() -> Vec<u8> {
    session(&[
        &call(2, "service_status", json!({"service": "api"})),
        &call(3, "restart_unit", json!({"service": "api"})),
        &call(4, "service_status", json!({"service": "Not Valid"})),
        &call(5, "restart_unit", json!({"service": "-oProxyCommand=x"})),
        &call(6, "service_status", json!({"service": "api", "x": 1})),
        &call(7, "region_probe", json!({"host": "localhost"})),
        &call(8, "no_such_tool", json!({})),
        &frame(&json!({"jsonrpc": "2.0", "id": 9, "method": "resources/list"})),
        &frame(&json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": "run"})),
        b"debug: not a frame\n",
        &[0xff, 0xfe, b'\n'],
        &call(11, "service_status", json!({"service": "web-1"})),
        b"{\"truncated\":",
    ])
}

/// Assert no spelling of either canary is in any of `places`.
fn assert_no_canary(input: &[u8], places: &[(&str, &[u8])], context: &str) {
    let secrets = [token(), key_text(), canary::value("deploy_key")];
    if let Some((place, form)) =
        canary::find_leak(secrets.iter().map(String::as_str), places, &[input])
    {
        panic!("a credential leaked into {place} (as {form:?})\n{context}");
    }
}

fn run_places(run: &Run) -> Vec<(&'static str, &[u8])> {
    vec![("stdout", &run.stdout[..]), ("stderr", &run.stderr[..])]
}

impl Fixture {
    fn with_canaries(server: &FakeHttp, on_invalid: &str) -> Self {
        let fx = Fixture::new("");
        std::fs::write(&fx.policy, policy(&fx, server, on_invalid)).expect("policy");
        fx
    }

    fn launch(&self, args: &[&str]) -> Launch {
        Launch::new(self.cwd.path(), args).env("TEST_TOKEN", &token())
    }
}

#[test]
fn no_credential_reaches_stdout_stderr_or_the_audit_journal() {
    let server = FakeHttp::start();
    for on_invalid in ["keep-open", "close"] {
        let fx = Fixture::with_canaries(&server, on_invalid);
        let audit = fx.file("audit.jsonl");
        let input = traffic();
        let run = fx
            .launch(&["mcp", "--log-level", "trace", "--policy"])
            .arg(&fx.policy)
            .arg("--audit")
            .arg(&audit)
            .run(&input);
        run.assert_code(if on_invalid == "close" { 3 } else { 0 });
        run.assert_clean_stdout();
        if on_invalid == "keep-open" {
            let (text, is_error) = run.tool_result(2);
            assert!(
                !is_error,
                "the valid call failed: {text}\n{}",
                run.context()
            );
            // Every request kind was answered, so each path had its chance
            // to leak: both executors, the schema, authorization.
            assert!(run.tool_result(3).1, "{}", run.context());
            for id in [4, 5, 6, 7] {
                assert!(run.tool_result(id).1, "id {id}\n{}", run.context());
            }
            assert!(!run.tool_result(11).1, "{}", run.context());
        }
        let journal = std::fs::read(&audit).expect("the audit journal");
        assert!(!journal.is_empty(), "{on_invalid}: empty journal");
        let mut places = run_places(&run);
        places.push(("the audit journal", &journal));
        assert_no_canary(&input, &places, &run.context());

        let verify = fx.launch(&["audit", "verify"]).arg(&audit).run(b"");
        assert_no_canary(&input, &run_places(&verify), &verify.context());
    }
    assert!(server.connections() >= 2, "the valid HTTP calls were made");
    // The token did go where it belongs: the upstream's request heads.
    assert!(
        server
            .requests()
            .iter()
            .all(|head| head.contains(&format!("Bearer {}", token()))),
        "{:?}",
        server.requests()
    );
}

#[test]
fn no_credential_reaches_replay_output_with_env_credentials() {
    let server = FakeHttp::start();
    let fx = Fixture::with_canaries(&server, "keep-open");
    let input = traffic();
    let captured = fx.file("captured.jsonl");
    std::fs::write(&captured, &input).expect("write the capture");
    let variants: [&[&str]; 3] = [&[], &["--json"], &["--chunk", "7"]];
    for extra in variants {
        let run = fx
            .launch(&["replay", "--env-credentials", "--policy"])
            .arg(&fx.policy)
            .args(extra)
            .arg(&captured)
            .run(b"");
        run.assert_code(0);
        let report = String::from_utf8_lossy(&run.stdout);
        // The report did describe the executed actions (so the check looked
        // at a run where credentials were bound and used).
        assert!(report.contains("service_status"), "{}", run.context());
        assert!(report.contains("restart_unit"), "{}", run.context());
        assert_no_canary(&input, &run_places(&run), &run.context());
    }
    assert_eq!(server.connections(), 0, "replay has no side effects");
}

#[test]
fn no_credential_reaches_policy_subcommand_output() {
    let server = FakeHttp::start();
    let fx = Fixture::with_canaries(&server, "close");
    let policy = fx.policy.to_str().expect("utf-8 path");
    for args in [["policy", "check", policy], ["policy", "tools", policy]] {
        let run = fx.launch(&args).run(b"");
        run.assert_code(0);
        assert_no_canary(b"", &run_places(&run), &run.context());
    }
}

/// An upstream that reflects the request head (bearer token included) in
/// every way a real one might: `/echo` in a 200 body, `/moved` in a 302
/// `Location` (percent-encoded) and `/broken` in a 500 error page. Answers
/// `connections` connections, then stops.
fn reflecting_upstream(connections: usize) -> (u16, thread::JoinHandle<()>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("local addr").port();
    let serve = thread::spawn(move || {
        for stream in listener.incoming().take(connections) {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let path = head.split(' ').nth(1).unwrap_or("").to_owned();
            let encoded: String = head.bytes().map(|b| format!("%{b:02X}")).collect();
            let (status, extra, body) = if path.starts_with("/moved") {
                (
                    "302 Found",
                    format!("Location: /next?h={encoded}\r\n"),
                    head,
                )
            } else if path.starts_with("/broken") {
                (
                    "500 Internal Server Error",
                    String::new(),
                    format!("<pre>{head}</pre>"),
                )
            } else {
                ("200 OK", String::new(), format!("you sent:\n{head}"))
            };
            let response = format!(
                "HTTP/1.1 {status}\r\n{extra}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
            let _ = stream.shutdown(Shutdown::Write);
        }
    });
    (port, serve)
}

#[test]
fn a_token_the_upstream_reflects_is_redacted_before_stdout() {
    let (port, serve) = reflecting_upstream(3);
    let mut text = String::from(
        "[server]\nname = \"reflect\"\n\n[credentials.status_token]\nenv = \"TEST_TOKEN\"\n",
    );
    for name in ["echo", "moved", "broken"] {
        text.push_str(&format!(
            r#"
[[tools]]
name = "{name}"
[tools.http]
method = "GET"
url = "http://127.0.0.1:{port}/{name}/{{service}}"
allow = ["127.0.0.1:{port}"]
credential = "status_token"
[tools.input_schema]
type = "object"
required = ["service"]
properties.service = {{ type = "string", pattern = "^[a-z]{{1,8}}$" }}
"#
        ));
    }
    let fx = Fixture::new(&text);
    let audit = fx.file("audit.jsonl");
    let input = session(&[
        &call(2, "echo", json!({"service": "api"})),
        &call(3, "moved", json!({"service": "api"})),
        &call(4, "broken", json!({"service": "api"})),
    ]);
    let run = fx
        .launch(&["mcp", "--log-level", "trace", "--policy"])
        .arg(&fx.policy)
        .arg("--audit")
        .arg(&audit)
        .run(&input);
    run.assert_code(0);
    serve.join().expect("the upstream thread");
    for id in [2, 3, 4] {
        let (text, _) = run.tool_result(id);
        // The reflection reached the client, minus the credential.
        assert!(
            text.contains("[redacted]"),
            "id {id}: {text}\n{}",
            run.context()
        );
    }
    let journal = std::fs::read(&audit).expect("the audit journal");
    let mut places = run_places(&run);
    places.push(("the audit journal", &journal));
    assert_no_canary(&input, &places, &run.context());
}
