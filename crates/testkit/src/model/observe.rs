//! Reading a session's results back for comparison with the prediction:
//! the key of a recorded action, and the refusals in stdout.

use portcullis_gateway::{ActionTarget, AuthorizedAction};
use serde_json::{Value, json};

/// A predicted action: tool and its key argument.
pub type Predicted = (String, String);

/// The key of a recorded action, comparable with a prediction.
pub fn key_of(action: &AuthorizedAction) -> Predicted {
    let key = match action.target() {
        ActionTarget::Http(h) if action.tool() == "region_probe" => {
            h.url().host_str().unwrap_or_default().to_owned()
        }
        ActionTarget::Http(h) => h
            .url()
            .path_segments()
            .and_then(|mut s| s.next_back())
            .unwrap_or_default()
            .to_owned(),
        ActionTarget::Ssh(s) => s.argv().last().cloned().unwrap_or_default(),
    };
    (action.tool().to_owned(), key)
}

/// Argument values the model sends only in calls that must be refused
/// (schema or authorization). None may appear anywhere in stdout: refusals
/// name the location and keyword, never the value.
pub const REFUSED_VALUES: [&str; 6] = [
    "Uppercase",
    "../etc",
    "api web",
    "-api",
    "abcdefghijklmnopqrstuvwxyzabcdefg",
    "localhost",
];

/// The refusals in `stdout` (error responses and `isError` tool results),
/// each as its frame's text.
pub fn refusals(stdout: &[u8]) -> Vec<String> {
    stdout
        .split(|&b| b == b'\n')
        .filter(|line| {
            serde_json::from_slice::<Value>(line).is_ok_and(|frame| {
                frame.get("error").is_some() || frame["result"]["isError"] == json!(true)
            })
        })
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect()
}

/// The ids of the `isError: true` tool results in `stdout`, in order.
pub fn tool_error_ids(stdout: &[u8]) -> Vec<i64> {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|frame| frame["result"]["isError"] == json!(true))
        .filter_map(|frame| frame["id"].as_i64())
        .collect()
}
