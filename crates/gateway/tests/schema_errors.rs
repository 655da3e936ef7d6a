//! Schema refusals a model can act on (issue 10): one line per failing
//! keyword, at most eight, naming what the schema wants and where — never
//! the value that was sent.

mod common;

use common::schema::{failure_lines, only, prop as schema};
use serde_json::{Value, json};

const VALUE: &str = "SECRET-VALUE-9f2c";

/// The failure lines (see [`failure_lines`]): at most eight, and none
/// holding the value that was sent.
fn errors(schema: Value, args: Value) -> Vec<String> {
    let errors = failure_lines(schema, args);
    for line in &errors {
        assert!(!line.contains(VALUE), "a value leaked: {line}");
    }
    assert!(errors.len() <= 8);
    errors
}

fn one(schema: Value, args: Value) -> String {
    only(errors(schema, args))
}

#[test]
fn each_keyword_says_what_it_wants() {
    let s = |v| schema(v);
    let cases = [
        (
            json!({"type": "object", "required": ["service"], "properties": {"service": {"type": "string"}}}),
            json!({}),
            "at /: missing required property \"service\" (`required`)",
        ),
        (
            s(json!({"type": "string"})),
            json!({"p": "x", "unknown_flag": VALUE}),
            "at /: unexpected properties \"unknown_flag\" (not in the schema) (`additionalProperties`)",
        ),
        (
            s(json!({"type": "integer"})),
            json!({"p": VALUE}),
            "at /p: expected type integer (`type`)",
        ),
        (
            s(json!({"type": ["integer", "null"]})),
            json!({"p": VALUE}),
            "at /p: expected type null or integer (`type`)",
        ),
        (
            s(json!({"enum": ["api", "web"]})),
            json!({"p": VALUE}),
            "at /p: must be one of [\"api\",\"web\"] (`enum`)",
        ),
        (
            s(json!({"type": "string", "pattern": "^[a-z]+$"})),
            json!({"p": VALUE}),
            "at /p: must match the pattern \"^[a-z]+$\" (`pattern`)",
        ),
        (
            s(json!({"type": "string", "maxLength": 4})),
            json!({"p": VALUE}),
            "at /p: must be at most 4 characters long (`maxLength`)",
        ),
        (
            s(json!({"type": "string", "minLength": 40})),
            json!({"p": VALUE}),
            "at /p: must be at least 40 characters long (`minLength`)",
        ),
        (
            s(json!({"maximum": 10})),
            json!({"p": 11}),
            "at /p: must be <= 10 (`maximum`)",
        ),
        (
            s(json!({"minimum": 10})),
            json!({"p": 9}),
            "at /p: must be >= 10 (`minimum`)",
        ),
        (
            s(
                json!({"type": "array", "items": {"type": "object", "properties": {"x": {"const": 1}}}}),
            ),
            json!({"p": [{"x": 1}, {"x": 2}]}),
            "at /p/1/x: must equal 1 (`const`)",
        ),
    ];
    for (schema, args, want) in cases {
        assert_eq!(one(schema, args), want);
    }
}

#[test]
fn names_that_may_be_data_are_withheld() {
    let e = one(
        schema(json!({"type": "string"})),
        json!({"p": "x", "password=hunter2 and more": 1}),
    );
    assert!(
        e.contains("(name withheld)") && !e.contains("hunter2"),
        "{e}"
    );
    let open =
        json!({"type": "object", "properties": {}, "additionalProperties": {"type": "integer"}});
    let e = one(open, json!({"not a name!": "x"}));
    assert_eq!(e, "at /(withheld): expected type integer (`type`)");
}

#[test]
fn at_most_eight_lines() {
    let props: serde_json::Map<String, Value> = (0..12)
        .map(|i| (format!("p{i}"), json!({"type": "integer"})))
        .collect();
    let args: serde_json::Map<String, Value> =
        (0..12).map(|i| (format!("p{i}"), json!(VALUE))).collect();
    let e = errors(
        json!({"type": "object", "properties": props}),
        Value::Object(args),
    );
    assert_eq!(e.len(), 8);
}
