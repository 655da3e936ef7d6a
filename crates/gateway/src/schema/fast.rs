//! The schema subset decided without handing jsonschema the whole call:
//! a root that is exactly an object of named properties —
//! `type: "object"`, `properties`, `required`, `additionalProperties:
//! false` and annotations — whose property schemas use only keywords that
//! look at the property's own value (`type`, `pattern`, `enum`, bounds,
//! `format`...).
//!
//! For such a root, JSON Schema 2020-12 makes the verdict a conjunction:
//! every required name present, every member named in `properties`, every
//! member's value valid against its own property schema. The member
//! checks stay jsonschema's: each property schema is compiled alone, with
//! the same options as the whole, and sees only its member's value (a
//! property that is only `type: "string"` is a type test). So no regex,
//! format or number rule is reimplemented here, and a `Value` is built per
//! checked member, not per call.
//!
//! The fast path only ever says yes: a call it does not accept goes to the
//! whole-schema validator, which decides and describes the failure. A
//! property test holds the two to the same verdict.

use std::collections::BTreeSet;

use portcullis_wire::{Json, Object};
use serde_json::{Map, Value};

/// Root keywords of the subset (annotations have no say in a verdict).
const ROOT_KEYWORDS: [&str; 7] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "title",
    "description",
    "$comment",
];

/// Property keywords that constrain only the property's own value.
const PROPERTY_KEYWORDS: [&str; 19] = [
    "type",
    "enum",
    "const",
    "pattern",
    "minLength",
    "maxLength",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "title",
    "description",
    "$comment",
    "default",
    "examples",
    "deprecated",
    "readOnly",
];

/// Annotations: keywords that never fail a value.
const ANNOTATIONS: [&str; 7] = [
    "title",
    "description",
    "$comment",
    "default",
    "examples",
    "deprecated",
    "readOnly",
];

/// A compiled root of the subset.
pub(super) struct FastSchema {
    properties: Vec<Property>,
    required: Vec<String>,
}

struct Property {
    name: String,
    check: Check,
}

enum Check {
    /// `type: "string"` and annotations only.
    IsString,
    /// Anything else in the subset: the property schema, compiled alone.
    Validator(jsonschema::Validator),
}

impl FastSchema {
    /// The fast form of a normalized tool schema, or `None` when it is
    /// outside the subset (jsonschema then decides every call). Property
    /// schemas are compiled with the `options` of the whole.
    pub(super) fn compile(
        document: &Value,
        options: &jsonschema::ValidationOptions<'static>,
    ) -> Option<Self> {
        let root = document.as_object()?;
        if !root.keys().all(|k| ROOT_KEYWORDS.contains(&k.as_str()))
            || root.get("type")? != "object"
            || root.get("additionalProperties")? != &Value::Bool(false)
        {
            return None;
        }
        let required: Vec<String> = match root.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| n.as_str().map(str::to_owned))
                .collect::<Option<_>>()?,
            Some(_) => return None,
        };
        let unique: BTreeSet<&String> = required.iter().collect();
        if unique.len() != required.len() {
            return None;
        }
        let empty = Map::new();
        let properties = match root.get("properties") {
            None => &empty,
            Some(Value::Object(properties)) => properties,
            Some(_) => return None,
        };
        let properties = properties
            .iter()
            .map(|(name, schema)| {
                Some(Property {
                    name: name.clone(),
                    check: Check::compile(schema.as_object()?, options)?,
                })
            })
            .collect::<Option<_>>()?;
        Some(Self {
            properties,
            required,
        })
    }

    /// Whether `arguments` certainly pass the schema.
    pub(super) fn is_valid(&self, arguments: &Object<'_>) -> bool {
        self.required
            .iter()
            .all(|name| arguments.contains_key(name))
            && arguments.iter().all(|(name, value)| {
                self.properties
                    .iter()
                    .find(|p| p.name == name)
                    .is_some_and(|p| p.check.is_valid(value))
            })
    }
}

/// Whether `key` may sit beside `type: "string"` in a property judged as
/// "is a string". Answering no sends the property to jsonschema, which is
/// never wrong, only slower.
fn beside_string_type(key: &str) -> bool {
    key == "type" || ANNOTATIONS.contains(&key)
}

impl Check {
    fn compile(
        schema: &Map<String, Value>,
        options: &jsonschema::ValidationOptions<'static>,
    ) -> Option<Self> {
        if !schema
            .keys()
            .all(|k| PROPERTY_KEYWORDS.contains(&k.as_str()))
        {
            return None;
        }
        let only_string_type = schema.get("type").is_some_and(|t| t == "string")
            && schema.keys().all(|k| beside_string_type(k));
        if only_string_type {
            return Some(Check::IsString);
        }
        let validator = options.build(&Value::Object(schema.clone())).ok()?;
        Some(Check::Validator(validator))
    }

    fn is_valid(&self, value: &Json<'_>) -> bool {
        match (self, value) {
            (Check::IsString, _) => value.is_string(),
            // A string argument is copied into a `Value` the thread keeps,
            // not into a fresh one per call.
            (Check::Validator(validator), Json::String(text)) => {
                SCRATCH.with_borrow_mut(|scratch| {
                    match &mut *scratch {
                        Value::String(held) => {
                            held.clear();
                            held.push_str(text);
                        }
                        other => *other = Value::String(text.to_string()),
                    }
                    let valid = validator.is_valid(scratch);
                    keep_small(scratch);
                    valid
                })
            }
            (Check::Validator(validator), _) => validator.is_valid(&value.to_value()),
        }
    }
}

thread_local! {
    /// The string value a property's validator is handed.
    static SCRATCH: std::cell::RefCell<Value> = const { std::cell::RefCell::new(Value::String(String::new())) };
}

/// After a long argument the value kept for the next call is made small
/// again.
fn keep_small(scratch: &mut Value) {
    if matches!(scratch, Value::String(held) if held.capacity() > 4096) {
        *scratch = Value::String(String::new());
    }
}
