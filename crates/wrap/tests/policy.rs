//! The policy's `[wrap]` section: additive to the format, validated with
//! the file and field named.

use std::path::Path;

use portcullis_gateway::Policy;
use portcullis_wrap::Config;

const SERVER: &str = "[server]\nname = \"wrapped\"\nmax_frame_bytes = 65536\n";

#[test]
fn the_wrap_section_lists_tools_methods_and_the_timeout() {
    let text = format!(
        "{SERVER}[wrap]\ntools = [\"echo\"]\nmethods = [\"resources/list\"]\nrequest_timeout_ms = 5000\n"
    );
    let policy = Policy::from_toml(&text, Path::new("w.toml")).unwrap();
    let config = Config::from_policy(&policy, None);
    assert_eq!(config.limits.max_frame_bytes, 65536);
    assert_eq!(
        config
            .allowed_tools
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        ["echo"]
    );
    assert!(config.methods.contains("resources/list"));
    assert_eq!(config.request_timeout_ms, 5000);
}

#[test]
fn without_a_wrap_section_only_pinned_tools_and_the_fixed_methods_pass() {
    let policy = Policy::from_toml(SERVER, Path::new("w.toml")).unwrap();
    let config = Config::from_policy(&policy, None);
    assert!(config.allowed_tools.is_none());
    assert!(config.methods.is_empty());
    assert_eq!(config.request_timeout_ms, 60_000);
}

#[test]
fn a_bad_wrap_section_names_the_field() {
    for (body, field) in [
        ("request_timeout_ms = 0", "wrap.request_timeout_ms"),
        ("methods = [\"\"]", "wrap.methods"),
        ("tools = [\"a\\nb\"]", "wrap.tools"),
        ("unknown = 1", "unknown"),
    ] {
        let text = format!("{SERVER}[wrap]\n{body}\n");
        let err = Policy::from_toml(&text, Path::new("w.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("w.toml") && err.contains(field),
            "{body}: {err}"
        );
    }
}

#[test]
fn the_example_wrap_policy_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/wrap.toml");
    let policy = Policy::load(&path).unwrap();
    let config = Config::from_policy(&policy, None);
    assert!(config.allowed_tools.unwrap().contains("echo"));
    assert!(config.methods.contains("resources/read"));
}
