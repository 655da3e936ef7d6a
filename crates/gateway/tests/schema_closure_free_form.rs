//! Only schema keywords decide whether an object schema names properties:
//! data that merely looks like a schema (an `examples` entry, an unknown
//! keyword, a `prefixItems` branch, which applies to arrays, a `$defs`
//! entry, which describes an instance of its own) leaves a nested object
//! schema that names no properties free-form. (The root is
//! always closed: a tool that declares no arguments accepts none.)

mod common;

use common::schema::accepts;
use portcullis_gateway::schema::ToolSchema;
use serde_json::json;

#[test]
fn look_alike_schemas_in_non_schema_keywords_do_not_close_an_object() {
    for keyword in ["examples", "x-shapes", "prefixItems"] {
        let schema = json!({
            "type": "object",
            "properties": {"p": {
                "type": "object",
                keyword: [{"type": "object", "properties": {"a": {}}}],
            }},
        });
        let compiled = ToolSchema::compile(schema.clone()).unwrap();
        let p = &compiled.document()["properties"]["p"];
        assert!(
            p.get("additionalProperties").is_none() && p.get("unevaluatedProperties").is_none(),
            "{keyword}: {p}"
        );
        assert!(accepts(&schema, json!({"p": {"anything": 1}})), "{keyword}");
    }
}

#[test]
fn an_in_place_branch_that_names_properties_closes_the_object() {
    for keyword in ["allOf", "anyOf", "oneOf"] {
        let schema = json!({
            "type": "object",
            "properties": {"p": {
                "type": "object",
                keyword: [{"properties": {"a": {}}}],
            }},
        });
        assert!(accepts(&schema, json!({"p": {"a": 1}})), "{keyword}");
        assert!(
            !accepts(&schema, json!({"p": {"a": 1, "anything": 1}})),
            "{keyword}"
        );
    }
}

#[test]
fn properties_named_only_in_a_definition_do_not_close_the_object() {
    // A `$defs` entry describes an instance of its own (it is closed
    // itself); it is not a branch of the object that holds it.
    for keyword in ["$defs", "definitions"] {
        let schema = json!({
            "type": "object",
            "properties": {"p": {
                "type": "object",
                keyword: {"d": {"type": "object", "properties": {"a": {}}}},
            }},
        });
        let compiled = ToolSchema::compile(schema.clone()).unwrap();
        let p = &compiled.document()["properties"]["p"];
        assert!(
            p.get("additionalProperties").is_none() && p.get("unevaluatedProperties").is_none(),
            "{keyword}: {p}"
        );
        assert_eq!(
            p[keyword]["d"]["additionalProperties"],
            json!(false),
            "{keyword}: {p}"
        );
        assert!(accepts(&schema, json!({"p": {"anything": 1}})), "{keyword}");
    }
}

#[test]
fn a_root_without_properties_is_closed_unless_it_says_otherwise() {
    // No properties at all: no arguments are accepted, whether the root
    // composes (closed by unevaluatedProperties) or not.
    for schema in [
        json!({"type": "object"}),
        json!({"type": "object", "allOf": [{"required": []}]}),
    ] {
        assert!(accepts(&schema, json!({})), "{schema}");
        assert!(!accepts(&schema, json!({"x": 1})), "{schema}");
    }
    // A root that says what other members may be keeps its word.
    for keyword in ["additionalProperties", "unevaluatedProperties"] {
        let schema = json!({"type": "object", keyword: {"type": "string"}});
        assert!(accepts(&schema, json!({"x": "s"})), "{keyword}");
        assert!(!accepts(&schema, json!({"x": 1})), "{keyword}");
    }
}
