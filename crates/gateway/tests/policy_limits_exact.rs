//! Policy validation at its exact edges: every numeric setting accepted at
//! both ends of its documented range and refused one past, the defaults
//! when a setting is absent, and each naming rule with the field it names.

use std::path::Path;
use std::time::Duration;

use portcullis_gateway::Policy;
use portcullis_gateway::policy::{CredentialSource, HostPort, HttpMethod, TargetSpec};

const SCHEMA: &str = "[tools.input_schema]\ntype = \"object\"\nrequired = [\"service\"]\nproperties.service = { type = \"string\" }\n";
const HTTP: &str =
    "[tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:1/x\"\nallow = [\"127.0.0.1:1\"]\n";
const SSH: &str = "[tools.ssh]\nhost = \"127.0.0.1\"\nuser = \"deploy\"\nargv = [\"ls\"]\nallow = [\"127.0.0.1:22\"]\n";

fn server(extra: &str) -> String {
    format!("[server]\nname = \"t\"\n{extra}\n")
}

/// A policy with one tool: `head` goes before the target table (name,
/// timeout), `target` is the whole `[tools.http]`/`[tools.ssh]` table.
fn with_tool(head: &str, target: &str) -> String {
    format!(
        "{}\n[[tools]]\nname = \"probe\"\n{head}\n{target}{SCHEMA}",
        server("")
    )
}

