//! JSON-RPC classification of what a peer sends besides requests: responses
//! and error responses are told apart, and an error response's `error`
//! member must be exactly `{code: integer, message: string, data?}`.

use portcullis_wire::{Id, Limits, Rejection, RpcMessage, Stage, parse_message};

fn message(line: &str) -> Result<RpcMessage<'_>, Rejection> {
    parse_message(line, &Limits::default())
}

fn refused(line: &str) -> Rejection {
    let rejection = message(line).expect_err(line);
    assert_eq!(rejection.stage, Stage::Rpc, "{line}: {}", rejection.reason);
    rejection
}

#[test]
fn an_error_response_is_classified_with_its_error_object() {
    let m =
        message(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"busy","data":[1]}}"#)
            .unwrap();
    assert_eq!(m.kind(), "error");
    assert_eq!(m.id(), Some(&Id::Int(4)));
    let RpcMessage::Error { error, .. } = m else {
        panic!("not an error response");
    };
    assert_eq!((error.code, error.message.as_str()), (-32000, "busy"));
    assert!(error.data.is_some());
    let without_id = message(r#"{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}"#).unwrap();
    assert_eq!(without_id.id(), None);
}

#[test]
fn responses_and_notifications_name_their_kind() {
    let response = message(r#"{"jsonrpc":"2.0","id":"r","result":{}}"#).unwrap();
    assert_eq!(
        (response.kind(), response.id()),
        ("response", Some(&Id::Str("r".into())))
    );
    let note = message(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
    assert_eq!((note.kind(), note.id()), ("notification", None));
}

#[test]
fn a_malformed_error_object_is_refused_saying_why() {
    for (line, why) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#,
            "\"error\" must be an object, not a string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#,
            "\"error.code\" must be an integer",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}"#,
            "\"error\" lacks \"code\"",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}}"#,
            "\"error.message\" must be a string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#,
            "\"error\" lacks \"message\"",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","extra":0}}"#,
            "unknown member \"extra\" in \"error\"",
        ),
    ] {
        assert_eq!(refused(line).reason, why, "{line}");
    }
}

#[test]
fn a_non_string_method_is_refused_naming_its_type() {
    assert_eq!(
        refused(r#"{"jsonrpc":"2.0","id":1,"method":true}"#).reason,
        "\"method\" must be a string, not a boolean"
    );
}

#[test]
fn an_escaped_method_name_reads_as_its_text() {
    let m = message(r#"{"jsonrpc":"2.0","id":1,"method":"pi\u006eg"}"#).unwrap();
    let RpcMessage::Request { method, .. } = m else {
        panic!("not a request");
    };
    assert_eq!(method, "ping");
}

#[test]
fn a_rejection_reads_as_stage_code_and_reason() {
    let r = refused(r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#);
    assert_eq!(
        r.to_string(),
        format!(
            "{} stage rejected frame ({}): {}",
            Stage::Rpc,
            r.code,
            r.reason
        )
    );
}
