//! `schema_nesting`: tool input schemas that nest object schemas wherever
//! JSON Schema 2020-12 lets them sit, each generated together with an
//! instance it accepts, through the gateway's schema compiler and check.
//!
//! The property is the closure rule of docs/boundary.md: the instance passes, and the
//! same instance with one member the schema never names (`zz`) added to
//! any object that a closed schema describes fails. Object schemas are
//! nested under `properties`, `items`, `prefixItems`, an
//! `additionalProperties` schema, `$defs` (through `$ref`) and the
//! branches of `allOf`, `anyOf`, `oneOf` and `if`/`then`; an author's
//! explicit `additionalProperties: true` keeps its object open. The oracle
//! knows which objects are closed from how it built them, not from the
//! gateway's closure code.
//!
//! Unlike the `schema_closure` replay harness (hand-written recipes),
//! every byte string is a case: bytes pick the shape (missing bytes read as
//! zero), so libFuzzer explores shapes rather than JSON syntax.

use arbitrary::Unstructured;
use portcullis_gateway::schema::ToolSchema;
use serde_json::{Map, Value, json};

/// The member no generated schema names.
const UNNAMED: &str = "zz";
/// Deepest nesting of generated schemas.
const MAX_DEPTH: usize = 4;
/// Most schema nodes in one case.
const MAX_NODES: usize = 24;

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// A schema, an instance it accepts, and the paths of the instance's
/// objects that the schema closes.
struct Node {
    schema: Value,
    instance: Value,
    closed: Vec<Vec<Step>>,
}

impl Node {
    fn leaf(schema: Value, instance: Value) -> Self {
        Self {
            schema,
            instance,
            closed: Vec::new(),
        }
    }

    /// This node's closed paths, as seen from a parent reaching it by `step`.
    fn closed_below(&self, step: Step) -> impl Iterator<Item = Vec<Step>> + '_ {
        self.closed.iter().map(move |path| {
            let mut p = vec![step.clone()];
            p.extend(path.iter().cloned());
            p
        })
    }
}

struct Gen<'a, 'b> {
    u: &'a mut Unstructured<'b>,
    defs: Map<String, Value>,
    nodes: usize,
}

impl Gen<'_, '_> {
    fn pick(&mut self, n: u8) -> u8 {
        self.u.int_in_range(0..=n - 1).unwrap_or(0)
    }

    fn node(&mut self, depth: usize) -> Node {
        self.nodes += 1;
        if depth >= MAX_DEPTH || self.nodes >= MAX_NODES {
            return self.scalar();
        }
        match self.pick(9) {
            0 | 1 => self.scalar(),
            2 | 3 => self.object(depth),
            4 => {
                let child = self.node(depth + 1);
                let twice = self.pick(2) == 1;
                let mut closed: Vec<_> = child.closed_below(Step::Index(0)).collect();
                let mut items = vec![child.instance.clone()];
                if twice {
                    closed.extend(child.closed_below(Step::Index(1)));
                    items.push(child.instance.clone());
                }
                Node {
                    schema: json!({"type": "array", "items": child.schema}),
                    instance: Value::Array(items),
                    closed,
                }
            }
            5 => {
                let child = self.node(depth + 1);
                Node {
                    closed: child.closed_below(Step::Index(0)).collect(),
                    schema: json!({"type": "array", "prefixItems": [child.schema]}),
                    instance: json!([child.instance]),
                }
            }
            6 => {
                // An open map whose values are described by a schema: the
                // map stays open, the values' objects are closed.
                let child = self.node(depth + 1);
                Node {
                    closed: child.closed_below(Step::Key("k".into())).collect(),
                    schema: json!({"type": "object", "additionalProperties": child.schema}),
                    instance: json!({"k": child.instance}),
                }
            }
            7 => {
                let child = self.node(depth + 1);
                let name = format!("d{}", self.defs.len());
                self.defs.insert(name.clone(), child.schema);
                Node {
                    schema: json!({"$ref": format!("#/$defs/{name}")}),
                    instance: child.instance,
                    closed: child.closed,
                }
            }
            _ => self.composed(depth),
        }
    }

    fn scalar(&mut self) -> Node {
        if self.pick(2) == 0 {
            Node::leaf(json!({"type": "string"}), json!("v"))
        } else {
            Node::leaf(json!({"type": "integer"}), json!(1))
        }
    }

