//! JSON-RPC classification, case by case: every shape the envelope reader
//! refuses gets its own reason (a client reads it in the error message), the
//! id is echoed when it could be read, and each message kind has its stable
//! name and id.

use portcullis_wire::rpc::{Id, RpcMessage, value_kind};
use portcullis_wire::{Limits, Rejection, Stage, codes, parse_message};
use serde_json::json;

fn parse(text: &str) -> Result<RpcMessage<'_>, Rejection> {
    parse_message(text, &Limits::default())
}

fn refused(text: &str) -> Rejection {
    let rejection = parse(text).expect_err(text);
    assert_eq!(rejection.stage, Stage::Rpc, "{text}: {rejection}");
    assert_eq!(rejection.code, codes::INVALID_REQUEST, "{text}");
    rejection
}

#[test]
fn each_kind_has_its_stable_name_and_id() {
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "request",
            Some(Id::Int(1)),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "notification",
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"r","result":{}}"#,
            "response",
            Some(Id::Str("r".into())),
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"m"}}"#,
            "error",
            Some(Id::Int(2)),
        ),
        (
            r#"{"jsonrpc":"2.0","error":{"code":-1,"message":"m"}}"#,
            "error",
            None,
        ),
    ];
    for (text, kind, id) in cases {
        let message = parse(text).unwrap();
        assert_eq!(message.kind(), kind, "{text}");
        assert_eq!(message.id(), id.as_ref(), "{text}");
    }
}

#[test]
fn an_error_response_keeps_its_code_message_and_data() {
    let message =
        parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope","data":[1]}}"#)
            .unwrap();
    let RpcMessage::Error { id, error } = message else {
        panic!("not an error: {message:?}");
    };
    assert_eq!(id, Some(Id::Int(1)));
    assert_eq!(
        (error.code, error.message.as_str(), error.data),
        (-32601, "nope", Some(json!([1])))
    );
}

#[test]
fn a_request_keeps_its_method_and_params() {
    let message =
        parse(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"x":1}}"#).unwrap();
    let RpcMessage::Request { id, method, params } = message else {
        panic!("not a request: {message:?}");
    };
    assert_eq!(id, Id::Str("a".into()));
    assert_eq!(method, "tools/call");
    assert_eq!(params.unwrap().get("x"), Some(&json!(1)));
}

#[test]
fn the_version_must_be_the_string_2_0() {
    for version in [r#""2.0 ""#, r#""2""#, "2.0", "null", r#""""#] {
        let text = format!(r#"{{"jsonrpc":{version},"id":1,"method":"ping"}}"#);
        let rejection = refused(&text);
        assert_eq!(
            rejection.reason, "\"jsonrpc\" must be exactly \"2.0\"",
            "{text}"
        );
        assert_eq!(rejection.id, Some(Id::Int(1)), "{text}");
    }
    let rejection = refused(r#"{"id":1,"method":"ping"}"#);
    assert_eq!(rejection.reason, "missing \"jsonrpc\" member");
}

#[test]
fn a_method_never_comes_with_a_result_or_an_error() {
    for text in [
        r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","error":{"code":1,"message":"m"}}"#,
    ] {
        assert_eq!(
            refused(text).reason,
            "a message with \"method\" must not carry \"result\" or \"error\""
        );
    }
}

#[test]
fn reasons_name_the_json_type_that_was_sent() {
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":true}"#,
            "\"method\" must be a string, not a boolean",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":1}"#,
            "\"method\" must be a string, not a number",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":1.5}"#,
            "\"method\" must be a string, not a number",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":null}"#,
            "\"method\" must be a string, not null",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":[]}"#,
            "\"method\" must be a string, not an array",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":{}}"#,
            "\"method\" must be a string, not an object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            "\"params\" must be an object, not null",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":false}"#,
            "\"params\" must be an object, not a boolean",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":2}"#,
            "\"params\" must be an object, not a number",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"p"}"#,
            "\"params\" must be an object, not a string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[]}"#,
            "\"params\" must be an object, not an array",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":[]}"#,
            "\"error\" must be an object, not an array",
        ),
    ];
    for (text, reason) in cases {
        let rejection = refused(text);
        assert_eq!(rejection.reason, reason, "{text}");
        assert_eq!(rejection.id, Some(Id::Int(1)), "{text}");
    }
    assert_eq!(value_kind(&json!({})), "an object");
}

