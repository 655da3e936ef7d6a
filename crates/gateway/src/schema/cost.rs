//! What compiling a schema from outside the policy costs, known before
//! compiling it.
//!
//! jsonschema's compiled form is far larger than the document, and not in
//! proportion to it: every subschema keeps its own copy of its location (a
//! JSON pointer), so a node costs more the deeper it sits and the longer
//! the names above it; every regular expression becomes an automaton that
//! a short pattern with counted repetitions makes hundreds of kilobytes
//! long. A wrapped server's schemas are untrusted input, so their cost is
//! counted by one walk of the document (linear in its size, no
//! allocation per node) and a schema past its limits is refused before
//! jsonschema sees it.
//!
//! The count is an upper estimate of the bytes the compiled schema holds
//! (the validator, the fast path's validators and the kept document), with
//! the size of each regular expression bounded by [`PATTERN_SIZE_LIMIT`]
//! at compile time ([`super::ToolSchema::compile_untrusted`]). The charges
//! come from jsonschema 0.61 measured with a counting allocator over wide,
//! deep, long-named, composed, referencing and pattern-heavy schemas (the
//! costliest was under 1 KiB a node plus under twice its location, and a
//! pattern under 2 × its size limit plus its matching cache); the process
//! test `wrap_resources` holds `portcullis wrap` to its memory bound with
//! such schemas filling its budget.

use serde_json::Value;

/// Bytes charged for every JSON value of a schema (objects, arrays and
/// scalars alike), whatever it is.
pub const NODE_BYTES: usize = 1536;
/// Bytes charged per byte of a value's location (its JSON pointer): the
/// compiled node keeps a copy of it.
pub const LOCATION_FACTOR: usize = 2;
/// Bytes charged per byte of a string or a member name.
pub const TEXT_FACTOR: usize = 6;
/// Bytes charged per regular expression (`pattern`, a key of
/// `patternProperties`): the compiled automaton and the matching caches of
/// one pattern compiled under [`PATTERN_SIZE_LIMIT`].
pub const PATTERN_BYTES: usize = 96 * 1024;
/// The size limit, in bytes, of one compiled regular expression of an
/// untrusted schema; a pattern past it is refused as not a regex.
pub const PATTERN_SIZE_LIMIT: usize = 32 * 1024;
/// The member normalization may add to every object (`additionalProperties`
/// or `unevaluatedProperties`), charged in advance.
const CLOSING_MEMBER: &str = "/unevaluatedProperties";

/// What compiling one schema costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompileCost {
    /// JSON values in the document (objects, arrays and scalars).
    pub nodes: usize,
    /// Regular expressions it compiles.
    pub patterns: usize,
    /// Estimated bytes held once compiled (an upper estimate).
    pub bytes: usize,
}

impl CompileCost {
    /// The cost of compiling `schema`, counted in one walk.
    pub fn of(schema: &Value) -> Self {
        let mut cost = Self::default();
        // (value, length of its JSON pointer, whether its members are
        // patterns)
        let mut stack: Vec<(&Value, usize, bool)> = vec![(schema, 0, false)];
        while let Some((value, location, keys_are_patterns)) = stack.pop() {
            cost.nodes = cost.nodes.saturating_add(1);
            cost.charge(NODE_BYTES.saturating_add(location.saturating_mul(LOCATION_FACTOR)));
            match value {
                Value::Object(members) => {
                    let closing = location.saturating_add(CLOSING_MEMBER.len());
                    cost.charge(NODE_BYTES.saturating_add(closing.saturating_mul(LOCATION_FACTOR)));
                    for (key, member) in members {
                        cost.charge(key.len().saturating_mul(TEXT_FACTOR));
                        if keys_are_patterns {
                            cost.patterns = cost.patterns.saturating_add(1);
                            cost.charge(PATTERN_BYTES);
                        }
                        if key == "pattern" && member.is_string() {
                            cost.patterns = cost.patterns.saturating_add(1);
                            cost.charge(PATTERN_BYTES);
                        }
                        let below = location.saturating_add(1).saturating_add(escaped_len(key));
                        stack.push((member, below, key == "patternProperties"));
                    }
                }
                Value::Array(items) => {
                    for (index, item) in items.iter().enumerate() {
                        let below = location.saturating_add(1).saturating_add(digits(index));
                        stack.push((item, below, false));
                    }
                }
                Value::String(text) => cost.charge(text.len().saturating_mul(TEXT_FACTOR)),
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
            }
        }
        cost
    }

    fn charge(&mut self, bytes: usize) {
        self.bytes = self.bytes.saturating_add(bytes);
    }
}