fn load(text: &str) -> Policy {
    Policy::from_toml(text, Path::new("p.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The refusal names the file, the field, and says why.
fn refused(text: &str, field: &str) -> String {
    let message = Policy::from_toml(text, Path::new("p.toml"))
        .expect_err(text)
        .to_string();
    assert!(message.starts_with("p.toml:"), "{message}");
    assert!(message.contains(field), "names {field}: {message}");
    message
}

#[test]
fn server_settings_default_to_the_documented_values() {
    let policy = load(&server(""));
    let s = &policy.server;
    assert_eq!(
        (
            s.max_frame_bytes,
            s.max_depth,
            s.max_frame_values,
            s.max_id_bytes,
            s.max_session_ids
        ),
        (4_194_304, 64, 16_384, 1024, 100_000)
    );
    assert_eq!(s.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(load(&server("version = \"9.9\"")).server.version, "9.9");
}

#[test]
fn server_limits_are_accepted_at_both_ends_and_refused_one_past() {
    let ranges: [(&str, u64, u64); 5] = [
        ("max_frame_bytes", 256, 64 * 1024 * 1024),
        ("max_depth", 4, 127),
        ("max_frame_values", 64, 1_048_576),
        ("max_id_bytes", 16, 65_536),
        ("max_session_ids", 1, 100_000_000),
    ];
    for (field, low, high) in ranges {
        for ok in [low, high] {
            let policy = load(&server(&format!("{field} = {ok}")));
            let s = &policy.server;
            let got = match field {
                "max_frame_bytes" => s.max_frame_bytes,
                "max_depth" => s.max_depth,
                "max_frame_values" => s.max_frame_values,
                "max_id_bytes" => s.max_id_bytes,
                _ => s.max_session_ids,
            };
            assert_eq!(got as u64, ok, "{field}");
        }
        for bad in [low - 1, high + 1] {
            let message = refused(
                &server(&format!("{field} = {bad}")),
                &format!("server.{field}"),
            );
            assert!(message.contains("must be between"), "{message}");
        }
    }
}

#[test]
fn the_server_name_must_not_be_blank() {
    refused("[server]\nname = \"  \"\n", "server.name");
}

#[test]
fn a_credential_names_exactly_one_non_empty_source() {
    let creds = |body: &str| format!("{}\n[credentials.c]\n{body}\n", server(""));
    let policy = load(&creds("env = \"TOKEN\""));
    assert_eq!(
        policy.credentials["c"],
        CredentialSource::Env("TOKEN".into())
    );
    let policy = load(&creds("file = \"/k\""));
    assert_eq!(policy.credentials["c"], CredentialSource::File("/k".into()));
    for bad in [
        "env = \"\"",
        "file = \"\"",
        "env = \"A\"\nfile = \"/k\"",
        "",
    ] {
        refused(&creds(bad), "credentials.c");
    }
}

#[test]
fn tool_names_are_one_to_128_plain_characters() {
    let named = |name: &str| {
        format!(
            "{}\n[[tools]]\nname = \"{name}\"\n{HTTP}{SCHEMA}",
            server("")
        )
    };
    for ok in ["a", "A-z_0.9", &"n".repeat(128)] {
        assert_eq!(&*load(&named(ok)).tools[0].name, ok);
    }
    for bad in ["", "has space", "slash/name", "ünï", &"n".repeat(129)] {
        refused(&named(bad), "tools.name");
    }
    // A nameless tool is labelled by its position.
    assert!(refused(&named(""), "tools.name").contains("#1"));
}

#[test]
fn tool_names_are_unique() {
    let one = format!("[[tools]]\nname = \"a\"\n{HTTP}{SCHEMA}");
    let message = refused(&format!("{}\n{one}\n{one}", server("")), "tools.name");
    assert!(message.contains("duplicate tool name"), "{message}");
    let two = format!("{}\n{one}\n{}", server(""), one.replace("\"a\"", "\"b\""));
    assert_eq!(load(&two).tools.len(), 2);
}

#[test]
fn timeouts_run_from_one_millisecond_to_ten_minutes() {
    assert_eq!(
        load(&with_tool("", HTTP)).tools[0].timeout,
        Duration::from_secs(30)
    );
    for (ms, want) in [
        (1, Duration::from_millis(1)),
        (600_000, Duration::from_secs(600)),
    ] {
        let policy = load(&with_tool(&format!("timeout_ms = {ms}"), HTTP));
        assert_eq!(policy.tools[0].timeout, want);
    }
    for bad in [0, 600_001] {
        refused(
            &with_tool(&format!("timeout_ms = {bad}"), HTTP),
            "tools.timeout_ms",
        );
    }
}

#[test]
fn a_tool_declares_its_schema_and_exactly_one_target() {
    let no_schema = format!("{}\n[[tools]]\nname = \"probe\"\n{HTTP}", server(""));
    refused(&no_schema, "tools.input_schema");
    refused(&with_tool("", ""), "tools");
    let both = with_tool("", &format!("{HTTP}{SSH}"));
    assert!(refused(&both, "tools").contains("exactly one of [tools.http] or [tools.ssh]"));
}

#[test]
fn every_http_method_is_read_case_insensitively() {
    let methods = [
        ("GET", HttpMethod::Get),
        ("head", HttpMethod::Head),
        ("Post", HttpMethod::Post),
        ("PUT", HttpMethod::Put),
        ("patch", HttpMethod::Patch),
        ("DELETE", HttpMethod::Delete),
    ];
    for (text, method) in methods {
        let target = HTTP.replace("\"GET\"", &format!("\"{text}\""));
        let TargetSpec::Http(http) = &load(&with_tool("", &target)).tools[0].target else {
            panic!("not http");
        };
        assert_eq!(http.method, method, "{text}");
    }
    refused(
        &with_tool("", &HTTP.replace("\"GET\"", "\"TRACE\"")),
        "tools.http.method",
    );
}

#[test]
fn allow_entries_are_normalized_host_port_pairs() {
    let target = HTTP.replace(
        "allow = [\"127.0.0.1:1\"]",
        "allow = [\"127.0.0.1:1\", \"Example.COM:443\", \"[::1]:8080\", \"example.com:443\"]",
    );
    let TargetSpec::Http(http) = &load(&with_tool("", &target)).tools[0].target else {
        panic!("not http");
    };
    let hp = |host: &str, port| HostPort {
        host: host.into(),
        port,
    };
    assert_eq!(
        http.allow,
        [
            hp("127.0.0.1", 1),
            hp("[::1]", 8080),
            hp("example.com", 443)
        ]
    );
    for bad in [
        "127.0.0.1",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "bad host:1",
        ":1",
    ] {
        let target = HTTP.replace(
            "allow = [\"127.0.0.1:1\"]",
            &format!("allow = [\"127.0.0.1:1\", \"{bad}\"]"),
        );
        refused(&with_tool("", &target), "tools.http.allow");
    }
    refused(
        &with_tool("", &HTTP.replace("[\"127.0.0.1:1\"]", "[]")),
        "tools.http.allow",
    );
}

#[test]
fn a_literal_url_host_must_be_allowed_on_its_effective_port() {
    let http = |url: &str, allow: &str| {
        with_tool(
            "",
            &format!("[tools.http]\nmethod = \"GET\"\nurl = \"{url}\"\nallow = [\"{allow}\"]\n"),
        )
    };
    load(&http("http://Example.com/x", "example.com:80"));
    load(&http("https://example.com/x", "example.com:443"));
    load(&http("http://example.com:8080/x", "example.com:8080"));
    let message = refused(
        &http("https://example.com/x", "example.com:80"),
        "tools.http.allow",
    );
    assert!(
        message.contains("example.com:443 is not in allow"),
        "{message}"
    );
    refused(
        &http("http://example.com/x", "example.com:443"),
        "tools.http.allow",
    );
    refused(
        &http("http://example.com/x", "example.org:80"),
        "tools.http.allow",
    );
}

#[test]
fn output_caps_default_to_one_mebibyte_and_run_from_one_byte_to_64_mebibytes() {
    let cap_of = |extra: &str| {
        let target = format!("{HTTP}{extra}\n");
        let TargetSpec::Http(http) = &load(&with_tool("", &target)).tools[0].target else {
            panic!("not http");
        };
        http.max_response_bytes
    };
    assert_eq!(cap_of(""), 1024 * 1024);
    assert_eq!(cap_of("max_response_bytes = 1"), 1);
    assert_eq!(cap_of("max_response_bytes = 67108864"), 67_108_864);
    for bad in [0, 67_108_865] {
        let target = format!("{HTTP}max_response_bytes = {bad}\n");
        refused(&with_tool("", &target), "tools.http.max_response_bytes");
    }
    let ssh_cap = |extra: &str| {
        let TargetSpec::Ssh(ssh) =
            &load(&with_tool("", &format!("{SSH}{extra}\n"))).tools[0].target
        else {
            panic!("not ssh");
        };
        ssh.max_output_bytes
    };
    assert_eq!(ssh_cap(""), 1024 * 1024);
    assert_eq!(ssh_cap("max_output_bytes = 67108864"), 67_108_864);
    refused(
        &with_tool("", &format!("{SSH}max_output_bytes = 0\n")),
        "tools.ssh.max_output_bytes",
    );
}

#[test]
fn ssh_targets_need_a_plain_host_user_allowed_port_and_a_literal_command() {
    let TargetSpec::Ssh(ssh) = &load(&with_tool("", SSH)).tools[0].target else {
        panic!("not ssh");
    };
    assert_eq!(
        (ssh.host.as_str(), ssh.port, ssh.user.as_str()),
        ("127.0.0.1", 22, "deploy")
    );
    let custom = SSH.replace(
        "allow = [\"127.0.0.1:22\"]",
        "port = 2222\nallow = [\"127.0.0.1:2222\"]",
    );
    let TargetSpec::Ssh(ssh) = &load(&with_tool("", &custom)).tools[0].target else {
        panic!("not ssh");
    };
    assert_eq!(ssh.port, 2222);
    for user in ["d.e-p_l0y", "x"] {
        load(&with_tool(
            "",
            &SSH.replace("\"deploy\"", &format!("\"{user}\"")),
        ));
    }
    for user in ["", "-x", "a b", "a;b", "ü"] {
        refused(
            &with_tool("", &SSH.replace("\"deploy\"", &format!("\"{user}\""))),
            "tools.ssh.user",
        );
    }
    refused(
        &with_tool(
            "",
            &SSH.replace("\"127.0.0.1\"\nuser", "\"not a host\"\nuser"),
        ),
        "tools.ssh.host",
    );
    refused(
        &with_tool(
            "",
            &SSH.replace(
                "allow = [\"127.0.0.1:22\"]",
                "port = 0\nallow = [\"127.0.0.1:22\"]",
            ),
        ),
        "tools.ssh.port",
    );
    let message = refused(
        &with_tool(
            "",
            &SSH.replace("[\"127.0.0.1:22\"]", "[\"127.0.0.1:2222\"]"),
        ),
        "tools.ssh.allow",
    );
    assert!(
        message.contains("127.0.0.1:22 is not in allow"),
        "{message}"
    );
    refused(
        &with_tool("", &SSH.replace("[\"ls\"]", "[]")),
        "tools.ssh.argv",
    );
    refused(
        &with_tool("", &SSH.replace("[\"ls\"]", "[\"ls\", \"{\"]")),
        "tools.ssh.argv[1]",
    );
    load(&with_tool(
        "",
        &SSH.replace("[\"ls\"]", "[\"ls\", \"{service}\"]"),
    ));
}