#[test]
fn a_message_that_is_not_an_object_says_what_it_is() {
    let cases = [
        ("true", "message is a boolean, not a JSON-RPC object"),
        ("1", "message is a number, not a JSON-RPC object"),
        ("-1", "message is a number, not a JSON-RPC object"),
        ("1.5", "message is a number, not a JSON-RPC object"),
        (r#""x""#, "message is a string, not a JSON-RPC object"),
        ("null", "message is null, not a JSON-RPC object"),
        ("[]", "batches (JSON arrays) are not supported"),
    ];
    for (text, reason) in cases {
        let rejection = refused(text);
        assert_eq!(rejection.reason, reason, "{text}");
        assert_eq!(rejection.id, None);
    }
}

#[test]
fn an_id_that_is_not_a_string_or_integer_is_named_and_not_echoed() {
    let cases = [
        ("1.5", "a number in fraction or exponent form"),
        ("true", "a boolean"),
        ("null", "null"),
        ("[1]", "an array"),
        (r#"{"a":1}"#, "an object"),
    ];
    for (id, why) in cases {
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let rejection = refused(&text);
        assert_eq!(
            rejection.reason,
            format!("\"id\" must be a string or an integer within ±(2^53−1), not {why}"),
            "{text}"
        );
        assert_eq!(rejection.id, None, "{text}");
    }
}

#[test]
fn integer_ids_of_either_sign_are_read_exactly() {
    for (text, id) in [
        (
            r#"{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}"#,
            9_007_199_254_740_991,
        ),
        (
            r#"{"jsonrpc":"2.0","id":-9007199254740991,"method":"ping"}"#,
            -9_007_199_254_740_991,
        ),
        (r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#, 0),
    ] {
        assert_eq!(parse(text).unwrap().id(), Some(&Id::Int(id)), "{text}");
    }
}

#[test]
fn error_objects_need_an_integer_code_a_string_message_and_nothing_else() {
    let cases = [
        (
            r#"{"code":1.5,"message":"m"}"#,
            "\"error.code\" must be an integer",
        ),
        (
            r#"{"code":"1","message":"m"}"#,
            "\"error.code\" must be an integer",
        ),
        (r#"{"message":"m"}"#, "\"error\" lacks \"code\""),
        (
            r#"{"code":1,"message":1}"#,
            "\"error.message\" must be a string",
        ),
        (r#"{"code":1}"#, "\"error\" lacks \"message\""),
        (
            r#"{"code":1,"message":"m","extra":0}"#,
            "unknown member \"extra\" in \"error\"",
        ),
    ];
    for (error, reason) in cases {
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"error":{error}}}"#);
        assert_eq!(refused(&text).reason, reason, "{text}");
    }
    let negative = parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"m"}}"#);
    assert!(matches!(negative, Ok(RpcMessage::Error { error, .. }) if error.code == -32000));
}

#[test]
fn responses_need_an_id_and_exactly_one_of_result_and_error() {
    let cases = [
        (
            r#"{"jsonrpc":"2.0","result":{}}"#,
            "a response must carry an \"id\"",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            "a response must not carry both \"result\" and \"error\"",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1}"#,
            "neither a request (\"method\") nor a response (\"result\" or \"error\")",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"params":{}}"#,
            "\"params\" without \"method\"",
        ),
    ];
    for (text, reason) in cases {
        assert_eq!(refused(text).reason, reason, "{text}");
    }
}

#[test]
fn a_repeated_member_is_a_duplicate_key_at_the_json_stage() {
    for member in [
        "jsonrpc", "id", "method", "params", "result", "error", "extra",
    ] {
        let value = match member {
            "jsonrpc" => r#""2.0""#,
            "id" => "1",
            "method" => r#""m""#,
            _ => "{}",
        };
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","{member}":{value},"{member}":{value}}}"#
        );
        let rejection = parse(&text).expect_err(&text);
        assert_eq!(rejection.stage, Stage::Json, "{text}: {rejection}");
        assert!(
            rejection
                .reason
                .contains(&format!("duplicate object key \"{member}\"")),
            "{text}: {}",
            rejection.reason
        );
    }
}

#[test]
fn the_depth_limit_counts_the_envelope_as_depth_one() {
    let limits = |max_depth| Limits {
        max_depth,
        ..Limits::default()
    };
    let two_deep = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#;
    assert!(parse_message(two_deep, &limits(2)).is_ok());
    let rejection = parse_message(two_deep, &limits(1)).unwrap_err();
    assert_eq!(rejection.stage, Stage::Json);
    let one_deep = r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#;
    assert!(parse_message(one_deep, &limits(1)).is_ok());
}
