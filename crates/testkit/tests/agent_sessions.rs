//! Agent-friendly sessions (issue 10): a model's refused call is a tool
//! error it can act on, never the end of the session, unless the policy
//! opts in with `on_denied = "close"`; `ping` is served in both eras.

use std::path::Path;
use std::sync::Arc;

use portcullis_gateway::{BoundPolicy, OnDenied, OnInvalid, Policy};
use portcullis_testkit::fixtures::{
    self, TEST_POLICY, call, canary_secrets, frame, legacy_handshake, modern_call, modern_meta,
};
use portcullis_testkit::session::stdout_messages;
use portcullis_testkit::{Chunking, run_session};
use portcullis_wire::Stage;
use serde_json::{Value, json};

fn policy(on_invalid: OnInvalid, on_denied: OnDenied) -> Arc<BoundPolicy> {
    let mut policy = Policy::from_toml(TEST_POLICY, Path::new("TEST_POLICY.toml")).unwrap();
    policy.server.on_invalid = on_invalid;
    policy.server.on_denied = on_denied;
    let secrets = canary_secrets(&policy);
    Arc::new(policy.bind_secrets(secrets))
}

fn tool_error_text(reply: &Value) -> &str {
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    reply["result"]["content"][0]["text"].as_str().unwrap()
}

#[test]
fn refused_calls_answer_and_the_session_goes_on_in_both_modes() {
    let mut input = legacy_handshake();
    input.extend(call(2, "service_status", json!({"service": "Not Valid"})));
    input.extend(call(
        3,
        "service_status",
        json!({"service": "api", "verbose": true}),
    ));
    input.extend(call(4, "region_probe", json!({"host": "evil.example"})));
    input.extend(call(5, "restart_service", json!({})));
    input.extend(call(6, "service_status", json!({"service": "api"})));
    for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
        let report = run_session(&policy(mode, OnDenied::ToolError), &input, &Chunking::Whole);
        assert_eq!(report.actions.len(), 1, "{mode:?}");
        assert!(report.closed.is_none(), "{mode:?}: {:?}", report.closed);
        let stages: Vec<_> = report.rejections.iter().map(|r| r.stage).collect();
        assert_eq!(
            stages,
            [Stage::Schema, Stage::Schema, Stage::Authz, Stage::Schema]
        );
        let replies = stdout_messages(&report);
        let by_id = |id: i64| replies.iter().find(|r| r["id"] == id).unwrap();
        let pattern = tool_error_text(by_id(2));
        assert!(
            pattern.contains("at /service: must match the pattern"),
            "{pattern}"
        );
        assert!(!pattern.contains("Not Valid"), "never the value: {pattern}");
        let extra = tool_error_text(by_id(3));
        assert!(
            extra.contains("unexpected properties \"verbose\""),
            "{extra}"
        );
        let denied = tool_error_text(by_id(4));
        assert!(
            denied.contains("allowlist") && !denied.contains("evil"),
            "{denied}"
        );
        let missing = tool_error_text(by_id(5));
        assert!(
            missing.contains("missing required property \"service\""),
            "{missing}"
        );
        assert_eq!(by_id(6)["result"]["isError"], false);
    }
}

#[test]
fn each_failing_keyword_is_one_line() {
    let mut input = legacy_handshake();
    input.extend(call(
        2,
        "service_status",
        json!({"service": 7, "a": 1, "b": 2}),
    ));
    let report = run_session(
        &policy(OnInvalid::Close, OnDenied::ToolError),
        &input,
        &Chunking::Whole,
    );
    let replies = stdout_messages(&report);
    let text = tool_error_text(&replies[1]);
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(
        lines[0],
        "arguments do not match the input schema of service_status:"
    );
    assert!(lines.len() == 3, "{text}");
    assert!(
        lines.iter().any(|l| l.contains("expected type string")),
        "{text}"
    );
    assert!(lines.iter().any(|l| l.contains("\"a\", \"b\"")), "{text}");
}

