//! Schemas that apply themselves to the same value.
//!
//! A schema that reaches itself through applicators that stay on the same
//! value (`$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
//! `dependentSchemas`, `$dynamicRef`) without descending into a property or
//! an item never finishes on any value; JSON Schema 2020-12 (§9.4.1) leaves
//! it undefined. jsonschema 0.61 compiles one under `unevaluatedProperties`
//! or `unevaluatedItems` — which the closure adds to every root that
//! composes — into a reference-counted cycle that is never freed: memory
//! lost on every load, and on every `tools/list` a wrapped server sends. So
//! such a schema is refused before jsonschema compiles it.
//!
//! References are resolved by `referencing`, the resolver jsonschema itself
//! uses, on the same base URI, so a loop is found exactly where jsonschema
//! would follow one. A reference that does not resolve is left to
//! jsonschema, which refuses it.

use std::collections::HashMap;

use referencing::{Draft, Registry, Resolver, uri};
use serde_json::Value;

const DRAFT: Draft = Draft::Draft202012;
/// jsonschema's base URI for a schema without `$id`.
const DEFAULT_BASE: &str = "json-schema:///";

/// Applicators whose subschemas apply to the value their schema applies to.
const SAME_VALUE_LISTS: [&str; 3] = ["allOf", "anyOf", "oneOf"];
const SAME_VALUE_SINGLE: [&str; 4] = ["not", "if", "then", "else"];
const SAME_VALUE_REFS: [&str; 3] = ["$ref", "$dynamicRef", "$recursiveRef"];

/// Refuse `document` if one of its subschemas reaches itself on the same
/// value; the message shows the loop as JSON pointers.
pub(super) fn refuse_loops(document: &Value) -> Result<(), String> {
    let resource = DRAFT.create_resource_ref(document);
    let base = match resource.id() {
        Some(id) => uri::from_str(id),
        None => uri::from_str(DEFAULT_BASE),
    };
    let Ok(base) = base else { return Ok(()) };
    let Ok(registry) = Registry::new()
        .draft(DRAFT)
        .add(base.as_str(), resource)
        .and_then(|builder| builder.prepare())
    else {
        // jsonschema builds the same registry and refuses the schema.
        return Ok(());
    };
    let walk = Walk::of(document, registry.resolver(base));
    match walk.find_loop() {
        Some(path) => Err(format!(
            "applies itself to the same value without end ({path}): a schema that reaches \
             itself through $ref, allOf, anyOf, oneOf, not, if/then/else or dependentSchemas \
             before descending into a property or an item never finishes (JSON Schema 2020-12 \
             leaves it undefined)"
        )),
        None => Ok(()),
    }
}

/// Every subschema of the document, where it is and how its references
/// resolve there.
struct Walk<'r> {
    nodes: Vec<Node<'r>>,
    index: HashMap<*const Value, usize>,
}

#[derive(Clone)]
struct Node<'r> {
    value: &'r Value,
    at: String,
    /// The keyword it was reached by.
    via: &'static str,
    resolver: Resolver<'r>,
}

/// A schema being followed: its outgoing same-value edges, the next to try.
struct Frame<'r> {
    value: &'r Value,
    at: String,
    via: &'static str,
    edges: Vec<Node<'r>>,
    next: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Open,
    Done,
}

impl<'r> Walk<'r> {
    fn of(root: &'r Value, resolver: Resolver<'r>) -> Self {
        let mut walk = Walk {
            nodes: Vec::new(),
            index: HashMap::new(),
        };
        let mut pending = vec![Node {
            value: root,
            at: "#".to_owned(),
            via: "",
            resolver,
        }];
        while let Some(node) = pending.pop() {
            if walk.index.contains_key(&std::ptr::from_ref(node.value)) {
                continue;
            }
            // Reversed onto the stack, so the walk (and the loop reported
            // first) follows the document's order.
            let children: Vec<&Value> = DRAFT.subresources_of(node.value).collect();
            for child in children.into_iter().rev() {
                let Ok(resolver) = node
                    .resolver
                    .in_subresource(DRAFT.create_resource_ref(child))
                else {
                    continue;
                };
                pending.push(Node {
                    value: child,
                    at: format!("{}{}", node.at, locate(node.value, child)),
                    via: "",
                    resolver,
                });
            }
            walk.index
                .insert(std::ptr::from_ref(node.value), walk.nodes.len());
            walk.nodes.push(node);
        }
        walk
    }

