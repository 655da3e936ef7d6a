//! `portcullis policy check` and `policy tools`, and where `--help` and
//! `--version` go, through the built binary; and the credential values
//! `policy check` warns about and `portcullis mcp` refuses to use (too
//! short to redact, too large, not a regular file).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Fixture, LAUNCH_LIMIT, Launch, call, example, http_policy, session, stdout_text};
use portcullis_testkit::fakes::{FakeHttp, ReflectingUpstream};
use serde_json::{Value, json};

#[test]
fn policy_check_accepts_the_example_and_warns_about_missing_credentials() {
    let fx = Fixture::new("");
    let example = example("policy.toml");
    let run = Launch::new(fx.cwd.path(), &["policy", "check"])
        .arg(&example)
        .run(b"");
    run.assert_code(0);
    assert_eq!(stdout_text(&run), "ok: 2 tools\n");
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("warning: credential status_token"),
        "{stderr}"
    );
    assert!(stderr.contains("STATUS_TOKEN"), "{stderr}");
    assert!(stderr.contains("service_status"), "{stderr}");
    assert!(
        stderr.contains("warning: credential deploy_key"),
        "{stderr}"
    );

    let run = Launch::new(fx.cwd.path(), &["policy", "check"])
        .arg(&example)
        .env("STATUS_TOKEN", "secret-value-123")
        .run(b"");
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(!stderr.contains("credential status_token"), "{stderr}");
    assert!(!stderr.contains("secret-value-123"), "{stderr}");
}

#[test]
fn policy_check_names_file_tool_and_field_of_a_broken_policy() {
    let server = FakeHttp::start();
    let broken = http_policy(server.port()).replacen(
        &format!("allow = [\"127.0.0.1:{}\"]", server.port()),
        "allow = [\"127.0.0.1\"]",
        1,
    );
    let fx = Fixture::new(&broken);
    let run = fx.run(&["policy", "check", fx.policy.to_str().expect("utf-8")]);
    run.assert_code(1);
    assert!(run.stdout.is_empty());
    let stderr = run.stderr_text();
    assert!(
        stderr.contains(&fx.policy.display().to_string()),
        "{stderr}"
    );
    assert!(stderr.contains("tool service_status"), "{stderr}");
    assert!(stderr.contains("tools.http.allow"), "{stderr}");

    std::fs::write(&fx.policy, "[server]\nname = \"x\"\nbogus = 1\n").expect("write");
    let run = fx.run(&["policy", "check", fx.policy.to_str().expect("utf-8")]);
    run.assert_code(1);
    assert!(run.stderr_text().contains("bogus"), "{}", run.stderr_text());

    let run = fx.run(&["policy", "check", "/nonexistent/policy.toml"]);
    run.assert_code(2);
    assert!(run.stdout.is_empty());
    let run = fx.run(&["policy", "tools", "/nonexistent/policy.toml"]);
    run.assert_code(2);
    assert!(run.stdout.is_empty());
}

