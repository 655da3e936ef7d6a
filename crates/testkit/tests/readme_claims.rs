//! Documented claims that had no guard of their own: the policy format's
//! defaults and rules, and the fuzzing section's promise that every
//! harness is a fuzz target and a `cargo test` bolero test.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use portcullis_gateway::policy::{CredentialSource, OnInvalid};
use portcullis_gateway::{ActionTarget, Policy};
use portcullis_testkit::fixtures::{call, canary_secrets, legacy_handshake};
use portcullis_testkit::harness::TARGETS;
use portcullis_testkit::regressions::workspace_root;
use portcullis_testkit::{Chunking, run_session};
use serde_json::json;

const SERVER: &str = "[server]\nname = \"claims\"\n";

/// One HTTP tool `t` whose URL is `url`, with `schema` as its input
/// schema's body.
fn http_tool(url: &str, schema: &str) -> String {
    format!(
        "{SERVER}\n[[tools]]\nname = \"t\"\n[tools.http]\nmethod = \"GET\"\nurl = \"{url}\"\nallow = [\"127.0.0.1:8080\"]\n[tools.input_schema]\ntype = \"object\"\n{schema}\n"
    )
}

fn load(text: &str) -> Result<Policy, String> {
    Policy::from_toml(text, Path::new("claims.toml")).map_err(|e| e.to_string())
}

/// docs/policy.md: `on_invalid = "close"` (default), `max_frame_bytes`
/// (default 4 MiB), the depth limit 64, `timeout_ms` (default 30000).
#[test]
fn omitted_policy_settings_take_the_documented_defaults() {
    let policy = load(&http_tool(
        "http://127.0.0.1:8080/x",
        "properties.a = { type = \"string\" }",
    ))
    .unwrap();
    assert_eq!(policy.server.on_invalid, OnInvalid::Close);
    assert_eq!(policy.server.max_frame_bytes, 4 * 1024 * 1024);
    assert_eq!(policy.server.max_depth, 64);
    assert_eq!(policy.tools[0].timeout, Duration::from_millis(30_000));
}

/// docs/policy.md: "A placeholder must name a required property of type string or
/// integer", and errors name the file, the tool and the field.
#[test]
fn a_placeholder_must_name_a_required_string_or_integer_property() {
    let url = "http://127.0.0.1:8080/x/{n}";
    for (schema, ok) in [
        (
            "required = [\"n\"]\nproperties.n = { type = \"string\" }",
            true,
        ),
        (
            "required = [\"n\"]\nproperties.n = { type = \"integer\" }",
            true,
        ),
        ("properties.n = { type = \"string\" }", false),
        (
            "required = [\"n\"]\nproperties.n = { type = \"boolean\" }",
            false,
        ),
        (
            "required = [\"n\"]\nproperties.n = { type = \"number\" }",
            false,
        ),
        (
            "required = [\"n\"]\nproperties.n = { type = \"object\" }",
            false,
        ),
        ("required = [\"n\"]\nproperties.n = {}", false),
    ] {
        match load(&http_tool(url, schema)) {
            Ok(_) => assert!(ok, "accepted: {schema}"),
            Err(message) => {
                assert!(!ok, "refused {schema}: {message}");
                assert!(
                    message.starts_with("claims.toml:")
                        && message.contains("tool t")
                        && message.contains("placeholder {n}"),
                    "names file, tool and field: {message}"
                );
            }
        }
    }
}

/// An integer placeholder expands to its decimal spelling as one segment.
#[test]
fn an_integer_placeholder_expands_to_its_decimal_spelling() {
    let policy = load(&http_tool(
        "http://127.0.0.1:8080/x/{n}",
        "required = [\"n\"]\nproperties.n = { type = \"integer\" }",
    ))
    .unwrap();
    let secrets = canary_secrets(&policy);
    let policy = Arc::new(policy.bind_secrets(secrets));
    let mut input = legacy_handshake();
    input.extend(call(2, "t", json!({"n": 42})));
    let report = run_session(&policy, &input, &Chunking::Whole);
    match report.actions.first().map(|a| a.target()) {
        Some(ActionTarget::Http(h)) => assert_eq!(h.url(), "http://127.0.0.1:8080/x/42"),
        other => panic!("{other:?}"),
    }
}

