//! `portcullis policy check` and `policy tools`, and where `--help` and
//! `--version` go, through the built binary.

mod common;

use common::{Fixture, Launch, example, http_policy, stdout_text};
use portcullis_testkit::fakes::FakeHttp;
use serde_json::Value;

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
