//! Ending a session with requests in flight (RFC 9113 §6.8, GOAWAY):
//! the first frame that ends the session stops reading there; every
//! request accepted before it is still answered exactly once, as its
//! action completes; then that frame's own answer, the last frame; then
//! `Close`. `keep-open` reads on.

use std::path::Path;
use std::sync::Arc;

use portcullis_gateway::{Config, Effect, Gateway, Outcome, Policy, SecretStore, Ticket};
use serde_json::Value;

fn policy(server: &str) -> String {
    format!(
        r#"
[server]
name = "drain"
{server}

[[tools]]
name = "echo"
[tools.http]
method = "GET"
url = "http://127.0.0.1:8080/echo/{{text}}"
allow = ["127.0.0.1:8080"]
[tools.input_schema]
type = "object"
required = ["text"]
properties.text = {{ type = "string", pattern = "^[a-z]+$" }}
"#
    )
}

fn gateway(server: &str) -> Gateway {
    let policy = Policy::from_toml(&policy(server), Path::new("drain.toml")).unwrap();
    let secrets = SecretStore::stand_ins(&policy);
    let bound = policy.bind_secrets(secrets);
    Gateway::new(
        Arc::clone(bound.policy()),
        Arc::clone(bound.secrets()),
        Config::from_policy(&bound),
    )
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"d","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
"#;

fn call(id: u64, text: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"{text}\"}}}}}}\n"
    )
}

fn ping(id: u64) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n")
}

/// The effects, each as a short word: `write:<id or error>`, `run`,
/// `rejected`, `cancel`, `close`.
fn shape(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .map(|effect| match effect {
            Effect::Write(frame) => {
                let value: Value = serde_json::from_slice(frame).expect("a JSON frame");
                let kind = if value.get("error").is_some() {
                    "error"
                } else if value["result"]["isError"] == Value::Bool(true) {
                    "tool-error"
                } else {
                    "result"
                };
                match value.get("id") {
                    Some(id) => format!("write:{kind}:{id}"),
                    None => format!("write:{kind}"),
                }
            }
            Effect::Execute { .. } => "run".to_owned(),
            Effect::Rejected(_) => "rejected".to_owned(),
            Effect::Cancel(_) => "cancel".to_owned(),
            Effect::Close(_) => "close".to_owned(),
        })
        .collect()
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

/// The session of the report, in one write: the call (id 4) was handed
/// out before the garbled line, so it is answered before the parse
/// error, and the close comes last.
#[test]
fn a_call_in_flight_at_an_invalid_frame_is_answered_before_the_error_and_the_close() {
    let mut gate = gateway("");
    let input = format!(
        "{INIT}{}{}{}garbled\n{}",
        ping(2),
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}\n",
        call(4, "api"),
        ping(5)
    );
    let effects = gate.receive(input.as_bytes());
    assert_eq!(
        shape(&effects),
        [
            "write:result:1",
            "write:result:2",
            "write:result:3",
            "run",
            "rejected"
        ],
        "the error and the close wait for the call in flight"
    );
    assert!(gate.is_draining());
    assert!(!gate.is_closed());
    assert_eq!(gate.in_flight(), 1);
    // Nothing after the invalid frame is read, even at end of input.
    assert!(gate.receive(ping(6).as_bytes()).is_empty());
    assert!(gate.receive(call(7, "web").as_bytes()).is_empty());
    assert!(gate.end_of_input().is_empty());
    assert_eq!(gate.counters().frames_received, 6);

    let ticket = tickets(&effects)[0];
    let effects = gate.complete(ticket, Outcome::success("up"));
    assert_eq!(
        shape(&effects),
        ["write:result:4", "write:error", "close"],
        "{effects:?}"
    );
    assert!(gate.is_closed());
    assert!(!gate.is_draining());
    assert_eq!(gate.counters().sessions_closed, 1);
    // A late completion writes nothing.
    assert!(gate.complete(ticket, Outcome::success("again")).is_empty());
}

