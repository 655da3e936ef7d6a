//! The faithful-expansion oracle and the `authz_expansion` harness: the
//! oracle refuses what is not the template's expansion, the regression
//! inputs are exactly the documented cases, and defect 1 of issue 8 (a
//! check made on a path segment that the URL builder then rewrote) is
//! denied.
//!
//! `PORTCULLIS_WRITE_REGRESSIONS=1 cargo test -p portcullis-testkit --test
//! faithful` rewrites the regression inputs from their cases.

use std::path::{Path, PathBuf};

use portcullis_gateway::authz::authorize;
use portcullis_gateway::{AuthorizedAction, OnInvalid, Policy, schema};
use portcullis_testkit::authz_harness::{
    Case, CasePiece, CaseTarget, HttpCase, SshCase, check_case, dot_tab_dot_case,
    empty_segment_case, is_authorized, plus_in_query_literal_case,
};
use portcullis_testkit::faithful::Templates;
use portcullis_testkit::fixtures::{TEST_POLICY, call, legacy_handshake, test_policy};
use portcullis_testkit::regressions::workspace_root;
use portcullis_testkit::{Chunking, run_session};
use serde_json::{Map, Value, json};

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("{other}"),
    }
}

/// An action the gateway authorizes under the test policy.
fn authorized(tool: &str, arguments: Value) -> AuthorizedAction {
    let policy = test_policy(OnInvalid::Close);
    let checked = schema::check(policy.tool(tool).unwrap(), args(arguments)).unwrap();
    authorize(&checked, policy.secrets()).unwrap()
}

fn templates_with(old: &str, new: &str) -> Templates {
    assert!(TEST_POLICY.contains(old));
    Templates::from_toml(&TEST_POLICY.replace(old, new)).unwrap()
}

#[test]
fn oracle_accepts_the_expansion_the_gateway_built() {
    let templates = Templates::from_toml(TEST_POLICY).unwrap();
    let action = authorized("avatar_delete", json!({"user": "bob smith/1"}));
    templates
        .check(&args(json!({"user": "bob smith/1"})), &action)
        .unwrap();
    let action = authorized("restart_service", json!({"service": "api"}));
    templates
        .check(&args(json!({"service": "api"})), &action)
        .unwrap();
}

#[test]
fn oracle_refuses_an_action_for_other_arguments() {
    let templates = Templates::from_toml(TEST_POLICY).unwrap();
    let action = authorized("avatar_delete", json!({"user": "bob"}));
    let err = templates
        .check(&args(json!({"user": "alice"})), &action)
        .unwrap_err();
    assert!(err.contains("path segment 2"), "{err}");
    let action = authorized("restart_service", json!({"service": "api"}));
    let err = templates
        .check(&args(json!({"service": "web"})), &action)
        .unwrap_err();
    assert!(err.contains("argv[2]"), "{err}");
}

#[test]
fn oracle_refuses_a_path_with_another_segment_count() {
    let templates = templates_with("/users/{user}/avatar", "/users/{user}/avatar/large");
    let action = authorized("avatar_delete", json!({"user": "bob"}));
    let err = templates
        .check(&args(json!({"user": "bob"})), &action)
        .unwrap_err();
    assert!(err.contains("segment(s)"), "{err}");
}

#[test]
fn oracle_refuses_a_changed_method_port_or_query() {
    let action = authorized("avatar_delete", json!({"user": "bob"}));
    let user = args(json!({"user": "bob"}));
    for (old, new, why) in [
        ("method = \"DELETE\"", "method = \"GET\"", "method"),
        (
            "http://127.0.0.1:8080/users",
            "http://127.0.0.1:8081/users",
            "port",
        ),
        ("{user}/avatar", "{user}/avatar?size=1", "query"),
        (
            "http://127.0.0.1:8080/users",
            "https://127.0.0.1:8080/users",
            "scheme",
        ),
    ] {
        let err = templates_with(old, new).check(&user, &action).unwrap_err();
        assert!(err.contains(why), "{why}: {err}");
    }
}

#[test]
fn dot_tab_dot_path_segment_is_denied() {
    assert_eq!(is_authorized(&dot_tab_dot_case()), Some(false));
    check_case(&dot_tab_dot_case());
}

#[test]
fn tab_alone_is_not_an_empty_path_segment() {
    assert_eq!(is_authorized(&empty_segment_case()), Some(false));
    check_case(&empty_segment_case());
}

#[test]
fn dot_tab_dot_through_a_session_never_reaches_the_executor() {
    for user in [".\t.", "\t", "..", ".\n.", "\r"] {
        let mut input = legacy_handshake();
        input.extend(call(2, "avatar_delete", json!({ "user": user })));
        let report = run_session(&test_policy(OnInvalid::Close), &input, &Chunking::Whole);
        assert!(report.actions.is_empty(), "{user:?}: {:?}", report.actions);
    }
}

#[test]
fn a_plus_in_a_query_literal_is_encoded_or_refused() {
    // Denying it (a loader that refuses '+' in query literals) is as good
    // as encoding it.
    check_case(&plus_in_query_literal_case());
}