/// The length of `key` as a JSON pointer segment (`~` and `/` escaped).
fn escaped_len(key: &str) -> usize {
    key.len() + key.bytes().filter(|b| matches!(b, b'~' | b'/')).count()
}

fn digits(mut n: usize) -> usize {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ToolSchema;
    use portcullis_wire::Object;
    use serde_json::json;

    /// The size limit refuses automata no tool needs, not the patterns
    /// tools use; both the validator and the fast path match as before.
    #[test]
    fn untrusted_schemas_keep_real_patterns_and_refuse_ones_that_compile_huge() {
        let schema = |pattern: &str| json!({"type": "object", "properties": {"a": {"type": "string", "pattern": pattern}}});
        let arguments = |a: &str| json!({"a": a}).as_object().unwrap().clone();
        for (pattern, good, bad) in [
            ("^[a-zA-Z0-9_-]{1,64}$", "repo_name-1", "no spaces"),
            ("^\\w+$", "hello_world", "héllo"),
            ("^[\\p{L}\\p{N}_ -]{1,256}$", "Ünïcode 42", "tab\tno"),
            (
                "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
                "123e4567-e89b-12d3-a456-426614174000",
                "123e4567",
            ),
            (
                "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$",
                "2024-01-02T03:04:05Z",
                "2024-01-02",
            ),
            (
                "^https?://[^\\s/$.?#].[^\\s]*$",
                "https://example.org/a",
                "ftp://x",
            ),
        ] {
            let compiled = ToolSchema::compile_untrusted(schema(pattern)).expect(pattern);
            let as_policy = ToolSchema::compile(schema(pattern)).expect(pattern);
            for sample in [good, bad] {
                assert_eq!(
                    compiled.check("t", arguments(sample)).is_ok(),
                    as_policy.check("t", arguments(sample)).is_ok(),
                    "{pattern} {sample}"
                );
            }
            assert!(compiled.has_fast_path(), "{pattern}");
            assert!(
                compiled.check("t", arguments(good)).is_ok(),
                "{pattern} {good}"
            );
            assert!(
                compiled.check("t", arguments(bad)).is_err(),
                "{pattern} {bad}"
            );
            let good = Object::from_map(arguments(good));
            let bad = Object::from_map(arguments(bad));
            assert!(compiled.check_object("t", &good).is_ok(), "{pattern}");
            assert!(compiled.check_object("t", &bad).is_err(), "{pattern}");
        }
        // 18 bytes of text, hundreds of kilobytes of automaton.
        let huge = schema("^(\\w{1,50}){1,50}$");
        let refused = ToolSchema::compile_untrusted(huge.clone()).unwrap_err();
        assert!(refused.contains("is not a \"regex\""), "{refused}");
        // A policy's own schemas are the operator's, compiled as before.
        assert!(ToolSchema::compile(huge).is_ok());
    }

    #[test]
    fn nodes_patterns_and_locations_are_counted() {
        let cost = CompileCost::of(&json!({
            "type": "object",
            "properties": {"a": {"type": "string", "pattern": "^x$"}},
            "patternProperties": {"^y": {}, "^z": {}}
        }));
        // root, "object", properties, a, "string", "^x$", patternProperties,
        // two pattern schemas
        assert_eq!(cost.nodes, 9);
        assert_eq!(cost.patterns, 3);
        assert!(cost.bytes >= 9 * NODE_BYTES + 3 * PATTERN_BYTES);
    }

    #[test]
    fn a_property_named_pattern_is_not_a_regex() {
        let cost = CompileCost::of(&json!({
            "type": "object",
            "properties": {"pattern": {"type": "string"}}
        }));
        assert_eq!(cost.patterns, 0);
    }

    #[test]
    fn long_names_high_up_are_paid_for_by_every_node_below() {
        let key = "k".repeat(1000);
        let shallow = json!({"type": "object", "properties": {"a": {"properties": {"b": {}, "c": {}, "d": {}}}}});
        let deep = json!({"type": "object", "properties": {key.clone(): {"properties": {"b": {}, "c": {}, "d": {}}}}});
        let more_below = json!({"type": "object", "properties": {key: {"properties": {"b": {}, "c": {}, "d": {}, "e": {}}}}});
        let (shallow, deep, more_below) = (
            CompileCost::of(&shallow),
            CompileCost::of(&deep),
            CompileCost::of(&more_below),
        );
        assert_eq!(shallow.nodes, deep.nodes);
        assert!(deep.bytes - shallow.bytes > 4 * 1000 * LOCATION_FACTOR);
        assert!(more_below.bytes - deep.bytes > 1000 * LOCATION_FACTOR);
    }
}
