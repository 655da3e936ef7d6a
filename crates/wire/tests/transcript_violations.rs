//! The transcript checker refuses every stdout line that is not a permitted
//! server-to-client frame, names the first such line, and shows its raw
//! bytes so a maintainer sees it without re-running anything.

use portcullis_wire::check_transcript;
use portcullis_wire::transcript::{Violation, check_line, render_bytes};

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
fn every_impermissible_shape_is_named() {
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{},"extra":1}"#,
            "unknown top-level member",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            "id is neither a string nor an integer",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":3}"#,
            "method is not a string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
            "method together with result or error",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[]}"#,
            "params is not an object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"params":{},"result":{}}"#,
            "params without method",
        ),
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
            r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#,
            "error is not an object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}"#,
            "error lacks an integer code",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#,
            "error lacks an integer code",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","x":0}}"#,
            "error lacks an integer code",
        ),
    ];
    for (line, why) in cases {
        assert!(shape(line).starts_with(why), "{line}: {}", shape(line));
    }
}

#[test]
fn the_first_bad_line_is_reported_with_its_number_and_bytes() {
    let stdout = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nloading optional extension\n";
    let violation = check_transcript(stdout).unwrap_err();
    assert_eq!(violation.line, 2);
    assert_eq!(violation.raw, b"loading optional extension\n");
    assert!(matches!(violation.violation, Violation::NotJson(_)));
    let shown = violation.to_string();
    assert!(
        shown.starts_with(
            "non-protocol stdout on line 2: b\"loading optional extension\\n\": not JSON ("
        ),
        "{shown}"
    );
}

#[test]
fn a_missing_final_newline_is_a_violation() {
    let stdout = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\"";
    let violation = check_transcript(stdout).unwrap_err();
    assert_eq!(
        (violation.line, violation.violation.clone()),
        (2, Violation::MissingFinalNewline)
    );
    assert!(
        violation.to_string().ends_with(": missing final newline"),
        "{violation}"
    );
}

#[test]
fn each_violation_reads_as_what_is_wrong() {
    let shown = [
        (Violation::NotUtf8, "not UTF-8"),
        (Violation::NotObject, "not a JSON object"),
        (Violation::NoJsonRpc, "no \"jsonrpc\":\"2.0\""),
        (Violation::NullId, "\"id\": null"),
        (Violation::EmptyLine, "empty line"),
        (
            Violation::Shape("params without method".into()),
            "not a permitted server-to-client shape (params without method)",
        ),
    ];
    for (violation, text) in shown {
        assert_eq!(violation.to_string(), text);
    }
}

#[test]
fn raw_bytes_are_escaped_and_long_lines_cut() {
    assert_eq!(
        render_bytes(b"a\"\\\t\r\n\x00\x7f"),
        r#"b"a\"\\\t\r\n\x00\x7f""#
    );
    let long = vec![b'x'; 600];
    let shown = render_bytes(&long);
    assert!(
        shown.starts_with(&format!("b\"{}\"", "x".repeat(512))),
        "{shown}"
    );
    assert!(shown.ends_with("... (600 bytes in all)"), "{shown}");
}
