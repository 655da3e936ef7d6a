//! A built URL may be at most `MAX_URL_BYTES` long (what the HTTP stack
//! will send); one byte more is denied before anything is queued.

mod common;

use common::authz::{authorize_call, bind};
use portcullis_gateway::authz::{ActionTarget, Denial, MAX_URL_BYTES};
use serde_json::json;

const POLICY: &str = r#"
[server]
name = "t"

[[tools]]
name = "get"
[tools.http]
method = "GET"
url = "http://127.0.0.1:8080/{p}"
allow = ["127.0.0.1:8080"]
[tools.input_schema]
type = "object"
required = ["p"]
properties.p = { type = "string" }
"#;

/// The host from an argument: the whole URL is built as text and parsed
/// at once, where a literal host's origin was parsed at load.
const TEMPLATED_HOST: &str = r#"
[server]
name = "t"

[[tools]]
name = "get"
[tools.http]
method = "GET"
url = "http://{h}:8080/{p}"
allow = ["127.0.0.1:8080"]
[tools.input_schema]
type = "object"
required = ["h", "p"]
properties.h = { type = "string" }
properties.p = { type = "string" }
"#;

fn decide(policy: &str, segment_len: usize) -> Result<ActionTarget, Denial> {
    let mut args = json!({"p": "a".repeat(segment_len)});
    if policy.contains("{h}") {
        args["h"] = json!("127.0.0.1");
    }
    authorize_call(&bind(policy, &[]), "get", args).map(|a| a.target().clone())
}

#[test]
fn a_url_of_exactly_the_limit_is_built_and_one_byte_more_is_denied() {
    let prefix = "http://127.0.0.1:8080/".len();
    for policy in [POLICY, TEMPLATED_HOST] {
        let ActionTarget::Http(http) = decide(policy, MAX_URL_BYTES - prefix).unwrap() else {
            panic!("not http");
        };
        assert_eq!(http.url().len(), MAX_URL_BYTES);
        assert!(matches!(
            decide(policy, MAX_URL_BYTES - prefix + 1),
            Err(Denial::UrlTooLong(MAX_URL_BYTES))
        ));
    }
}

/// A refused call may build a URL of megabytes in the buffer calls share;
/// the next call is built from a clean one.
#[test]
fn a_call_after_an_oversized_one_is_built_alone() {
    for policy in [POLICY, TEMPLATED_HOST] {
        assert!(decide(policy, 4 * MAX_URL_BYTES).is_err());
        let ActionTarget::Http(http) = decide(policy, 3).unwrap() else {
            panic!("not http");
        };
        assert_eq!(http.url(), "http://127.0.0.1:8080/aaa");
    }
}
