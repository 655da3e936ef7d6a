//! Tool input schemas: JSON Schema 2020-12, compiled once at policy load.
//!
//! `additionalProperties` defaults to `false` on every object schema that
//! declares `properties` and omits it, so an argument the policy does not
//! name can never slip through to a template. jsonschema is built without
//! its `resolve-http` / `resolve-file` features, so no `$ref` is ever
//! fetched; a remote reference fails compilation.

use std::fmt;
use std::sync::Arc;

use portcullis_wire::Object;
use portcullis_wire::strict_json::display_name;

use crate::policy::ToolSpec;
use serde_json::{Map, Value};

mod cost;
mod fast;
mod formats;
mod self_application;

pub use self::cost::{
    CompileCost, LOCATION_FACTOR, NODE_BYTES, PATTERN_BYTES, PATTERN_SIZE_LIMIT, TEXT_FACTOR,
};
pub use self::formats::{CHECKED_FORMATS, UNCHECKED_FORMAT};
pub use self::self_application::SELF_APPLICATION;

use self::fast::FastSchema;

/// The schema stage: check `arguments` against `tool`'s compiled input
/// schema.
pub fn check(
    tool: &ToolSpec,
    arguments: Map<String, Value>,
) -> Result<CheckedCall<'_, 'static>, SchemaError> {
    check_arguments(tool, Object::from_map(arguments))
}

/// [`check`] for arguments borrowed from the frame, as the session reads
/// them: the call keeps them borrowed on to authorization.
pub fn check_arguments<'p, 'a>(
    tool: &'p ToolSpec,
    arguments: Object<'a>,
) -> Result<CheckedCall<'p, 'a>, SchemaError> {
    tool.schema.check_object(&tool.name, &arguments)?;
    Ok(CheckedCall { tool, arguments })
}

/// Why arguments failed their tool's input schema. Its text is what the
/// model reads as the tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The arguments fail these keywords (at most eight, one line each).
    #[error(
        "arguments do not match the input schema of {tool}:\n{}",
        lines(failures)
    )]
    Mismatch {
        /// The tool's name.
        tool: String,
        /// One failure per failing keyword, in the validator's order.
        failures: Vec<KeywordFailure>,
    },
}

impl SchemaError {
    /// The failing keywords.
    pub fn failures(&self) -> &[KeywordFailure] {
        match self {
            SchemaError::Mismatch { failures, .. } => failures,
        }
    }
}

fn lines(failures: &[KeywordFailure]) -> String {
    let lines: Vec<String> = failures.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

/// One failing keyword: where, which keyword, what the schema wants. No
/// argument values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at {at}: {wants} (`{keyword}`)")]
pub struct KeywordFailure {
    /// JSON pointer into the arguments (non-identifier segments withheld).
    pub at: String,
    /// The JSON Schema keyword that failed (`required`, `type`, ...).
    pub keyword: String,
    /// What the schema wants, in words.
    pub wants: String,
}

/// A call to a policy tool whose arguments passed the tool's input schema.
/// Only [`check`] makes one; authorization takes nothing else.
#[derive(Debug, Clone)]
pub struct CheckedCall<'p, 'a> {
    tool: &'p ToolSpec,
    arguments: Object<'a>,
}

impl<'p, 'a> CheckedCall<'p, 'a> {
    /// The tool, as the policy defines it.
    pub fn tool(&self) -> &'p ToolSpec {
        self.tool
    }

    /// The checked arguments.
    pub fn arguments(&self) -> &Object<'a> {
        &self.arguments
    }
}

/// A compiled tool input schema.
#[derive(Clone)]
pub struct ToolSchema {
    document: Value,
    validator: Arc<jsonschema::Validator>,
    /// The same verdict without building a `Value`, for schemas in the
    /// subset [`fast`] decides.
    fast: Option<Arc<FastSchema>>,
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
    pub fn compile(document: Value) -> Result<Self, String> {
        Self::compile_with(document, &validator_options())
    }

    /// [`ToolSchema::compile`] for a schema from outside the policy (a
    /// wrapped server's): each regular expression is compiled under
    /// [`PATTERN_SIZE_LIMIT`] (a larger one is refused) and once for all
    /// the validators of the schema. What the whole schema costs is the
    /// caller's to bound first, with [`CompileCost::of`].
    pub fn compile_untrusted(document: Value) -> Result<Self, String> {
        let options = validator_options()
            .with_pattern_options(
                jsonschema::PatternOptions::fancy_regex()
                    .size_limit(PATTERN_SIZE_LIMIT)
                    .dfa_size_limit(PATTERN_SIZE_LIMIT),
            )
            .with_pattern_cache(jsonschema::PatternCache::new());
        Self::compile_with(document, &options)
    }

    fn compile_with(
        mut document: Value,
        options: &jsonschema::ValidationOptions<'static>,
    ) -> Result<Self, String> {
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
        self_application::refuse_loops(&document)?;
        let validator = options
            .build(&document)
            .map_err(|err| format!("not a valid JSON Schema 2020-12: {err}"))?;
        let fast = FastSchema::compile(&document, options).map(Arc::new);
        Ok(Self {
            document,
            validator: Arc::new(validator),
            fast,
        })
    }

    /// Refuse a schema naming a `format` the gateway does not check (see
    /// [`CHECKED_FORMATS`]): a policy's schemas are held to this at load.
    pub fn refuse_unchecked_formats(&self) -> Result<(), String> {
        formats::refuse_unchecked(&self.document)
    }

    /// Whether calls are decided without building a `Value` (the schema is
    /// in the subset [`fast`] decides); otherwise jsonschema decides.
    pub fn has_fast_path(&self) -> bool {
        self.fast.is_some()
    }

