//! proptest properties at the unit level (failures are persisted under
//! `proptest-regressions/`, which is committed).

use portcullis_gateway::OnInvalid;
use portcullis_testkit::Chunking;
use portcullis_testkit::fixtures::test_policy;
use portcullis_testkit::harness::{check_model, chunking, stdin_bytes};
use portcullis_testkit::model::{self, Op, Service};
use portcullis_testkit::session::run_session_deferred;
use portcullis_wire::Stage;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn ops() -> impl Strategy<Value = (OnInvalid, Vec<Op>)> {
    proptest::collection::vec(any::<u8>(), 16..512)
        .prop_filter_map("decodes to ops", |bytes| model::from_fuzz(&bytes))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/properties.txt"
        )))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn recorder_equals_the_model((mode, ops) in ops()) {
        check_model(&ops, mode);
    }

    #[test]
    fn any_chunking_gives_the_same_session((mode, ops) in ops(), sizes in proptest::collection::vec(1usize..97, 1..6)) {
        let policy = test_policy(mode);
        let scenario = model::scenario(&ops, mode, policy.server.max_frame_bytes);
        let whole = run_session_deferred(&policy, &scenario.input, &Chunking::Whole);
        let split = run_session_deferred(&policy, &scenario.input, &Chunking::Sizes(sizes));
        prop_assert_eq!(whole.stdout, split.stdout);
        prop_assert_eq!(whole.actions, split.actions);
        prop_assert_eq!(whole.rejections, split.rejections);
    }

    #[test]
    fn garbage_around_sessions_never_executes_unreferenced_lines(
        (mode, ops) in ops(),
        noise in proptest::collection::vec(any::<u8>(), 0..64),
        at in any::<prop::sample::Index>(),
    ) {
        let policy = test_policy(mode);
        let mut input = model::scenario(&ops, mode, policy.server.max_frame_bytes).input;
        let pos = at.index(input.len() + 1);
        input.splice(pos..pos, noise);
        stdin_bytes(&input);
        chunking(&input);
    }
}

#[test]
fn a_valid_session_executes_exactly_once() {
    for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
        let scenario = model::scenario(&model::valid_session(), mode, 65536);
        assert_eq!(
            scenario.expected,
            [("service_status".to_owned(), "api".to_owned())]
        );
        check_model(&model::valid_session(), mode);
    }
}

#[test]
fn the_model_predicts_close_at_the_first_invalid_frame() {
    let ops = [
        Op::Initialize,
        Op::Call(Service::Api),
        Op::DebugLine,
        Op::Call(Service::Web1),
    ];
    let close = model::scenario(&ops, OnInvalid::Close, 65536);
    assert_eq!(close.expected.len(), 1);
    assert!(close.closes);
    check_model(&ops, OnInvalid::Close);
    let keep = model::scenario(&ops, OnInvalid::KeepOpen, 65536);
    assert_eq!(keep.expected.len(), 2);
    check_model(&ops, OnInvalid::KeepOpen);
}

#[test]
fn hand_written_sequences_match_the_model() {
    use model::BadId;
    let sequences: Vec<Vec<Op>> = vec![
        vec![
            Op::Ping,
            Op::Initialize,
            Op::Initialized,
            Op::Call(Service::Web1),
            Op::ReusedId,
        ],
        vec![Op::ModernCall(Service::Api), Op::Discover, Op::Initialize],
        vec![Op::Initialize, Op::SameLineBanner, Op::Call(Service::Api)],
        vec![Op::Initialize, Op::Concatenated, Op::CallCrlf(Service::Api)],
        vec![Op::Initialize, Op::OverLong, Op::Call(Service::Api)],
        vec![
            Op::Initialize,
            Op::WrongId(BadId::Bool),
            Op::WrongId(BadId::Huge),
            Op::Call(Service::Api),
        ],
        vec![
            Op::Initialize,
            Op::UnknownArgument,
            Op::NotificationCall,
            Op::Probe(true),
            Op::Probe(false),
        ],
        vec![
            Op::Initialize,
            Op::UnknownMethod,
            Op::Cancel(3),
            Op::EmptyLine,
            Op::Call(Service::Api),
        ],
        vec![
            Op::Call(Service::Api),
            Op::Initialize,
            Op::Call(Service::Api),
            Op::Truncate,
        ],
        vec![
            Op::Initialize,
            Op::ModernBadVersion,
            Op::Call(Service::BadCase),
            Op::Call(Service::Api),
        ],
        vec![
            Op::Initialized,
            Op::BadUtf8,
            Op::DuplicateName,
            Op::ParamsString,
            Op::UnknownTool,
            Op::Initialize,
            Op::ToolsList,
            Op::Call(Service::Api),
        ],
    ];
    for ops in &sequences {
        for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
            check_model(ops, mode);
        }
    }
}

