//! What a session keeps is bounded by configuration, not by what it is sent:
//! request ids have a length cap and are remembered as digests in a capped
//! memory, and records leave the session as effects (fingerprints, never
//! ids or arguments) while the session keeps only counters.

use std::path::Path;
use std::sync::Arc;

use portcullis_gateway::{
    BoundPolicy, Config, Effect, Gateway, JournalEntry, OnInvalid, Outcome, Policy,
    RejectionRecord, SecretStore,
};
use portcullis_wire::{Fingerprint, Stage};
use serde_json::{Value, json};

fn policy(server_extra: &str, on_invalid: OnInvalid) -> Arc<BoundPolicy> {
    let text = format!(
        r#"
[server]
name = "memory"
max_frame_bytes = 2097152
{server_extra}

[[tools]]
name = "echo"
[tools.http]
method = "GET"
url = "http://127.0.0.1:8080/echo/{{text}}"
allow = ["127.0.0.1:8080"]
[tools.input_schema]
type = "object"
required = ["text"]
properties.text = {{ type = "string" }}
"#
    );
    let mut policy = Policy::from_toml(&text, Path::new("memory.toml")).expect("valid policy");
    policy.server.on_invalid = on_invalid;
    let secrets = SecretStore::stand_ins(&policy);
    Arc::new(policy.bind_secrets(secrets))
}

fn gateway(policy: &BoundPolicy) -> Gateway {
    Gateway::new(
        Arc::clone(policy.policy()),
        Arc::clone(policy.secrets()),
        Config::from_policy(policy),
    )
}

fn line(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).unwrap();
    bytes.push(b'\n');
    bytes
}

fn ping(id: Value) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
}

/// A driver's sinks: the rejection ledger and the execution journal.
#[derive(Debug, Default)]
struct Sinks {
    rejections: Vec<RejectionRecord>,
    journal: Vec<JournalEntry>,
}

impl Sinks {
    /// Keep the records among `effects`; return the frames written, parsed.
    fn take(&mut self, effects: &[Effect]) -> Vec<Value> {
        let mut frames = Vec::new();
        for effect in effects {
            match effect {
                Effect::Write(frame) => frames.push(serde_json::from_slice(frame).unwrap()),
                Effect::Rejected(record) => self.rejections.push(record.clone()),
                Effect::Execute {
                    ticket,
                    line,
                    action,
                } => self.journal.push(JournalEntry::of(ticket.0, *line, action)),
                _ => {}
            }
        }
        frames
    }
}

/// The frames written for `bytes`, parsed; records go to `sinks`.
fn written_to(gateway: &mut Gateway, sinks: &mut Sinks, bytes: &[u8]) -> Vec<Value> {
    let effects = gateway.receive(bytes);
    sinks.take(&effects)
}

/// The frames written for `bytes`, parsed.
fn written(gateway: &mut Gateway, bytes: &[u8]) -> Vec<Value> {
    written_to(gateway, &mut Sinks::default(), bytes)
}

#[test]
fn a_string_id_longer_than_max_id_bytes_is_refused_at_the_mcp_stage_with_the_id_echoed() {
    let policy = policy("max_id_bytes = 64", OnInvalid::KeepOpen);
    let mut gate = gateway(&policy);
    let mut ledger = Sinks::default();
    let at_cap = "a".repeat(64);
    let over = "b".repeat(65);
    let replies = written_to(&mut gate, &mut ledger, &ping(json!(at_cap)));
    assert_eq!(
        replies,
        [json!({"jsonrpc": "2.0", "id": at_cap, "result": {}})]
    );
    let replies = written_to(&mut gate, &mut ledger, &ping(json!(over)));
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0]["id"], json!(over));
    assert_eq!(replies[0]["error"]["code"], json!(-32600));
    let message = replies[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("request id too long") && message.contains("max_id_bytes"),
        "{message}"
    );
    assert_eq!(ledger.rejections.len(), 1);
    assert_eq!(ledger.rejections[0].stage, Stage::Mcp);
    assert_eq!(ledger.rejections[0].line, 2);
}

#[test]
fn the_default_id_cap_is_1024_bytes() {
    let policy = policy("", OnInvalid::KeepOpen);
    assert_eq!(policy.server.max_id_bytes, 1024);
    let mut gate = gateway(&policy);
    assert!(written(&mut gate, &ping(json!("x".repeat(1024))))[0]["result"].is_object());
    assert!(written(&mut gate, &ping(json!("y".repeat(1025))))[0]["error"].is_object());
}

#[test]
fn an_over_long_id_closes_a_close_session_like_any_invalid_request() {
    let policy = policy("max_id_bytes = 16", OnInvalid::Close);
    let mut gate = gateway(&policy);
    let effects = gate.receive(&ping(json!("z".repeat(17))));
    assert!(matches!(effects.last(), Some(Effect::Close(r)) if r.stage == Stage::Mcp));
    assert!(gate.is_closed());
}

