//! An oracle for tool schemas that apply themselves to the same value: a
//! subschema that reaches itself through `$ref`, `allOf`, `anyOf`, `oneOf`,
//! `not`, `if`/`then`/`else` or `dependentSchemas` without descending into
//! a property or an item. It reads the policy's own TOML and resolves
//! references by JSON pointer itself; it shares nothing with the loader's
//! check (which resolves through the `referencing` crate on `serde_json`
//! values).
//!
//! It models only documents whose references are plain JSON pointers into
//! the document itself: one with `$id`, `$anchor`, `$dynamicAnchor`,
//! `$dynamicRef`, `$recursiveRef`, or a reference it cannot follow, is
//! [`Loops::Unknown`].

use std::collections::{BTreeMap, BTreeSet};

use toml::Value;

/// What the oracle can say about a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loops {
    /// No subschema reaches itself on the same value.
    None,
    /// One loop, as the JSON pointers along it (the first again at the end).
    Found(Vec<String>),
    /// The document uses what the oracle does not model.
    Unknown,
}

/// Keywords that change how references resolve, or resolve dynamically.
const UNMODELED: [&str; 5] = [
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$dynamicRef",
    "$recursiveRef",
];

/// JSON Schema 2020-12's subschema positions: one schema, a list, a map.
const ONE: [&str; 11] = [
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
];
const LIST: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
const MAP: [&str; 5] = [
    "$defs",
    "definitions",
    "dependentSchemas",
    "patternProperties",
    "properties",
];

/// Where an applicator applies its subschemas to the value it is applied to.
const SAME_VALUE_ONE: [&str; 4] = ["not", "if", "then", "else"];
const SAME_VALUE_LIST: [&str; 3] = ["allOf", "anyOf", "oneOf"];

/// Judge `schema` (a tool's `input_schema` as TOML).
pub fn same_value_loops(schema: &Value) -> Loops {
    let mut subschemas = Vec::new();
    collect(schema, String::new(), &mut subschemas);
    if subschemas.iter().any(|(_, s)| uses_unmodeled(s)) {
        return Loops::Unknown;
    }
    // Edges by pointer: the schema at each end, as the pointer it sits at.
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut pending: Vec<String> = subschemas.iter().map(|(at, _)| at.clone()).collect();
    let mut seen = BTreeSet::new();
    while let Some(at) = pending.pop() {
        if !seen.insert(at.clone()) {
            continue;
        }
        let Some(node) = resolve(schema, &at) else {
            return Loops::Unknown;
        };
        let mut out = Vec::new();
        if let Value::Table(table) = node {
            for key in SAME_VALUE_ONE {
                if table.contains_key(key) {
                    out.push(format!("{at}/{key}"));
                }
            }
            for key in SAME_VALUE_LIST {
                if let Some(Value::Array(items)) = table.get(key) {
                    out.extend((0..items.len()).map(|i| format!("{at}/{key}/{i}")));
                }
            }
            if let Some(Value::Table(map)) = table.get("dependentSchemas") {
                out.extend(
                    map.keys()
                        .map(|k| format!("{at}/dependentSchemas/{}", escape(k))),
                );
            }
            if let Some(reference) = table.get("$ref") {
                let Some(target) = reference.as_str().and_then(pointer_of) else {
                    return Loops::Unknown;
                };
                if resolve(schema, &target).is_none() {
                    return Loops::Unknown;
                }
                out.push(target);
            }
        }
        pending.extend(out.iter().cloned());
        edges.insert(at, out);
    }
    match find_cycle(&edges) {
        Some(found) => Loops::Found(found.into_iter().map(|at| format!("#{at}")).collect()),
        None => Loops::None,
    }
}

fn uses_unmodeled(schema: &Value) -> bool {
    schema
        .as_table()
        .is_some_and(|t| UNMODELED.iter().any(|k| t.contains_key(*k)))
}

/// Every subschema position below (and including) `schema`.
fn collect<'v>(schema: &'v Value, at: String, out: &mut Vec<(String, &'v Value)>) {
    if let Value::Table(table) = schema {
        for (key, value) in table {
            let here = format!("{at}/{}", escape(key));
            if ONE.contains(&key.as_str()) {
                collect(value, here, out);
            } else if LIST.contains(&key.as_str()) {
                if let Value::Array(items) = value {
                    for (i, item) in items.iter().enumerate() {
                        collect(item, format!("{here}/{i}"), out);
                    }
                }
            } else if MAP.contains(&key.as_str())
                && let Value::Table(map) = value
            {
                for (name, child) in map {
                    collect(child, format!("{here}/{}", escape(name)), out);
                }
            }
        }
    }
    out.push((at, schema));
}

/// The JSON pointer a same-document reference names, if it is one.
fn pointer_of(reference: &str) -> Option<String> {
    let fragment =
        reference
            .strip_prefix('#')
            .or(if reference.is_empty() { Some("") } else { None })?;
    if fragment.contains('%') || !(fragment.is_empty() || fragment.starts_with('/')) {
        return None;
    }
    Some(fragment.to_owned())
}

/// The value at JSON pointer `at` (RFC 6901).
fn resolve<'v>(root: &'v Value, at: &str) -> Option<&'v Value> {
    if at.is_empty() {
        return Some(root);
    }
    let mut here = root;
    for raw in at.strip_prefix('/')?.split('/') {
        if raw
            .split('~')
            .skip(1)
            .any(|rest| !rest.starts_with(['0', '1']))
        {
            return None;
        }
        let segment = raw.replace("~1", "/").replace("~0", "~");
        here = match here {
            Value::Table(table) => table.get(&segment)?,
            Value::Array(items) => {
                if segment.len() > 1 && segment.starts_with('0') {
                    return None;
                }
                items.get(segment.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(here)
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// A cycle in `edges`, as its nodes with the first repeated at the end.
fn find_cycle(edges: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(from) = path.iter().position(|p| p == node) {
            let mut cycle = path[from..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|start| visit(start, edges, &mut Vec::new(), &mut done))
}
