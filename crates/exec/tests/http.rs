//! HttpExecutor against hand-written HTTP/1.1 servers on 127.0.0.1.

mod common;

use std::net::{Ipv4Addr, TcpListener};
use std::time::{Duration, Instant};

use common::spelling::{Rng, random_spelling};
use portcullis_exec::scrub::MIN_CUT_PREFIX;
use portcullis_exec::{HttpExecutor, RealExecutor};
use portcullis_gateway::{AuthorizedAction, Executor, Outcome, Secret, SecretStore};
use portcullis_testkit::fakes::{ReflectingUpstream, Reply, ScriptedHttp, response};
use serde_json::json;

const CANARY: &str = "canary-secret";

fn policy(port: u16, method: &str, cap: usize, timeout_ms: u64) -> String {
    format!(
        r#"
[server]
name = "exec-test"

[credentials.tok]
env = "PORTCULLIS_EXEC_TEST_UNUSED"

[[tools]]
name = "fetch"
timeout_ms = {timeout_ms}
[tools.http]
method = "{method}"
url = "http://127.0.0.1:{port}/items/{{item}}?v=1"
allow = ["127.0.0.1:{port}"]
credential = "tok"
max_response_bytes = {cap}
[tools.input_schema]
type = "object"
required = ["item"]
properties.item = {{ type = "string" }}
"#
    )
}

fn store() -> SecretStore {
    let mut store = SecretStore::default();
    store.insert("tok", Secret::new(CANARY));
    store
}

fn action(port: u16, method: &str, cap: usize, timeout_ms: u64, item: &str) -> AuthorizedAction {
    common::authorize(
        &policy(port, method, cap, timeout_ms),
        store(),
        "fetch",
        json!({ "item": item }),
    )
}

fn run(action: &AuthorizedAction) -> Outcome {
    HttpExecutor::new().execute(action)
}