#[test]
fn reuse_of_a_long_string_id_is_still_detected_and_1_is_not_the_string_1() {
    let policy = policy("max_id_bytes = 65536", OnInvalid::KeepOpen);
    let mut gate = gateway(&policy);
    let mut ledger = Sinks::default();
    let long = "q".repeat(60_000);
    assert!(written(&mut gate, &ping(json!(long)))[0]["result"].is_object());
    assert!(written(&mut gate, &ping(json!(1)))[0]["result"].is_object());
    assert!(written(&mut gate, &ping(json!("1")))[0]["result"].is_object());
    // A reused id is never echoed (the client would pair the error with its
    // earlier request): under keep-open nothing is written, and the ledger
    // counts the refusal.
    for (n, reused) in [json!(long), json!(1), json!("1")].into_iter().enumerate() {
        assert!(written_to(&mut gate, &mut ledger, &ping(reused)).is_empty());
        assert_eq!(ledger.rejections.len(), n + 1);
        assert_eq!(ledger.rejections[n].stage, Stage::Mcp);
    }
}

#[test]
fn ids_past_max_session_ids_are_refused_but_consecutive_integers_never_run_out() {
    let policy = policy("max_session_ids = 3", OnInvalid::KeepOpen);
    let mut gate = gateway(&policy);
    // One run of consecutive integers is one entry, however long.
    for n in 1..=5000 {
        let replies = written(&mut gate, &ping(json!(n)));
        assert!(replies[0]["result"].is_object(), "{n}: {}", replies[0]);
    }
    assert!(written(&mut gate, &ping(json!("uuid-a")))[0]["result"].is_object());
    assert!(written(&mut gate, &ping(json!(9000)))[0]["result"].is_object());
    // Memory full: a new string id and a new integer run are refused...
    for id in [json!("uuid-b"), json!(20_000)] {
        let replies = written(&mut gate, &ping(id.clone()));
        assert_eq!(replies[0]["id"], id);
        let message = replies[0]["error"]["message"].as_str().unwrap();
        assert!(message.contains("max_session_ids"), "{message}");
    }
    // ...while the integer run goes on, and reuse is still detected.
    assert!(written(&mut gate, &ping(json!(5001)))[0]["result"].is_object());
    assert!(written(&mut gate, &ping(json!(9001)))[0]["result"].is_object());
    let mut ledger = Sinks::default();
    assert!(written_to(&mut gate, &mut ledger, &ping(json!("uuid-a"))).is_empty());
    assert_eq!(ledger.rejections.len(), 1);
}

#[test]
fn records_leave_as_effects_in_order_and_the_session_keeps_only_counters() {
    let policy = policy("", OnInvalid::KeepOpen);
    let mut gate = gateway(&policy);
    let mut input = line(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}),
    );
    input.extend(b"not json\n");
    // Large, yet within the longest URL authorization lets through.
    let argument = "p".repeat(60_000);
    input.extend(line(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": argument}}}),
    ));
    let effects = gate.receive(&input);
    let (ticket, action) = effects
        .iter()
        .find_map(|e| match e {
            Effect::Execute { ticket, action, .. } => Some((*ticket, action.clone())),
            _ => None,
        })
        .expect("the call runs");
    let mut drained = Sinks::default();
    drained.take(&effects);
    assert_eq!(drained.rejections.len(), 1);
    assert_eq!(drained.rejections[0].line, 2);
    assert_eq!(drained.journal.len(), 1);
    let entry = &drained.journal[0];
    assert_eq!(
        (entry.ticket, entry.line, entry.tool.as_str()),
        (ticket.0, 3, "echo")
    );
    // The journal keeps a fingerprint of the target, never the argument.
    assert_eq!(
        entry.target,
        Fingerprint::of(action.describe_target().as_bytes())
    );
    assert!(!format!("{drained:?}").contains("ppppp"));
    // The session itself holds no record: its state does not show the
    // fingerprints it handed out.
    let state = format!("{gate:?}");
    assert!(!state.contains(&entry.target.to_hex()) && !state.contains("ppppp"));
    let mut after = Sinks::default();
    after.take(&gate.complete(ticket, Outcome::success("done")));
    assert!(after.rejections.is_empty() && after.journal.is_empty());
    let counters = gate.counters();
    assert_eq!(counters.frames_received, 3);
    assert_eq!(counters.rejected_total(), 1);
    assert_eq!(
        (counters.executor_calls, counters.executor_completions),
        (1, 1)
    );
}

#[test]
fn id_limits_out_of_range_are_policy_errors_naming_the_field() {
    for (setting, field) in [
        ("max_id_bytes = 15", "server.max_id_bytes"),
        ("max_id_bytes = 65537", "server.max_id_bytes"),
        ("max_session_ids = 0", "server.max_session_ids"),
    ] {
        let text = format!("[server]\nname = \"t\"\n{setting}\n");
        let err = Policy::from_toml(&text, Path::new("p.toml")).unwrap_err();
        assert!(err.to_string().contains(field), "{setting}: {err}");
    }
}
