//! `format` in a policy's input schema means what JSON Schema 2020-12 says:
//! every format the loader accepts is asserted (a string that does not
//! match is refused, on the fast path and the whole-schema path alike), and
//! a format the gateway does not check (`idn-hostname`, `idn-email`, a
//! misspelling, OpenAPI's `int32`) is refused when the policy loads, with
//! the tool, the JSON pointer and the format.

use std::path::Path;

use portcullis_gateway::Policy;
use portcullis_gateway::schema::{CHECKED_FORMATS, ToolSchema};
use portcullis_wire::Object;
use serde_json::{Map, Value, json};

/// A policy with one HTTP tool, `lookup`, whose input schema is `schema`
/// (TOML lines under `[tools.input_schema]`).
fn policy(schema: &str) -> String {
    format!(
        "[server]\nname = \"t\"\n\n[[tools]]\nname = \"lookup\"\n\
         http = {{ method = \"GET\", url = \"http://127.0.0.1:8080/x\", allow = [\"127.0.0.1:8080\"] }}\n\n\
         [tools.input_schema]\ntype = \"object\"\n{schema}\n"
    )
}

fn load(schema: &str) -> Result<Policy, String> {
    Policy::from_toml(&policy(schema), Path::new("p.toml")).map_err(|e| e.to_string())
}

/// The verdict on `{"v": value}`, after checking that the fast path and
/// the whole-schema path agree.
fn accepts(schema: &ToolSchema, value: &str) -> bool {
    let mut arguments = Map::new();
    arguments.insert("v".to_owned(), json!(value));
    let fast = schema
        .check_object("lookup", &Object::from_map(arguments.clone()))
        .is_ok();
    let whole = schema.check("lookup", arguments).is_ok();
    assert_eq!(fast, whole, "the two paths disagree on {value:?}");
    whole
}

/// The schema of `lookup` once `v` is a string of `format`.
fn loaded_format(format: &str) -> ToolSchema {
    let policy = load(&format!(
        "required = [\"v\"]\nproperties.v = {{ type = \"string\", format = \"{format}\" }}"
    ))
    .unwrap_or_else(|e| panic!("format {format} is refused: {e}"));
    policy.tools[0].schema.clone()
}

/// Each format the loader accepts, with values it must accept (the
/// examples docs/policy.md gives among them) and values it must refuse.
const EXAMPLES: [(&str, &[&str], &[&str]); 17] = [
    (
        "date-time",
        &["2026-01-31T12:00:00Z", "2020-01-01T23:59:60Z"],
        &[
            "2020-13-01T00:00:00Z",
            "2020-01-01 00:00:00Z",
            "2020-01-01T00:00:00",
        ],
    ),
    (
        "date",
        &["2026-01-31", "2020-02-29"],
        &["2021-02-29", "2020-1-01"],
    ),
    (
        "time",
        &["12:00:00+01:00", "23:59:59Z"],
        &["25:00:00Z", "12:00:00"],
    ),
    ("duration", &["P1DT12H", "P1Y2M3DT4H5M6S"], &["P1W1D", "PT"]),
    (
        "email",
        &["ops@example.com"],
        &["a", "a\u{0}@b.co", "\u{fc}@b.co"],
    ),
    ("hostname", &["a.b-c.example"], &["a\u{0}b", "a_b", "-a"]),
    ("ipv4", &["192.0.2.1"], &["01.2.3.4", "256.1.1.1"]),
    (
        "ipv6",
        &["2001:db8::1", "::ffff:1.2.3.4"],
        &["1::2::3", "fe80::1%eth0"],
    ),
    (
        "uri",
        &["http://a/b?c#d", "urn:x"],
        &["/relative", "http://a b"],
    ),
    ("uri-reference", &["/a/b?c", "#f"], &["http://a/%zz", "a b"]),
    (
        "iri",
        &["http://\u{fc}.example/\u{f6}"],
        &["/relative", "http://a b"],
    ),
    ("iri-reference", &["/\u{f6}"], &["\u{0}", "a b"]),
    (
        "uuid",
        &["123e4567-e89b-12d3-a456-426614174000"],
        &["123e4567e89b12d3a456426614174000"],
    ),
    ("uri-template", &["http://a/{b}"], &["{a b}", "{"]),
    ("json-pointer", &["/a/b", "/a/~0b", ""], &["a", "/~2"]),
    ("relative-json-pointer", &["0/a"], &["/a", "01"]),
    ("regex", &["^a+$"], &["(", "a{2,1}"]),
];

#[test]
fn every_format_the_loader_accepts_is_asserted() {
    let mut covered: Vec<&str> = EXAMPLES.iter().map(|(f, _, _)| *f).collect();
    let mut checked = CHECKED_FORMATS.to_vec();
    covered.sort_unstable();
    checked.sort_unstable();
    assert_eq!(covered, checked, "every checked format has examples");
    for (format, good, bad) in EXAMPLES {
        let schema = loaded_format(format);
        for value in good {
            assert!(accepts(&schema, value), "{format} refuses {value:?}");
        }
        for value in bad {
            assert!(!accepts(&schema, value), "{format} accepts {value:?}");
        }
    }
}

