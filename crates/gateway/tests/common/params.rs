//! Params as the strict reader hands them to the MCP stage.

use portcullis_wire::{Limits, Object, RpcMessage, parse_message_borrowed};
use serde_json::{Value, json};

/// `value` as the strict reader hands params to the MCP stage: an object
/// parsed from text (leaked: a test's values live for the whole run).
pub fn object(value: Value) -> Object<'static> {
    let text = json!({"jsonrpc": "2.0", "method": "m", "params": value}).to_string();
    let text: &'static str = Box::leak(text.into_boxed_str());
    match parse_message_borrowed(text, &Limits::default()) {
        Ok(RpcMessage::Notification {
            params: Some(params),
            ..
        }) => params,
        other => panic!("not an object: {other:?}"),
    }
}