#[test]
fn harness_cases_round_trip_through_their_bytes() {
    let cases = [
        dot_tab_dot_case(),
        empty_segment_case(),
        Case {
            target: CaseTarget::Http(HttpCase {
                https: true,
                port: 3,
                host: 3,
                method: 1,
                path: vec![vec![
                    CasePiece::Lit(2),
                    CasePiece::Arg(1),
                    CasePiece::Lit(3),
                ]],
                query: vec![(2, vec![CasePiece::Arg(0)]), (0, vec![CasePiece::Lit(5)])],
            }),
            args: vec![
                "\u{FF0E}%2e".into(),
                "..\\".into(),
                "x".into(),
                "api".into(),
            ],
        },
        Case {
            target: CaseTarget::Ssh(SshCase {
                port: 1,
                command: 1,
                argv: vec![
                    vec![CasePiece::Lit(3), CasePiece::Arg(2)],
                    vec![CasePiece::Arg(0)],
                ],
            }),
            args: vec!["-x".into(), "b".into(), "$(id)\u{200B}".into()],
        },
    ];
    for case in cases {
        assert_eq!(Case::decode(&case.encode()), case);
    }
}

#[test]
fn generated_policies_load() {
    // The generator must produce policies the loader takes, or the fuzzer
    // spends its time on skipped inputs: every header byte, with one
    // templated path segment and no query.
    let mut refused = Vec::new();
    for header in 0..=255u8 {
        let data = [header, 0x01, 0x00, 0x80, b'v'];
        let case = Case::decode(&data);
        let text = case.policy_toml();
        if let Err(err) = Policy::from_toml(&text, Path::new("gen.toml")) {
            refused.push(format!("{header:#04x}: {err}"));
        }
    }
    assert!(refused.is_empty(), "{refused:#?}");
}

struct Fixture {
    folder: &'static str,
    name: &'static str,
    bytes: Vec<u8>,
    sidecar: String,
}

fn sidecar(summary: &str, target: &str) -> String {
    sidecar_from(
        summary,
        "issue 8 defect 1 (path traversal through the URL builder)",
        target,
    )
}

fn sidecar_from(summary: &str, source: &str, target: &str) -> String {
    let mut table = toml::Table::new();
    for (key, value) in [
        ("summary", summary),
        ("found", "2026-11-30"),
        ("source", source),
        ("target", target),
    ] {
        table.insert(key.into(), toml::Value::String(value.into()));
    }
    toml::to_string(&table).unwrap()
}

fn fixtures() -> Vec<Fixture> {
    let mut session = legacy_handshake();
    session.extend(call(2, "avatar_delete", json!({"user": ".\t."})));
    vec![
        Fixture {
            folder: "authz_expansion",
            name: "dot-tab-dot-path-traversal",
            bytes: dot_tab_dot_case().encode(),
            sidecar: sidecar(
                r#"DELETE http://127.0.0.1:8080/users/{a0}/avatar with a0 = ".\t." (Case::encode of authz_harness::dot_tab_dot_case): the dot-segment check saw ".\t.", url's path_segments_mut().push() dropped the tab and resolved "..", and the call was authorized as DELETE http://127.0.0.1:8080/avatar"#,
                "authz_expansion",
            ),
        },
        Fixture {
            folder: "authz_expansion",
            name: "empty-segment-from-tab",
            bytes: empty_segment_case().encode(),
            sidecar: sidecar(
                r#"DELETE http://127.0.0.1:8080/users/{a0}/avatar with a0 = "\t" (Case::encode of authz_harness::empty_segment_case): one character passes minLength = 1, the URL builder dropped it, and the call was authorized as DELETE http://127.0.0.1:8080/users//avatar"#,
                "authz_expansion",
            ),
        },
        Fixture {
            folder: "authz_expansion",
            name: "plus-in-query-literal",
            bytes: plus_in_query_literal_case().encode(),
            sidecar: sidecar_from(
                r#"GET http://127.0.0.1:8080/v1?a+b=x.y+{a0} with a0 = "z" (Case::encode of authz_harness::plus_in_query_literal_case): the policy lets '+' into query keys and values, the faithful-expansion builder wrote literals as is, and form decoding reads '+' as a space, so the server sees key "a b" and value "x.y z""#,
                "found by authz_expansion on the first faithful-expansion builder, a follow-up of issue 8 defect 1",
                "authz_expansion",
            ),
        },
        Fixture {
            folder: "stdin_bytes",
            name: "dot-tab-dot-path-traversal",
            bytes: session,
            sidecar: sidecar(
                r#"Legacy handshake, then tools/call avatar_delete {"user":".\t."} (test policy: DELETE http://127.0.0.1:8080/users/{user}/avatar, schema minLength 1): authorized as DELETE http://127.0.0.1:8080/avatar with the bearer token attached"#,
                "stdin_bytes",
            ),
        },
    ]
}

fn path_of(folder: &str, name: &str, ext: &str) -> PathBuf {
    workspace_root()
        .join("regressions")
        .join(folder)
        .join(format!("{name}.{ext}"))
}

#[test]
fn defect_1_regression_inputs_are_the_documented_cases() {
    let write = std::env::var_os("PORTCULLIS_WRITE_REGRESSIONS").is_some();
    for f in fixtures() {
        let bin = path_of(f.folder, f.name, "bin");
        let toml = path_of(f.folder, f.name, "toml");
        if write {
            std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
            std::fs::write(&bin, &f.bytes).unwrap();
            std::fs::write(&toml, &f.sidecar).unwrap();
        }
        let on_disk = std::fs::read(&bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        assert_eq!(
            on_disk,
            f.bytes,
            "{} is not its documented case",
            bin.display()
        );
        let sidecar: toml::Table =
            toml::from_str(&std::fs::read_to_string(&toml).unwrap()).unwrap();
        assert_eq!(sidecar["target"].as_str(), Some(f.folder));
    }
}
