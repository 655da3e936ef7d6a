//! Replay harness for nested schema closure (issue 8 defect 5).
//!
//! Input: one JSON document `{"schema": S, "arguments": A}`. The oracle
//! shares nothing with the gateway's closure code: it reads the raw schema
//! document, and when the author never opened an object (no
//! `additionalProperties`, `unevaluatedProperties` or `patternProperties`
//! anywhere, and every object schema names its properties), any member name
//! in the arguments, at any depth, that the document never names as a
//! property must make the call fail.

use std::collections::BTreeSet;

use portcullis_gateway::schema::ToolSchema;
use serde_json::Value;

/// Panics when the compiled schema lets an unnamed member through.
pub fn schema_closure(data: &[u8]) {
    let Ok(Value::Object(mut doc)) = serde_json::from_slice::<Value>(data) else {
        panic!("a schema_closure input is {{\"schema\": ..., \"arguments\": {{...}}}}");
    };
    let (Some(schema), Some(Value::Object(arguments))) =
        (doc.remove("schema"), doc.remove("arguments"))
    else {
        panic!("a schema_closure input needs `schema` and an object `arguments`");
    };
    let Some(named) = closed_names(&schema) else {
        panic!("the schema opens an object explicitly, so the oracle cannot judge it");
    };
    let mut unnamed = Vec::new();
    member_names(&Value::Object(arguments.clone()), &mut |key| {
        if !named.contains(key) {
            unnamed.push(key.to_owned());
        }
    });
    let compiled = ToolSchema::compile(schema).expect("the schema compiles");
    let verdict = compiled.check("t", arguments);
    if !unnamed.is_empty() {
        assert!(
            verdict.is_err(),
            "members {unnamed:?} are named nowhere in the schema, yet the call passed"
        );
    }
}

/// Every property name the document declares, or `None` when the author
/// opened some object on purpose.
fn closed_names(schema: &Value) -> Option<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    let mut open = false;
    walk(schema, &mut |node| {
        let Value::Object(map) = node else { return };
        for key in [
            "additionalProperties",
            "unevaluatedProperties",
            "patternProperties",
        ] {
            open |= map.contains_key(key);
        }
        let is_object = map.get("type") == Some(&Value::String("object".into()));
        match map.get("properties") {
            Some(Value::Object(props)) => names.extend(props.keys().cloned()),
            _ if is_object => open = true,
            _ => {}
        }
    });
    (!open).then_some(names)
}

fn walk(value: &Value, visit: &mut impl FnMut(&Value)) {
    visit(value);
    match value {
        Value::Object(map) => map.values().for_each(|v| walk(v, visit)),
        Value::Array(items) => items.iter().for_each(|v| walk(v, visit)),
        _ => {}
    }
}

fn member_names(value: &Value, visit: &mut impl FnMut(&str)) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                visit(key);
                member_names(v, visit);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| member_names(v, visit)),
        _ => {}
    }
}
