//! Tool input schemas: JSON Schema 2020-12, compiled once at policy load.
//!
//! `additionalProperties` defaults to `false` on every object schema that
//! declares `properties` and omits it, so an argument the policy does not
//! name can never slip through to a template. jsonschema is built without
//! its `resolve-http` / `resolve-file` features, so no `$ref` is ever
//! fetched; a remote reference fails compilation.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

/// Tool arguments that passed the tool's input schema. Only
/// [`ToolSchema::check`] makes one; authorization takes nothing else.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedCall {
    tool: String,
    arguments: Map<String, Value>,
}

impl CheckedCall {
    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The checked arguments.
    pub fn arguments(&self) -> &Map<String, Value> {
        &self.arguments
    }
}

/// A compiled tool input schema.
#[derive(Clone)]
pub struct ToolSchema {
    document: Value,
    validator: Arc<jsonschema::Validator>,
}

impl fmt::Debug for ToolSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSchema")
            .field("document", &self.document)
            .finish_non_exhaustive()
    }
}

impl ToolSchema {
    /// Normalize and compile `document`.
    pub fn compile(mut document: Value) -> Result<Self, String> {
        let Value::Object(root) = &mut document else {
            return Err("must be a table (a JSON Schema object)".into());
        };
        if root.get("type") != Some(&Value::String("object".into())) {
            return Err(
                "must have type = \"object\" at the root (tool arguments are objects)".into(),
            );
        }
        default_closed(root);
        // The root is closed even without `properties`: a tool that declares
        // no arguments accepts none.
        if !root.contains_key("additionalProperties") && !root.contains_key("unevaluatedProperties")
        {
            let keyword = if composes(root) {
                "unevaluatedProperties"
            } else {
                "additionalProperties"
            };
            root.insert(keyword.into(), Value::Bool(false));
        }
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&document)
            .map_err(|err| format!("not a valid JSON Schema 2020-12: {err}"))?;
        Ok(Self {
            document,
            validator: Arc::new(validator),
        })
    }

    /// The normalized schema, as advertised in `tools/list`.
    pub fn document(&self) -> &Value {
        &self.document
    }

    /// Check arguments. Errors name the location and the failed keyword,
    /// never the argument values (they may be secrets).
    pub fn check(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CheckedCall, Vec<String>> {
        let arguments = Value::Object(arguments);
        let errors: Vec<String> = self
            .validator
            .iter_errors(&arguments)
            .take(8)
            .map(|err| {
                let at = err.instance_path().to_string();
                let at = if at.is_empty() { "/".to_owned() } else { at };
                format!(
                    "at {at}: fails `{}`",
                    keyword_of(&err.schema_path().to_string())
                )
            })
            .collect();
        if !errors.is_empty() {
            return Err(errors);
        }
        let Value::Object(arguments) = arguments else {
            unreachable!("wrapped just above")
        };
        Ok(CheckedCall {
            tool: tool.to_owned(),
            arguments,
        })
    }

    /// A placeholder may only name a required property typed string or
    /// integer: anything else could expand to nothing or to structure.
    pub fn check_placeholder(&self, name: &str) -> Result<(), String> {
        let root = self
            .document
            .as_object()
            .expect("compiled schemas are objects");
        let required = root
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|v| v == name));
        if !required {
            return Err(format!("{name} must be listed in input_schema.required"));
        }
        let ty = root
            .get("properties")
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"));
        match ty.and_then(Value::as_str) {
            Some("string" | "integer") => Ok(()),
            _ => Err(format!(
                "input_schema.properties.{name} must have type \"string\" or \"integer\""
            )),
        }
    }
}

fn keyword_of(schema_path: &str) -> &str {
    schema_path.rsplit('/').next().unwrap_or(schema_path)
}

