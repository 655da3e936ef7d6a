//! Lifecycle and session policy through the sans-IO core: revisions and
//! eras, the legacy handshake, notifications, unknown methods and tools,
//! `close` versus `keep-open`.

use portcullis_gateway::mcp::Revision;
use portcullis_gateway::{BoundPolicy, OnInvalid};
use portcullis_testkit::SessionReport;
use portcullis_testkit::fixtures::{self, call, frame, legacy_handshake, modern_call, test_policy};
use portcullis_testkit::session::{run_session_official, stdout_messages};
use portcullis_wire::Stage;
use serde_json::json;

fn run(policy: &BoundPolicy, input: &[u8]) -> SessionReport {
    run_session_official(policy, input)
}

fn tools_called(report: &SessionReport) -> Vec<String> {
    report.actions.iter().map(|a| a.tool().to_owned()).collect()
}

#[test]
fn complete_valid_legacy_request_executes_exactly_once() {
    for version in ["2025-06-18", "2025-11-25"] {
        let mut input = fixtures::initialize(1, version);
        input.extend(fixtures::initialized());
        input.extend(call(2, "service_status", json!({"service": "api"})));
        let report = run(&test_policy(OnInvalid::Close), &input);
        assert_eq!(tools_called(&report), ["service_status"]);
        // The journal records the call and, once it completed, its outcome.
        let outcomes: Vec<_> = report.journal.iter().map(|e| (e.line, e.outcome)).collect();
        assert_eq!(outcomes, [(3, Some(false))]);
        assert_eq!(report.revision.map(Revision::as_str), Some(version));
        assert!(report.rejections.is_empty() && report.closed.is_none());
        let lines = stdout_messages(&report);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["result"]["protocolVersion"], version);
        assert_eq!(lines[1]["id"], 2);
        assert_eq!(lines[1]["result"]["isError"], false);
        let url = match report.actions[0].target() {
            portcullis_gateway::ActionTarget::Http(h) => h.url().to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(url, "http://127.0.0.1:8080/status/api");
        assert_eq!(
            report.actions[0].credential().unwrap().expose(),
            portcullis_testkit::canary::value("status_token")
        );
    }
}

#[test]
fn unknown_client_version_negotiates_our_latest_legacy() {
    let report = run(
        &test_policy(OnInvalid::Close),
        &fixtures::initialize(1, "2024-11-05"),
    );
    assert_eq!(
        stdout_messages(&report)[0]["result"]["protocolVersion"],
        "2025-11-25"
    );
}

#[test]
fn complete_valid_modern_request_executes_exactly_once() {
    let input = modern_call(
        7,
        "service_status",
        json!({"service": "web-1"}),
        "2026-07-28",
    );
    let report = run(&test_policy(OnInvalid::Close), &input);
    assert_eq!(tools_called(&report), ["service_status"]);
    let lines = stdout_messages(&report);
    assert_eq!(lines[0]["result"]["resultType"], "complete");
    assert_eq!(report.revision, Some(Revision::V2026_07_28));
}

#[test]
fn modern_unsupported_version_names_supported_and_requested() {
    let input = modern_call(3, "service_status", json!({"service": "api"}), "2099-01-01");
    let report = run(&test_policy(OnInvalid::Close), &input);
    let lines = stdout_messages(&report);
    assert_eq!(lines[0]["id"], 3);
    assert_eq!(lines[0]["error"]["code"], -32022);
    assert_eq!(
        lines[0]["error"]["data"]["supported"],
        json!(["2026-07-28"])
    );
    assert_eq!(lines[0]["error"]["data"]["requested"], "2099-01-01");
}

#[test]
fn modern_request_without_meta_is_invalid_params() {
    let input = frame(&json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}));
    let report = run(&test_policy(OnInvalid::Close), &input);
    assert_eq!(stdout_messages(&report)[0]["error"]["code"], -32602);
    let input = frame(
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"service_status","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}),
    );
    let report = run(&test_policy(OnInvalid::Close), &input);
    assert_eq!(stdout_messages(&report)[0]["error"]["code"], -32602);
    assert!(report.actions.is_empty());
}

