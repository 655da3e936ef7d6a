//! What a driver may ask a running session: its policy, the negotiated
//! revision, how many actions are in flight, whether it has closed, and
//! the counters — each following the frames it was fed.

use std::path::Path;
use std::sync::Arc;

use portcullis_gateway::mcp::Revision;
use portcullis_gateway::{Config, Effect, Gateway, Outcome, Policy, SecretStore, Ticket};

const POLICY: &str = r#"
[server]
name = "view"

[[tools]]
name = "echo"
[tools.http]
method = "GET"
url = "http://127.0.0.1:8080/echo/{text}"
allow = ["127.0.0.1:8080"]
[tools.input_schema]
type = "object"
required = ["text"]
properties.text = { type = "string" }
"#;

fn gateway() -> Gateway {
    let policy = Policy::from_toml(POLICY, Path::new("view.toml")).unwrap();
    let secrets = SecretStore::stand_ins(&policy);
    let bound = policy.bind_secrets(secrets);
    Gateway::new(
        Arc::clone(bound.policy()),
        Arc::clone(bound.secrets()),
        Config::from_policy(&bound),
    )
}

const INIT: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

fn call(id: u64) -> Vec<u8> {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"hi\"}}}}}}\n").into_bytes()
}

fn tickets(effects: &[Effect]) -> Vec<Ticket> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Execute { ticket, .. } => Some(*ticket),
            _ => None,
        })
        .collect()
}

#[test]
fn a_session_reports_its_revision_and_actions_in_flight() {
    let mut gate = gateway();
    assert_eq!(gate.policy().server.name, "view");
    assert_eq!(gate.revision(), None);
    assert_eq!(gate.in_flight(), 0);
    gate.receive(INIT);
    assert_eq!(gate.revision(), Some(Revision::V2025_06_18));

    let first = tickets(&gate.receive(&call(2)));
    let second = tickets(&gate.receive(&call(3)));
    assert_eq!((first.len(), second.len()), (1, 1));
    assert_eq!(gate.in_flight(), 2);
    assert_eq!(gate.counters().executor_calls, 2);

    let effects = gate.complete(first[0], Outcome::success("ok"));
    assert!(
        matches!(effects.as_slice(), [Effect::Write(_)]),
        "{effects:?}"
    );
    assert_eq!(gate.in_flight(), 1);
    assert_eq!(gate.counters().executor_completions, 1);
    gate.complete(second[0], Outcome::failure("down"));
    assert_eq!(gate.in_flight(), 0);
    assert_eq!(gate.counters().executor_completions, 2);
    assert_eq!(gate.counters().frames_received, 4);
    assert!(!gate.is_closed());
}

#[test]
fn an_invalid_frame_closes_the_session_and_is_counted() {
    let mut gate = gateway();
    gate.receive(INIT);
    let effects = gate.receive(b"not json\n");
    assert!(
        effects.iter().any(|e| matches!(e, Effect::Close(_))),
        "{effects:?}"
    );
    assert!(gate.is_closed());
    assert_eq!(gate.counters().sessions_closed, 1);
    assert_eq!(gate.counters().rejected_total(), 1);
    // Nothing after the close is processed.
    assert!(gate.receive(&call(2)).is_empty());
    assert_eq!(gate.counters().frames_received, 3);
}

#[test]
fn end_of_input_refuses_a_truncated_frame_once() {
    let mut gate = gateway();
    gate.receive(INIT);
    gate.receive(b"{\"jsonrpc\"");
    let effects = gate.end_of_input();
    assert!(
        effects.iter().any(|e| matches!(e, Effect::Rejected(_))),
        "{effects:?}"
    );
    assert!(gate.end_of_input().is_empty());
}

fn cancel(id: u64) -> Vec<u8> {
    format!("{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{id}}}}}\n").into_bytes()
}

#[test]
fn a_cancellation_stops_exactly_the_request_it_names() {
    let mut gate = gateway();
    gate.receive(INIT);
    let two = tickets(&gate.receive(&call(2)))[0];
    let three = tickets(&gate.receive(&call(3)))[0];
    let effects = gate.receive(&cancel(3));
    assert!(
        matches!(effects.as_slice(), [Effect::Cancel(t)] if *t == three),
        "{effects:?}"
    );
    assert_eq!(gate.in_flight(), 1);
    // A request that is not in flight cancels nothing.
    assert!(gate.receive(&cancel(9)).is_empty());
    assert_eq!(gate.in_flight(), 1);
    let effects = gate.receive(&cancel(2));
    assert!(
        matches!(effects.as_slice(), [Effect::Cancel(t)] if *t == two),
        "{effects:?}"
    );
    assert_eq!(gate.in_flight(), 0);
}