/// Keywords whose subschemas apply to the same instance as their parent.
const IN_PLACE_LISTS: [&str; 3] = ["allOf", "anyOf", "oneOf"];
const IN_PLACE_SINGLE: [&str; 3] = ["if", "then", "else"];
/// Keywords whose subschema describes one child instance.
const CHILD_SINGLE: [&str; 5] = [
    "items",
    "contains",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
];
/// Keywords holding a map of subschemas that each describe a child.
const CHILD_MAPS: [&str; 4] = ["properties", "patternProperties", "$defs", "definitions"];

/// Close every object schema that names its properties and leaves the rest
/// open. A schema describing an instance of its own (the root, a property,
/// an item, a `$defs` entry...) is closed with `additionalProperties:
/// false`, or with `unevaluatedProperties: false` when it composes
/// in-place branches (`allOf`, `anyOf`, `oneOf`, `if`/`then`/`else`,
/// `dependentSchemas`, `$ref`), because `additionalProperties` cannot see
/// the properties those branches name. The branches themselves are not
/// closed (that would refuse every property the other branches name), but
/// the instances they describe below them are. `not` is left alone:
/// closing inside a negation would widen what it accepts.
fn default_closed(schema: &mut Map<String, Value>) {
    if declares_properties(schema)
        && !schema.contains_key("additionalProperties")
        && !schema.contains_key("unevaluatedProperties")
    {
        let keyword = if composes(schema) {
            "unevaluatedProperties"
        } else {
            "additionalProperties"
        };
        schema.insert(keyword.into(), Value::Bool(false));
    }
    close_below(schema);
}

/// Close the instances below `schema`, walking its in-place branches
/// without closing them at their own level.
fn close_below(schema: &mut Map<String, Value>) {
    for key in CHILD_MAPS {
        if let Some(Value::Object(children)) = schema.get_mut(key) {
            for child in children.values_mut() {
                if let Value::Object(child) = child {
                    default_closed(child);
                }
            }
        }
    }
    for key in CHILD_SINGLE {
        if let Some(Value::Object(child)) = schema.get_mut(key) {
            default_closed(child);
        }
    }
    if let Some(Value::Array(items)) = schema.get_mut("prefixItems") {
        for item in items.iter_mut().filter_map(Value::as_object_mut) {
            default_closed(item);
        }
    }
    for branch in in_place_branches(schema) {
        close_below(branch);
    }
}

fn in_place_branches(schema: &mut Map<String, Value>) -> Vec<&mut Map<String, Value>> {
    let mut out = Vec::new();
    for (key, value) in schema.iter_mut() {
        let key = key.as_str();
        if IN_PLACE_LISTS.contains(&key) {
            if let Value::Array(list) = value {
                out.extend(list.iter_mut().filter_map(Value::as_object_mut));
            }
        } else if IN_PLACE_SINGLE.contains(&key) {
            if let Value::Object(branch) = value {
                out.push(branch);
            }
        } else if key == "dependentSchemas"
            && let Value::Object(map) = value
        {
            out.extend(map.values_mut().filter_map(Value::as_object_mut));
        }
    }
    out
}

fn composes(schema: &Map<String, Value>) -> bool {
    IN_PLACE_LISTS
        .iter()
        .chain(&IN_PLACE_SINGLE)
        .chain(&["dependentSchemas", "$ref"])
        .any(|k| schema.contains_key(*k))
}

/// Whether `schema` or one of its in-place branches names properties.
fn declares_properties(schema: &Map<String, Value>) -> bool {
    if schema.contains_key("properties") || schema.contains_key("patternProperties") {
        return true;
    }
    schema.iter().any(|(key, value)| match value {
        Value::Array(list) if IN_PLACE_LISTS.contains(&key.as_str()) => list
            .iter()
            .filter_map(Value::as_object)
            .any(declares_properties),
        Value::Object(branch) if IN_PLACE_SINGLE.contains(&key.as_str()) => {
            declares_properties(branch)
        }
        Value::Object(map) if key == "dependentSchemas" => map
            .values()
            .filter_map(Value::as_object)
            .any(declares_properties),
        _ => false,
    })
}
