//! Authorization: templates expand as data, the allowlist is checked after
//! expansion, credentials must be present.

mod common;

use std::path::Path;

use common::authz::{authorize_call, bind, checked, policy};
use percent_encoding::percent_decode_str;
use portcullis_gateway::authz::{ActionTarget, Component, Denial, authorize};
use portcullis_gateway::{BoundPolicy, Policy};
use serde_json::{Value, json};

/// [`common::authz::POLICY`] with the credential `tok` bound or not.
fn authz_policy(with_secret: bool) -> BoundPolicy {
    let secrets: &[(&str, &str)] = if with_secret {
        &[("tok", "t0ken")]
    } else {
        &[]
    };
    policy(secrets)
}

fn decide(policy: &BoundPolicy, tool: &str, args: Value) -> Result<ActionTarget, String> {
    let checked = checked(policy, tool, args).map_err(|e| {
        let lines: Vec<String> = e.failures().iter().map(ToString::to_string).collect();
        lines.join("; ")
    })?;
    authorize(&checked, policy.secrets())
        .map(|a| a.target().clone())
        .map_err(|d| d.to_string())
}

fn url(target: ActionTarget) -> String {
    match target {
        ActionTarget::Http(h) => h.url().to_string(),
        ActionTarget::Ssh(s) => panic!("{s:?}"),
    }
}

#[test]
fn placeholders_are_percent_encoded_as_one_segment_or_value() {
    let p = authz_policy(true);
    let got = url(decide(&p, "get", json!({"path": "a/b?c#d", "term": "x&y=z é"})).unwrap());
    assert_eq!(
        got,
        "https://api.internal:8443/v1/a%2Fb%3Fc%23d/items?q=x%26y%3Dz%20%C3%A9&fixed=1"
    );
}

#[test]
fn dot_segments_are_denied() {
    let p = authz_policy(true);
    for bad in [".", ".."] {
        assert!(decide(&p, "get", json!({"path": bad, "term": "x"})).is_err());
    }
}

#[test]
fn the_allowlist_is_checked_after_expansion() {
    let p = authz_policy(true);
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
    let p = authz_policy(false);
    let err = decide(&p, "get", json!({"path": "a", "term": "b"})).unwrap_err();
    assert!(err.contains("credential tok"), "{err}");
}

#[test]
fn ssh_argv_is_a_vector_and_option_injection_is_denied() {
    let p = authz_policy(true);
    match decide(&p, "run", json!({"unit": "nginx; rm -rf /", "n": 20})).unwrap() {
        ActionTarget::Ssh(s) => assert_eq!(
            s.argv(),
            ["journalctl", "-u", "nginx; rm -rf /", "--lines=20"]
        ),
        other => panic!("{other:?}"),
    }
    assert!(decide(&p, "run", json!({"unit": "--help", "n": 1})).is_err());
    // Short options too: ssh's `-oProxyCommand=...` runs a local command.
    assert!(decide(&p, "run", json!({"unit": "-oProxyCommand=sh", "n": 1})).is_err());
    assert!(decide(&p, "run", json!({"unit": "a\u{0}b", "n": 1})).is_err());
}

