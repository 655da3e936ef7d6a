//! Replays `regressions/http_executor/`: each `.bin` is a raw HTTP response
//! template served by a local upstream that fills in what it received (see
//! `common::ReflectingUpstream`), the way an echo service, an error page or
//! a redirect reflects the `Authorization` header. The executor's outcome
//! must not let the canary credential be read back in any encoding.

mod common;

use portcullis_exec::HttpExecutor;
use portcullis_gateway::{Executor, Secret, SecretStore};
use portcullis_testkit::fakes::ReflectingUpstream;
use portcullis_testkit::regressions::{discover_in, workspace_root};
use serde_json::json;

const CANARY: &str = "cAn4ry/T0k+en=regression-7f3e";

fn policy(port: u16) -> String {
    format!(
        r#"
[server]
name = "http-regressions"

[credentials.tok]
env = "PORTCULLIS_EXEC_REGRESSION_UNUSED"

[[tools]]
name = "fetch"
timeout_ms = 5000
[tools.http]
method = "GET"
url = "http://127.0.0.1:{port}/headers/{{item}}"
allow = ["127.0.0.1:{port}"]
credential = "tok"
max_response_bytes = 65536
[tools.input_schema]
type = "object"
required = ["item"]
properties.item = {{ type = "string" }}
"#
    )
}

#[test]
fn reflected_credentials_never_come_back_from_the_http_executor() {
    let cases = discover_in(&workspace_root().join("regressions"), "http_executor");
    assert!(
        !cases.is_empty(),
        "no regressions in regressions/http_executor"
    );
    for case in cases {
        let name = case.path.display();
        let template = std::fs::read(&case.path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let upstream = ReflectingUpstream::start(template);
        let mut store = SecretStore::default();
        store.insert("tok", Secret::new(CANARY));
        let action = common::authorize(
            &policy(upstream.port),
            store,
            "fetch",
            json!({ "item": "x" }),
        );
        let outcome = HttpExecutor::new().execute(&action);
        assert_eq!(
            upstream.requests.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "{name}"
        );
        let readings = common::canary_readings(&outcome.text, CANARY);
        assert!(
            readings.is_empty(),
            "{name}: the credential can be read back from the outcome ({readings:?}):\n{}",
            outcome.text
        );
        // The upstream did reflect it (else this replay proves nothing).
        assert!(
            outcome.text.contains("[redacted]"),
            "{name}: nothing was redacted:\n{}",
            outcome.text
        );
    }
}
