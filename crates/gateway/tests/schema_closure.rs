//! Nested objects are closed by default wherever they sit in the schema
//! (issue 8 defect 5): an argument the policy does not name never slips
//! through, and composition (`allOf` and friends) still works.

mod common;

use common::schema::accepts;
use serde_json::{Value, json};

fn object(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

/// Each schema nests the object `{x: string}` somewhere; the call with an
/// extra member must be refused, the exact one accepted.
#[test]
fn nested_objects_are_closed_under_every_applicator() {
    let inner = object(json!({"x": {"type": "string"}}));
    let cases = [
        ("properties", object(json!({"opts": inner}))),
        (
            "anyOf",
            object(json!({"opts": {"anyOf": [inner, {"type": "string"}]}})),
        ),
        (
            "oneOf",
            object(json!({"opts": {"oneOf": [inner, {"type": "string"}]}})),
        ),
        ("allOf", object(json!({"opts": {"allOf": [inner]}}))),
        (
            "if/then",
            object(json!({"opts": {"if": {"type": "object"}, "then": inner}})),
        ),
        (
            "if/else",
            object(json!({"opts": {"if": {"type": "string"}, "else": inner}})),
        ),
        (
            "$defs",
            json!({"type": "object", "$defs": {"o": inner},
                   "properties": {"opts": {"$ref": "#/$defs/o"}}}),
        ),
        (
            "dependentSchemas",
            json!({"type": "object", "properties": {"opts": {"type": "object",
                   "dependentSchemas": {"x": {"properties": {"x": {"type": "string"}}}}}}}),
        ),
        (
            "items",
            json!({"type": "object", "properties": {"opts": {"type": "array", "items": inner}}}),
        ),
        (
            "patternProperties",
            json!({"type": "object", "properties": {}, "patternProperties": {"^o": inner}}),
        ),
        (
            "additionalProperties",
            json!({"type": "object", "properties": {}, "additionalProperties": inner}),
        ),
    ];
    for (name, schema) in &cases {
        let wrap = |opts: Value| {
            if *name == "items" {
                json!({"opts": [opts]})
            } else {
                json!({"opts": opts})
            }
        };
        assert!(
            accepts(schema, wrap(json!({"x": "1"}))),
            "{name}: exact call refused"
        );
        assert!(
            !accepts(schema, wrap(json!({"x": "1", "unknown": "E"}))),
            "{name}: an unknown nested member passed"
        );
    }
    let prefix = json!({"type": "object", "properties": {"opts": {"type": "array", "prefixItems": [inner]}}});
    assert!(accepts(&prefix, json!({"opts": [{"x": "1"}]})));
    assert!(!accepts(
        &prefix,
        json!({"opts": [{"x": "1", "unknown": "E"}]})
    ));
}

#[test]
fn composition_across_branches_still_accepts_what_the_branches_name() {
    let schema = json!({"type": "object", "properties": {"opts": {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {"properties": {"b": {"type": "string"}}}
        ]
    }}});
    assert!(accepts(&schema, json!({"opts": {"a": "1", "b": "2"}})));
    assert!(!accepts(
        &schema,
        json!({"opts": {"a": "1", "b": "2", "c": "3"}})
    ));
    let root = json!({"type": "object", "anyOf": [
        {"properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"properties": {"b": {"type": "string"}}, "required": ["b"]}
    ]});
    assert!(accepts(&root, json!({"a": "1"})));
    assert!(accepts(&root, json!({"b": "1"})));
    assert!(!accepts(&root, json!({"a": "1", "z": "1"})));
}

#[test]
fn an_explicit_choice_is_kept() {
    let open = object(json!({"opts": {"type": "object", "properties": {"x": {}},
        "additionalProperties": true}}));
    assert!(accepts(&open, json!({"opts": {"x": 1, "y": 2}})));
    let free = object(json!({"opts": {"type": "object"}}));
    assert!(
        accepts(&free, json!({"opts": {"anything": 1}})),
        "an object schema that names no properties is free-form by choice"
    );
}

#[test]
fn negation_is_not_widened() {
    // Closing the object inside `not` would make `not` accept more.
    let schema = object(json!({"opts": {"type": "object",
        "not": {"properties": {"x": {"const": 1}}, "required": ["x"]}}}));
    assert!(!accepts(&schema, json!({"opts": {"x": 1, "y": 2}})));
    assert!(accepts(&schema, json!({"opts": {"x": 2, "y": 2}})));
}

/// An object described below a `dependentSchemas` branch is closed like
/// one below any other in-place branch (the branch itself stays open).
#[test]
fn an_object_below_a_dependent_schema_is_closed() {
    let inner = object(json!({"x": {"type": "string"}}));
    let schema = object(json!({"opts": {
        "type": "object",
        "properties": {"x": {"type": "string"}},
        "dependentSchemas": {"x": {"properties": {"deep": inner}}}
    }}));
    assert!(accepts(
        &schema,
        json!({"opts": {"x": "1", "deep": {"x": "1"}}})
    ));
    assert!(
        !accepts(
            &schema,
            json!({"opts": {"x": "1", "deep": {"x": "1", "unknown": "E"}}})
        ),
        "an unknown member below a dependent schema passed"
    );
}
