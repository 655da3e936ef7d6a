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
//! jsonschema, which refuses it. The check is linear in the schema's size
//! (a wrapped server's schemas are untrusted input): each schema is entered
//! once, and every `$dynamicRef` of a name reaches that name's anchors
//! through one shared hub.

use std::collections::HashMap;

use referencing::{Draft, Registry, Resolver, uri};
use serde_json::Value;

/// How the refusal of such a schema begins, for whoever must recognise it.
pub const SELF_APPLICATION: &str = "applies itself to the same value without end";

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
    match Graph::of(document, registry.resolver(base)).find_loop() {
        Some(path) => Err(format!(
            "{SELF_APPLICATION} ({path}): a schema that reaches \
             itself through $ref, allOf, anyOf, oneOf, not, if/then/else or dependentSchemas \
             before descending into a property or an item never finishes (JSON Schema 2020-12 \
             leaves it undefined)"
        )),
        None => Ok(()),
    }
}

/// A schema of the document (or one a reference reaches outside its
/// subschema positions), or the hub of one `$dynamicAnchor` name.
struct Node<'r> {
    kind: Kind<'r>,
    /// The schema it sits in, for its location; `None` for the root and
    /// for what only a reference reaches.
    parent: Option<usize>,
}

enum Kind<'r> {
    Schema {
        value: &'r Value,
        resolver: Resolver<'r>,
        /// How to name it when it has no parent.
        label: Option<String>,
    },
    Anchors(&'r str),
}

struct Graph<'r> {
    nodes: Vec<Node<'r>>,
    by_value: HashMap<*const Value, usize>,
    /// Schemas with a `$dynamicAnchor`, by name; each name's hub, once made.
    anchors: HashMap<&'r str, Vec<usize>>,
    hubs: HashMap<&'r str, usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Open,
    Done,
}

/// A node being followed: its same-value edges (target and keyword) and
/// the next one to try.
struct Frame {
    node: usize,
    edges: Vec<(usize, &'static str)>,
    next: usize,
}

impl<'r> Graph<'r> {
    /// Every subschema of `root`, each with the resolver of its position.
    fn of(root: &'r Value, resolver: Resolver<'r>) -> Self {
        let mut graph = Graph {
            nodes: Vec::new(),
            by_value: HashMap::new(),
            anchors: HashMap::new(),
            hubs: HashMap::new(),
        };
        let mut pending = vec![(root, resolver, None)];
        while let Some((value, resolver, parent)) = pending.pop() {
            if graph.by_value.contains_key(&std::ptr::from_ref(value)) {
                continue;
            }
            let index = graph.add(value, resolver.clone(), parent, None);
            // Reversed onto the stack, so the walk (and the loop reported
            // first) follows the document's order.
            let children: Vec<&Value> = DRAFT.subresources_of(value).collect();
            for child in children.into_iter().rev() {
                if let Ok(inner) = resolver.in_subresource(DRAFT.create_resource_ref(child)) {
                    pending.push((child, inner, Some(index)));
                }
            }
        }
        graph
    }

    fn add(
        &mut self,
        value: &'r Value,
        resolver: Resolver<'r>,
        parent: Option<usize>,
        label: Option<String>,
    ) -> usize {
        let index = self.nodes.len();
        self.by_value.insert(std::ptr::from_ref(value), index);
        if let Some(name) = value.get("$dynamicAnchor").and_then(Value::as_str) {
            self.anchors.entry(name).or_default().push(index);
        }
        self.nodes.push(Node {
            kind: Kind::Schema {
                value,
                resolver,
                label,
            },
            parent,
        });
        index
    }

    /// The first loop found, as the locations along it and the keywords
    /// between them.
    fn find_loop(mut self) -> Option<String> {
        let mut marks: Vec<Option<Mark>> = Vec::new();
        // Nodes are added as references reach them, so the bound moves.
        let mut start = 0;
        while start < self.nodes.len() {
            if marks.get(start).copied().flatten().is_some() {
                start += 1;
                continue;
            }
            let mut stack = vec![self.enter(start, &mut marks)];
            while let Some(top) = stack.last_mut() {
                let Some(&(target, via)) = top.edges.get(top.next) else {
                    marks[top.node] = Some(Mark::Done);
                    stack.pop();
                    continue;
                };
                top.next += 1;
                match marks.get(target).copied().flatten() {
                    Some(Mark::Done) => {}
                    Some(Mark::Open) => return Some(self.describe(&stack, target, via)),
                    None => {
                        let frame = self.enter(target, &mut marks);
                        stack.push(frame);
                    }
                }
            }
        }
        None
    }

    fn enter(&mut self, node: usize, marks: &mut Vec<Option<Mark>>) -> Frame {
        let edges = self.same_value_edges(node);
        // The edges may have added nodes; marks only ever grow with them.
        marks.resize(self.nodes.len(), None);
        marks[node] = Some(Mark::Open);
        Frame {
            node,
            edges,
            next: 0,
        }
    }

