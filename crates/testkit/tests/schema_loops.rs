//! The schema-loop oracle against the compiler: on small generated schemas
//! that refer to themselves in every way (same-value applicators and
//! descending ones, references to the root, to definitions, to branches),
//! the compiler refuses a schema as applying itself to the same value
//! exactly when the oracle (its own TOML reading and JSON-pointer
//! resolution) finds a loop. The oracle itself is pinned on known cases
//! first, so a weakened oracle fails here rather than agreeing with a
//! weakened compiler.

use portcullis_gateway::schema::{SELF_APPLICATION, ToolSchema};
use portcullis_testkit::schema_loops::{Loops, same_value_loops};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Map, Value, json};

fn oracle(schema: &Value) -> Loops {
    same_value_loops(&toml::Value::try_from(schema).expect("JSON without nulls is TOML"))
}

#[test]
fn the_oracle_finds_known_loops_and_only_those() {
    let found = |schema: Value, want: &[&str]| {
        assert_eq!(
            oracle(&schema),
            Loops::Found(want.iter().map(|s| (*s).to_owned()).collect()),
            "{schema}"
        );
    };
    found(json!({"type": "object", "$ref": ""}), &["#", "#"]);
    found(
        json!({"type": "object", "not": {"$ref": "#"}}),
        &["#", "#/not", "#"],
    );
    found(
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}}),
        &["#/$defs/a", "#/$defs/b", "#/$defs/b/anyOf/0", "#/$defs/a"],
    );
    found(
        json!({"dependentSchemas": {"k/~": {"$ref": "#/dependentSchemas/k~1~0"}}}),
        &["#/dependentSchemas/k~1~0", "#/dependentSchemas/k~1~0"],
    );
    for sound in [
        json!({"type": "object", "properties": {"a": {"$ref": "#"}}}),
        json!({"items": {"$ref": "#"}, "allOf": [{"properties": {"x": {"$ref": "#/allOf/0"}}}]}),
        json!({"additionalProperties": {"$ref": "#"}, "if": {"$ref": "#/$defs/a"}, "$defs": {"a": {}}}),
        json!({"const": {"$ref": "#"}, "enum": [{"allOf": [{"$ref": "#"}]}]}),
    ] {
        assert_eq!(oracle(&sound), Loops::None, "{sound}");
    }
    for unmodeled in [
        json!({"$id": "https://x.test/", "$ref": "#"}),
        json!({"$defs": {"a": {"$anchor": "A"}}, "$ref": "#A"}),
        json!({"$ref": "other.json"}),
        json!({"$ref": "#/$defs/a%20b"}),
        json!({"$ref": "#/nowhere"}),
        json!({"$dynamicAnchor": "n", "allOf": [{"$dynamicRef": "#n"}]}),
    ] {
        assert_eq!(oracle(&unmodeled), Loops::Unknown, "{unmodeled}");
    }
}

/// References into every kind of position of the generated documents.
const TARGETS: [&str; 10] = [
    "",
    "#",
    "#/$defs/a",
    "#/$defs/b",
    "#/$defs/a/allOf/0",
    "#/properties/p",
    "#/items",
    "#/not",
    "#/then",
    "#/dependentSchemas/p",
];

fn subschema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        3 => Just(json!({})),
        3 => Just(json!({"type": "string"})),
        1 => proptest::sample::select(&TARGETS[..]).prop_map(|t| json!({"$ref": t})),
    ];
    leaf.prop_recursive(3, 24, 3, |inner| {
        (
            proptest::collection::vec(
                (
                    proptest::sample::select(
                        &[
                            "allOf",
                            "anyOf",
                            "oneOf",
                            "not",
                            "if",
                            "then",
                            "else",
                            "dependentSchemas",
                            "properties",
                            "items",
                            "additionalProperties",
                            "$ref",
                        ][..],
                    ),
                    inner,
                ),
                1..4,
            ),
            proptest::sample::select(&TARGETS[..]),
        )
            .prop_map(|(members, target)| Value::Object(schema_of(members, target)))
    })
}

/// One schema object from chosen keywords, each holding `sub` in the shape
/// that keyword takes.
fn schema_of(members: Vec<(&str, Value)>, target: &str) -> Map<String, Value> {
    let mut out = Map::new();
    for (keyword, sub) in members {
        let value = match keyword {
            "allOf" | "anyOf" | "oneOf" => json!([sub]),
            "dependentSchemas" | "properties" => json!({"p": sub}),
            "$ref" => json!(target),
            _ => sub,
        };
        out.insert(keyword.to_owned(), value);
    }
    out
}

/// A root whose every position a reference names exists, each holding a
/// generated subschema (so few references fail to resolve).
fn document() -> impl Strategy<Value = Value> {
    (subschema(), proptest::collection::vec(subschema(), 7)).prop_map(|(root, subs)| {
        let mut root = match root {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let [p, items, not, then, dependent, a0, b] =
            <[Value; 7]>::try_from(subs).expect("seven subschemas");
        let a = match a0.clone() {
            Value::Object(mut a) => {
                a.insert("allOf".into(), json!([a0]));
                Value::Object(a)
            }
            _ => json!({"allOf": [a0]}),
        };
        root.insert("type".into(), json!("object"));
        root.insert("properties".into(), json!({"p": p}));
        root.insert("items".into(), items);
        root.insert("not".into(), not);
        root.insert("then".into(), then);
        root.insert("dependentSchemas".into(), json!({"p": dependent}));
        root.insert("$defs".into(), json!({"a": a, "b": b}));
        Value::Object(root)
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/schema_loops.txt"
        )))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_compiler_refuses_a_loop_exactly_when_the_oracle_finds_one(schema in document()) {
        let verdict = ToolSchema::compile(schema.clone()).map(drop);
        let refused_as_loop = verdict.as_ref().is_err_and(|why| why.starts_with(SELF_APPLICATION));
        match oracle(&schema) {
            Loops::Found(path) => prop_assert!(
                refused_as_loop,
                "the oracle finds {path:?}, the compiler says {verdict:?}: {schema}"
            ),
            Loops::None => prop_assert!(
                !refused_as_loop,
                "the oracle finds no loop, the compiler says {verdict:?}: {schema}"
            ),
            Loops::Unknown => {}
        }
    }
}