    /// [`ToolSchema::check`] of borrowed arguments, which stay where they
    /// are. A schema in the fast subset decides the verdict without
    /// jsonschema seeing the whole call; a failing call is described by
    /// jsonschema all the same.
    pub fn check_object(&self, tool: &str, arguments: &Object<'_>) -> Result<(), SchemaError> {
        if let Some(fast) = &self.fast
            && fast.is_valid(arguments)
        {
            return Ok(());
        }
        self.check(tool, arguments.to_map()).map(drop)
    }

    /// The normalized schema, as advertised in `tools/list`.
    pub fn document(&self) -> &Value {
        &self.document
    }

    /// Check arguments. Each failure (at most eight, one per failing
    /// keyword) names the JSON pointer, the keyword and what the schema
    /// wants — the missing or unexpected property names, the expected type,
    /// the allowed values, the pattern, the bounds — so a model can correct
    /// its call; never the argument values (they may be secrets). `tool`
    /// names the tool in the error; the arguments come back on success.
    pub fn check(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Map<String, Value>, SchemaError> {
        let arguments = Value::Object(arguments);
        // The yes/no answer is what almost every call needs, and it is much
        // cheaper than collecting errors; the errors are collected (by the
        // same validator) only for a call that fails.
        let failures: Vec<KeywordFailure> = if self.validator.is_valid(&arguments) {
            Vec::new()
        } else {
            let mut failures: Vec<KeywordFailure> = self
                .validator
                .iter_errors(&arguments)
                .take(8)
                .map(|err| describe(&err))
                .collect();
            if failures.is_empty() {
                // Never reached while the two agree; if they ever do not,
                // the call is refused, not let through.
                failures.push(KeywordFailure {
                    at: "/".to_owned(),
                    keyword: "schema".to_owned(),
                    wants: "does not match the schema".to_owned(),
                });
            }
            failures
        };
        if !failures.is_empty() {
            return Err(SchemaError::Mismatch {
                tool: tool.to_owned(),
                failures,
            });
        }
        let Value::Object(arguments) = arguments else {
            unreachable!("wrapped just above")
        };
        Ok(arguments)
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

/// The options every tool schema is compiled with.
fn validator_options() -> jsonschema::ValidationOptions<'static> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
}

/// One line a model can act on. Everything quoted comes from the policy's
/// schema, except property names the caller sent, which are shown only
/// when they look like identifiers.
fn describe(err: &jsonschema::ValidationError<'_>) -> KeywordFailure {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    let at = pointer(&err.instance_path().to_string());
    let keyword = keyword_of(&err.schema_path().to_string()).to_owned();
    let wants = match err.kind() {
        K::Required { property } => match property.as_str() {
            Some(name) => format!("missing required property \"{name}\""),
            None => "a required property is missing".to_owned(),
        },
        K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
            let names: Vec<_> = unexpected.iter().map(|n| display_name(n)).collect();
            format!(
                "unexpected properties {} (not in the schema)",
                names.join(", ")
            )
        }
        K::Type { kind } => {
            let types: Vec<&str> = match kind {
                TypeKind::Single(t) => vec![t.as_str()],
                TypeKind::Multiple(set) => set.iter().map(|t| t.as_str()).collect(),
            };
            format!("expected type {}", types.join(" or "))
        }
        K::Enum { options } => format!("must be one of {}", policy_text(options)),
        K::Constant { expected_value } => format!("must equal {}", policy_text(expected_value)),
        K::Pattern { pattern } => format!("must match the pattern {pattern:?}"),
        K::MinLength { limit } => format!("must be at least {limit} characters long"),
        K::MaxLength { limit } => format!("must be at most {limit} characters long"),
        K::Minimum { limit } => format!("must be >= {limit}"),
        K::Maximum { limit } => format!("must be <= {limit}"),
        K::ExclusiveMinimum { limit } => format!("must be > {limit}"),
        K::ExclusiveMaximum { limit } => format!("must be < {limit}"),
        K::MultipleOf { multiple_of } => format!("must be a multiple of {multiple_of}"),
        K::MinItems { limit } => format!("must have at least {limit} items"),
        K::MaxItems { limit } => format!("must have at most {limit} items"),
        K::MinProperties { limit } => format!("must have at least {limit} properties"),
        K::MaxProperties { limit } => format!("must have at most {limit} properties"),
        K::Format { format } => format!("must be a valid {format}"),
        K::UniqueItems => "items must be unique".to_owned(),
        K::FalseSchema => "no value is allowed here".to_owned(),
        K::AnyOf { .. } => "must match at least one of the anyOf schemas".to_owned(),
        K::OneOfNotValid { .. } => {
            "must match exactly one of the oneOf schemas (matches none)".to_owned()
        }
        K::OneOfMultipleValid { .. } => {
            "must match exactly one of the oneOf schemas (matches several)".to_owned()
        }
        K::Not { .. } => "must not match the `not` schema".to_owned(),
        _ => "does not match the schema".to_owned(),
    };
    KeywordFailure { at, keyword, wants }
}

/// A JSON pointer whose segments are shown when they are array indexes or
/// identifier-like names (names from the schema are); other segments may
/// be data and are withheld.
fn pointer(instance_path: &str) -> String {
    if instance_path.is_empty() {
        return "/".to_owned();
    }
    instance_path
        .split('/')
        .skip(1)
        .map(|segment| {
            let plain = !segment.is_empty()
                && segment.len() <= 64
                && segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_$.-:@~".contains(&b));
            if plain { segment } else { "(withheld)" }
        })
        .fold(String::new(), |mut out, segment| {
            out.push('/');
            out.push_str(segment);
            out
        })
}

/// A value written in the policy, shortened for an error line.
fn policy_text(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 200 {
        text
    } else {
        let cut: String = text.chars().take(200).collect();
        format!("{cut}…")
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