#[test]
fn server_discover_and_tools_list_come_from_the_policy() {
    let mut input = frame(
        &json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta": fixtures::modern_meta("2026-07-28")}}),
    );
    input.extend(frame(&json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": fixtures::modern_meta("2026-07-28")}})));
    let report = run(&test_policy(OnInvalid::Close), &input);
    let lines = stdout_messages(&report);
    assert_eq!(
        lines[0]["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    let names: Vec<_> = lines[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "service_status",
            "restart_service",
            "region_probe",
            "avatar_delete"
        ]
    );
    assert_eq!(
        lines[1]["result"]["tools"][1]["inputSchema"]["additionalProperties"], false,
        "omitted additionalProperties defaults to false"
    );
}

#[test]
fn eras_never_mix() {
    let mut input = legacy_handshake();
    input.extend(modern_call(
        2,
        "service_status",
        json!({"service": "api"}),
        "2026-07-28",
    ));
    let report = run(&test_policy(OnInvalid::Close), &input);
    assert!(report.actions.is_empty());
    assert_eq!(report.rejections[0].stage, Stage::Mcp);

    let mut input = modern_call(1, "service_status", json!({"service": "api"}), "2026-07-28");
    input.extend(fixtures::initialize(2, "2025-11-25"));
    input.extend(modern_call(
        3,
        "service_status",
        json!({"service": "api"}),
        "2026-07-28",
    ));
    let report = run(&test_policy(OnInvalid::Close), &input);
    assert_eq!(
        tools_called(&report),
        ["service_status"],
        "only the call before the mix"
    );
    assert!(report.closed.is_some());
}

#[test]
fn a_second_initialize_is_invalid() {
    let mut input = legacy_handshake();
    input.extend(fixtures::initialize(2, "2025-11-25"));
    let report = run(&test_policy(OnInvalid::Close), &input);
    assert_eq!(report.rejections.len(), 1);
    assert_eq!(stdout_messages(&report)[1]["error"]["code"], -32600);
}

#[test]
fn a_client_response_is_invalid() {
    let mut input = legacy_handshake();
    input.extend(frame(&json!({"jsonrpc":"2.0","id":99,"result":{}})));
    let report = run(&test_policy(OnInvalid::Close), &input);
    assert_eq!(report.rejections[0].stage, Stage::Mcp);
    let lines = stdout_messages(&report);
    assert!(
        lines[1].get("id").is_none(),
        "no id could be echoed: it is omitted, never null"
    );
}

#[test]
fn notifications_are_never_answered() {
    let mut input = legacy_handshake();
    input.extend(frame(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}),
    ));
    input.extend(frame(
        &json!({"jsonrpc":"2.0","method":"notifications/progress","params":{}}),
    ));
    let report = run(&test_policy(OnInvalid::Close), &input);
    assert_eq!(
        stdout_messages(&report).len(),
        1,
        "only the initialize result"
    );
    assert!(report.rejections.is_empty());
}

#[test]
fn unknown_method_is_answered_not_rejected() {
    let mut input = legacy_handshake();
    input.extend(frame(
        &json!({"jsonrpc":"2.0","id":2,"method":"resources/list"}),
    ));
    input.extend(call(3, "service_status", json!({"service": "api"})));
    let report = run(&test_policy(OnInvalid::Close), &input);
    let lines = stdout_messages(&report);
    assert_eq!(lines[1]["error"]["code"], -32601);
    assert_eq!(tools_called(&report), ["service_status"]);
}

#[test]
fn schema_failure_is_a_tool_error_and_executes_nothing() {
    let input = fixtures::with_handshake(&call(
        2,
        "service_status",
        json!({"service": "../../etc/passwd"}),
    ));
    let report = run(&test_policy(OnInvalid::KeepOpen), &input);
    let lines = stdout_messages(&report);
    assert_eq!(lines[1]["result"]["isError"], true);
    let text = lines[1]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        !text.contains("passwd"),
        "argument values are not echoed: {text}"
    );
    assert_eq!(report.rejections[0].stage, Stage::Schema);
    assert!(report.actions.is_empty());
}

