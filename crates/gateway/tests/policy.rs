//! Policy loading: the example loads, and every error names the file, the
//! tool and the field.

use std::path::Path;

use portcullis_gateway::policy::{OnInvalid, TargetSpec};
use portcullis_gateway::{Policy, PolicyError, SecretStore};

const BASE: &str = r#"
[server]
name = "t"

[credentials.tok]
env = "PORTCULLIS_TEST_TOKEN_UNSET"
"#;

fn tool(body: &str) -> String {
    format!(
        "{BASE}\n[[tools]]\nname = \"probe\"\n{body}\n[tools.input_schema]\ntype = \"object\"\nrequired = [\"service\"]\nproperties.service = {{ type = \"string\" }}\n"
    )
}

fn error_of(text: &str) -> String {
    let err = Policy::from_toml(text, Path::new("bad.toml")).expect_err("policy must be refused");
    let message = err.to_string();
    assert!(
        message.starts_with("bad.toml:"),
        "error names the file: {message}"
    );
    message
}

#[test]
fn the_example_policy_loads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/policy.toml");
    let policy = Policy::load(&root).unwrap();
    assert_eq!(policy.server.name, "example-gateway");
    assert_eq!(policy.server.on_invalid, OnInvalid::Close);
    assert_eq!(policy.server.max_frame_bytes, 4_194_304);
    let names: Vec<_> = policy.tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["service_status", "restart_service"]);
    assert!(matches!(policy.tools[1].target, TargetSpec::Ssh(_)));
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let err = Policy::load("/nonexistent/policy.toml").unwrap_err();
    assert!(matches!(err, PolicyError::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/policy.toml"));
}

#[test]
fn syntax_errors_name_the_file_and_position() {
    let message = error_of("[server\nname = 1");
    assert!(message.contains("line"), "{message}");
}

#[test]
fn unknown_fields_are_refused() {
    let message = error_of(&format!("{BASE}\n[server2]\nx = 1\n"));
    assert!(message.contains("server2"), "{message}");
    let message = error_of(&tool(
        "[tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:1/x\"\nallow = [\"127.0.0.1:1\"]\nfollow_redirects = true",
    ));
    assert!(message.contains("follow_redirects"), "{message}");
}

#[test]
fn errors_name_the_tool_and_the_field() {
    let cases = [
        (
            tool(
                "[tools.http]\nmethod = \"GET\"\nurl = \"ftp://127.0.0.1/x\"\nallow = [\"127.0.0.1:21\"]",
            ),
            "tools.http.url",
        ),
        (
            tool(
                "[tools.http]\nmethod = \"BREW\"\nurl = \"http://127.0.0.1:1/x\"\nallow = [\"127.0.0.1:1\"]",
            ),
            "tools.http.method",
        ),
        (
            tool(
                "[tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:1/{nope}\"\nallow = [\"127.0.0.1:1\"]",
            ),
            "placeholder {nope}",
        ),
        (
            tool(
                "[tools.http]\nmethod = \"GET\"\nurl = \"http://10.0.0.1:1/{service}\"\nallow = [\"127.0.0.1:1\"]",
            ),
            "tools.http.allow",
        ),
        (
            tool(
                "[tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:1/x\"\nallow = [\"127.0.0.1:1\"]\ncredential = \"missing\"",
            ),
            "tools.http.credential",
        ),
        (
            tool(
                "[tools.http]\nmethod = \"GET\"\nurl = \"http://user@127.0.0.1:1/x\"\nallow = [\"127.0.0.1:1\"]",
            ),
            "tools.http.url",
        ),
        (
            tool(
                "[tools.ssh]\nhost = \"127.0.0.1\"\nuser = \"deploy\"\nargv = [\"{service}\"]\nallow = [\"127.0.0.1:22\"]",
            ),
            "tools.ssh.argv[0]",
        ),
        (
            tool(
                "[tools.ssh]\nhost = \"127.0.0.1\"\nuser = \"-oProxyCommand=x\"\nargv = [\"ls\"]\nallow = [\"127.0.0.1:22\"]",
            ),
            "tools.ssh.user",
        ),
        (
            tool(
                "[tools.ssh]\nhost = \"127.0.0.1\"\nuser = \"d\"\nargv = [\"ls\"]\nallow = [\"nonsense\"]",
            ),
            "tools.ssh.allow",
        ),
        (tool(""), "tools"),
    ];
    for (text, field) in cases {
        let message = error_of(&text);
        assert!(message.contains("tool probe"), "names the tool: {message}");
        assert!(message.contains(field), "names {field}: {message}");
    }
}

#[test]
fn remote_refs_are_never_fetched() {
    let text = format!(
        "{BASE}\n[[tools]]\nname = \"r\"\n[tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:1/x\"\nallow = [\"127.0.0.1:1\"]\n[tools.input_schema]\ntype = \"object\"\n\"$ref\" = \"http://127.0.0.1:9/schema.json\"\n"
    );
    let message = error_of(&text);
    assert!(message.contains("tools.input_schema"), "{message}");
}

#[test]
fn input_schema_root_must_be_an_object_schema() {
    let text = format!(
        "{BASE}\n[[tools]]\nname = \"r\"\n[tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:1/x\"\nallow = [\"127.0.0.1:1\"]\n[tools.input_schema]\ntype = \"string\"\n"
    );
    assert!(error_of(&text).contains("tools.input_schema"));
}

#[test]
fn missing_credentials_are_problems_not_values() {
    let policy = Policy::from_toml(&tool("[tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:1/x\"\nallow = [\"127.0.0.1:1\"]\ncredential = \"tok\""), Path::new("p.toml")).unwrap();
    let store = SecretStore::from_environment(&policy);
    assert!(store.get("tok").is_none());
    assert!(store.problems()["tok"].contains("PORTCULLIS_TEST_TOKEN_UNSET"));
    let stand_ins = SecretStore::stand_ins(&policy);
    assert!(format!("{stand_ins:?}").contains("redacted"));
    assert!(!format!("{stand_ins:?}").contains("stand-in:tok"));
}

#[test]
fn duplicate_tool_names_are_refused() {
    let one = "[[tools]]\nname = \"a\"\n[tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:1/x\"\nallow = [\"127.0.0.1:1\"]\n[tools.input_schema]\ntype = \"object\"\n";
    let message = error_of(&format!("{BASE}\n{one}\n{one}"));
    assert!(message.contains("duplicate tool name"), "{message}");
}

#[test]
fn a_port_with_a_plus_sign_is_refused_in_the_url_and_the_allowlist() {
    // `u16::from_str` reads "+8080" as 8080; no URL parser does.
    let in_url = tool(
        "[tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:+8080/{service}\"\nallow = [\"127.0.0.1:8080\"]",
    );
    assert!(error_of(&in_url).contains("tools.http.url"));
    let in_allow = tool(
        "[tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:8080/{service}\"\nallow = [\"127.0.0.1:+8080\"]",
    );
    assert!(error_of(&in_allow).contains("tools.http.allow"));
}

#[test]
fn a_templated_host_must_be_a_name_when_its_placeholders_are_names() {
    // A literal numeric last label makes the URL parser read the whole host
    // as IPv4: "{service}.8" could never reach a host name.
    for host in [
        "{service}.8",
        "{service}.8.",
        "{service}.0x1f",
        "{service}.xn--a",
    ] {
        let text = tool(&format!(
            "[tools.http]\nmethod = \"GET\"\nurl = \"http://{host}/a\"\nallow = [\"example.com:80\"]"
        ));
        let message = error_of(&text);
        assert!(message.contains("tools.http.url"), "{host}: {message}");
        assert!(message.contains("not a host name"), "{host}: {message}");
    }
    for host in [
        "{service}.svc",
        "10.0.0.{service}",
        "{service}8",
        "a-{service}.b1",
    ] {
        let text = tool(&format!(
            "[tools.http]\nmethod = \"GET\"\nurl = \"http://{host}/a\"\nallow = [\"example.com:80\"]"
        ));
        Policy::from_toml(&text, Path::new("ok.toml"))
            .unwrap_or_else(|e| panic!("{host} must load: {e}"));
    }
}

#[test]
fn a_bracketed_ipv6_host_takes_a_port_only_after_its_closing_bracket() {
    // "[::1]" splits at its last colon into "[:" and "1]": that is no port.
    for (authority, allow, port) in [
        ("[::1]", "[::1]:80", 80),
        ("[::1]:8080", "[::1]:8080", 8080),
        ("[0:0:0:0:0:0:0:1]", "[::1]:80", 80),
    ] {
        let text = tool(&format!(
            "[tools.http]\nmethod = \"GET\"\nurl = \"http://{authority}/{{service}}\"\nallow = [\"{allow}\"]"
        ));
        let policy = Policy::from_toml(&text, Path::new("ok.toml"))
            .unwrap_or_else(|e| panic!("{authority} must load: {e}"));
        let TargetSpec::Http(http) = &policy.tools[0].target else {
            panic!("an http tool")
        };
        assert_eq!(http.port.unwrap_or(80), port, "{authority}");
    }
    // Outside brackets a ']' is only a character no host name may hold.
    for authority in ["a]:8080", "[::1]x:80"] {
        let text = tool(&format!(
            "[tools.http]\nmethod = \"GET\"\nurl = \"http://{authority}/{{service}}\"\nallow = [\"a:8080\"]"
        ));
        let message = error_of(&text);
        assert!(message.contains("tools.http.url"), "{authority}: {message}");
        assert!(
            message.contains("is not a plain host name"),
            "{authority}: {message}"
        );
    }
}

#[test]
fn the_wrap_table_is_read_as_written_and_checked() {
    let text = format!(
        "{BASE}\n[wrap]\ntools = [\"search\", \"fetch\"]\nmethods = [\"resources/read\"]\nrequest_timeout_ms = 2500\n"
    );
    let policy = Policy::from_toml(&text, Path::new("ok.toml")).unwrap();
    assert_eq!(
        policy.wrap.tools.as_deref(),
        Some(&["search".to_owned(), "fetch".to_owned()][..])
    );
    assert_eq!(policy.wrap.methods, ["resources/read"]);
    assert_eq!(
        policy.wrap.request_timeout,
        std::time::Duration::from_millis(2500)
    );
    // Without the table: only pinned tools, no further methods, the
    // default timeout.
    let bare = Policy::from_toml(BASE, Path::new("ok.toml")).unwrap();
    assert_eq!(bare.wrap.tools, None);
    assert!(bare.wrap.methods.is_empty());
    assert_eq!(
        bare.wrap.request_timeout,
        portcullis_gateway::policy::DEFAULT_WRAP_REQUEST_TIMEOUT
    );

    for (body, field) in [
        ("tools = [\"\"]", "wrap.tools"),
        ("methods = [\"a\\nb\"]", "wrap.methods"),
        ("request_timeout_ms = 0", "wrap.request_timeout_ms"),
        ("request_timeout_ms = 3600001", "wrap.request_timeout_ms"),
    ] {
        let message = error_of(&format!("{BASE}\n[wrap]\n{body}\n"));
        assert!(message.contains(field), "{body}: {message}");
    }
}
