//! What an executor reads from an `AuthorizedAction`: every field comes
//! from the policy and the expanded arguments, unchanged — method, URL,
//! output caps, timeout, credential, SSH host, port, user, argv and
//! known_hosts — and its one-line description names exactly that.

mod common;

use std::path::Path;
use std::time::Duration;

use common::authz::authorize_call;
use portcullis_gateway::authz::ActionTarget;
use portcullis_gateway::policy::HttpMethod;
use portcullis_gateway::{AuthorizedAction, BoundPolicy, Secret};
use serde_json::{Value, json};

/// [`common::authz::POLICY`] with both its credentials bound.
fn policy() -> BoundPolicy {
    common::authz::policy(&[("tok", "t0ken"), ("key", "PRIVATE KEY")])
}

fn authorized(policy: &BoundPolicy, tool: &str, args: Value) -> AuthorizedAction {
    authorize_call(policy, tool, args).expect("authorized")
}

#[test]
fn an_http_action_carries_the_policy_settings_and_the_expanded_url() {
    let policy = policy();
    let action = authorized(&policy, "put", json!({"item": "a b", "mode": "x&y"}));
    assert_eq!(action.tool(), "put");
    assert_eq!(action.kind(), "http");
    assert_eq!(action.timeout(), Duration::from_millis(1500));
    assert_eq!(action.credential().map(Secret::expose), Some("t0ken"));
    let ActionTarget::Http(http) = action.target() else {
        panic!("not http: {action:?}");
    };
    assert_eq!(http.method(), HttpMethod::Put);
    assert_eq!(http.url(), "https://api.internal:8443/v1/a%20b?mode=x%26y");
    assert_eq!(http.max_response_bytes(), 4096);
    assert_eq!(
        action.describe_target(),
        "PUT https://api.internal:8443/v1/a%20b?mode=x%26y"
    );
}

#[test]
fn a_tool_without_a_credential_gets_none_and_the_default_timeout() {
    let policy = policy();
    let action = authorized(&policy, "plain", json!({}));
    assert_eq!(action.credential(), None);
    assert_eq!(action.timeout(), Duration::from_secs(30));
    assert_eq!(action.describe_target(), "GET http://127.0.0.1:8080/x");
    let ActionTarget::Http(http) = action.target() else {
        panic!("not http");
    };
    assert_eq!(http.max_response_bytes(), 1024 * 1024);
}

#[test]
fn an_ssh_action_carries_host_port_user_argv_known_hosts_and_cap() {
    let policy = policy();
    let action = authorized(&policy, "logs", json!({"unit": "api.service", "n": 20}));
    assert_eq!(action.kind(), "ssh");
    assert_eq!(action.credential().map(Secret::expose), Some("PRIVATE KEY"));
    let ActionTarget::Ssh(ssh) = action.target() else {
        panic!("not ssh: {action:?}");
    };
    assert_eq!(
        (ssh.host(), ssh.port(), ssh.user()),
        ("db.internal", 2222, "ops")
    );
    assert_eq!(ssh.argv(), ["journalctl", "-u", "api.service", "-n", "20"]);
    assert_eq!(
        ssh.known_hosts(),
        Some(Path::new("/etc/portcullis/known_hosts"))
    );
    assert_eq!(ssh.max_output_bytes(), 777);
    assert_eq!(
        action.describe_target(),
        "ops@db.internal:2222 journalctl -u api.service -n 20"
    );
}

/// The journal entry a driver writes for an action: ticket, input line,
/// tool, kind and the SHA-256 of the one-line description (never the
/// arguments themselves).
#[test]
fn a_journal_entry_fingerprints_the_described_target() {
    use portcullis_gateway::JournalEntry;
    use portcullis_wire::Fingerprint;
    let policy = policy();
    let action = authorized(&policy, "logs", json!({"unit": "api.service", "n": 20}));
    let entry = JournalEntry::of(7, 3, &action);
    assert_eq!((entry.ticket, entry.line), (7, 3));
    assert_eq!((entry.tool.as_str(), entry.kind), ("logs", "ssh"));
    assert_eq!(
        entry.target,
        Fingerprint::of(b"ops@db.internal:2222 journalctl -u api.service -n 20")
    );
    assert_eq!(entry.outcome, None);
}

#[test]
fn an_outcome_is_a_success_or_a_failure_with_its_text() {
    use portcullis_gateway::Outcome;
    let ok = Outcome::success("done");
    assert_eq!((ok.text.as_str(), ok.is_error), ("done", false));
    let failed = Outcome::failure("timed out");
    assert_eq!((failed.text.as_str(), failed.is_error), ("timed out", true));
}

/// A driver may read a written frame as a slice, by `AsRef`, or take it
/// owned: the same complete line each way.
#[test]
fn a_written_frame_reads_the_same_every_way() {
    use std::sync::Arc;

    use portcullis_gateway::{Config, Effect, Gateway};
    let policy = policy();
    let mut gateway = Gateway::new(
        Arc::clone(policy.policy()),
        Arc::clone(policy.secrets()),
        Config::from_policy(&policy),
    );
    let effects = gateway.receive(
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}\n",
    );
    let Some(Effect::Write(frame)) = effects.into_iter().next() else {
        panic!("no frame written");
    };
    let line: Vec<u8> = frame.as_bytes().to_vec();
    assert!(line.starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{"));
    assert!(line.ends_with(b"}\n"));
    assert_eq!(&*frame, line.as_slice());
    assert_eq!(AsRef::<[u8]>::as_ref(&frame), line.as_slice());
    assert_eq!(frame.into_bytes(), line);
}

#[test]
fn rejections_are_totalled_over_every_stage() {
    use portcullis_gateway::Counters;
    use portcullis_wire::Stage;
    let mut counters = Counters::default();
    assert_eq!(counters.rejected_total(), 0);
    counters.frames_rejected.insert(Stage::Json, 2);
    counters.frames_rejected.insert(Stage::Mcp, 3);
    assert_eq!(counters.rejected_total(), 5);
}
