//! The params of the methods the gateway serves, read strictly: what an
//! `initialize` must carry, what a `tools/call` may carry, and which
//! request a `notifications/cancelled` names. Each refusal is `-32602`
//! with a message naming the member.

use portcullis_gateway::mcp::params::{cancelled_request, initialize_params, tools_call_params};
mod common;

use common::params::object as map;
use portcullis_wire::{Id, Json};
use serde_json::{Value, json};

#[test]
fn initialize_needs_a_version_capabilities_and_client_info() {
    let good = json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    });
    let init = initialize_params(Some(&map(good.clone()))).unwrap();
    assert_eq!(init.requested, "2025-06-18");

    let refused = |params: Option<Value>| {
        let params = params.map(map);
        let refusal = initialize_params(params.as_ref()).unwrap_err();
        assert_eq!(refusal.code, -32602);
        refusal.message
    };
    assert_eq!(refused(None), "initialize requires params");
    let mut bad = good.clone();
    bad["protocolVersion"] = json!(20250618);
    assert_eq!(
        refused(Some(bad)),
        "params.protocolVersion must be a string"
    );
    let mut bad = good.clone();
    bad["capabilities"] = json!([]);
    assert_eq!(refused(Some(bad)), "params.capabilities must be an object");
    let info = "params.clientInfo must be an object with string name and version";
    for client_info in [
        json!({"name": "c"}),
        json!({"version": "1"}),
        json!({"name": 1, "version": "1"}),
        json!({"name": "c", "version": 1}),
        json!("c 1"),
    ] {
        let mut bad = good.clone();
        bad["clientInfo"] = client_info.clone();
        assert_eq!(refused(Some(bad)), info, "{client_info}");
    }
}

#[test]
fn a_tool_call_names_its_tool_and_may_carry_arguments_and_meta_only() {
    let call = tools_call_params(Some(map(json!({"name": "t"})))).unwrap();
    assert_eq!((&*call.name, call.arguments.len()), ("t", 0));
    let call = tools_call_params(Some(map(
        json!({"name": "t", "arguments": {"a": 1}, "_meta": {"progressToken": 1}}),
    )))
    .unwrap();
    assert_eq!(call.arguments.get("a").map(Json::to_value), Some(json!(1)));

    let refused = |params: Option<Value>| {
        let refusal = tools_call_params(params.map(map)).unwrap_err();
        assert_eq!(refusal.code, -32602);
        refusal.message
    };
    assert_eq!(refused(None), "tools/call requires params");
    assert_eq!(refused(Some(json!({}))), "params.name is required");
    assert_eq!(
        refused(Some(json!({"name": 1}))),
        "params.name must be a string"
    );
    assert_eq!(
        refused(Some(json!({"name": "t", "arguments": []}))),
        "params.arguments must be an object"
    );
    assert_eq!(
        refused(Some(json!({"name": "t", "_meta": 1}))),
        "params._meta must be an object"
    );
    assert_eq!(
        refused(Some(json!({"name": "t", "task": {}}))),
        "unsupported member \"task\" in tools/call params"
    );
}

#[test]
fn a_cancellation_names_a_string_or_integer_request_id() {
    let cancelled = |params: Value| cancelled_request(Some(&map(params)));
    assert_eq!(
        cancelled(json!({"requestId": "r1"})),
        Some(Id::Str("r1".into()))
    );
    assert_eq!(cancelled(json!({"requestId": 7})), Some(Id::Int(7)));
    assert_eq!(cancelled(json!({"requestId": -7})), Some(Id::Int(-7)));
    assert_eq!(cancelled(json!({"requestId": 1.5})), None);
    assert_eq!(cancelled(json!({"requestId": null})), None);
    assert_eq!(cancelled(json!({"reason": "x"})), None);
    assert_eq!(cancelled_request(None), None);
}