    /// The first loop found, as the locations along it and the keywords
    /// between them.
    fn find_loop(&self) -> Option<String> {
        let mut marks: HashMap<*const Value, Mark> = HashMap::new();
        for start in &self.nodes {
            if marks.contains_key(&std::ptr::from_ref(start.value)) {
                continue;
            }
            let mut stack = vec![self.enter(start, &mut marks)];
            while let Some(top) = stack.last_mut() {
                let Some(edge) = top.edges.get(top.next).cloned() else {
                    marks.insert(std::ptr::from_ref(top.value), Mark::Done);
                    stack.pop();
                    continue;
                };
                top.next += 1;
                match marks.get(&std::ptr::from_ref(edge.value)) {
                    Some(Mark::Done) => {}
                    Some(Mark::Open) => {
                        let from = stack
                            .iter()
                            .position(|f| std::ptr::eq(f.value, edge.value))
                            .expect("an open schema is on the stack");
                        let mut path = stack[from].at.clone();
                        for frame in &stack[from + 1..] {
                            path.push_str(&format!(" -{}-> {}", frame.via, frame.at));
                        }
                        path.push_str(&format!(" -{}-> {}", edge.via, stack[from].at));
                        return Some(path);
                    }
                    None => {
                        let frame = self.enter(&edge, &mut marks);
                        stack.push(frame);
                    }
                }
            }
        }
        None
    }

    fn enter(&self, node: &Node<'r>, marks: &mut HashMap<*const Value, Mark>) -> Frame<'r> {
        marks.insert(std::ptr::from_ref(node.value), Mark::Open);
        Frame {
            value: node.value,
            at: node.at.clone(),
            via: node.via,
            edges: self.same_value_edges(node),
            next: 0,
        }
    }

    /// The schemas `node` applies to the value it is applied to.
    fn same_value_edges(&self, node: &Node<'r>) -> Vec<Node<'r>> {
        let Value::Object(schema) = node.value else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut child = |via: &'static str, value: &'r Value| {
            if let Ok(resolver) = node
                .resolver
                .in_subresource(DRAFT.create_resource_ref(value))
            {
                out.push(self.known(value, via, resolver, || {
                    format!("{}{}", node.at, locate(node.value, value))
                }));
            }
        };
        for key in SAME_VALUE_LISTS {
            if let Some(Value::Array(list)) = schema.get(key) {
                list.iter().for_each(|value| child(key, value));
            }
        }
        for key in SAME_VALUE_SINGLE {
            if let Some(value) = schema.get(key) {
                child(key, value);
            }
        }
        if let Some(Value::Object(map)) = schema.get("dependentSchemas") {
            map.values()
                .for_each(|value| child("dependentSchemas", value));
        }
        for key in SAME_VALUE_REFS {
            let Some(Value::String(reference)) = schema.get(key) else {
                continue;
            };
            if let Ok(resolved) = node.resolver.lookup(reference) {
                let (target, resolver, _) = resolved.into_inner();
                out.push(self.known(target, key, resolver, || {
                    format!("the target of {key} {reference:?} at {}", node.at)
                }));
            }
            if key == "$dynamicRef" {
                // The dynamic scope decides which `$dynamicAnchor` of that
                // name answers, so every one of them may.
                let name = reference.rsplit_once('#').map_or("", |(_, name)| name);
                out.extend(
                    self.nodes
                        .iter()
                        .filter(|n| {
                            n.value.get("$dynamicAnchor").and_then(Value::as_str) == Some(name)
                        })
                        .map(|n| Node {
                            via: "$dynamicRef",
                            ..n.clone()
                        }),
                );
            }
        }
        out
    }

    /// `value` as walked (its location and resolver), or as reached when it
    /// lies outside the walk (a reference into a non-schema position).
    fn known(
        &self,
        value: &'r Value,
        via: &'static str,
        resolver: Resolver<'r>,
        at: impl FnOnce() -> String,
    ) -> Node<'r> {
        match self.index.get(&std::ptr::from_ref(value)) {
            Some(&i) => Node {
                value,
                at: self.nodes[i].at.clone(),
                via,
                resolver: self.nodes[i].resolver.clone(),
            },
            None => Node {
                value,
                at: at(),
                via,
                resolver,
            },
        }
    }
}

/// The JSON pointer suffix from `parent` to `child`, one of its values or a
/// value inside one of its arrays or objects.
fn locate(parent: &Value, child: &Value) -> String {
    let Value::Object(map) = parent else {
        return String::new();
    };
    for (key, value) in map {
        if std::ptr::eq(value, child) {
            return format!("/{}", escape(key));
        }
        match value {
            Value::Array(items) => {
                if let Some(i) = items.iter().position(|v| std::ptr::eq(v, child)) {
                    return format!("/{}/{i}", escape(key));
                }
            }
            Value::Object(members) => {
                if let Some((name, _)) = members.iter().find(|(_, v)| std::ptr::eq(*v, child)) {
                    return format!("/{}/{}", escape(key), escape(name));
                }
            }
            _ => {}
        }
    }
    String::new()
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}
