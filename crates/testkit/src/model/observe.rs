//! Reading a session's results back for comparison with the prediction:
//! the key of a recorded action, and the refusals in stdout.

use portcullis_gateway::{ActionTarget, AuthorizedAction};
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A predicted action: tool and its key argument.
pub type Predicted = (String, String);

/// The key of a recorded action, comparable with a prediction.
pub fn key_of(action: &AuthorizedAction) -> Predicted {
    let key = match action.target() {
        ActionTarget::Http(h) if action.tool() == "region_probe" => h.host().to_owned(),
        ActionTarget::Http(h) => h
            .uri()
            .path()
            .rsplit('/')
            .next()
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
    observe(stdout)
        .into_iter()
        .filter(|(_, frame)| frame.error || frame.is_error_result)
        .map(|(line, _)| String::from_utf8_lossy(line).into_owned())
        .collect()
}

/// The ids of the `isError: true` tool results in `stdout`, in order.
pub fn tool_error_ids(stdout: &[u8]) -> Vec<i64> {
    observe(stdout)
        .into_iter()
        .filter(|(_, frame)| frame.is_error_result)
        .filter_map(|(_, frame)| frame.id)
        .collect()
}

/// Each stdout line that reads as a JSON object, with what the model
/// compares. serde_json reads only the members named below and skips the
/// rest without building it (the frames carry long texts the model never
/// looks at). Skipping does not validate UTF-8 or surrogates inside the
/// skipped strings; the stdout read here has passed the strict transcript
/// check first.
fn observe(stdout: &[u8]) -> Vec<(&[u8], Frame)> {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|line| Some((line, serde_json::from_slice::<Frame>(line).ok()?)))
        .collect()
}

/// A stdout frame as the model sees it: whether it has a top-level
/// `error`, whether its `result.isError` is `true`, and its `id` when that
/// is an integer. A repeated member counts as its last occurrence, as a
/// `serde_json::Value` would keep it.
#[derive(Debug, Default)]
struct Frame {
    error: bool,
    is_error_result: bool,
    id: Option<i64>,
}

impl<'de> serde::Deserialize<'de> for Frame {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FrameVisitor;
        impl<'de> Visitor<'de> for FrameVisitor {
            type Value = Frame;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Frame, A::Error> {
                let mut frame = Frame::default();
                while let Some(key) = map.next_key::<Member>()? {
                    match key.0.as_str() {
                        "error" => {
                            frame.error = true;
                            map.next_value::<IgnoredAny>()?;
                        }
                        "id" => frame.id = map.next_value::<Value>()?.as_i64(),
                        "result" => {
                            frame.is_error_result = map.next_value::<ResultIsError>()?.0;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(frame)
            }
        }
        d.deserialize_map(FrameVisitor)
    }
}

/// Whether a `result` is an object whose `isError` is `true` (any other
/// value, of `result` or of `isError`, is not).
struct ResultIsError(bool);

impl<'de> serde::Deserialize<'de> for ResultIsError {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ResultVisitor;
        impl<'de> Visitor<'de> for ResultVisitor {
            type Value = ResultIsError;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResultIsError, A::Error> {
                let mut is_error = false;
                while let Some(key) = map.next_key::<Member>()? {
                    if key.0 == "isError" {
                        is_error = map.next_value::<Value>()? == Value::Bool(true);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(ResultIsError(is_error))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ResultIsError, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(ResultIsError(false))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<ResultIsError, E> {
                Ok(ResultIsError(false))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<ResultIsError, E> {
                Ok(ResultIsError(false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<ResultIsError, E> {
                Ok(ResultIsError(false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<ResultIsError, E> {
                Ok(ResultIsError(false))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<ResultIsError, E> {
                Ok(ResultIsError(false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<ResultIsError, E> {
                Ok(ResultIsError(false))
            }
        }
        d.deserialize_any(ResultVisitor)
    }
}

/// A member name, unescaped (small: the frames' names are short).
struct Member(String);

impl<'de> serde::Deserialize<'de> for Member {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MemberVisitor;
        impl Visitor<'_> for MemberVisitor {
            type Value = Member;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Member, E> {
                // Only the names compared above are kept.
                Ok(Member(
                    if matches!(key, "error" | "id" | "result" | "isError") {
                        key.to_owned()
                    } else {
                        String::new()
                    },
                ))
            }
        }
        d.deserialize_str(MemberVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_errors_and_is_error_results_and_only_they_carry_ids_here() {
        let stdout =
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[],\"isError\":true}}\n\
{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"isError\":false}}\n\
{\"jsonrpc\":\"2.0\",\"id\":\"3\",\"result\":{\"isError\":true}}\n\
{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32600,\"message\":\"no\"}}\n\
{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":\"isError\"}\n\
{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{\"isError\":\"true\"}}\n\
{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"is\\u0045rror\":true}}\n";
        assert_eq!(tool_error_ids(stdout), [1, 7]);
        let refused: Vec<String> = refusals(stdout);
        assert_eq!(refused.len(), 4, "{refused:?}");
        assert!(refused[2].contains("\"error\""), "{refused:?}");
    }
}
