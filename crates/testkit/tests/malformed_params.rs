//! A request whose `params` are malformed is refused with `-32602` and a
//! reason naming the member at fault, and nothing executes: `tools/call`
//! members (`name`, `arguments`, `_meta`, unknown members) and a modern
//! request's `_meta` (protocol version and client capabilities).

use portcullis_gateway::OnInvalid;
use portcullis_testkit::fixtures::{frame, modern_meta, test_policy, with_handshake};
use portcullis_testkit::session::{run_session_official, stdout_messages};
use serde_json::{Value, json};

const INVALID_PARAMS: i64 = -32602;

/// The one error answer to `request` after the handshake (keep-open, so
/// each case is judged on its own), after checking nothing ran.
fn refusal(input: &[u8]) -> Value {
    let report = run_session_official(&test_policy(OnInvalid::KeepOpen), input);
    assert!(report.actions.is_empty(), "nothing executes");
    let answers = stdout_messages(&report);
    let error = answers
        .iter()
        .find(|m| m["id"] == 9)
        .unwrap_or_else(|| panic!("request 9 unanswered: {answers:?}"));
    error["error"].clone()
}

fn legacy_call(params: Value) -> Vec<u8> {
    with_handshake(&frame(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}),
    ))
}

#[test]
fn tools_call_params_name_the_member_at_fault() {
    let cases = [
        (json!({"name": 7}), "params.name must be a string"),
        (json!({"arguments": {}}), "params.name is required"),
        (
            json!({"name": "service_status", "arguments": ["api"]}),
            "params.arguments must be an object",
        ),
        (
            json!({"name": "service_status", "arguments": {"service": "api"}, "_meta": 1}),
            "params._meta must be an object",
        ),
        (
            json!({"name": "service_status", "arguments": {"service": "api"}, "cursor": "x"}),
            "unsupported member \"cursor\" in tools/call params",
        ),
    ];
    for (params, reason) in cases {
        let error = refusal(&legacy_call(params.clone()));
        assert_eq!(error["code"], INVALID_PARAMS, "{params}: {error}");
        assert_eq!(error["message"], reason, "{params}");
    }
}

#[test]
fn a_tools_call_without_params_is_refused() {
    let input = with_handshake(&frame(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call"}),
    ));
    let error = refusal(&input);
    assert_eq!(error["code"], INVALID_PARAMS);
    assert_eq!(error["message"], "tools/call requires params");
}

/// The error answer to request 9, `method` with `params`, after a valid
/// modern `ping` has fixed the session's era.
fn modern_refusal(method: &str, params: Option<Value>) -> Value {
    let mut input = frame(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": modern_meta("2026-07-28")}
    }));
    let mut request = json!({"jsonrpc": "2.0", "id": 9, "method": method});
    if let Some(params) = params {
        request["params"] = params;
    }
    input.extend(frame(&request));
    refusal(&input)
}

#[test]
fn a_modern_request_needs_a_string_version_and_a_capabilities_object() {
    let version_key = "io.modelcontextprotocol/protocolVersion";
    let capabilities_key = "io.modelcontextprotocol/clientCapabilities";
    let meta = |edit: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut meta = modern_meta("2026-07-28");
        edit(meta.as_object_mut().unwrap());
        json!({"_meta": meta})
    };
    // `server/discover` is modern whatever it carries; another method is
    // modern only when its `_meta` names a protocol version.
    let cases = [
        (
            "tools/list",
            Some(meta(&|m| {
                m.insert(version_key.into(), json!(20260728));
            })),
            format!("_meta[{version_key}] must be a string"),
        ),
        (
            "server/discover",
            Some(meta(&|m| {
                m.remove(version_key);
            })),
            format!("missing required _meta[{version_key}]"),
        ),
        (
            "tools/list",
            Some(meta(&|m| {
                m.insert(capabilities_key.into(), json!([]));
            })),
            format!("missing required _meta[{capabilities_key}] object"),
        ),
        (
            "server/discover",
            None,
            "missing required params._meta (protocol version and client capabilities)".to_owned(),
        ),
    ];
    for (method, params, reason) in cases {
        let error = modern_refusal(method, params);
        assert_eq!(error["code"], INVALID_PARAMS, "{reason}: {error}");
        assert_eq!(error["message"], reason.as_str());
    }
}
