//! The encoder's refusals at their exact edges: integers (ids and error
//! codes) up to ±(2^53−1) are written, one past is refused; results and
//! params must be objects; an error without an id has no id member.

use portcullis_wire::rpc::{ErrorObject, Id};
use portcullis_wire::{EncodeError, Outbound, encode};
use serde_json::json;

const MAX_SAFE: i64 = (1 << 53) - 1;

fn response(id: i64) -> Outbound {
    Outbound::Response {
        id: Id::Int(id),
        result: json!({}),
    }
}

fn error(id: Option<Id>, code: i64) -> Outbound {
    Outbound::Error {
        id,
        error: ErrorObject {
            code,
            message: "m".into(),
            data: None,
        },
    }
}

#[test]
fn integer_ids_up_to_two_to_the_53_minus_one_are_written() {
    for id in [MAX_SAFE, -MAX_SAFE, 0] {
        let line = encode(&response(id)).unwrap();
        assert_eq!(
            line,
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n").into_bytes()
        );
        assert!(encode(&error(Some(Id::Int(id)), -32600)).is_ok());
    }
}

#[test]
fn integer_ids_one_past_the_safe_range_are_refused() {
    for id in [MAX_SAFE + 1, -MAX_SAFE - 1, i64::MIN] {
        assert!(
            matches!(encode(&response(id)), Err(EncodeError::UnsafeId(n)) if n == id),
            "response id {id}"
        );
        assert!(
            matches!(encode(&error(Some(Id::Int(id)), -32600)), Err(EncodeError::UnsafeId(n)) if n == id),
            "error id {id}"
        );
    }
}

#[test]
fn error_codes_up_to_two_to_the_53_minus_one_are_written_and_one_past_refused() {
    for code in [MAX_SAFE, -MAX_SAFE] {
        let line = encode(&error(None, code)).unwrap();
        assert_eq!(
            line,
            format!("{{\"jsonrpc\":\"2.0\",\"error\":{{\"code\":{code},\"message\":\"m\"}}}}\n")
                .into_bytes()
        );
    }
    for code in [MAX_SAFE + 1, -MAX_SAFE - 1] {
        assert!(matches!(
            encode(&error(None, code)),
            Err(EncodeError::UnsafeErrorCode(c)) if c == code
        ));
    }
}

#[test]
fn a_string_id_error_keeps_its_id() {
    let line = encode(&error(Some(Id::Str("a".into())), -32601)).unwrap();
    assert_eq!(
        line,
        b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-32601,\"message\":\"m\"}}\n"
    );
}

#[test]
fn a_result_must_be_an_object() {
    for result in [json!([]), json!(null), json!("x"), json!(1)] {
        let message = Outbound::Response {
            id: Id::Int(1),
            result,
        };
        assert!(matches!(
            encode(&message),
            Err(EncodeError::NotAnObject("result"))
        ));
    }
}

#[test]
fn notification_params_must_be_an_object_when_present() {
    let notification = |params| Outbound::Notification {
        method: "notifications/message".into(),
        params,
    };
    assert_eq!(
        encode(&notification(None)).unwrap(),
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n"
    );
    assert_eq!(
        encode(&notification(Some(json!({"a": 1})))).unwrap(),
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"a\":1}}\n"
    );
    assert!(matches!(
        encode(&notification(Some(json!([1])))),
        Err(EncodeError::NotAnObject("params"))
    ));
}