#[test]
fn the_error_and_the_close_follow_the_last_of_several_calls_in_any_order() {
    let mut gate = gateway("");
    gate.receive(INIT.as_bytes());
    let input = format!("{}{}{}", call(2, "a"), call(3, "b"), call(4, "c"));
    let handed = tickets(&gate.receive(input.as_bytes()));
    assert_eq!(handed.len(), 3);
    // A readable, unused id is echoed in the error.
    let effects = gate.receive(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\"}\n");
    assert_eq!(shape(&effects), ["rejected"]);
    assert_eq!(
        shape(&gate.complete(handed[2], Outcome::success("c"))),
        ["write:result:4"]
    );
    assert_eq!(
        shape(&gate.complete(handed[0], Outcome::failure("down"))),
        ["write:tool-error:2"]
    );
    assert!(gate.is_draining());
    assert_eq!(
        shape(&gate.complete(handed[1], Outcome::success("b"))),
        ["write:result:3", "write:error:9", "close"]
    );
}

#[test]
fn an_action_the_client_cancelled_is_not_waited_for() {
    let mut gate = gateway("");
    gate.receive(INIT.as_bytes());
    let handed = tickets(&gate.receive(call(2, "a").as_bytes()));
    let cancel = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2}}\n";
    assert_eq!(shape(&gate.receive(cancel.as_bytes())), ["cancel"]);
    let effects = gate.receive(b"garbled\n");
    assert_eq!(shape(&effects), ["rejected", "write:error", "close"]);
    assert!(gate.complete(handed[0], Outcome::success("a")).is_empty());
}

#[test]
fn a_truncated_frame_at_end_of_input_drains_the_calls_in_flight_too() {
    let mut gate = gateway("");
    gate.receive(INIT.as_bytes());
    let handed = tickets(&gate.receive(call(2, "a").as_bytes()));
    assert!(gate.receive(b"{\"jsonrpc\":").is_empty());
    assert_eq!(shape(&gate.end_of_input()), ["rejected"]);
    assert!(gate.is_draining());
    assert_eq!(
        shape(&gate.complete(handed[0], Outcome::success("a"))),
        ["write:result:2", "write:error", "close"]
    );
}

/// `on_denied = "close"` follows the same rule: the refused call's tool
/// error is its answer, written after the accepted calls' answers.
#[test]
fn a_refused_call_under_on_denied_close_is_answered_after_the_calls_in_flight() {
    let mut gate = gateway("on_denied = \"close\"");
    gate.receive(INIT.as_bytes());
    let handed = tickets(&gate.receive(call(2, "a").as_bytes()));
    let input = format!("{}{}", call(3, "NOT-LOWER"), ping(4));
    assert_eq!(shape(&gate.receive(input.as_bytes())), ["rejected"]);
    assert!(gate.is_draining());
    assert_eq!(
        shape(&gate.complete(handed[0], Outcome::success("a"))),
        ["write:result:2", "write:tool-error:3", "close"]
    );
}

#[test]
fn with_nothing_in_flight_the_error_and_the_close_come_at_once() {
    let mut gate = gateway("");
    gate.receive(INIT.as_bytes());
    let handed = tickets(&gate.receive(call(2, "a").as_bytes()));
    assert_eq!(
        shape(&gate.complete(handed[0], Outcome::success("a"))),
        ["write:result:2"]
    );
    let effects = gate.receive(format!("garbled\n{}", ping(3)).as_bytes());
    assert_eq!(shape(&effects), ["rejected", "write:error", "close"]);
    assert!(!gate.is_draining());
}

#[test]
fn keep_open_reads_on_past_an_invalid_frame_with_calls_in_flight() {
    let mut gate = gateway("on_invalid = \"keep-open\"");
    gate.receive(INIT.as_bytes());
    let first = tickets(&gate.receive(call(2, "a").as_bytes()));
    let effects = gate.receive(format!("garbled\n{}", call(3, "b")).as_bytes());
    assert_eq!(shape(&effects), ["rejected", "run"]);
    assert!(!gate.is_draining());
    let second = tickets(&effects);
    assert_eq!(
        shape(&gate.complete(second[0], Outcome::success("b"))),
        ["write:result:3"]
    );
    assert_eq!(
        shape(&gate.complete(first[0], Outcome::success("a"))),
        ["write:result:2"]
    );
    assert!(!gate.is_closed());
}