/// RFC 1123 §2.1 (and RFC 1034 §3.1): labels of 1 to 63 letters, digits
/// and hyphens, not starting or ending with a hyphen; at most 253
/// characters in all; nothing else.
#[test]
fn hostname_is_rfc_1123_labels_and_lengths() {
    let schema = loaded_format("hostname");
    let label = |n: usize| "a".repeat(n);
    let name = |labels: &[usize]| {
        labels
            .iter()
            .map(|n| label(*n))
            .collect::<Vec<_>>()
            .join(".")
    };
    let longest = name(&[63, 63, 63, 61]);
    assert_eq!(longest.len(), 253);
    let too_long = name(&[63, 63, 63, 62]);
    assert_eq!(too_long.len(), 254);
    for good in [
        "a.b-c.example",
        "localhost",
        "a",
        "xn--bcher-kva.example",
        &label(63),
        &longest,
    ] {
        assert!(accepts(&schema, good), "refused {good:?}");
    }
    for bad in [
        "a\u{0}b",
        "a.b\u{0}",
        "a\nb",
        "a\u{7f}b",
        &label(64),
        &format!("{}.example", label(64)),
        &label(300),
        &too_long,
        "",
        "a..b",
        ".a",
        "a.",
        "-a.example",
        "a-.example",
        "a_b.example",
        "a b.example",
        "m\u{fc}nchen.example",
    ] {
        assert!(!accepts(&schema, bad), "accepted {bad:?}");
    }
}

const CHECKED_LIST: &str = "date-time, date, time, duration, email, hostname, ipv4, ipv6, uri, \
    uri-reference, iri, iri-reference, uuid, uri-template, json-pointer, relative-json-pointer, \
    regex";

#[test]
fn a_format_the_gateway_does_not_check_is_refused_naming_tool_pointer_and_format() {
    let error = load(
        "required = [\"host\"]\nproperties.host = { type = \"string\", format = \"idn-hostname\" }",
    )
    .expect_err("idn-hostname is not checked");
    assert_eq!(
        error,
        format!(
            "p.toml: tool lookup: field tools.input_schema: format \"idn-hostname\" at \
             /properties/host/format is not checked by the gateway (it would accept any \
             string); the formats it checks are {CHECKED_LIST}, and `pattern` constrains \
             anything else"
        )
    );
    for format in [
        "idn-email",
        "idn-hostname",
        "int32",
        "hostnmae",
        "HOSTNAME",
        "",
        "password",
        "unknown",
    ] {
        let error = load(&format!(
            "properties.v = {{ type = \"string\", format = \"{format}\" }}"
        ))
        .expect_err(format);
        assert!(
            error.contains(&format!(
                "format {format:?} at /properties/v/format is not checked"
            )),
            "{error}"
        );
    }
}

/// The format is refused wherever a schema can apply it, including a
/// definition nothing refers to and a schema only a `$ref` reaches.
#[test]
fn an_unchecked_format_is_refused_wherever_it_sits() {
    let cases = [
        (
            "properties.list = { type = \"array\", items = { format = \"idn-email\" } }",
            "/properties/list/items/format",
        ),
        (
            "allOf = [{ properties.v = { format = \"idn-email\" } }]",
            "/allOf/0/properties/v/format",
        ),
        (
            "properties.v = { not = { format = \"idn-email\" } }",
            "/properties/v/not/format",
        ),
        (
            "properties.v = { anyOf = [{ type = \"integer\" }, { format = \"idn-email\" }] }",
            "/properties/v/anyOf/1/format",
        ),
        (
            "\"$defs\".mail = { format = \"idn-email\" }",
            "/$defs/mail/format",
        ),
        (
            "\"$defs\".\"a/b~c\" = { format = \"idn-email\" }",
            "/$defs/a~1b~0c/format",
        ),
        (
            "properties.v = { \"$ref\" = \"#/x-shared/mail\" }\nx-shared.mail = { format = \"idn-email\" }",
            "/x-shared/mail/format",
        ),
    ];
    for (schema, pointer) in cases {
        let error = load(schema).expect_err(schema);
        assert!(
            error.contains(&format!(
                "format \"idn-email\" at {pointer} is not checked by the gateway"
            )),
            "{schema}: {error}"
        );
    }
}

/// Only the `format` keyword counts: a property called `format`, and
/// values that are data (`const`, `enum`, `default`, `examples`), are not
/// formats.
#[test]
fn format_as_a_name_or_in_data_is_not_a_format() {
    for schema in [
        "properties.format = { type = \"string\", enum = [\"json\", \"text\"] }",
        "properties.v = { type = \"object\", const = { format = \"idn-email\" } }",
        "properties.v = { type = \"object\", enum = [{ format = \"int32\" }] }",
        "properties.v = { type = \"object\", default = { format = \"int32\" }, examples = [{ format = \"x\" }] }",
        "properties.v = { type = \"object\", properties.format = { type = \"string\", format = \"email\" } }",
    ] {
        load(schema).unwrap_or_else(|e| panic!("{schema}: {e}"));
    }
}

/// A server behind `portcullis wrap` is not held to the policy's rule: its
/// schema still compiles, and only a policy refuses it.
#[test]
fn compiling_a_schema_alone_does_not_refuse_its_formats() {
    let schema = ToolSchema::compile(json!({
        "type": "object",
        "properties": {"mail": {"type": "string", "format": "idn-email"}}
    }))
    .expect("compiles");
    let refusal = schema
        .refuse_unchecked_formats()
        .expect_err("a policy refuses it");
    assert!(
        refusal.starts_with("format \"idn-email\" at /properties/mail/format"),
        "{refusal}"
    );
    let Value::Object(document) = schema.document().clone() else {
        panic!("an object")
    };
    assert!(document.contains_key("properties"));
}
