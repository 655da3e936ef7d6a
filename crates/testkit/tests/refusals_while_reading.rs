//! Frames refused while they are read (UTF-8, strict JSON, JSON-RPC) leave
//! the same records and the same stdout whether or not their reason is
//! shown: under `keep-open` a JSON-stage refusal (never an id) is recorded
//! with its stage, code and the frame's SHA-256 and is not answered, and a
//! JSON-RPC refusal that carries an id is answered with its reason; under
//! `close` the first refusal closes the session with the reason the
//! reference reading words. The fingerprint is computed here with sha2
//! directly, and the reasons by `strict_json::parse_value`, the eager path.

use portcullis_gateway::OnInvalid;
use portcullis_testkit::fixtures::{test_policy, with_handshake};
use portcullis_testkit::session::{run_session_official, stdout_messages};
use portcullis_wire::{Limits, Stage, parse_message, strict_json};
use sha2::{Digest, Sha256};

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// Lines every strict JSON rule refuses, one rule each.
const REFUSED_AS_JSON: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":3,"id":4,"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"ping"} {}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":1e400}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":9007199254740993}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"\ud800"}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"ping""#,
];

/// Refused at the JSON-RPC stage, with a readable id.
const REFUSED_AS_RPC: &str = r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#;

fn sha256_hex(line: &str) -> String {
    Sha256::digest(line.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn keep_open_records_a_json_refusal_and_answers_only_an_id() {
    let policy = test_policy(OnInvalid::KeepOpen);
    let mut tail = String::new();
    for line in REFUSED_AS_JSON.iter().chain([&REFUSED_AS_RPC]) {
        tail.push_str(line);
        tail.push('\n');
    }
    let report = run_session_official(&policy, &with_handshake(tail.as_bytes()));
    assert!(report.closed.is_none());
    // The handshake is lines 1 and 2.
    let records: Vec<_> = report
        .rejections
        .iter()
        .map(|r| (r.line, r.stage, r.code, r.fingerprint.to_hex()))
        .collect();
    let mut expected: Vec<_> = REFUSED_AS_JSON
        .iter()
        .enumerate()
        .map(|(i, line)| (i as u64 + 3, Stage::Json, PARSE_ERROR, sha256_hex(line)))
        .collect();
    expected.push((
        REFUSED_AS_JSON.len() as u64 + 3,
        Stage::Rpc,
        INVALID_REQUEST,
        sha256_hex(REFUSED_AS_RPC),
    ));
    assert_eq!(records, expected);

    let answers = stdout_messages(&report);
    let errors: Vec<_> = answers
        .iter()
        .filter(|m| m.get("error").is_some())
        .collect();
    let reason = parse_message(REFUSED_AS_RPC, &Limits::default())
        .unwrap_err()
        .reason;
    assert_eq!(errors.len(), 1, "{answers:?}");
    assert_eq!(errors[0]["id"], 7);
    assert_eq!(errors[0]["error"]["message"], reason.as_str());
}

#[test]
fn close_words_the_first_json_refusal_as_the_reference_does() {
    let policy = test_policy(OnInvalid::Close);
    for line in REFUSED_AS_JSON {
        let report = run_session_official(&policy, &with_handshake(format!("{line}\n").as_bytes()));
        let closed = report
            .closed
            .clone()
            .expect("a refused frame closes the session");
        let reason = strict_json::parse_value(line, &Limits::default())
            .unwrap_err()
            .reason;
        assert_eq!(
            (
                closed.line,
                closed.stage,
                closed.code,
                closed.reason.as_str()
            ),
            (3, Stage::Json, PARSE_ERROR, reason.as_str()),
            "{line}"
        );
        // The error that closes the session (no id to echo: the revision
        // lets it be omitted) carries the same reason.
        let answers = stdout_messages(&report);
        let error = answers
            .iter()
            .find(|m| m.get("error").is_some())
            .unwrap_or_else(|| panic!("{line}: {answers:?}"));
        assert_eq!(error["error"]["message"], reason.as_str(), "{line}");
        assert!(error.get("id").is_none(), "{line}");
    }
}
