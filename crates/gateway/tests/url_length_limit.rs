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

fn decide(segment_len: usize) -> Result<ActionTarget, Denial> {
    let policy = bind(POLICY, &[]);
    authorize_call(&policy, "get", json!({"p": "a".repeat(segment_len)}))
        .map(|a| a.target().clone())
}

#[test]
fn a_url_of_exactly_the_limit_is_built_and_one_byte_more_is_denied() {
    let prefix = "http://127.0.0.1:8080/".len();
    let ActionTarget::Http(http) = decide(MAX_URL_BYTES - prefix).unwrap() else {
        panic!("not http");
    };
    assert_eq!(http.url().len(), MAX_URL_BYTES);
    assert!(matches!(
        decide(MAX_URL_BYTES - prefix + 1),
        Err(Denial::UrlTooLong(MAX_URL_BYTES))
    ));
}
