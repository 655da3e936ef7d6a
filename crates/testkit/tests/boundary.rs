//! The boundary, end to end through the sans-IO core: every bad line never
//! executes; one complete valid request executes exactly once.

use std::sync::Arc;

use portcullis_gateway::{BoundPolicy, OnInvalid, Policy};
use portcullis_testkit::fixtures::{self, call, frame, legacy_handshake, modern_call, test_policy};
use portcullis_testkit::reference::values_in;
use portcullis_testkit::session::{run_session_official, stdout_messages};
use portcullis_testkit::{Chunking, SessionReport, run_session};
use portcullis_wire::Stage;
use serde_json::{Value, json};

fn run(policy: &BoundPolicy, input: &[u8]) -> SessionReport {
    run_session_official(policy, input)
}

fn tools_called(report: &SessionReport) -> Vec<String> {
    report.actions.iter().map(|a| a.tool().to_owned()).collect()
}

/// A hard case with its own fake tool name that must never be recorded.
fn hard_case(name: &str, bytes: Vec<u8>) -> (String, Vec<u8>) {
    (name.to_owned(), bytes)
}

/// The hard cases from the gateway issue. Each uses the real tool in a
/// frame that must be refused, so the recorder must stay empty.
fn hard_cases() -> Vec<(String, Vec<u8>)> {
    let ok = |id: i64| call(id, "service_status", json!({"service": "api"}));
    let strip = |mut b: Vec<u8>| {
        b.pop();
        b
    };
    vec![
        hard_case("debug_line_then_valid_request", {
            let mut b = b"debug: entering tool handler\n".to_vec();
            b.extend(legacy_handshake());
            b.extend(ok(2));
            b
        }),
        hard_case("valid_request_then_banner_on_same_line", fixtures::with_handshake(&{
            let mut b = strip(ok(2));
            b.extend_from_slice(b" server ready\n");
            b
        })),
        hard_case("truncated_object_then_eof", fixtures::with_handshake(&{
            let b = ok(2);
            b[..b.len() - 10].to_vec()
        })),
        hard_case("two_objects_on_one_line", fixtures::with_handshake(&{
            let mut b = strip(ok(2));
            b.extend(ok(3));
            b
        })),
        hard_case("params_string", fixtures::with_handshake(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"run"}
"#)),
        hard_case("id_true", fixtures::with_handshake(br#"{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"service_status","arguments":{"service":"api"}}}
"#)),
        hard_case("unknown_argument_property", fixtures::with_handshake(&call(2, "service_status", json!({"service":"api","shell":"rm -rf /"})))),
        hard_case("tools_call_as_notification", fixtures::with_handshake(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"service_status","arguments":{"service":"api"}}}
"#)),
        hard_case("tools_call_before_initialize", ok(2)),
        hard_case("reused_id", fixtures::with_handshake(&call(1, "service_status", json!({"service":"api"})))),
        hard_case("duplicate_name_key", fixtures::with_handshake(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"region_probe","name":"service_status","arguments":{"service":"api"}}}
"#)),
        hard_case("modern_unsupported_version", modern_call(2, "service_status", json!({"service":"api"}), "2099-01-01")),
        hard_case("denied_host_after_expansion", fixtures::with_handshake(&call(2, "region_probe", json!({"host":"localhost"})))),
        hard_case("escaped_duplicate_method", fixtures::with_handshake(br#"{"jsonrpc":"2.0","id":2,"method":"ping","met\u0068od":"tools/call","params":{"name":"service_status","arguments":{"service":"api"}}}
"#)),
    ]
}

#[test]
fn every_hard_case_executes_nothing_and_closes_unless_it_is_a_refused_call() {
    for (name, input) in hard_cases() {
        for chunking in [Chunking::Whole, Chunking::ByteByByte] {
            let report = run_session(&test_policy(OnInvalid::Close), &input, &chunking);
            assert!(
                report.actions.is_empty(),
                "{name}: executed {:?}",
                tools_called(&report)
            );
            assert_eq!(report.counters.executor_calls, 0, "{name}");
            assert_eq!(
                report.rejections.len(),
                1,
                "{name}: {:?}",
                report.rejections
            );
            // A well-formed call refused by the schema or authorization is
            // a tool error and the session goes on (issue 10); every other
            // rejection closes it.
            let refused_call = matches!(report.rejections[0].stage, Stage::Schema | Stage::Authz);
            assert_eq!(
                report.closed.is_some(),
                !refused_call,
                "{name}: closed {:?} after a rejection at {:?}",
                report.closed,
                report.rejections[0].stage
            );
            assert_eq!(
                report.counters.sessions_closed,
                u64::from(!refused_call),
                "{name}"
            );
        }
        run(&test_policy(OnInvalid::Close), &input);
    }
}

#[test]
fn every_hard_case_executes_nothing_under_keep_open() {
    for (name, input) in hard_cases() {
        let report = run(&test_policy(OnInvalid::KeepOpen), &input);
        if name == "debug_line_then_valid_request" {
            // Keep-open skips the debug line; the complete valid request
            // after it runs, exactly once.
            assert_eq!(tools_called(&report), ["service_status"], "{name}");
            continue;
        }
        assert!(
            report.actions.is_empty(),
            "{name}: executed {:?}",
            tools_called(&report)
        );
        assert!(report.closed.is_none(), "{name}");
        assert!(
            !report.rejections.is_empty(),
            "{name}: nothing was rejected"
        );
    }
}

#[test]
fn ledgers_are_separate_facts() {
    let input = b"not json\n";
    let report = run(&test_policy(OnInvalid::Close), input);
    assert_eq!(report.counters.rejected_total(), 1);
    assert_eq!(report.counters.frames_rejected.get(&Stage::Json), Some(&1));
    assert_eq!(report.counters.sessions_closed, 1);
    assert_eq!(report.counters.executor_calls, 0);
    assert!(report.journal.is_empty());
}

#[test]
fn ssh_argv_is_data_and_option_injection_is_denied() {
    let input = fixtures::with_handshake(&call(2, "restart_service", json!({"service": "api"})));
    let report = run(&test_policy(OnInvalid::Close), &input);
    match report.actions[0].target() {
        portcullis_gateway::ActionTarget::Ssh(s) => {
            assert_eq!(s.argv(), ["systemctl", "restart", "api"]);
            assert_eq!(
                (s.user(), s.host(), s.port()),
                ("deploy", "127.0.0.1", 2222)
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn rejection_ledger_never_holds_argument_values() {
    let input = fixtures::with_handshake(&call(
        2,
        "service_status",
        json!({"service": "SECRET-canary-value"}),
    ));
    let report = run(&test_policy(OnInvalid::Close), &input);
    let ledger = format!("{:?} {:?}", report.rejections, report.closed);
    assert!(!ledger.contains("SECRET-canary-value"), "{ledger}");
}

#[test]
fn missing_credential_denies_at_authz() {
    let policy = Policy::from_toml(fixtures::TEST_POLICY, std::path::Path::new("t.toml")).unwrap();
    // No credential bound.
    let policy = policy.bind_secrets(portcullis_gateway::SecretStore::default());
    let input = fixtures::with_handshake(&call(2, "service_status", json!({"service": "api"})));
    let report = run(&policy, &input);
    assert!(report.actions.is_empty());
    assert_eq!(report.rejections[0].stage, Stage::Authz);
}

#[test]
fn complete_call_without_final_newline_is_truncated_and_never_executes() {
    let mut input = legacy_handshake();
    let mut last = call(2, "service_status", json!({"service": "api"}));
    last.pop();
    input.extend(last);
    for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
        let report = run(&test_policy(mode), &input);
        assert!(
            report.actions.is_empty(),
            "{mode:?}: a frame without its newline executed"
        );
        assert_eq!(report.rejections[0].stage, Stage::Framing);
    }
}

#[test]
fn gateway_stdout_is_only_protocol_frames() {
    // Every hard case and valid session: stdout passes the transcript
    // checker (run_session asserts it) and has one line per reply.
    for (_, input) in hard_cases() {
        let report = run(&test_policy(OnInvalid::KeepOpen), &input);
        assert!(report.stdout.is_empty() || report.stdout.ends_with(b"\n"));
        for line in report
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
        {
            assert!(
                line.starts_with(b"{\"jsonrpc\":\"2.0\""),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }
}

fn nested(depth: usize) -> Value {
    serde_json::from_str(&format!("{}{}", "[".repeat(depth), "]".repeat(depth))).unwrap()
}

/// docs/boundary.md: "depth limit 64", and `[server] max_depth` moves it. The limit
/// counts from the top of the frame, so it holds inside `params.arguments`
/// exactly as for a bare value: at the limit the frame is JSON and reaches
/// the next stage (the schema, for arguments); one level deeper it is
/// refused as JSON, before anything reads its id.
#[test]
fn the_depth_limit_holds_inside_params_arguments_as_at_the_top() {
    let configured = fixtures::TEST_POLICY.replacen(
        "max_frame_bytes = 4096",
        "max_frame_bytes = 4096\nmax_depth = 9",
        1,
    );
    let mut small = Policy::from_toml(&configured, std::path::Path::new("t.toml")).unwrap();
    small.server.on_invalid = OnInvalid::KeepOpen;
    let secrets = fixtures::canary_secrets(&small);
    let small = Arc::new(small.bind_secrets(secrets));
    for (policy, limit) in [(test_policy(OnInvalid::KeepOpen), 64), (small, 9)] {
        // The frame's object, `params` and `arguments` are three levels.
        let args = |extra: usize| json!({"service": "api", "deep": nested(limit - 3 + extra)});
        let input = fixtures::with_handshake(
            &[
                call(2, "service_status", args(0)),
                call(3, "service_status", args(1)),
                call(4, "restart_service", json!({"service": "api"})),
            ]
            .concat(),
        );
        let report = run(&policy, &input);
        let refused: Vec<_> = report
            .rejections
            .iter()
            .map(|r| (r.stage, r.code))
            .collect();
        assert_eq!(
            refused,
            [(Stage::Schema, -32602), (Stage::Json, -32700)],
            "limit {limit}"
        );
        let lines = stdout_messages(&report);
        let answer = |id: i64| lines.iter().find(|l| l["id"] == id);
        assert_eq!(
            answer(2).unwrap()["result"]["isError"],
            true,
            "limit {limit}"
        );
        assert!(answer(3).is_none(), "limit {limit}: {lines:?}");
        assert_eq!(tools_called(&report), ["restart_service"], "limit {limit}");

        let bare = |depth: usize| frame(&nested(depth));
        let report = run(
            &policy,
            &fixtures::with_handshake(&[bare(limit), bare(limit + 1)].concat()),
        );
        let stages: Vec<_> = report.rejections.iter().map(|r| r.stage).collect();
        assert_eq!(stages, [Stage::Rpc, Stage::Json], "limit {limit}");
    }
}

/// docs/boundary.md: a frame holds at most `max_frame_values` JSON values,
/// counted over the whole frame: in `params.arguments` (read and kept) and
/// in `params._meta` (read without being kept) alike. At the limit a call
/// reaches its next stage (it runs, or the schema refuses an extra
/// argument); one value more is a JSON-stage refusal (-32700) that runs
/// nothing and whose reason names the limit.
#[test]
fn the_value_limit_holds_in_arguments_and_in_meta_alike() {
    let policy = test_policy(OnInvalid::KeepOpen);
    let limit = fixtures::TEST_MAX_FRAME_VALUES;
    assert_eq!(policy.server.max_frame_values, limit);
    // A call whose `member` holds an array of zeros, the frame holding
    // `values` values in all (counted on the tree, not by the gateway).
    let dense = |id: i64, member: &str, values: usize| {
        let message = |zeros: usize| {
            let mut params = json!({"name": "service_status", "arguments": {"service": "api"}});
            let filler = json!(vec![0; zeros]);
            match member {
                "_meta" => params["_meta"] = json!({ "x": filler }),
                _ => params["arguments"]["x"] = filler,
            }
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
        };
        let envelope = values_in(&message(0));
        let message = message(values - envelope);
        assert_eq!(values_in(&message), values);
        frame(&message)
    };
    let input = fixtures::with_handshake(
        &[
            dense(2, "_meta", limit),
            dense(3, "_meta", limit + 1),
            dense(4, "arguments", limit),
            dense(5, "arguments", limit + 1),
            call(6, "restart_service", json!({"service": "api"})),
        ]
        .concat(),
    );
    let report = run(&policy, &input);
    let refused: Vec<_> = report
        .rejections
        .iter()
        .map(|r| (r.line, r.stage, r.code))
        .collect();
    assert_eq!(
        refused,
        [
            (4, Stage::Json, -32700),
            (5, Stage::Schema, -32602),
            (6, Stage::Json, -32700)
        ]
    );
    assert_eq!(tools_called(&report), ["service_status", "restart_service"]);
    // Under close the refusal is answered, and names the limit.
    let report = run(
        &test_policy(OnInvalid::Close),
        &fixtures::with_handshake(&dense(2, "_meta", limit + 1)),
    );
    let closed = report.closed.as_ref().expect("the session closes");
    assert_eq!((closed.stage, closed.code), (Stage::Json, -32700));
    assert!(
        closed
            .reason
            .starts_with("frame exceeds max_frame_values (1024)"),
        "{}",
        closed.reason
    );
    assert!(report.actions.is_empty());
}
