//! The rest of the schema keywords, each with the line a model reads, and
//! the edges of what a line may quote: pointer segments up to 64 plain
//! characters, policy values up to 200 characters.

mod common;

use common::schema::{failure_lines as lines, only, prop};
use portcullis_gateway::schema::ToolSchema;
use serde_json::{Value, json};

fn one(schema: Value, args: Value) -> String {
    only(lines(schema, args))
}

#[test]
fn every_keyword_says_what_it_wants() {
    let cases = [
        (
            prop(json!({"exclusiveMinimum": 10})),
            json!({"p": 10}),
            "at /p: must be > 10 (`exclusiveMinimum`)",
        ),
        (
            prop(json!({"exclusiveMaximum": 10})),
            json!({"p": 10}),
            "at /p: must be < 10 (`exclusiveMaximum`)",
        ),
        (
            prop(json!({"multipleOf": 3})),
            json!({"p": 4}),
            "at /p: must be a multiple of 3 (`multipleOf`)",
        ),
        (
            prop(json!({"minItems": 2})),
            json!({"p": [1]}),
            "at /p: must have at least 2 items (`minItems`)",
        ),
        (
            prop(json!({"maxItems": 1})),
            json!({"p": [1, 2]}),
            "at /p: must have at most 1 items (`maxItems`)",
        ),
        (
            prop(json!({"type": "object", "minProperties": 2})),
            json!({"p": {"a": 1}}),
            "at /p: must have at least 2 properties (`minProperties`)",
        ),
        (
            prop(json!({"type": "object", "maxProperties": 1})),
            json!({"p": {"a": 1, "b": 2}}),
            "at /p: must have at most 1 properties (`maxProperties`)",
        ),
        (
            prop(json!({"uniqueItems": true})),
            json!({"p": [1, 1]}),
            "at /p: items must be unique (`uniqueItems`)",
        ),
        (
            prop(json!(false)),
            json!({"p": 1}),
            "at /p: no value is allowed here (`p`)",
        ),
        (
            prop(json!({"anyOf": [{"type": "string"}, {"type": "boolean"}]})),
            json!({"p": 1}),
            "at /p: must match at least one of the anyOf schemas (`anyOf`)",
        ),
        (
            prop(json!({"oneOf": [{"type": "string"}, {"type": "boolean"}]})),
            json!({"p": 1}),
            "at /p: must match exactly one of the oneOf schemas (matches none) (`oneOf`)",
        ),
        (
            prop(json!({"oneOf": [{"type": "integer"}, {"minimum": 0}]})),
            json!({"p": 1}),
            "at /p: must match exactly one of the oneOf schemas (matches several) (`oneOf`)",
        ),
        (
            prop(json!({"not": {"type": "integer"}})),
            json!({"p": 1}),
            "at /p: must not match the `not` schema (`not`)",
        ),
        (
            json!({"type": "object", "properties": {}, "unevaluatedProperties": false, "allOf": [{"properties": {"a": {}}}]}),
            json!({"a": 1, "b": 2}),
            "at /: unexpected properties \"b\" (not in the schema) (`unevaluatedProperties`)",
        ),
    ];
    for (schema, args, want) in cases {
        assert_eq!(one(schema.clone(), args), want, "{schema}");
    }
}

#[test]
fn pointer_segments_show_up_to_64_plain_characters_and_array_indexes() {
    let open = |name: &str| {
        (
            json!({"type": "object", "properties": {}, "additionalProperties": {"type": "integer"}}),
            json!({ name: "x" }),
        )
    };
    let sixty_four = "a".repeat(64);
    let (schema, args) = open(&sixty_four);
    assert_eq!(
        one(schema, args),
        format!("at /{sixty_four}: expected type integer (`type`)")
    );
    let (schema, args) = open("k_$.-:@9");
    assert_eq!(
        one(schema, args),
        "at /k_$.-:@9: expected type integer (`type`)"
    );
    // `~` and `/` in a name are escaped in the pointer, and shown escaped.
    let (schema, args) = open("a~b/c");
    assert_eq!(
        one(schema, args),
        "at /a~0b~1c: expected type integer (`type`)"
    );
    for withheld in ["a".repeat(65), "a b".to_owned(), "ü".to_owned()] {
        let (schema, args) = open(&withheld);
        assert_eq!(
            one(schema, args),
            "at /(withheld): expected type integer (`type`)",
            "{withheld}"
        );
    }
    let nested =
        prop(json!({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}));
    assert_eq!(
        one(nested, json!({"p": [[1], [1, "x"]]})),
        "at /p/1/1: expected type integer (`type`)"
    );
}

#[test]
fn policy_values_are_quoted_up_to_200_characters() {
    let exactly = "e".repeat(198); // 200 with its quotes
    let line = one(prop(json!({"const": exactly})), json!({"p": 1}));
    assert_eq!(line, format!("at /p: must equal \"{exactly}\" (`const`)"));
    let longer = "e".repeat(199);
    let line = one(prop(json!({"const": longer})), json!({"p": 1}));
    assert_eq!(
        line,
        format!("at /p: must equal \"{}… (`const`)", "e".repeat(199))
    );
}

#[test]
fn placeholders_must_name_required_string_or_integer_properties() {
    let schema = ToolSchema::compile(json!({
        "type": "object",
        "required": ["s", "i", "n", "b"],
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "n": {"type": "number"},
            "b": {"type": "boolean"},
            "optional": {"type": "string"},
        },
    }))
    .unwrap();
    assert_eq!(schema.check_placeholder("s"), Ok(()));
    assert_eq!(schema.check_placeholder("i"), Ok(()));
    for name in ["n", "b"] {
        assert_eq!(
            schema.check_placeholder(name),
            Err(format!(
                "input_schema.properties.{name} must have type \"string\" or \"integer\""
            ))
        );
    }
    assert_eq!(
        schema.check_placeholder("optional"),
        Err("optional must be listed in input_schema.required".to_owned())
    );
}

#[test]
fn the_refusal_names_the_tool_and_lists_each_failure() {
    let Value::Object(args) = json!({"a": "x", "b": "y"}) else {
        panic!()
    };
    let refusal = ToolSchema::compile(json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    }))
    .unwrap()
    .check("probe", args)
    .unwrap_err();
    let text = refusal.to_string();
    assert!(text.lines().next().unwrap().contains("probe"), "{text}");
    assert_eq!(refusal.failures().len(), 2);
    for failure in refusal.failures() {
        assert!(text.contains(&format!("\n{failure}")), "{text}");
    }
}
