//! The one way the writers lay a record out as a line:
//! `{"kind":..,"time":..,"session":..,"seq":..,"prev":..`, the kind's own
//! members sorted by name, then `mac` when keyed; compact, each value as
//! serde_json prints it. A line that reads as the same record but is laid
//! out otherwise (spacing, member order, escapes) was not written by them:
//! without this check such an edit of a session's last record, which no
//! later hash covers, would go unseen.

use serde_json::{Map, Value};

/// Members that open every line, in order.
const HEAD: [&str; 5] = ["kind", "time", "session", "seq", "prev"];
/// The member that closes a keyed line.
const LAST: &str = "mac";

/// Whether `line` is `record` exactly as the writers lay it out.
pub(in crate::audit) fn is_canonical(record: &Map<String, Value>, line: &str) -> bool {
    let mut expected = String::with_capacity(line.len());
    expected.push('{');
    let mut member = |name: &str, value: &Value| {
        if expected.len() > 1 {
            expected.push(',');
        }
        // Serialising a `Value` cannot fail: its keys are strings.
        expected.push_str(&serde_json::to_string(name).unwrap_or_default());
        expected.push(':');
        expected.push_str(&serde_json::to_string(value).unwrap_or_default());
    };
    for name in HEAD {
        if let Some(value) = record.get(name) {
            member(name, value);
        }
    }
    // A `Map` iterates in key order: the order the writers sort by.
    for (name, value) in record {
        if !HEAD.contains(&name.as_str()) && name != LAST {
            member(name, value);
        }
    }
    if let Some(value) = record.get(LAST) {
        member(LAST, value);
    }
    expected.push('}');
    expected == line
}
