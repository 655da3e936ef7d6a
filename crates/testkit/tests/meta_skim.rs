//! The gateway reads only two members of a request's `params._meta` and
//! drops the rest unbuilt; what it drops is still checked by every strict
//! JSON rule. A call whose dropped `_meta` content breaks one is refused
//! at the JSON stage (`-32700`, as any unreadable frame) and nothing
//! executes; the same call with that content well formed executes.

use portcullis_gateway::OnInvalid;
use portcullis_testkit::fixtures::{test_policy, with_handshake};
use portcullis_testkit::session::{run_session_official, stdout_messages};
use portcullis_wire::Stage;

const PARSE_ERROR: i64 = -32700;

/// A legacy call (request 9) whose `_meta` is `meta`, written as is.
fn call(meta: &str) -> Vec<u8> {
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"service_status","arguments":{{"service":"api"}},"_meta":{meta}}}}}"#
    );
    with_handshake(format!("{line}\n").as_bytes())
}

/// Each case: `_meta` breaking a rule inside a member the gateway drops,
/// and the same `_meta` within the rules.
const CASES: &[(&str, &str, &str)] = &[
    (
        "a repeated key, spelled with an escape",
        r#"{"progressToken":"p","trace":{"span":"a","sp\u0061n":"b"}}"#,
        r#"{"progressToken":"p","trace":{"span":"a","sp\u0061m":"b"}}"#,
    ),
    (
        "an integer beyond 2^53-1",
        r#"{"attempt":{"n":[9007199254740992]}}"#,
        r#"{"attempt":{"n":[9007199254740991]}}"#,
    ),
    (
        "a lone surrogate escape",
        r#"{"note":["\ud800"]}"#,
        r#"{"note":["\ud83d\ude00"]}"#,
    ),
    (
        "a number that overflows a double",
        r#"{"weight":1e400}"#,
        r#"{"weight":1e300}"#,
    ),
    (
        "a raw control character",
        "{\"note\":\"a\u{1}b\"}",
        r#"{"note":"a\u0001b"}"#,
    ),
];

#[test]
fn dropped_meta_content_is_held_to_every_json_rule() {
    let policy = test_policy(OnInvalid::KeepOpen);
    for (what, broken, fine) in CASES {
        let report = run_session_official(&policy, &call(broken));
        assert!(report.actions.is_empty(), "{what}: nothing executes");
        let refused: Vec<_> = report
            .rejections
            .iter()
            .map(|r| (r.stage, r.code))
            .collect();
        assert_eq!(refused, [(Stage::Json, PARSE_ERROR)], "{what}");
        // A frame refused before its id is read is not answered under
        // keep-open; the session goes on.
        assert!(report.closed.is_none(), "{what}");
        assert!(
            stdout_messages(&report).iter().all(|m| m["id"] != 9),
            "{what}"
        );

        let report = run_session_official(&policy, &call(fine));
        assert!(
            report.rejections.is_empty(),
            "{what}: {:?}",
            report.rejections
        );
        assert_eq!(report.actions.len(), 1, "{what}: the call executes");
    }
}

#[test]
fn dropped_meta_content_counts_towards_the_depth_limit() {
    let policy = test_policy(OnInvalid::KeepOpen);
    // The top level, `params` and `_meta` take three of the 64 levels.
    let nested = |levels: usize| {
        format!(
            r#"{{"trace":{}1{}}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        )
    };
    let report = run_session_official(&policy, &call(&nested(61)));
    assert_eq!(
        report.actions.len(),
        1,
        "64 levels in all are within the limit"
    );
    let report = run_session_official(&policy, &call(&nested(62)));
    assert!(report.actions.is_empty());
    let refused: Vec<_> = report.rejections.iter().map(|r| r.stage).collect();
    assert_eq!(refused, [Stage::Json]);
}