#[test]
fn schema_failures_name_location_and_keyword_not_values() {
    let p = authz_policy(true);
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

const AVATAR: &str = r#"
[server]
name = "t"

[credentials.tok]
env = "UNUSED"

[[tools]]
name = "avatar_delete"
[tools.http]
method = "DELETE"
url = "http://127.0.0.1:8080/users/{user}/avatar?size={size}"
allow = ["127.0.0.1:8080"]
credential = "tok"
[tools.input_schema]
type = "object"
required = ["user", "size"]
properties.user = { type = "string", minLength = 1 }
properties.size = { type = "string" }

[[tools]]
name = "run"
[tools.ssh]
host = "127.0.0.1"
user = "ops"
argv = ["systemctl", "status", "{unit}"]
allow = ["127.0.0.1:22"]
[tools.input_schema]
type = "object"
required = ["unit"]
properties.unit = { type = "string" }
"#;

fn avatar_policy() -> BoundPolicy {
    bind(AVATAR, &[("tok", "t0ken")])
}

fn denial(policy: &BoundPolicy, tool: &str, args: Value) -> Denial {
    authorize_call(policy, tool, args).expect_err("must be denied")
}

#[test]
fn dot_tab_dot_cannot_climb_out_of_the_template_path() {
    // Issue 8 defect 1: ".\t." passed a check on the expanded text, then
    // the URL builder dropped the tab and resolved "..":
    // DELETE http://127.0.0.1:8080/avatar with the bearer token attached.
    let p = avatar_policy();
    for user in [".\t.", ".\n.", "\r..", "..\t", ".\t", "\t.\t"] {
        assert_eq!(
            denial(&p, "avatar_delete", json!({"user": user, "size": "s"})),
            Denial::ControlCharacter(Component::PathSegment(1)),
            "{user:?}"
        );
    }
}

#[test]
fn a_tab_alone_is_not_an_empty_segment_past_min_length() {
    let p = avatar_policy();
    assert_eq!(
        denial(&p, "avatar_delete", json!({"user": "\t", "size": "s"})),
        Denial::ControlCharacter(Component::PathSegment(1))
    );
    assert_eq!(
        denial(&p, "avatar_delete", json!({"user": "a", "size": ""})),
        Denial::Empty(Component::QueryValue("size".into()))
    );
}

#[test]
fn dot_segments_are_denied_by_variant() {
    let p = avatar_policy();
    for user in [".", ".."] {
        assert_eq!(
            denial(&p, "avatar_delete", json!({"user": user, "size": "s"})),
            Denial::DotSegment(Component::PathSegment(1))
        );
    }
}

#[test]
fn control_characters_and_del_are_denied_in_every_component() {
    let p = avatar_policy();
    for c in (0u8..0x20).chain([0x7f]).map(char::from) {
        let bad = format!("a{c}b");
        assert_eq!(
            denial(&p, "avatar_delete", json!({"user": "u", "size": bad})),
            Denial::ControlCharacter(Component::QueryValue("size".into()))
        );
        assert_eq!(
            denial(&p, "run", json!({"unit": bad})),
            Denial::ControlCharacter(Component::Argv(2))
        );
    }
    let probe = authz_policy(true);
    assert!(decide(&probe, "probe", json!({"host": "127.0.0.1\t"})).is_err());
}

/// Hostile but printable values are allowed only when they arrive exactly:
/// each decodes back, segment for segment, to what was given.
#[test]
fn hostile_printable_values_arrive_exactly_as_written() {
    let p = avatar_policy();
    let hostile = [
        "..%2f..",
        "%2e%2e",
        "%2E.",
        "a/../b",
        "..\\..",
        "\u{2024}\u{2024}",
        "\u{ff0e}\u{ff0e}",
        "\u{ff0f}etc",
        "\u{200b}..",
        "\u{feff}.",
        "?x=1#f",
        ";..",
        "@evil.example",
        "xn--nxasmq6b",
        "é/ü",
        " .. ",
    ];
    for value in hostile {
        let action = authorize_call(&p, "avatar_delete", json!({"user": value, "size": value}))
            .expect(value);
        let ActionTarget::Http(h) = action.target() else {
            panic!()
        };
        // Read back as a server's URL parser reads the request line.
        let url = url::Url::parse(&h.url()).unwrap();
        assert_eq!(
            (url.scheme(), url.host_str(), url.port_or_known_default()),
            ("http", Some("127.0.0.1"), Some(8080))
        );
        let segments: Vec<_> = url.path_segments().unwrap().collect();
        assert_eq!(segments.len(), 3, "{value:?} -> {url}");
        assert_eq!((segments[0], segments[2]), ("users", "avatar"));
        let decoded = percent_decode_str(segments[1]).decode_utf8().unwrap();
        assert_eq!(decoded, value, "{url}");
        let query = url.query().unwrap();
        let (key, encoded) = query.split_once('=').unwrap();
        assert_eq!(key, "size");
        assert_eq!(percent_decode_str(encoded).decode_utf8().unwrap(), value);
        assert!(url.fragment().is_none() && url.username().is_empty());
    }
}

#[test]
fn literal_dot_segments_are_refused_at_load() {
    for url in ["http://127.0.0.1:8080/a/../b", "http://127.0.0.1:8080/./b"] {
        let text = AVATAR.replace("http://127.0.0.1:8080/users/{user}/avatar?size={size}", url);
        let err = Policy::from_toml(&text, Path::new("dots.toml")).unwrap_err();
        assert!(err.to_string().contains("'.' and '..'"), "{err}");
    }
}

#[test]
fn a_url_the_executor_cannot_send_is_denied_before_it_queues() {
    let p = avatar_policy();
    let long = "a".repeat(portcullis_gateway::authz::MAX_URL_BYTES);
    assert_eq!(
        denial(&p, "avatar_delete", json!({"user": long, "size": "s"})),
        Denial::UrlTooLong(portcullis_gateway::authz::MAX_URL_BYTES)
    );
}

#[test]
fn a_plus_in_a_query_literal_arrives_as_a_plus() {
    // Found by authz_expansion on the first faithful builder: a literal '+'
    // was written as is and form decoding read it as a space.
    let text = AVATAR.replace(
        "http://127.0.0.1:8080/users/{user}/avatar?size={size}",
        "http://127.0.0.1:8080/users/{user}/avatar?a+b=x+{size}",
    );
    let p = bind(&text, &[("tok", "t0ken")]);
    let action = authorize_call(&p, "avatar_delete", json!({"user": "u", "size": "1 +2"})).unwrap();
    let ActionTarget::Http(h) = action.target() else {
        panic!()
    };
    assert_eq!(h.uri().query(), Some("a%2Bb=x%2B1%20%2B2"));
    let url = url::Url::parse(&h.url()).unwrap();
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    assert_eq!(pairs, [("a+b".to_owned(), "x+1 +2".to_owned())]);
}

#[test]
fn an_allowlisted_name_inside_a_longer_host_is_not_allowed() {
    let p = authz_policy(false);
    assert!(decide(&p, "probe_names", json!({"host": "api.internal"})).is_ok());
    for denied in [
        "evil-api.internal",
        "x.api.internal",
        "evillocalhost",
        "api.internal.evil",
        "localhost.evil",
    ] {
        let err = decide(&p, "probe_names", json!({"host": denied})).expect_err(denied);
        assert!(err.contains("allowlist"), "{denied}: {err}");
    }
}

#[test]
fn a_denial_names_the_component_in_its_message() {
    // The client reads which part of its call was refused from this text.
    let p = avatar_policy();
    let message = |tool: &str, args: Value| denial(&p, tool, args).to_string();
    assert_eq!(
        message("avatar_delete", json!({"user": "a\tb", "size": "s"})),
        "path segment 2 would hold a control character"
    );
    assert_eq!(
        message("avatar_delete", json!({"user": "a", "size": ""})),
        "query value size would be empty"
    );
    assert_eq!(
        message("run", json!({"unit": "a\u{7f}b"})),
        "argv element 2 would hold a control character"
    );
    assert_eq!(
        Denial::Empty(Component::Host).to_string(),
        "the host would be empty"
    );
}

#[test]
fn a_percent_escaped_host_is_not_a_plain_host() {
    // The URL parser percent-decodes a host before reading it: "127%2E1"
    // would reach 127.0.0.1, a host the argument does not spell.
    let p = authz_policy(false);
    for denied in ["127%2E1", "127.0.0.%31", "%31%32%37.0.0.1", "localhost%00"] {
        let err = decide(&p, "probe", json!({"host": denied})).expect_err(denied);
        assert!(err.contains("not a plain host"), "{denied}: {err}");
    }
    for denied in ["api%2Einternal", "%61pi.internal", "localhost%2F"] {
        let err = decide(&p, "probe_names", json!({"host": denied})).expect_err(denied);
        assert!(err.contains("not a plain host"), "{denied}: {err}");
    }
}

/// A literal host's origin is read by the URI parser once, at load, and
/// lends each call's URI its scheme and authority: the URI a call gets must
/// be the one that parser reads from the URI's whole text, whatever the
/// scheme, port and host form.
#[test]
fn a_uri_built_on_the_origin_read_at_load_is_the_one_its_text_parses_to() {
    let policy = bind(
        r#"
[server]
name = "t"

[[tools]]
name = "plain"
[tools.http]
method = "GET"
url = "http://127.0.0.1/a/{p}?q={p}&r=x"
allow = ["127.0.0.1:80"]
[tools.input_schema]
type = "object"
required = ["p"]
properties.p = { type = "string" }

[[tools]]
name = "tls"
[tools.http]
method = "GET"
url = "https://API.Example.com:8443/{p}"
allow = ["api.example.com:8443"]
[tools.input_schema]
type = "object"
required = ["p"]
properties.p = { type = "string" }

[[tools]]
name = "v6"
[tools.http]
method = "GET"
url = "http://[::1]:9000/{p}"
allow = ["[::1]:9000"]
[tools.input_schema]
type = "object"
required = ["p"]
properties.p = { type = "string" }

[[tools]]
name = "mixed"
[tools.http]
method = "GET"
url = "http://127.0.0.1/a!b/v+{p}/{p}!"
allow = ["127.0.0.1:80"]
[tools.input_schema]
type = "object"
required = ["p"]
properties.p = { type = "string" }
"#,
        &[],
    );
    for (tool, want) in [
        ("plain", "http://127.0.0.1:80/a/x%20y%3F?q=x%20y%3F&r=x"),
        ("tls", "https://api.example.com:8443/x%20y%3F"),
        ("v6", "http://[::1]:9000/x%20y%3F"),
        // Literal pieces as written beside an argument, encoded alone (a
        // literal `+` too: only a query is form-decoded).
        ("mixed", "http://127.0.0.1:80/a!b/v+x%20y%3F/x%20y%3F!"),
    ] {
        let action = authorize_call(&policy, tool, json!({"p": "x y?"})).expect(tool);
        let ActionTarget::Http(h) = action.target() else {
            panic!("{tool}: not http")
        };
        let reparsed: http::Uri = h.url().parse().expect(tool);
        assert_eq!(h.uri(), &reparsed, "{tool}");
        assert_eq!(
            (
                h.uri().scheme(),
                h.uri().authority(),
                h.uri().path_and_query()
            ),
            (
                reparsed.scheme(),
                reparsed.authority(),
                reparsed.path_and_query()
            ),
            "{tool}"
        );
        assert_eq!(h.url(), want, "{tool}");
    }
}

#[test]
fn an_origin_checked_at_load_lends_its_parts_and_one_the_parser_reads_otherwise_does_not() {
    use portcullis_gateway::policy::LiteralOrigin;
    for (scheme, host, port) in [
        ("http", "127.0.0.1", 80),
        ("https", "api.example.com", 8443),
        ("http", "[::1]", 9000),
    ] {
        let origin = LiteralOrigin::new(scheme, host.to_owned(), port);
        let (parsed_scheme, authority) = origin.parsed.expect(host);
        assert_eq!(parsed_scheme.as_str(), scheme);
        assert_eq!(authority.host(), host);
    }
    // The loader's normalization lets no such host through; were one to
    // come, the parser reads userinfo, another host, or another port, so
    // every call would parse and check its whole URL instead.
    for (host, port) in [("user@127.0.0.1", 80), ("127.0.0.1:81", 80), ("a b", 80)] {
        let origin = LiteralOrigin::new("http", host.to_owned(), port);
        assert!(origin.parsed.is_none(), "{host}:{port}");
    }
}
