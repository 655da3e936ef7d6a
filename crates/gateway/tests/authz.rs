//! Authorization: templates expand as data, the allowlist is checked after
//! expansion, credentials must be present.

use std::path::Path;

use portcullis_gateway::authz::{ActionTarget, authorize};
use portcullis_gateway::{Policy, Secret, SecretStore};
use serde_json::{Value, json};

const POLICY: &str = r#"
[server]
name = "t"

[credentials.tok]
env = "UNUSED"

[[tools]]
name = "get"
[tools.http]
method = "GET"
url = "https://api.internal:8443/v1/{path}/items?q={term}&fixed=1"
allow = ["api.internal:8443"]
credential = "tok"
[tools.input_schema]
type = "object"
required = ["path", "term"]
properties.path = { type = "string" }
properties.term = { type = "string" }

[[tools]]
name = "probe"
[tools.http]
method = "HEAD"
url = "http://{host}:8080/"
allow = ["127.0.0.1:8080", "[::1]:8080"]
[tools.input_schema]
type = "object"
required = ["host"]
properties.host = { type = "string" }

[[tools]]
name = "run"
[tools.ssh]
host = "127.0.0.1"
user = "ops"
argv = ["journalctl", "-u", "{unit}", "--lines={n}"]
allow = ["127.0.0.1:22"]
[tools.input_schema]
type = "object"
required = ["unit", "n"]
properties.unit = { type = "string" }
properties.n = { type = "integer" }
"#;

fn policy(with_secret: bool) -> Policy {
    let policy = Policy::from_toml(POLICY, Path::new("authz.toml")).unwrap();
    let mut store = SecretStore::default();
    if with_secret {
        store.insert("tok", Secret::new("t0ken"));
    }
    policy.bind_secrets(store)
}

fn decide(policy: &Policy, tool: &str, args: Value) -> Result<ActionTarget, String> {
    let Value::Object(args) = args else { panic!() };
    let spec = policy.tool(tool).unwrap();
    let checked = spec.schema.check(tool, args).map_err(|e| e.join("; "))?;
    authorize(policy, checked)
        .map(|a| a.target().clone())
        .map_err(|d| d.0)
}

fn url(target: ActionTarget) -> String {
    match target {
        ActionTarget::Http(h) => h.url().to_string(),
        ActionTarget::Ssh(s) => panic!("{s:?}"),
    }
}

#[test]
fn placeholders_are_percent_encoded_as_one_segment_or_value() {
    let p = policy(true);
    let got = url(decide(&p, "get", json!({"path": "a/b?c#d", "term": "x&y=z é"})).unwrap());
    assert_eq!(
        got,
        "https://api.internal:8443/v1/a%2Fb%3Fc%23d/items?q=x%26y%3Dz+%C3%A9&fixed=1"
    );
}

#[test]
fn dot_segments_are_denied() {
    let p = policy(true);
    for bad in [".", ".."] {
        assert!(decide(&p, "get", json!({"path": bad, "term": "x"})).is_err());
    }
}

#[test]
fn the_allowlist_is_checked_after_expansion() {
    let p = policy(true);
    assert!(decide(&p, "probe", json!({"host": "127.0.0.1"})).is_ok());
    assert!(
        decide(&p, "probe", json!({"host": "127.1"})).is_ok(),
        "normalized to 127.0.0.1 first"
    );
    assert!(decide(&p, "probe", json!({"host": "[::1]"})).is_ok());
    for denied in [
        "localhost",
        "127.0.0.2",
        "evil.example",
        "127.0.0.1:9000",
        "127.0.0.1/x",
        "a@b",
        "",
    ] {
        let err = decide(&p, "probe", json!({"host": denied})).expect_err(denied);
        assert!(
            !err.contains(denied) || denied.is_empty(),
            "denials never echo values: {err}"
        );
    }
}

#[test]
fn a_missing_credential_denies() {
    let p = policy(false);
    let err = decide(&p, "get", json!({"path": "a", "term": "b"})).unwrap_err();
    assert!(err.contains("credential tok"), "{err}");
}

#[test]
fn ssh_argv_is_a_vector_and_option_injection_is_denied() {
    let p = policy(true);
    match decide(&p, "run", json!({"unit": "nginx; rm -rf /", "n": 20})).unwrap() {
        ActionTarget::Ssh(s) => assert_eq!(
            s.argv(),
            ["journalctl", "-u", "nginx; rm -rf /", "--lines=20"]
        ),
        other => panic!("{other:?}"),
    }
    assert!(decide(&p, "run", json!({"unit": "--help", "n": 1})).is_err());
    assert!(decide(&p, "run", json!({"unit": "a\u{0}b", "n": 1})).is_err());
}

#[test]
fn schema_failures_name_location_and_keyword_not_values() {
    let p = policy(true);
    let err = decide(
        &p,
        "run",
        json!({"unit": "x", "n": "twenty", "extra": "hunter2"}),
    )
    .unwrap_err();
    assert!(
        err.contains("additionalProperties") && err.contains("/n"),
        "{err}"
    );
    assert!(!err.contains("hunter2") && !err.contains("twenty"), "{err}");
}