#[test]
fn unknown_tool_is_invalid_params() {
    let input = fixtures::with_handshake(&call(2, "format_disk", json!({})));
    let report = run(&test_policy(OnInvalid::Close), &input);
    assert_eq!(stdout_messages(&report)[1]["error"]["code"], -32602);
    assert!(report.actions.is_empty());
}

#[test]
fn under_close_one_error_frame_then_nothing() {
    let mut input = legacy_handshake();
    input.extend_from_slice(b"garbage\n");
    input.extend(call(2, "service_status", json!({"service": "api"})));
    input.extend_from_slice(b"more garbage\n");
    let report = run(&test_policy(OnInvalid::Close), &input);
    let lines = stdout_messages(&report);
    assert_eq!(lines.len(), 2, "initialize result + one error: {lines:?}");
    assert_eq!(lines[1]["error"]["code"], -32700);
    assert!(lines[1].get("id").is_none());
    assert!(report.actions.is_empty());
    assert_eq!(
        report.counters.frames_received, 3,
        "nothing after close is even counted"
    );
}

#[test]
fn id_less_errors_are_not_written_for_2025_06_18() {
    let mut input = fixtures::initialize(1, "2025-06-18");
    input.extend_from_slice(b"garbage\n");
    let report = run(&test_policy(OnInvalid::Close), &input);
    assert_eq!(
        stdout_messages(&report).len(),
        1,
        "no id-less error for 2025-06-18"
    );
    assert!(report.closed.is_some());
}

#[test]
fn keep_open_answers_framed_requests_and_never_answers_garbage() {
    let mut input = legacy_handshake();
    input.extend_from_slice(b"garbage\n");
    input.extend(frame(
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":"run"}),
    ));
    let report = run(&test_policy(OnInvalid::KeepOpen), &input);
    let lines = stdout_messages(&report);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1]["id"], 2);
}

#[test]
fn keep_open_later_valid_request_inherits_nothing_from_a_rejected_one() {
    // The rejected call carries an unknown argument and another tool's
    // name; the later valid call must execute with its own arguments only.
    let mut input = legacy_handshake();
    input.extend(call(
        2,
        "service_status",
        json!({"service": "api", "extra": "x"}),
    ));
    input.extend(frame(
        &json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"restart_service"}}),
    ));
    input.extend(call(4, "service_status", json!({"service": "web-1"})));
    let report = run(&test_policy(OnInvalid::KeepOpen), &input);
    assert_eq!(report.rejections.len(), 2);
    assert_eq!(tools_called(&report), ["service_status"]);
    let url = match report.actions[0].target() {
        portcullis_gateway::ActionTarget::Http(h) => h.url().to_string(),
        other => panic!("{other:?}"),
    };
    assert_eq!(url, "http://127.0.0.1:8080/status/web-1");
    let lines = stdout_messages(&report);
    assert_eq!(lines.last().unwrap()["id"], 4);
}

/// With outcomes reported at end of input, calls are in flight when a
/// cancellation arrives: the cancelled one gets no response, and every
/// other one still gets its own (the driver drops exactly the cancelled
/// ticket's pending outcome).
#[test]
fn a_cancelled_call_in_flight_gets_no_response_and_the_others_do() {
    let mut input = legacy_handshake();
    for id in 2..=4 {
        input.extend(call(id, "service_status", json!({"service": "api"})));
    }
    input.extend(frame(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}),
    ));
    let report = portcullis_testkit::session::run_session_deferred(
        &test_policy(OnInvalid::Close),
        &input,
        &portcullis_testkit::session::Chunking::Whole,
    );
    assert_eq!(
        tools_called(&report).len(),
        3,
        "each call ran when handed out"
    );
    let answered: Vec<_> = stdout_messages(&report)
        .iter()
        .skip(1)
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(answered, [json!(2), json!(4)]);
}