/// docs/policy.md: "`[credentials.NAME]` with exactly one of `env = \"VAR\"` or
/// `file = \"/path\"`".
#[test]
fn a_credential_has_exactly_one_source() {
    let base = http_tool("http://127.0.0.1:8080/x", "");
    let env = load(&format!("{base}\n[credentials.c]\nenv = \"V\"\n")).unwrap();
    assert_eq!(env.credentials["c"], CredentialSource::Env("V".into()));
    let file = load(&format!("{base}\n[credentials.c]\nfile = \"/p\"\n")).unwrap();
    assert_eq!(file.credentials["c"], CredentialSource::File("/p".into()));
    for body in ["env = \"V\"\nfile = \"/p\"\n", ""] {
        let message = load(&format!("{base}\n[credentials.c]\n{body}"))
            .expect_err("a credential needs exactly one source");
        assert!(
            message.starts_with("claims.toml:") && message.contains("credentials.c"),
            "{body:?}: {message}"
        );
    }
    // Nothing else is a source (no inline values in the policy file).
    let message = load(&format!("{base}\n[credentials.c]\nvalue = \"inline\"\n"))
        .expect_err("an inline value");
    assert!(message.starts_with("claims.toml:"), "{message}");
}

/// docs/policy.md: each tool has "exactly one of `[tools.http]` or `[tools.ssh]`".
#[test]
fn a_tool_has_exactly_one_kind() {
    let both = http_tool("http://127.0.0.1:8080/x", "").replace(
        "[tools.input_schema]",
        "[tools.ssh]\nhost = \"127.0.0.1\"\nuser = \"d\"\nargv = [\"ls\"]\nallow = [\"127.0.0.1:22\"]\n[tools.input_schema]",
    );
    let message = load(&both).expect_err("both kinds");
    assert!(message.contains("tool t"), "{message}");
}

/// docs/fuzzing.md: every harness in `harness.rs` is a cargo-fuzz target
/// (a one-line wrapper declared in `fuzz/Cargo.toml`) and a bolero test in
/// `cargo test` that replays its corpus and regressions; the page's table
/// documents exactly the targets that exist.
#[test]
fn every_harness_is_a_fuzz_target_and_a_cargo_test() {
    let root = workspace_root();
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(root.join("fuzz/Cargo.toml")).unwrap()).unwrap();
    let bins: Vec<&str> = manifest["bin"]
        .as_array()
        .expect("[[bin]] entries")
        .iter()
        .filter_map(|b| b.get("name")?.as_str())
        .collect();
    let tests = std::fs::read_to_string(root.join("crates/testkit/tests/fuzz_harnesses.rs"))
        .expect("the bolero tests");
    for (name, _) in TARGETS {
        assert!(
            bins.contains(name),
            "{name} is not a [[bin]] in fuzz/Cargo.toml"
        );
        let wrapper = std::fs::read_to_string(root.join(format!("fuzz/fuzz_targets/{name}.rs")))
            .unwrap_or_else(|e| panic!("fuzz/fuzz_targets/{name}.rs: {e}"));
        assert!(
            wrapper.contains(&format!("harness::{name}("))
                || wrapper.contains(&format!("::{name}(data")),
            "fuzz/fuzz_targets/{name}.rs does not call its harness"
        );
        assert!(
            tests.contains(&format!("fn {name}()"))
                && tests.contains(&format!("check(\"{name}\")")),
            "no bolero test for {name} in fuzz_harnesses.rs"
        );
    }
    let page = std::fs::read_to_string(root.join("docs/fuzzing.md")).unwrap();
    let table = page
        .split("| target | property |")
        .nth(1)
        .expect("the fuzz table of docs/fuzzing.md");
    let documented: Vec<&str> = table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    for name in &documented {
        assert!(
            TARGETS.iter().any(|(n, _)| n == name),
            "docs/fuzzing.md documents a fuzz target {name} that harness.rs does not have"
        );
    }
    for (name, _) in TARGETS {
        assert!(
            documented.contains(name),
            "the fuzz target {name} has no row in the table of docs/fuzzing.md"
        );
    }
}