    /// An object naming its properties, all required; closed unless the
    /// author wrote `additionalProperties: true`.
    fn object(&mut self, depth: usize) -> Node {
        let count = 1 + usize::from(self.pick(3));
        let mut properties = Map::new();
        let mut instance = Map::new();
        let mut closed = Vec::new();
        for key in ["a", "b", "c"].into_iter().take(count) {
            let child = self.node(depth + 1);
            closed.extend(child.closed_below(Step::Key(key.into())));
            properties.insert(key.into(), child.schema);
            instance.insert(key.into(), child.instance);
        }
        let required: Vec<&str> = ["a", "b", "c"][..count].to_vec();
        let mut schema = json!({"type": "object", "properties": properties, "required": required});
        match self.pick(3) {
            0 => closed.push(Vec::new()),
            1 => {
                schema["additionalProperties"] = json!(false);
                closed.push(Vec::new());
            }
            _ => schema["additionalProperties"] = json!(true),
        }
        Node {
            schema,
            instance: Value::Object(instance),
            closed,
        }
    }

    /// An object whose properties are named only by in-place branches;
    /// the gateway closes it with `unevaluatedProperties: false`.
    fn composed(&mut self, depth: usize) -> Node {
        let a = self.node(depth + 1);
        let b = self.node(depth + 1);
        let mut closed = vec![Vec::new()];
        closed.extend(a.closed_below(Step::Key("a".into())));
        let (schema, instance) = match self.pick(4) {
            0 | 1 => {
                closed.extend(b.closed_below(Step::Key("b".into())));
                let keyword = if self.pick(2) == 0 { "allOf" } else { "anyOf" };
                (
                    json!({"type": "object", keyword: [
                        {"properties": {"a": a.schema}, "required": ["a"]},
                        {"properties": {"b": b.schema}, "required": ["b"]},
                    ]}),
                    json!({"a": a.instance, "b": b.instance}),
                )
            }
            2 => (
                // Exactly one branch matches: the other requires `c`.
                json!({"type": "object", "oneOf": [
                    {"properties": {"a": a.schema}, "required": ["a"]},
                    {"properties": {"c": b.schema}, "required": ["c"]},
                ]}),
                json!({"a": a.instance}),
            ),
            _ => {
                closed.extend(b.closed_below(Step::Key("b".into())));
                (
                    json!({"type": "object",
                        "properties": {"a": a.schema},
                        "required": ["a", "b"],
                        "if": {"required": ["a"]},
                        "then": {"properties": {"b": b.schema}}}),
                    json!({"a": a.instance, "b": b.instance}),
                )
            }
        };
        Node {
            schema,
            instance,
            closed,
        }
    }
}

fn object_at<'v>(value: &'v mut Value, path: &[Step]) -> Option<&'v mut Map<String, Value>> {
    let mut at = value;
    for step in path {
        at = match step {
            Step::Key(k) => at.as_object_mut()?.get_mut(k)?,
            Step::Index(i) => at.as_array_mut()?.get_mut(*i)?,
        };
    }
    at.as_object_mut()
}

/// The harness: build a case from `data`, then check that its instance
/// passes and that an unnamed member in any closed object fails.
pub fn schema_nesting(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut g = Gen {
        u: &mut u,
        defs: Map::new(),
        nodes: 0,
    };
    let mut root = if g.pick(2) == 0 {
        g.object(0)
    } else {
        g.composed(0)
    };
    let which = g.u.arbitrary::<u8>().unwrap_or(0);
    if !g.defs.is_empty() {
        root.schema["$defs"] = Value::Object(std::mem::take(&mut g.defs));
    }
    let text = root.schema.to_string();
    let schema = ToolSchema::compile(root.schema)
        .unwrap_or_else(|e| panic!("a generated schema does not compile: {e}\n{text}"));
    let Value::Object(arguments) = root.instance.clone() else {
        unreachable!("the root is an object")
    };
    if let Err(e) = schema.check("t", arguments) {
        panic!(
            "the instance built for the schema fails it: {e}\nschema: {text}\ninstance: {}",
            root.instance
        );
    }
    if root.closed.is_empty() {
        return;
    }
    let path = &root.closed[usize::from(which) % root.closed.len()];
    let mut smuggled = root.instance.clone();
    let object = object_at(&mut smuggled, path).expect("closed paths lead to objects");
    object.insert(UNNAMED.into(), json!(1));
    let Value::Object(arguments) = smuggled.clone() else {
        unreachable!("the root is an object")
    };
    assert!(
        schema.check("t", arguments).is_err(),
        "member {UNNAMED:?} is named nowhere in the schema, yet the call passed\nschema: {text}\narguments: {smuggled}"
    );
}
