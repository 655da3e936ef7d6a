//! The schema fast path (objects of named properties, decided member by
//! member) gives jsonschema's verdict on the whole call: a call is
//! accepted exactly when the compiled whole-schema validator accepts it.
//! Schemas outside the subset have no fast path.

use portcullis_gateway::schema::ToolSchema;
use portcullis_wire::Object;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Map, Value, json};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 2000,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/schema_fast_path.txt"
        )))),
        ..ProptestConfig::default()
    }
}

const NAMES: [&str; 4] = ["a", "b", "service", "n"];

fn property_schemas() -> Vec<Value> {
    vec![
        json!({"type": "string"}),
        json!({"type": "string", "description": "a note"}),
        json!({"type": "string", "pattern": "^[a-z][a-z0-9-]{0,31}$"}),
        json!({"type": "string", "pattern": "\\d"}),
        json!({"type": "string", "minLength": 2, "maxLength": 5}),
        json!({"type": "string", "enum": ["a", "b"]}),
        json!({"type": "string", "format": "ipv4"}),
        json!({"type": "integer"}),
        json!({"type": "integer", "minimum": 0, "maximum": 10}),
        json!({"type": "integer", "multipleOf": 2, "exclusiveMaximum": 100}),
        json!({"type": "number"}),
        json!({"type": "boolean"}),
        json!({"type": ["string", "integer"]}),
        json!({"const": 3}),
        json!({"enum": [1, "1", null]}),
    ]
}

fn property_schema() -> impl Strategy<Value = Value> {
    prop::sample::select(property_schemas())
}

fn schema() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(property_schema(), 4),
        prop::collection::vec(any::<bool>(), 4),
        prop::collection::vec(any::<bool>(), 4),
        any::<bool>(),
    )
        .prop_map(|(schemas, present, required, closed)| {
            let mut properties = Map::new();
            let mut names = Vec::new();
            for (i, schema) in schemas.into_iter().enumerate() {
                if present[i] {
                    properties.insert(NAMES[i].to_owned(), schema);
                    if required[i] {
                        names.push(json!(NAMES[i]));
                    }
                }
            }
            let mut root = json!({"type": "object", "properties": properties, "required": names});
            if closed {
                root["additionalProperties"] = json!(false);
            }
            root
        })
}

fn argument_values() -> Vec<Value> {
    vec![
        json!("x"),
        json!("abc"),
        json!("billing-api-7"),
        json!("Bad Service!"),
        json!("a"),
        json!("é中"),
        json!("10.0.0.1"),
        json!("9"),
        json!(""),
        json!(1),
        json!(1.0),
        json!(-3),
        json!(12),
        json!(3),
        json!(2.5),
        json!(true),
        json!(null),
        json!([]),
        json!({}),
        json!({"a": 1}),
    ]
}

fn argument_value() -> impl Strategy<Value = Value> {
    prop::sample::select(argument_values())
}

fn arguments() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(
        prop::sample::select(vec!["a", "b", "service", "n", "extra"]),
        argument_value(),
        0..5,
    )
    .prop_map(|m| m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

fn whole_schema_verdict(schema: &ToolSchema, arguments: &Map<String, Value>) -> bool {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema.document())
        .expect("compiles")
        .is_valid(&Value::Object(arguments.clone()))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_fast_path_gives_the_whole_schema_verdict(document in schema(), args in arguments()) {
        let schema = ToolSchema::compile(document).expect("a valid schema");
        prop_assert!(schema.has_fast_path());
        let fast = schema.check_object("t", &Object::from_map(args.clone()));
        let whole = schema.check("t", args.clone());
        prop_assert_eq!(fast.is_ok(), whole_schema_verdict(&schema, &args));
        prop_assert_eq!(fast, whole.map(drop));
    }
}

/// Every property schema of the subset against every argument value, alone
/// and beside a string property: each member is judged by its own
/// property's schema, and only `type: "string"` is judged as "is a string".
/// Exhaustive, so it holds in full however few cases the property test runs.
#[test]
fn each_member_is_judged_by_its_own_property_schema() {
    for property in property_schemas() {
        let document = json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "n": property},
        });
        let schema = ToolSchema::compile(document).expect("a valid schema");
        assert!(schema.has_fast_path(), "{property}");
        let whole = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(schema.document())
            .expect("compiles");
        for value in argument_values() {
            for args in [json!({"n": value}), json!({"a": "x", "n": value})] {
                let Value::Object(args) = args else {
                    unreachable!()
                };
                let fast = schema.check_object("t", &Object::from_map(args.clone()));
                assert_eq!(
                    fast.is_ok(),
                    whole.is_valid(&Value::Object(args.clone())),
                    "{property} against {args:?}"
                );
            }
        }
    }
}

#[test]
fn schemas_outside_the_subset_are_decided_by_jsonschema_alone() {
    for document in [
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1}),
        json!({"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}}]}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}}),
        json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}),
        json!({"type": "object", "properties": {"a": true}}),
        json!({"type": "object", "patternProperties": {"^a": {"type": "string"}}}),
        json!({"type": "object", "additionalProperties": {"type": "string"}}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}),
    ] {
        let schema = ToolSchema::compile(document.clone()).expect("a valid schema");
        assert!(!schema.has_fast_path(), "{document}");
    }
}

#[test]
fn the_example_policies_take_the_fast_path() {
    let policy = portcullis_gateway::Policy::from_toml(
        include_str!("../../../examples/policy-20-tools.toml"),
        std::path::Path::new("examples/policy-20-tools.toml"),
    )
    .expect("the example policy loads");
    let status = policy.tool("service_status").expect("a tool");
    assert!(status.schema.has_fast_path());
}
