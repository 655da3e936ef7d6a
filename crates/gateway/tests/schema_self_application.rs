//! A tool schema that applies itself to the same value (through `$ref`,
//! `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`
//! or `$dynamicRef`, before descending into a property or an item) is
//! refused at load with the loop as JSON pointers. A schema that recurses
//! through properties or items is an ordinary recursive schema: it loads and
//! checks values at every depth.

use std::path::Path;

use portcullis_gateway::Policy;
use portcullis_gateway::schema::ToolSchema;
use serde_json::{Value, json};

const SELF_APPLICATION: &str = "applies itself to the same value without end (";

fn loop_of(schema: Value) -> String {
    let why = ToolSchema::compile(schema.clone())
        .map(drop)
        .expect_err(&format!("must be refused: {schema}"));
    let rest = why
        .strip_prefix(SELF_APPLICATION)
        .unwrap_or_else(|| panic!("not refused as a loop: {why}"));
    rest[..rest.find("): ").expect("the loop is closed")].to_owned()
}

#[test]
fn a_reference_to_its_own_root_is_refused_with_the_loop() {
    // The fuzz find: `$ref = ""` (the document itself); `#` is the same.
    for reference in ["", "#"] {
        let schema = json!({"type": "object", "$ref": reference});
        assert_eq!(loop_of(schema), "# -$ref-> #");
    }
}

#[test]
fn every_same_value_applicator_closes_a_loop() {
    let cases = [
        (
            json!({"type": "object", "allOf": [{"$ref": "#"}]}),
            "# -allOf-> #/allOf/0 -$ref-> #",
        ),
        (
            json!({"type": "object", "anyOf": [{"type": "object"}, {"$ref": "#"}]}),
            "# -anyOf-> #/anyOf/1 -$ref-> #",
        ),
        (
            json!({"type": "object", "oneOf": [{"$ref": "#"}]}),
            "# -oneOf-> #/oneOf/0 -$ref-> #",
        ),
        (
            json!({"type": "object", "not": {"$ref": "#"}}),
            "# -not-> #/not -$ref-> #",
        ),
        (
            json!({"type": "object", "if": {"$ref": "#"}}),
            "# -if-> #/if -$ref-> #",
        ),
        (
            json!({"type": "object", "if": true, "then": {"$ref": "#"}}),
            "# -then-> #/then -$ref-> #",
        ),
        (
            json!({"type": "object", "if": false, "else": {"$ref": "#"}}),
            "# -else-> #/else -$ref-> #",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}},
                   "dependentSchemas": {"a": {"$ref": "#"}}}),
            "# -dependentSchemas-> #/dependentSchemas/a -$ref-> #",
        ),
        (
            json!({"type": "object", "$dynamicAnchor": "node",
                   "allOf": [{"$dynamicRef": "#node"}]}),
            "# -allOf-> #/allOf/0 -$dynamicRef-> #",
        ),
    ];
    for (schema, want) in cases {
        assert_eq!(loop_of(schema.clone()), want, "{schema}");
    }
}

#[test]
fn a_loop_between_definitions_is_found_wherever_it_sits() {
    // Two definitions that refer to each other, neither reached from the
    // root: jsonschema would still build them.
    let schema = json!({
        "type": "object",
        "$defs": {
            "a": {"allOf": [{"$ref": "#/$defs/b"}]},
            "b": {"$ref": "#/$defs/a"},
        },
    });
    assert_eq!(
        loop_of(schema),
        "#/$defs/a -allOf-> #/$defs/a/allOf/0 -$ref-> #/$defs/b -$ref-> #/$defs/a"
    );
    // Under a property, by anchor, and by a relative reference resolved
    // against a nested `$id`: resolved as jsonschema resolves them.
    let cases = [
        (
            json!({"type": "object", "properties": {"x": {
                "type": "object", "allOf": [{"$ref": "#/properties/x"}]}}}),
            "#/properties/x -allOf-> #/properties/x/allOf/0 -$ref-> #/properties/x",
        ),
        (
            json!({"type": "object",
                   "$defs": {"a": {"$anchor": "A", "anyOf": [{"$ref": "#A"}]}}}),
            "#/$defs/a -anyOf-> #/$defs/a/anyOf/0 -$ref-> #/$defs/a",
        ),
        (
            json!({"$id": "https://example.test/root", "type": "object",
                   "$defs": {"a": {"$id": "inner", "allOf": [{"$ref": "inner"}]}}}),
            "#/$defs/a -allOf-> #/$defs/a/allOf/0 -$ref-> #/$defs/a",
        ),
        (
            json!({"type": "object", "$defs": {"a~/b": {"not": {"$ref": "#/$defs/a~0~1b"}}}}),
            "#/$defs/a~0~1b -not-> #/$defs/a~0~1b/not -$ref-> #/$defs/a~0~1b",
        ),
    ];
    for (schema, want) in cases {
        assert_eq!(loop_of(schema.clone()), want, "{schema}");
    }
}