    /// The nodes `node` applies to the value it is applied to, and the
    /// keyword that does.
    fn same_value_edges(&mut self, node: usize) -> Vec<(usize, &'static str)> {
        let (value, resolver) = match &self.nodes[node].kind {
            Kind::Anchors(name) => {
                let targets = self.anchors.get(name).into_iter().flatten();
                return targets.map(|&t| (t, "$dynamicRef")).collect();
            }
            Kind::Schema {
                value, resolver, ..
            } => (*value, resolver.clone()),
        };
        let Value::Object(schema) = value else {
            return Vec::new();
        };
        let mut children: Vec<(&'r Value, &'static str)> = Vec::new();
        for key in SAME_VALUE_LISTS {
            if let Some(Value::Array(list)) = schema.get(key) {
                children.extend(list.iter().map(|v| (v, key)));
            }
        }
        for key in SAME_VALUE_SINGLE {
            if let Some(v) = schema.get(key) {
                children.push((v, key));
            }
        }
        if let Some(Value::Object(map)) = schema.get("dependentSchemas") {
            children.extend(map.values().map(|v| (v, "dependentSchemas")));
        }
        let mut out = Vec::new();
        for (child, via) in children {
            let index = match self.by_value.get(&std::ptr::from_ref(child)) {
                Some(&index) => index,
                // Below a schema only a reference reaches.
                None => match resolver.in_subresource(DRAFT.create_resource_ref(child)) {
                    Ok(inner) => self.add(child, inner, Some(node), None),
                    Err(_) => continue,
                },
            };
            out.push((index, via));
        }
        for key in SAME_VALUE_REFS {
            let Some(Value::String(reference)) = schema.get(key) else {
                continue;
            };
            if let Ok(resolved) = resolver.lookup(reference) {
                let (target, target_resolver, _) = resolved.into_inner();
                let index = match self.by_value.get(&std::ptr::from_ref(target)) {
                    Some(&index) => index,
                    // Named by the reference as written.
                    None => self.add(target, target_resolver, None, Some(reference.clone())),
                };
                out.push((index, key));
            }
            if key == "$dynamicRef" {
                // The dynamic scope decides which `$dynamicAnchor` of that
                // name answers, so every one of them may.
                let name = reference.rsplit_once('#').map_or("", |(_, name)| name);
                if let Some((&name, _)) = self.anchors.get_key_value(name) {
                    out.push((self.hub(name), key));
                }
            }
        }
        out
    }

    fn hub(&mut self, name: &'r str) -> usize {
        if let Some(&hub) = self.hubs.get(name) {
            return hub;
        }
        let hub = self.nodes.len();
        self.nodes.push(Node {
            kind: Kind::Anchors(name),
            parent: None,
        });
        self.hubs.insert(name, hub);
        hub
    }

    /// The loop closed by the edge `via` from the top of `stack` back to
    /// `target`, starting at a schema (hubs are left out: the keyword into
    /// the anchor after one is `$dynamicRef` all the same).
    fn describe(&self, stack: &[Frame], target: usize, via: &'static str) -> String {
        let from = stack
            .iter()
            .position(|f| f.node == target)
            .expect("an open node is on the stack");
        // Each node of the loop with the keyword that reached it.
        let mut steps: Vec<(usize, &'static str)> = vec![(target, via)];
        for pair in stack[from..].windows(2) {
            let (_, into) = pair[0].edges[pair[0].next - 1];
            steps.push((pair[1].node, into));
        }
        steps.retain(|&(node, _)| matches!(self.nodes[node].kind, Kind::Schema { .. }));
        let Some(&(first, closing)) = steps.first() else {
            return String::new();
        };
        let mut path = self.location(first);
        for &(node, into) in &steps[1..] {
            path.push_str(&format!(" -{into}-> {}", self.location(node)));
        }
        path.push_str(&format!(" -{closing}-> {}", self.location(first)));
        path
    }

    /// Where `node` sits, as a JSON pointer fragment.
    fn location(&self, node: usize) -> String {
        let mut chain = vec![node];
        while let Some(parent) = self.nodes[*chain.last().expect("not empty")].parent {
            chain.push(parent);
        }
        let top = *chain.last().expect("not empty");
        let mut at = match &self.nodes[top].kind {
            Kind::Schema {
                label: Some(label), ..
            } => label.clone(),
            Kind::Anchors(name) => format!("$dynamicAnchor {name:?}"),
            Kind::Schema { label: None, .. } => "#".to_owned(),
        };
        for pair in chain.windows(2).rev() {
            if let (Kind::Schema { value: child, .. }, Kind::Schema { value: parent, .. }) =
                (&self.nodes[pair[0]].kind, &self.nodes[pair[1]].kind)
            {
                at.push_str(&locate(parent, child));
            }
        }
        at
    }
}

/// The JSON pointer suffix from `parent` to `child`, one of its values or a
/// value inside one of its arrays or objects.
pub(super) fn locate(parent: &Value, child: &Value) -> String {
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
