//! The params of the methods the gateway serves, read strictly: what an
//! `initialize` must carry, what a `tools/call` may carry, and which
//! request a `notifications/cancelled` names. Each refusal is `-32602`
//! with a message naming the member.

use portcullis_gateway::mcp::params::{cancelled_request, initialize_params, tools_call_params};
use portcullis_gateway::mcp::{Revision, modern_meta};
mod common;

use common::params::object as map;
use portcullis_wire::strict_json::parse_json;
use portcullis_wire::{Id, Json, Limits, Object};
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

/// Params exactly as written (`json!` sorts its keys).
fn written(text: &str) -> Object<'_> {
    match parse_json(text, &Limits::default()) {
        Ok(Json::Object(params)) => params,
        other => panic!("{text}: {other:?}"),
    }
}

#[test]
fn an_unsupported_member_is_named_first_in_name_order_whatever_order_it_was_written_in() {
    for text in [
        r#"{"name":"t","zeta":1,"beta":2,"mid":3}"#,
        r#"{"beta":2,"name":"t","zeta":1}"#,
        r#"{"zeta":1,"mid":3,"beta":2,"name":"t","arguments":{}}"#,
    ] {
        let refusal = tools_call_params(Some(written(text))).unwrap_err();
        assert_eq!(
            refusal.message, "unsupported member \"beta\" in tools/call params",
            "{text}"
        );
    }
    // Each member is judged before any extra one, wherever it was written.
    let refused = |text| tools_call_params(Some(written(text))).unwrap_err().message;
    assert_eq!(
        refused(r#"{"zeta":1,"name":7}"#),
        "params.name must be a string"
    );
    assert_eq!(
        refused(r#"{"zeta":1,"arguments":[],"name":"t"}"#),
        "params.arguments must be an object"
    );
    assert_eq!(
        refused(r#"{"zeta":1,"_meta":[],"name":"t"}"#),
        "params._meta must be an object"
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

#[test]
fn a_modern_request_declaring_a_legacy_version_is_unsupported() {
    // The modern `_meta` names a modern revision; a legacy one is not
    // spoken there (it negotiates with `initialize`), so it is refused as
    // an unsupported version, naming what is supported.
    let meta = |version: &str| {
        map(json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
        }}))
    };
    assert_eq!(
        modern_meta(Some(&meta("2026-07-28"))).unwrap(),
        Revision::V2026_07_28
    );
    for legacy in ["2025-06-18", "2025-11-25"] {
        let refusal = modern_meta(Some(&meta(legacy))).unwrap_err();
        assert_eq!(refusal.code, -32022, "{legacy}");
        let data = refusal.data.expect("the refusal names versions");
        assert_eq!(data["supported"], json!(["2026-07-28"]), "{legacy}");
        assert_eq!(data["requested"], legacy);
    }
}