/// Both tool kinds carry constraining schemas: every schema violation, sent
/// to the HTTP tool or to the SSH tool, in either era, executes nothing
/// and is answered with an `isError` result, and the gateway agrees.
#[test]
fn both_tool_kinds_refuse_schema_violations_with_a_tool_error() {
    let refused = [
        Service::BadCase,
        Service::Traversal,
        Service::Spaced,
        Service::LeadingDash,
        Service::TooLong,
        Service::WrongType,
        Service::ExtraProperty,
        Service::Missing,
    ];
    type MakeCall = fn(Service) -> Op;
    let calls: [(MakeCall, bool); 4] = [
        (Op::Call, false),
        (Op::Restart, false),
        (Op::ModernCall, true),
        (Op::ModernRestart, true),
    ];
    for service in refused {
        for (call, modern) in calls {
            let mut ops = if modern {
                vec![]
            } else {
                vec![Op::Initialize, Op::Initialized]
            };
            ops.push(call(service));
            ops.push(call(Service::Web1));
            for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
                let scenario = model::scenario(&ops, mode, 65536);
                let id = if modern { 1 } else { 2 };
                assert_eq!(scenario.tool_errors, [id], "{ops:?}");
                assert_eq!(scenario.rejections, [Stage::Schema], "{ops:?}");
                assert_eq!(scenario.expected.len(), 1, "the session goes on: {ops:?}");
                assert!(!scenario.closes);
                check_model(&ops, mode);
            }
        }
    }
}

/// The depth limit counts from the top of the frame, so it holds inside
/// `params.arguments`: a frame exactly at the limit reaches the schema (a
/// tool error), one level deeper is refused as JSON (no reply can name its
/// id, so keep-open writes nothing for it).
#[test]
fn the_depth_limit_holds_inside_arguments() {
    let ops = [
        Op::Initialize,
        Op::Initialized,
        Op::DeepArguments(false),
        Op::DeepArguments(true),
        Op::Restart(Service::Api),
    ];
    let scenario = model::scenario(&ops, OnInvalid::KeepOpen, 65536);
    assert_eq!(scenario.rejections, [Stage::Schema, Stage::Json]);
    assert_eq!(scenario.tool_errors, [2]);
    assert_eq!(
        scenario.expected,
        [("restart_service".to_owned(), "api".to_owned())]
    );
    for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
        check_model(&ops, mode);
        check_model(
            &ops[..2]
                .iter()
                .chain(&ops[3..])
                .cloned()
                .collect::<Vec<_>>(),
            mode,
        );
    }
}

/// Issue 10 acceptance: four calls with bad arguments, then a good one —
/// four tool errors, one action, the session still open, in both modes.
#[test]
fn four_bad_calls_then_a_good_one_keep_the_session() {
    let ops = [
        Op::Initialize,
        Op::Initialized,
        Op::Call(Service::Spaced),
        Op::Restart(Service::LeadingDash),
        Op::Call(Service::ExtraProperty),
        Op::Restart(Service::WrongType),
        Op::Call(Service::Web1),
    ];
    for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
        let scenario = model::scenario(&ops, mode, 65536);
        assert_eq!(scenario.tool_errors, [2, 3, 4, 5]);
        assert_eq!(scenario.expected.len(), 1);
        assert!(!scenario.closes);
        check_model(&ops, mode);
    }
}

/// Texts over a small JSON alphabet, so that objects with repeated keys,
/// nesting and near-misses come often.
fn json_ish() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"a\"",
            "\"b\"",
            "\"\\u0061\"",
            "1",
            "-0",
            "1e400",
            "2.5",
            "null",
            "true",
            " ",
            "\"x\\ud800\"",
        ]),
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2048,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/properties.txt"
        )))),
        ..ProptestConfig::default()
    })]

    /// The one-pass reading the wrap oracle uses is serde_json's lenient
    /// value and the separate duplicate detector's verdict.
    #[test]
    fn one_pass_reading_is_serde_json_and_the_duplicate_detector(text in json_ish()) {
        let expected = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .map(|v| (v, portcullis_testkit::harness::has_duplicate_keys(&text).expect("JSON")));
        prop_assert_eq!(portcullis_testkit::harness::value_and_duplicates(&text), expected);
    }
}

#[test]
fn one_pass_reading_sees_duplicates_at_any_depth() {
    use portcullis_testkit::harness::value_and_duplicates;
    use serde_json::json;
    assert_eq!(
        value_and_duplicates(r#"{"a":1,"\u0061":2}"#),
        Some((json!({"a": 2}), true))
    );
    assert_eq!(
        value_and_duplicates(r#"[{"b":[{"a":1,"a":1}]}]"#),
        Some((json!([{"b": [{"a": 1}]}]), true))
    );
    assert_eq!(
        value_and_duplicates(r#"{"a":{"a":1},"b":2}"#),
        Some((json!({"a": {"a": 1}, "b": 2}), false))
    );
    assert_eq!(value_and_duplicates(r#"{"a":1} x"#), None);
}