#[test]
fn a_dynamic_reference_may_reach_any_anchor_of_its_name() {
    // Statically `#n` in `list` is its harmless `leaf`; entered from the
    // root, whose `$dynamicAnchor` is the outermost, it is the root again.
    let schema = json!({
        "$id": "https://t.test/r",
        "type": "object",
        "$dynamicAnchor": "n",
        "allOf": [{"$ref": "list"}],
        "$defs": {"list": {
            "$id": "list",
            "$defs": {"leaf": {"$dynamicAnchor": "n"}},
            "anyOf": [{"$dynamicRef": "#n"}],
        }},
    });
    assert_eq!(
        loop_of(schema),
        "# -allOf-> #/allOf/0 -$ref-> #/$defs/list -anyOf-> #/$defs/list/anyOf/0 \
         -$dynamicRef-> #"
    );
    // The same with the answering anchor away from the root.
    let schema = json!({
        "type": "object",
        "$defs": {
            "outer": {"$id": "outer", "$dynamicAnchor": "n", "allOf": [{"$ref": "list"}]},
            "list": {
                "$id": "list",
                "$defs": {"leaf": {"$dynamicAnchor": "n"}},
                "anyOf": [{"$dynamicRef": "#n"}],
            },
        },
    });
    assert_eq!(
        loop_of(schema),
        "#/$defs/list -anyOf-> #/$defs/list/anyOf/0 -$dynamicRef-> #/$defs/outer -allOf-> \
         #/$defs/outer/allOf/0 -$ref-> #/$defs/list"
    );
}

#[test]
fn a_loop_through_a_value_no_keyword_makes_a_schema_is_found() {
    // `x-shared` is not a keyword: only the references make it a schema,
    // and its own branch is followed all the same.
    let schema = json!({
        "type": "object",
        "x-shared": {"anyOf": [{"$ref": "#/x-shared"}]},
        "$ref": "#/x-shared",
    });
    assert_eq!(
        loop_of(schema),
        "#/x-shared -anyOf-> #/x-shared/anyOf/0 -$ref-> #/x-shared"
    );
}

fn accepts(schema: &ToolSchema, args: Value) -> bool {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    schema.check("t", args).is_ok()
}

#[test]
fn a_schema_recursing_through_properties_or_items_loads_and_checks_every_depth() {
    // A binary tree: each node has at most one of `l` / `r` besides `v`,
    // whose `oneOf` composes (so the node is closed by unevaluatedProperties).
    let tree = ToolSchema::compile(json!({
        "type": "object",
        "required": ["root"],
        "properties": {"root": {"$ref": "#/$defs/node"}},
        "$defs": {"node": {
            "type": "object",
            "required": ["v"],
            "properties": {
                "v": {"type": "integer"},
                "l": {"$ref": "#/$defs/node"},
                "r": {"$ref": "#/$defs/node"},
            },
            "oneOf": [{"required": ["l"]}, {"required": ["r"]}, {"maxProperties": 1}],
        }},
    }))
    .expect("a recursive schema loads");
    assert!(accepts(
        &tree,
        json!({"root": {"v": 1, "l": {"v": 2, "r": {"v": 3}}}})
    ));
    // Wrong at depth three, an unknown member at depth two, both children.
    assert!(!accepts(
        &tree,
        json!({"root": {"v": 1, "l": {"v": 2, "r": {"v": "3"}}}})
    ));
    assert!(!accepts(
        &tree,
        json!({"root": {"v": 1, "l": {"v": 2, "extra": 0}}})
    ));
    assert!(!accepts(
        &tree,
        json!({"root": {"v": 1, "l": {"v": 2}, "r": {"v": 3}}})
    ));

    // Recursion through items by `$dynamicRef`, and through the root.
    let lists = ToolSchema::compile(json!({
        "type": "object",
        "$dynamicAnchor": "node",
        "properties": {"kids": {"type": "array", "items": {"$dynamicRef": "#node"}}},
    }))
    .expect("recursion through items loads");
    assert!(accepts(&lists, json!({"kids": [{"kids": [{}]}]})));
    assert!(!accepts(&lists, json!({"kids": [{"kids": [{"x": 1}]}]})));
    let root = ToolSchema::compile(json!({
        "type": "object",
        "properties": {"a": {"$ref": "#"}},
        "allOf": [{"properties": {"b": {"$ref": "#"}}}],
    }))
    .expect("recursion to the root through properties loads");
    assert!(accepts(&root, json!({"a": {"b": {"a": {}}}})));
    assert!(!accepts(&root, json!({"a": {"b": {"c": {}}}})));
}

#[test]
fn a_policy_with_a_looping_schema_is_refused_at_its_field() {
    let text = "[server]\nname = \"g\"\n[[tools]]\nname = \"t\"\n\
                [tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:1/x\"\n\
                allow = [\"127.0.0.1:1\"]\n\
                [tools.input_schema]\ntype = \"object\"\n\"$ref\" = \"\"\n";
    let err = Policy::from_toml(text, Path::new("p.toml")).expect_err("must be refused");
    let shown = err.to_string();
    assert!(shown.starts_with("p.toml:"), "{shown}");
    assert!(shown.contains("tools.input_schema"), "{shown}");
    assert!(
        shown.contains("applies itself to the same value without end (# -$ref-> #)"),
        "{shown}"
    );
}
