//! The transcript checker's verdicts and how it reports them: a maintainer
//! must see the first bad line, its number and its raw bytes without
//! re-running anything.

use portcullis_wire::transcript::render_bytes;
use portcullis_wire::{Violation, check_line, check_transcript};

const OK: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";

fn shape(line: &str) -> String {
    match check_line(line.as_bytes()) {
        Err(Violation::Shape(why)) => why,
        other => panic!("{line}: expected a shape violation, got {other:?}"),
    }
}

#[test]
fn permitted_frames_pass() {
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"no","data":{}}}"#,
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
    ] {
        assert_eq!(check_line(line.as_bytes()), Ok(()), "{line}");
    }
}

#[test]
fn lines_that_are_not_json_rpc_objects_are_refused() {
    assert_eq!(check_line(b""), Err(Violation::EmptyLine));
    assert_eq!(check_line(b"\xff{}"), Err(Violation::NotUtf8));
    assert!(matches!(check_line(b"{"), Err(Violation::NotJson(_))));
    assert_eq!(check_line(b"[1]"), Err(Violation::NotObject));
    assert_eq!(
        check_line(br#"{"jsonrpc":"1.0","id":1,"result":{}}"#),
        Err(Violation::NoJsonRpc)
    );
    assert_eq!(
        check_line(br#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#),
        Err(Violation::NullId)
    );
}

#[test]
fn a_clean_transcript_counts_its_lines() {
    assert_eq!(check_transcript(b""), Ok(0));
    assert_eq!(check_transcript(OK), Ok(1));
    let three = [OK, OK, OK].concat();
    assert_eq!(check_transcript(&three), Ok(3));
}

#[test]
fn the_report_names_the_first_bad_line_and_shows_its_raw_bytes() {
    let stdout = [OK, b"loading optional extension\n", OK].concat();
    let violation = check_transcript(&stdout).unwrap_err();
    assert_eq!(violation.line, 2);
    assert_eq!(violation.raw, b"loading optional extension\n");
    assert!(matches!(violation.violation, Violation::NotJson(_)));
    let text = violation.to_string();
    assert!(
        text.starts_with(
            "non-protocol stdout on line 2: b\"loading optional extension\\n\": not JSON ("
        ),
        "{text}"
    );
}

#[test]
fn bytes_after_the_last_newline_are_reported_as_a_missing_newline() {
    let stdout = [OK, b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}"].concat();
    let violation = check_transcript(&stdout).unwrap_err();
    assert_eq!(violation.line, 2);
    assert_eq!(violation.violation, Violation::MissingFinalNewline);
    assert!(
        violation.to_string().ends_with(": missing final newline"),
        "{violation}"
    );
}

#[test]
fn raw_bytes_are_shown_escaped() {
    assert_eq!(
        render_bytes(b"a\n\r\t\\\"\x00\x1f\x7f\xff~ "),
        r#"b"a\n\r\t\\\"\x00\x1f\x7f\xff~ ""#
    );
}

#[test]
fn raw_bytes_are_shown_up_to_512_then_counted() {
    let exactly = vec![b'a'; 512];
    assert_eq!(render_bytes(&exactly), format!("b\"{}\"", "a".repeat(512)));
    let over = vec![b'a'; 513];
    assert_eq!(
        render_bytes(&over),
        format!("b\"{}\"... (513 bytes in all)", "a".repeat(512))
    );
}

#[test]
fn each_violation_reads_as_what_is_wrong() {
    let cases: [(&[u8], &str); 6] = [
        (b"", "empty line"),
        (b"\xff", "not UTF-8"),
        (b"[1]", "not a JSON object"),
        (b"{\"id\":1,\"result\":{}}", "no \"jsonrpc\":\"2.0\""),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":1,\"message\":\"m\"}}",
            "\"id\": null",
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"x\":1}",
            "not a permitted server-to-client shape (unknown top-level member)",
        ),
    ];
    for (line, text) in cases {
        let violation = check_line(line).unwrap_err();
        assert_eq!(violation.to_string(), text, "{line:?}");
    }
    assert_eq!(
        Violation::MissingFinalNewline.to_string(),
        "missing final newline"
    );
    let not_json = check_line(b"{").unwrap_err();
    assert!(matches!(&not_json, Violation::NotJson(_)));
    assert!(not_json.to_string().starts_with("not JSON ("), "{not_json}");
}

#[test]
fn ids_are_strings_or_integers_of_either_sign() {
    for id in ["\"a\"", "1", "-1", "0", "9007199254740991"] {
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}");
        assert_eq!(check_line(line.as_bytes()), Ok(()), "{line}");
    }
    for id in ["1.5", "true", "[]", "{}"] {
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}");
        assert_eq!(
            shape(&line),
            "id is neither a string nor an integer",
            "{line}"
        );
    }
}

#[test]
fn a_server_request_or_notification_has_a_string_method_and_object_params() {
    for ok in [
        r#"{"jsonrpc":"2.0","method":"notifications/message"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}"#,
    ] {
        assert_eq!(check_line(ok.as_bytes()), Ok(()), "{ok}");
    }
    let cases = [
        (r#"{"jsonrpc":"2.0","method":1}"#, "method is not a string"),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":3}"#,
            "method is not a string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
            "method together with result or error",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","error":{"code":1,"message":"m"}}"#,
            "method together with result or error",
        ),
        (
            r#"{"jsonrpc":"2.0","method":"m","params":[]}"#,
            "params is not an object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[]}"#,
            "params is not an object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"params":{},"result":{}}"#,
            "params without method",
        ),
    ];
    for (line, why) in cases {
        assert_eq!(shape(line), why, "{line}");
    }
}

#[test]
fn a_response_has_an_id_and_exactly_one_object_result_or_well_formed_error() {
    for ok in [
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"m","data":{}}}"#,
    ] {
        assert_eq!(check_line(ok.as_bytes()), Ok(()), "{ok}");
    }
    let lacks = "error lacks an integer code and a string message";
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            "both result and error",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1}"#,
            "neither a request, a notification nor a response",
        ),
        (r#"{"jsonrpc":"2.0","result":{}}"#, "result without id"),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":[]}"#,
            "result is not an object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":"e"}"#,
            "error is not an object",
        ),
        (r#"{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}"#, lacks),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}"#,
            lacks,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#,
            lacks,
        ),
        (r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#, lacks),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}}"#,
            lacks,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","x":0}}"#,
            lacks,
        ),
    ];
    for (line, why) in cases {
        assert_eq!(shape(line), why, "{line}");
    }
}