#[test]
fn policy_tools_prints_what_a_client_would_see() {
    let fx = Fixture::new("");
    let run = Launch::new(fx.cwd.path(), &["policy", "tools"])
        .arg(example("policy.toml"))
        .run(b"");
    run.assert_code(0);
    let value: Value = serde_json::from_slice(&run.stdout).expect("pretty JSON");
    assert!(stdout_text(&run).contains("\n  \"tools\": ["), "not pretty");
    let names: Vec<&str> = value["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["service_status", "restart_service"]);
    assert_eq!(value["tools"][0]["inputSchema"]["type"], "object");
    assert_eq!(
        value["tools"][0]["inputSchema"]["additionalProperties"],
        false
    );
}

#[test]
fn help_and_version_go_to_stdout() {
    let fx = Fixture::new("");
    let run = fx.run(&["--version"]);
    run.assert_code(0);
    assert!(
        stdout_text(&run).starts_with("portcullis "),
        "{}",
        run.context()
    );
    let run = fx.run(&["--help"]);
    run.assert_code(0);
    for sub in ["mcp", "policy", "audit", "inspect", "replay"] {
        assert!(stdout_text(&run).contains(sub), "{}", run.context());
    }
    let run = fx.run(&["no-such-command"]);
    run.assert_code(2);
    assert!(run.stdout.is_empty());
    assert!(run.stderr_text().contains("no-such-command"));
}

/// A 3-byte token, shorter than the scrubber redacts.
const SHORT_TOKEN: &str = "q#Z";

/// The shortest value the gateway binds is the shortest the scrubber
/// redacts: anything shorter would be sent and could come back in the
/// clear.
#[test]
fn the_gateway_refuses_every_credential_the_scrubber_cannot_redact() {
    assert_eq!(
        portcullis_gateway::secrets::MIN_CREDENTIAL_BYTES,
        portcullis_exec::scrub::MIN_SECRET_BYTES
    );
}

/// A policy whose tools `t_NAME` each use credential `NAME`, all aimed
/// at `port`; `sources` are the `[credentials.NAME]` bodies.
fn credential_policy(port: u16, sources: &[(&str, String)]) -> String {
    let mut text = String::from("[server]\nname = \"t\"\non_invalid = \"keep-open\"\n");
    for (name, source) in sources {
        text.push_str(&format!("\n[credentials.{name}]\n{source}\n"));
    }
    for (name, _) in sources {
        text.push_str(&format!(
            "\n[[tools]]\nname = \"t_{name}\"\ninput_schema = {{ type = \"object\" }}\n\
             http = {{ method = \"GET\", url = \"http://127.0.0.1:{port}/echo\", \
             allow = [\"127.0.0.1:{port}\"], credential = \"{name}\" }}\n"
        ));
    }
    text
}

fn file_source(path: &Path) -> String {
    format!("file = {:?}", path.display().to_string())
}

/// The credential files no run may read: a FIFO (opening it waits for a
/// writer), `/dev/zero` (never ends), a file one KiB over the cap, and a
/// directory.
fn unusable_files(fx: &Fixture) -> Vec<(&'static str, String, String)> {
    let fifo = fx.file("fifo");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .expect("mkfifo");
    let large = fx.file("large");
    std::fs::write(&large, "k".repeat(65 * 1024)).expect("write");
    let directory = fx.file("directory");
    std::fs::create_dir(&directory).expect("mkdir");
    let shown = |p: &Path| p.display().to_string();
    vec![
        (
            "fifo",
            file_source(&fifo),
            format!(
                "file {} is a FIFO (named pipe); a credential file must be a regular file",
                shown(&fifo)
            ),
        ),
        (
            "zero",
            file_source(Path::new("/dev/zero")),
            "file /dev/zero is a character device; a credential file must be a regular file"
                .to_owned(),
        ),
        (
            "large",
            file_source(&large),
            format!("file {} is larger than 65536 bytes", shown(&large)),
        ),
        (
            "directory",
            file_source(&directory),
            format!(
                "file {} is a directory; a credential file must be a regular file",
                shown(&directory)
            ),
        ),
    ]
}

#[test]
fn policy_check_warns_about_credential_values_it_cannot_use_without_blocking() {
    let fx = Fixture::new("");
    let mut cases = unusable_files(&fx);
    cases.push((
        "short",
        "env = \"SHORT_TOKEN\"".to_owned(),
        "environment variable SHORT_TOKEN holds a value of 3 bytes, shorter than the 4 bytes \
         the gateway needs to redact it from what tools return"
            .to_owned(),
    ));
    let sources: Vec<(&str, String)> = cases
        .iter()
        .map(|(name, source, _)| (*name, source.clone()))
        .collect();
    std::fs::write(&fx.policy, credential_policy(9, &sources)).expect("write policy");
    let run = Launch::new(fx.cwd.path(), &["policy", "check"])
        .arg(&fx.policy)
        .env("SHORT_TOKEN", SHORT_TOKEN)
        .run(b"");
    run.assert_code(0);
    assert!(
        run.elapsed < Duration::from_secs(10),
        "policy check took {:?}",
        run.elapsed
    );
    assert_eq!(stdout_text(&run), "ok: 5 tools\n");
    let stderr = run.stderr_text();
    for (name, _, problem) in &cases {
        let line = format!(
            "warning: credential {name} is not available here ({problem}); tools denied without it: t_{name}"
        );
        assert!(
            stderr.lines().any(|l| l == line),
            "no line {line:?} in\n{stderr}"
        );
    }
    assert!(!stderr.contains(SHORT_TOKEN), "{stderr}");
}

/// Start-up neither waits on the FIFO nor reads `/dev/zero`: the session
/// answers, its peak memory stays small, and each tool is denied.
#[test]
fn mcp_starts_at_once_and_denies_tools_whose_credential_file_it_cannot_use() {
    let server = FakeHttp::start();
    let fx = Fixture::new("");
    let cases = unusable_files(&fx);
    let sources: Vec<(&str, String)> = cases
        .iter()
        .map(|(name, source, _)| (*name, source.clone()))
        .collect();
    std::fs::write(&fx.policy, credential_policy(server.port(), &sources)).expect("write policy");
    let calls: Vec<Vec<u8>> = cases
        .iter()
        .enumerate()
        .map(|(i, (name, _, _))| call(2 + i as i64, &format!("t_{name}"), json!({})))
        .collect();
    let parts: Vec<&[u8]> = calls.iter().map(Vec::as_slice).collect();
    let launch = Launch::new(fx.cwd.path(), &["mcp", "--policy"]).arg(&fx.policy);
    let started = Instant::now();
    let mut child = launch.spawn();
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(&session(&parts))
        .expect("write the session");
    let (lines_tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                return;
            }
        }
    });
    let stderr = common::drain(child.stderr.take().expect("stderr"));
    let mut answers = Vec::new();
    while answers.len() < 1 + cases.len() {
        match lines.recv_timeout(Duration::from_secs(10)) {
            Ok(line) => answers.push(serde_json::from_str::<Value>(&line).expect("a JSON frame")),
            Err(_) => {
                let _ = child.kill();
                panic!("no answer within 10 s: start-up blocked ({answers:?})");
            }
        }
    }
    let peak_kib = peak_rss_kib(child.id());
    drop(stdin);
    let status = common::wait_limited(&mut child, LAUNCH_LIMIT, &launch.describe());
    let stderr = String::from_utf8_lossy(&stderr.join().expect("stderr")).into_owned();
    assert!(status.success(), "{status}\n{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20), "{stderr}");
    if let Some(peak_kib) = peak_kib {
        assert!(peak_kib < 64 * 1024, "peak RSS {peak_kib} KiB\n{stderr}");
    }
    for (i, (name, _, problem)) in cases.iter().enumerate() {
        let id = 2 + i as i64;
        let answer = answers
            .iter()
            .find(|a| a["id"] == json!(id))
            .unwrap_or_else(|| panic!("no answer for {name}: {answers:?}"));
        assert_eq!(answer["result"]["isError"], json!(true), "{answer}");
        assert_eq!(
            answer["result"]["content"][0]["text"],
            json!(format!("denied: credential {name} is not present")),
            "{answer}"
        );
        assert!(
            stderr.contains(problem.as_str()),
            "no {problem:?} in\n{stderr}"
        );
    }
    assert_eq!(server.connections(), 0);
}