#[test]
fn on_denied_close_keeps_the_strict_behaviour() {
    let mut input = legacy_handshake();
    input.extend(call(2, "service_status", json!({"service": "Not Valid"})));
    input.extend(call(3, "service_status", json!({"service": "api"})));
    for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
        let report = run_session(&policy(mode, OnDenied::Close), &input, &Chunking::Whole);
        assert!(report.actions.is_empty(), "{mode:?}");
        let closed = report.closed.clone().expect("closed after the refusal");
        assert_eq!(closed.stage, Stage::Schema);
        let replies = stdout_messages(&report);
        assert_eq!(
            replies.len(),
            2,
            "initialize result and the tool error only"
        );
        tool_error_text(&replies[1]);
    }
}

#[test]
fn on_denied_is_read_from_the_policy() {
    let text = TEST_POLICY.replace(
        "on_invalid = \"close\"",
        "on_invalid = \"close\"\non_denied = \"close\"",
    );
    let policy = Policy::from_toml(&text, Path::new("p.toml")).unwrap();
    assert_eq!(policy.server.on_denied, OnDenied::Close);
    let default = Policy::from_toml(TEST_POLICY, Path::new("p.toml")).unwrap();
    assert_eq!(default.server.on_denied, OnDenied::ToolError);
    let bad = TEST_POLICY.replace("on_invalid = \"close\"", "on_denied = \"sometimes\"");
    let err = Policy::from_toml(&bad, Path::new("p.toml")).unwrap_err();
    assert!(err.to_string().contains("on_denied"), "{err}");
}

#[test]
fn ping_is_served_in_the_modern_era() {
    let meta = modern_meta("2026-07-28");
    let mut input = frame(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": meta.clone()}}),
    );
    input.extend(modern_call(
        2,
        "service_status",
        json!({"service": "api"}),
        "2026-07-28",
    ));
    input.extend(frame(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": meta}}),
    ));
    let bad_meta = modern_meta("2099-01-01");
    input.extend(frame(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"_meta": bad_meta}}),
    ));
    // A modern request without `_meta` mixes eras, ping included.
    input.extend(frame(&json!({"jsonrpc": "2.0", "id": 5, "method": "ping"})));
    let report = run_session(
        &policy(OnInvalid::KeepOpen, OnDenied::ToolError),
        &input,
        &Chunking::Whole,
    );
    assert_eq!(report.actions.len(), 1);
    let replies = stdout_messages(&report);
    for id in [1, 3] {
        let reply = replies.iter().find(|r| r["id"] == id).unwrap();
        assert_eq!(
            reply["result"],
            json!({"resultType": "complete"}),
            "ping {id}"
        );
    }
    let refused = replies.iter().find(|r| r["id"] == 4).unwrap();
    assert_eq!(refused["error"]["code"], -32022, "{refused}");
    let mixed = replies.iter().find(|r| r["id"] == 5).unwrap();
    assert_eq!(mixed["error"]["code"], -32600, "{mixed}");
}

#[test]
fn ping_is_served_before_and_after_the_legacy_handshake() {
    let mut input = frame(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    input.extend(fixtures::initialize(2, "2025-11-25"));
    input.extend(fixtures::initialized());
    input.extend(frame(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})));
    let report = run_session(
        &policy(OnInvalid::Close, OnDenied::ToolError),
        &input,
        &Chunking::Whole,
    );
    let replies = stdout_messages(&report);
    for id in [1, 3] {
        let reply = replies.iter().find(|r| r["id"] == id).unwrap();
        assert_eq!(reply["result"], json!({}), "ping {id}");
    }
    assert!(report.closed.is_none());
}

#[test]
fn discovery_names_the_server() {
    let meta = modern_meta("2026-07-28");
    let input = frame(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
    );
    let report = run_session(
        &policy(OnInvalid::Close, OnDenied::ToolError),
        &input,
        &Chunking::Whole,
    );
    let replies = stdout_messages(&report);
    let info = &replies[0]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(info["name"], "portcullis-test", "{}", replies[0]);
    assert!(info["version"].is_string());
}