#[test]
fn get_sends_one_request_with_the_bearer_credential() {
    let server = ScriptedHttp::start(|_| Reply::Close(response("200 OK", &[], b"hello")));
    let outcome = run(&action(server.port, "GET", 1024, 5000, "abc"));
    assert_eq!(outcome, Outcome::success("hello"));
    assert_eq!(server.connections(), 1);
    let head = server.head(0);
    let lower = head.to_ascii_lowercase();
    assert!(
        head.starts_with("GET /items/abc?v=1 HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(
        head.contains(&format!("\r\nauthorization: Bearer {CANARY}\r\n"))
            || head.contains(&format!("\r\nAuthorization: Bearer {CANARY}\r\n")),
        "{head}"
    );
    assert!(
        lower.contains(&format!("\r\nhost: 127.0.0.1:{}\r\n", server.port)),
        "{head}"
    );
    assert!(!lower.contains("\r\ncookie:"), "{head}");
    assert!(!lower.contains("\r\naccept-encoding:"), "{head}");
}

#[test]
fn argument_values_stay_one_encoded_path_segment() {
    let server = ScriptedHttp::start(|_| Reply::Close(response("200 OK", &[], b"ok")));
    let outcome = run(&action(server.port, "GET", 1024, 5000, "a b/../c?d#e%2F"));
    assert_eq!(outcome, Outcome::success("ok"));
    let head = server.head(0);
    assert!(
        head.starts_with("GET /items/a%20b%2F..%2Fc%3Fd%23e%252F?v=1 HTTP/1.1\r\n"),
        "{head}"
    );
}

#[test]
fn redirect_is_reported_not_followed() {
    let server = ScriptedHttp::start(|port| {
        Reply::Close(response(
            "302 Found",
            &[&format!("Location: http://127.0.0.1:{port}/elsewhere")],
            b"",
        ))
    });
    let outcome = run(&action(server.port, "GET", 1024, 5000, "abc"));
    assert_eq!(server.connections(), 1, "the redirect must not be followed");
    assert!(!outcome.is_error, "{outcome:?}");
    assert!(outcome.text.starts_with("HTTP 302 Found"), "{outcome:?}");
    assert!(
        outcome.text.contains(&format!(
            "Location: http://127.0.0.1:{}/elsewhere",
            server.port
        )),
        "{outcome:?}"
    );
    // And for a method with a body, too (307/308 keep the method).
    let server = ScriptedHttp::start(|port| {
        Reply::Close(response(
            "307 Temporary Redirect",
            &[&format!("Location: http://127.0.0.1:{port}/again")],
            b"",
        ))
    });
    let outcome = run(&action(server.port, "POST", 1024, 5000, "abc"));
    assert_eq!(server.connections(), 1);
    assert!(
        outcome.text.starts_with("HTTP 307 Temporary Redirect"),
        "{outcome:?}"
    );
}

#[test]
fn body_over_the_cap_is_truncated() {
    let big = vec![b'x'; 100_000];
    let server = ScriptedHttp::start(move |_| Reply::Close(response("200 OK", &[], &big)));
    let outcome = run(&action(server.port, "GET", 64, 5000, "abc"));
    assert!(!outcome.is_error, "{outcome:?}");
    let expected = format!("{}\n[response body truncated at 64 bytes]", "x".repeat(64));
    assert_eq!(outcome.text, expected);
    assert_eq!(server.connections(), 1);
}

#[test]
fn body_exactly_at_the_cap_is_whole() {
    let server = ScriptedHttp::start(|_| Reply::Close(response("200 OK", &[], &[b'y'; 64])));
    let outcome = run(&action(server.port, "GET", 64, 5000, "abc"));
    assert_eq!(outcome, Outcome::success("y".repeat(64)));
}

#[test]
fn server_error_is_an_error_with_its_body() {
    let server = ScriptedHttp::start(|_| {
        Reply::Close(response("500 Internal Server Error", &[], b"it broke"))
    });
    let outcome = run(&action(server.port, "GET", 1024, 5000, "abc"));
    assert_eq!(
        outcome,
        Outcome::failure("HTTP 500 Internal Server Error\nit broke")
    );
    let server = ScriptedHttp::start(|_| Reply::Close(response("404 Not Found", &[], b"")));
    let outcome = run(&action(server.port, "GET", 1024, 5000, "abc"));
    assert_eq!(outcome, Outcome::failure("HTTP 404 Not Found"));
}

#[test]
fn binary_body_is_described_not_decoded() {
    let server =
        ScriptedHttp::start(|_| Reply::Close(response("200 OK", &[], &[0xff, 0xd8, 0xff, 0x00])));
    let outcome = run(&action(server.port, "GET", 1024, 5000, "abc"));
    assert_eq!(outcome, Outcome::success("<4 bytes of binary content>"));
}

#[test]
fn methods_with_a_body_send_an_empty_one() {
    let server = ScriptedHttp::start(|_| Reply::Close(response("201 Created", &[], b"made")));
    let outcome = run(&action(server.port, "POST", 1024, 5000, "abc"));
    assert_eq!(outcome, Outcome::success("made"));
    let head = server.head(0);
    assert!(
        head.starts_with("POST /items/abc?v=1 HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("\r\ncontent-length: 0\r\n"),
        "{head}"
    );
}

#[test]
fn silent_server_times_out() {
    let server = ScriptedHttp::start(|_| Reply::Silent);
    let started = Instant::now();
    let outcome = run(&action(server.port, "GET", 1024, 500, "abc"));
    let elapsed = started.elapsed();
    assert!(outcome.is_error, "{outcome:?}");
    assert!(
        outcome.text.contains("timed out after 500ms"),
        "{outcome:?}"
    );
    assert!(!outcome.text.contains(CANARY));
    assert!(elapsed >= Duration::from_millis(400), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    assert_eq!(server.connections(), 1);
}

#[test]
fn stalled_body_times_out() {
    // Headers promise 1000 bytes, 10 arrive, then nothing.
    let server = ScriptedHttp::start(|_| {
        Reply::Hold(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789".to_vec())
    });
    let started = Instant::now();
    let outcome = run(&action(server.port, "GET", 4096, 700, "abc"));
    assert!(outcome.is_error, "{outcome:?}");
    assert!(
        outcome.text.contains("timed out after 700ms"),
        "{outcome:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[test]
fn premature_end_of_body_is_an_error() {
    // Headers promise 1000 bytes, 10 arrive, then the server closes.
    let server = ScriptedHttp::start(|_| {
        Reply::Close(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789".to_vec())
    });
    let outcome = run(&action(server.port, "GET", 4096, 2000, "abc"));
    assert!(outcome.is_error, "{outcome:?}");
    assert!(!outcome.text.contains(CANARY));
}

#[test]
fn refused_connection_is_an_error_without_the_secret() {
    let port = {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        l.local_addr().unwrap().port()
    };
    let outcome = run(&action(port, "GET", 1024, 2000, "abc"));
    assert!(outcome.is_error, "{outcome:?}");
    assert!(
        outcome.text.starts_with("HTTP request failed"),
        "{outcome:?}"
    );
    assert!(!outcome.text.contains(CANARY), "{outcome:?}");
}

#[test]
fn https_to_a_plain_http_server_is_a_tls_error() {
    // Exercises the TLS client configuration (rustls + ring) without a
    // network: the handshake meets plain HTTP and fails cleanly.
    let server = ScriptedHttp::start(|_| Reply::Blurt(response("200 OK", &[], b"plain")));
    let text = policy(server.port, "GET", 1024, 3000).replace(
        &format!("url = \"http://127.0.0.1:{}", server.port),
        &format!("url = \"https://127.0.0.1:{}", server.port),
    );
    let action = common::authorize(&text, store(), "fetch", json!({ "item": "abc" }));
    let outcome = run(&action);
    assert!(outcome.is_error, "{outcome:?}");
    assert!(
        outcome.text.starts_with("HTTP request failed"),
        "{outcome:?}"
    );
    assert!(!outcome.text.contains(CANARY), "{outcome:?}");
    assert_eq!(server.connections(), 1);
}

#[test]
fn real_executor_dispatches_http() {
    let server = ScriptedHttp::start(|_| Reply::Close(response("200 OK", &[], b"via dispatch")));
    let outcome = RealExecutor::new().execute(&action(server.port, "GET", 1024, 5000, "abc"));
    assert_eq!(outcome, Outcome::success("via dispatch"));
}

const PROXY_CHILD_PORT: &str = "PORTCULLIS_EXEC_PROXY_CHILD_PORT";

/// Proxy variables in the environment must not change where the request
/// goes. Runs `proxy_child` in a child process whose environment names a
/// proxy (the test process's own environment cannot be changed safely).
#[test]
fn environment_proxy_is_ignored() {
    let direct = ScriptedHttp::start(|_| Reply::Close(response("200 OK", &[], b"direct")));
    let proxy = ScriptedHttp::start(|_| Reply::Close(response("200 OK", &[], b"via proxy")));
    let proxy_url = format!("http://127.0.0.1:{}", proxy.port);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "proxy_child", "--nocapture", "--test-threads=1"])
        .env(PROXY_CHILD_PORT, direct.port.to_string())
        .env("HTTP_PROXY", &proxy_url)
        .env("http_proxy", &proxy_url)
        .env("ALL_PROXY", &proxy_url)
        .env("all_proxy", &proxy_url)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // One request from the executor went direct; the control request of a
    // default ureq agent went through the proxy, showing the variables
    // were in effect.
    assert_eq!(direct.connections(), 1);
    assert_eq!(proxy.connections(), 1);
    let control = proxy.head(0);
    assert!(
        control.contains(&format!("127.0.0.1:{}", direct.port)),
        "{control}"
    );
}

#[test]
fn proxy_child() {
    let Some(port) = std::env::var_os(PROXY_CHILD_PORT) else {
        return;
    };
    let port: u16 = port.to_str().unwrap().parse().unwrap();
    // Control: a default agent honours the proxy variables (ureq tunnels
    // through the proxy with CONNECT, which the fake server answers
    // wrongly; only the connection matters here).
    let _ = ureq::Agent::new_with_defaults()
        .get(format!("http://127.0.0.1:{port}/control"))
        .call();
    let outcome = run(&action(port, "GET", 1024, 5000, "abc"));
    assert_eq!(outcome, Outcome::success("direct"));
}

/// A credential with characters every encoding treats differently (`/`,
/// `+`, `=`), so each spelling of it is distinct.
const REFLECTED: &str = "cAn4ry/T0k+en=9f3Q-reflected";

fn reflected_action(port: u16, cap: usize) -> AuthorizedAction {
    let mut store = SecretStore::default();
    store.insert("tok", Secret::new(REFLECTED));
    common::authorize(
        &policy(port, "GET", cap, 5000),
        store,
        "fetch",
        json!({ "item": "abc" }),
    )
}

/// Serve `template` (see `ReflectingUpstream`) and return what the
/// executor reports, after checking the upstream did receive the token.
fn reflected(template: &str, cap: usize) -> Outcome {
    let upstream = ReflectingUpstream::start(template.as_bytes().to_vec());
    let outcome = run(&reflected_action(upstream.port, cap));
    assert_eq!(
        upstream.requests.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    outcome
}

fn assert_no_canary(outcome: &Outcome) {
    let readings = common::canary_readings(&outcome.text, REFLECTED);
    assert!(
        readings.is_empty(),
        "the credential can be read back from the outcome ({readings:?}):\n{}",
        outcome.text
    );
    assert!(outcome.text.contains("[redacted]"), "{}", outcome.text);
}

#[test]
fn reflected_bearer_token_is_redacted_in_a_2xx_body() {
    let outcome = reflected(
        concat!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n",
            "Content-Length: {{CONTENT_LENGTH}}\r\nConnection: close\r\n\r\n",
            "{\"headers\":{\"Authorization\":\"{{AUTHORIZATION_JSON}}\"},\n",
            "\"raw\":\"{{AUTHORIZATION}}\",\n",
            "\"token\":\"{{TOKEN}}\",\n",
            "\"as_base64\":\"{{AUTHORIZATION_BASE64}}\",\n",
            "\"basic\":\"Basic {{TOKEN_BASIC}}\",\n",
            "\"base64url\":\"{{TOKEN_BASE64URL}}\"}\n",
        ),
        64 * 1024,
    );
    assert!(!outcome.is_error, "{outcome:?}");
    assert_no_canary(&outcome);
    // The body is otherwise intact: only the credential went.
    assert!(
        outcome.text.contains("\"raw\":\"Bearer [redacted]\""),
        "{}",
        outcome.text
    );
    assert!(
        outcome.text.contains("\"token\":\"[redacted]\""),
        "{}",
        outcome.text
    );
}

#[test]
fn reflected_token_in_an_error_page_is_redacted() {
    for status in ["401 Unauthorized", "500 Internal Server Error"] {
        let template = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {{{{CONTENT_LENGTH}}}}\r\nConnection: close\r\n\r\n<html><body><h1>{status}</h1><p>Rejected credential: <code>{{{{AUTHORIZATION}}}}</code></p><p>Debug: {{{{AUTHORIZATION_PERCENT}}}} / Basic {{{{TOKEN_BASIC}}}}</p></body></html>\n"
        );
        let outcome = reflected(&template, 64 * 1024);
        assert!(outcome.is_error, "{outcome:?}");
        assert!(outcome.text.starts_with("HTTP "), "{outcome:?}");
        assert_no_canary(&outcome);
    }
}

#[test]
fn redirect_location_with_the_token_is_redacted() {
    for location in [
        "http://127.0.0.1:1/callback?access_token={{TOKEN}}&state=1",
        "http://127.0.0.1:1/callback?access_token={{TOKEN_PERCENT_LOWER}}&state=1",
        "http://127.0.0.1:1/callback?auth={{AUTHORIZATION_PERCENT}}",
        "/login#token={{TOKEN_BASE64URL}}",
    ] {
        let template = format!(
            "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let outcome = reflected(&template, 1024);
        assert!(!outcome.is_error, "{outcome:?}");
        assert!(
            outcome.text.starts_with("HTTP 302 Found, Location: "),
            "{outcome:?}"
        );
        assert_no_canary(&outcome);
    }
}

#[test]
fn a_body_cut_inside_the_reflected_token_keeps_no_prefix_of_it() {
    let prefix = "echo: Authorization: Bearer ";
    // Cut after 4, 10 and all but one character of the token.
    for keep in [4, 10, REFLECTED.len() - 1] {
        let cap = prefix.len() + keep;
        let outcome = reflected(
            "HTTP/1.1 200 OK\r\nContent-Length: {{CONTENT_LENGTH}}\r\nConnection: close\r\n\r\necho: Authorization: {{AUTHORIZATION}} and more\n",
            cap,
        );
        assert_eq!(
            outcome.text,
            format!("{prefix}[redacted]\n[response body truncated at {cap} bytes]"),
            "cut after {keep} characters of the token"
        );
    }
}

/// The byte lengths at which to cut `units` (one spelled character each):
/// after the first `MIN_CUT_PREFIX` of them, after all but one, and inside
/// the unit that follows each of those when it is an escape.
fn cuts_inside(units: &[String]) -> Vec<usize> {
    let mut cuts = Vec::new();
    for whole in [MIN_CUT_PREFIX, units.len() / 2, units.len() - 1] {
        let at = units[..whole].concat().len();
        cuts.push(at);
        if units[whole].len() > 1 {
            cuts.push(at + units[whole].len() - 1);
        }
    }
    cuts
}

/// The spelling oracle writes the token; the body is cut at the cap
/// inside it: no prefix of it comes back, in whatever spelling.
#[test]
fn a_body_cut_inside_a_spelled_token_keeps_no_prefix_of_it() {
    let prefix = "echo: ";
    for seed in 0..6 {
        let mut rng = Rng::new(seed);
        let units: Vec<String> = REFLECTED
            .chars()
            .map(|c| random_spelling(c, &mut rng))
            .collect();
        let template = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {{{{CONTENT_LENGTH}}}}\r\nConnection: close\r\n\r\n{prefix}{} and more\n",
            units.concat()
        );
        for at in cuts_inside(&units) {
            let cap = prefix.len() + at;
            assert_eq!(
                reflected(&template, cap).text,
                format!("{prefix}[redacted]\n[response body truncated at {cap} bytes]"),
                "seed {seed}: {:?} cut after {at} bytes",
                units.concat()
            );
        }
    }
}