/// The child's peak resident set in KiB, where `/proc` has it.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// An upstream that echoes the `Authorization` header would hand a token
/// too short to redact back to the client as it is: such a token is never
/// bound, so the tool is denied and nothing is sent. A token long enough
/// goes out and comes back redacted.
#[test]
fn a_credential_too_short_to_redact_is_never_sent_nor_echoed() {
    let upstream = ReflectingUpstream::start(
        concat!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n",
            "Content-Length: {{CONTENT_LENGTH}}\r\nConnection: close\r\n\r\n",
            "you sent: {{AUTHORIZATION}} token={{TOKEN}}",
        )
        .as_bytes()
        .to_vec(),
    );
    let fx = Fixture::new(&credential_policy(
        upstream.port,
        &[("tok", "env = \"ECHO_TOKEN\"".to_owned())],
    ));
    let input = session(&[&call(2, "t_tok", json!({}))]);
    let mcp = |token: &str| {
        Launch::new(fx.cwd.path(), &["mcp", "--policy"])
            .arg(&fx.policy)
            .env("ECHO_TOKEN", token)
            .run(&input)
    };
    let sent = || upstream.requests.load(std::sync::atomic::Ordering::SeqCst);

    let run = mcp(SHORT_TOKEN);
    run.assert_code(0);
    let (text, is_error) = run.tool_result(2);
    assert!(is_error, "{}", run.context());
    assert_eq!(text, "denied: credential tok is not present");
    assert_eq!(sent(), 0, "the short token was sent\n{}", run.context());
    assert!(
        !String::from_utf8_lossy(&run.stdout).contains(SHORT_TOKEN),
        "{}",
        run.context()
    );
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("credential=tok")
            && stderr.contains(
                "environment variable ECHO_TOKEN holds a value of 3 bytes, shorter than the 4 bytes"
            ),
        "{stderr}"
    );
    assert!(!stderr.contains(SHORT_TOKEN), "{stderr}");

    let long_enough = "q#Zx";
    let run = mcp(long_enough);
    run.assert_code(0);
    let (text, is_error) = run.tool_result(2);
    assert!(!is_error, "{}", run.context());
    assert_eq!(text.matches("[redacted]").count(), 2, "{text}");
    assert!(!text.contains(long_enough), "{text}");
    assert_eq!(sent(), 1);
}
