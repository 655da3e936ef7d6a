//! Every JSON Schema keyword a refusal can name says, in one line, what the
//! schema wants; a schema that is not an object is refused at compile time.

mod common;

use common::schema::{failure_lines, only, prop};
use portcullis_gateway::schema::ToolSchema;
use serde_json::{Value, json};

/// The one failure line for `args` against an object schema with property
/// `p` described by `prop`.
fn wants(p_schema: Value, p: Value) -> String {
    only(failure_lines(prop(p_schema), json!({ "p": p })))
}

#[test]
fn numeric_and_size_keywords_name_their_bound() {
    let cases = [
        (
            json!({"exclusiveMinimum": 5}),
            json!(5),
            "at /p: must be > 5 (`exclusiveMinimum`)",
        ),
        (
            json!({"exclusiveMaximum": 5}),
            json!(5),
            "at /p: must be < 5 (`exclusiveMaximum`)",
        ),
        (
            json!({"multipleOf": 3}),
            json!(4),
            "at /p: must be a multiple of 3 (`multipleOf`)",
        ),
        (
            json!({"minItems": 2}),
            json!([1]),
            "at /p: must have at least 2 items (`minItems`)",
        ),
        (
            json!({"maxItems": 1}),
            json!([1, 2]),
            "at /p: must have at most 1 items (`maxItems`)",
        ),
        (
            json!({"minProperties": 2}),
            json!({"a": 1}),
            "at /p: must have at least 2 properties (`minProperties`)",
        ),
        (
            json!({"maxProperties": 1}),
            json!({"a": 1, "b": 2}),
            "at /p: must have at most 1 properties (`maxProperties`)",
        ),
        (
            json!({"uniqueItems": true}),
            json!([1, 1]),
            "at /p: items must be unique (`uniqueItems`)",
        ),
    ];
    for (prop, value, line) in cases {
        assert_eq!(wants(prop, value), line);
    }
}

#[test]
fn format_and_composition_keywords_say_what_they_want() {
    let cases = [
        (
            json!({"format": "ipv4"}),
            json!("x"),
            "at /p: must be a valid ipv4 (`format`)",
        ),
        (
            json!(false),
            json!(1),
            "at /p: no value is allowed here (`falseSchema`)",
        ),
        (
            json!({"anyOf": [{"type": "string"}, {"type": "boolean"}]}),
            json!(1),
            "at /p: must match at least one of the anyOf schemas (`anyOf`)",
        ),
        (
            json!({"oneOf": [{"type": "string"}, {"type": "boolean"}]}),
            json!(1),
            "at /p: must match exactly one of the oneOf schemas (matches none) (`oneOf`)",
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"minimum": 0}]}),
            json!(1),
            "at /p: must match exactly one of the oneOf schemas (matches several) (`oneOf`)",
        ),
        (
            json!({"not": {"type": "integer"}}),
            json!(1),
            "at /p: must not match the `not` schema (`not`)",
        ),
    ];
    for (prop, value, line) in cases {
        let got = wants(prop, value);
        // The keyword in brackets is whatever jsonschema reports for the
        // failing location; the text before it is ours.
        let (text, _) = line.rsplit_once(" (`").unwrap();
        assert!(got.starts_with(text), "{got} vs {line}");
    }
}

#[test]
fn a_long_enum_is_cut_after_200_characters() {
    let options: Vec<String> = (0..60).map(|i| format!("option-{i}")).collect();
    let line = wants(json!({"enum": options}), json!("other"));
    assert!(
        line.starts_with("at /p: must be one of [\"option-0\""),
        "{line}"
    );
    assert!(line.contains("…"), "{line}");
    assert!(line.chars().count() < 300, "{line}");
}

#[test]
fn a_schema_that_is_not_an_object_is_refused() {
    let err = ToolSchema::compile(json!(true)).expect_err("must be refused");
    assert_eq!(err, "must be a table (a JSON Schema object)");
}

#[test]
fn a_compiled_schema_debugs_as_its_document() {
    // A policy's `Debug` (diagnostics, test failures) shows each tool's
    // schema document, not the compiled validator.
    let document = json!({
        "type": "object",
        "properties": {"service": {"type": "string", "pattern": "^[a-z-]+$"}},
    });
    let shown = format!("{:?}", ToolSchema::compile(document).unwrap());
    assert!(shown.starts_with("ToolSchema {"), "{shown}");
    for part in ["document:", "\"service\"", "\"^[a-z-]+$\""] {
        assert!(shown.contains(part), "{part} not in {shown}");
    }
}
