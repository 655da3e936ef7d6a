//! Schema refusals a model can act on (issue 10): one line per failing
//! keyword, at most eight, naming what the schema wants and where — never
//! the value that was sent.

use portcullis_gateway::schema::ToolSchema;
use serde_json::{Value, json};

const VALUE: &str = "SECRET-VALUE-9f2c";

fn errors(schema: Value, args: Value) -> Vec<String> {
    let Value::Object(args) = args else { panic!() };
    let refusal = ToolSchema::compile(schema)
        .unwrap()
        .check("t", args)
        .expect_err("must be refused");
    // The tool error the model reads: a heading, then one line per failure.
    let text = refusal.to_string();
    let failures = refusal.failures();
    assert_eq!(text.lines().count(), failures.len() + 1, "{text}");
    let errors: Vec<String> = failures.iter().map(ToString::to_string).collect();
    for (line, failure) in errors.iter().zip(failures) {
        assert!(
            line.ends_with(&format!("(`{}`)", failure.keyword)),
            "{line}"
        );
        assert!(!line.contains(VALUE), "a value leaked: {line}");
        assert!(!line.contains('\n'), "one line per failure: {line:?}");
    }
    assert!(errors.len() <= 8);
    errors
}

fn one(schema: Value, args: Value) -> String {
    let e = errors(schema, args);
    assert_eq!(e.len(), 1, "{e:?}");
    e.into_iter().next().unwrap()
}

fn schema(prop: Value) -> Value {
    json!({"type": "object", "properties": {"p": prop}})
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
