//! The judge of a wrap session's audit trail, sharing no code with the wrap
//! core (its own canonical JSON and hashing of arguments):
//!
//! - every `tools/call` line for the upstream comes with its intent: the
//!   same upstream id, the tool the line names, the SHA-256 of the line's
//!   arguments in canonical form (compact, members sorted by key bytes at
//!   every depth, `{}` when absent), the session's time limit; no call id
//!   twice;
//! - every intent gets exactly one outcome, after it, and none comes
//!   without one; by the end of the run none is left open;
//! - once the journal failed, no `tools/call` reaches the upstream (the
//!   harness checks that the core forwards none after it was told);
//! - quarantine and drop records are aggregated: per kind and stage or
//!   reason, at most [`RECORDS_PER_INTERVAL`] records in any
//!   [`INTERVAL_MS`] of the clock, each standing for a run of lines after
//!   the previous one's; lines shown on stderr are bounded likewise.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt::Write as _;

use portcullis_wrap::{AnsweredBy, Intent, Outcome};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The aggregation interval the wrapper promises, in ms.
pub const INTERVAL_MS: u64 = 1_000;
/// Records per key in any interval: the run of the interval before, the
/// first of a new one, and the run written as the session ends.
pub const RECORDS_PER_INTERVAL: usize = 3;
/// Quarantined lines shown on stderr in any interval: the first of each
/// stage (seven stages).
pub const SHOWN_PER_INTERVAL: usize = 7;

/// One aggregated record, as the oracle reads it.
#[derive(Debug, Clone)]
pub struct FloodRecord {
    /// Kind and stage or reason.
    pub key: String,
    /// First line of the run.
    pub first: u64,
    /// Last line of the run.
    pub last: u64,
    /// Lines it stands for.
    pub count: u64,
}

/// The audit-trail verdicts of one run.
#[derive(Debug, Default)]
pub struct JournalOracle {
    timeout_ms: u64,
    /// Intents without their outcome yet.
    open: HashSet<i64>,
    /// Every call id an intent named.
    calls: HashSet<i64>,
    /// The journal failed: no call may be forwarded any more.
    failed: bool,
    /// Per key: when each record came (clock ms), and the last line so far.
    records: HashMap<String, (VecDeque<u64>, u64)>,
    /// When each quarantined line shown on stderr came.
    shown: VecDeque<u64>,
    /// Intents seen, outcomes seen.
    pub(crate) intents: usize,
    pub(crate) outcomes: usize,
}

impl JournalOracle {
    pub(crate) fn new(timeout_ms: u64) -> Self {
        Self {
            timeout_ms,
            ..Self::default()
        }
    }

    /// `intent` came with the `tools/call` `line` for the upstream, and was
    /// recorded (`recorded`) or not (the journal failed on it).
    pub(crate) fn intent(&mut self, intent: &Intent, line: &[u8], recorded: bool) {
        if recorded {
            assert!(
                !self.failed,
                "a tools/call reached the upstream after the journal failed: {}",
                show(line)
            );
        } else {
            self.failed = true;
        }
        let value: Value = serde_json::from_slice(line)
            .unwrap_or_else(|e| panic!("a call line that is not JSON ({e}): {}", show(line)));
        assert_eq!(
            value.get("method").and_then(Value::as_str),
            Some("tools/call"),
            "an intent with a line other than a tools/call: {}",
            show(line)
        );
        assert_eq!(
            value.get("id").and_then(Value::as_i64),
            Some(intent.call),
            "the intent's call is not the line's id: {intent:?} {}",
            show(line)
        );
        let params = value.get("params");
        let tool = params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        assert_eq!(intent.tool, tool, "the intent names another tool");
        let arguments = params.and_then(|p| p.get("arguments"));
        assert_eq!(
            intent.arguments_sha256,
            arguments_sha256(arguments),
            "the intent's arguments hash is not the hash of the arguments sent: {}",
            show(line)
        );
        assert_eq!(intent.timeout_ms, self.timeout_ms);
        assert!(
            self.calls.insert(intent.call),
            "two intents for call {}",
            intent.call
        );
        self.open.insert(intent.call);
        self.intents += 1;
    }

    /// An outcome record.
    pub(crate) fn outcome(&mut self, outcome: &Outcome) {
        assert!(
            self.open.remove(&outcome.call),
            "an outcome for call {} with no intent waiting for one: {outcome:?}",
            outcome.call
        );
        if outcome.timed_out || outcome.cancelled {
            assert_eq!(outcome.answered_by, AnsweredBy::Wrapper, "{outcome:?}");
            assert!(!(outcome.timed_out && outcome.cancelled), "{outcome:?}");
        }
        if outcome.timed_out {
            assert!(outcome.is_error, "{outcome:?}");
        }
        self.outcomes += 1;
    }

    /// An aggregated quarantine or drop record, at `now` ms.
    pub(crate) fn flood_record(&mut self, record: &FloodRecord, now: u64) {
        let FloodRecord {
            key,
            first,
            last,
            count,
        } = record;
        assert!(*count >= 1, "a record standing for no line: {record:?}");
        assert!(
            last >= first && last - first >= count - 1,
            "a record whose lines cannot hold its count: {record:?}"
        );
        let (times, last_line) = self.records.entry(key.clone()).or_default();
        assert!(
            *first > *last_line,
            "{key}: a record for lines already recorded (up to {last_line}): {record:?}"
        );
        *last_line = *last;
        times.push_back(now);
        while times.front().is_some_and(|t| *t + INTERVAL_MS <= now) {
            times.pop_front();
        }
        assert!(
            times.len() <= RECORDS_PER_INTERVAL,
            "{key}: {} records within {INTERVAL_MS} ms (a flood is not aggregated)",
            times.len()
        );
    }

    /// A quarantined line shown on stderr, at `now` ms.
    pub(crate) fn shown(&mut self, now: u64) {
        self.shown.push_back(now);
        while self.shown.front().is_some_and(|t| *t + INTERVAL_MS <= now) {
            self.shown.pop_front();
        }
        assert!(
            self.shown.len() <= SHOWN_PER_INTERVAL,
            "{} quarantined lines shown within {INTERVAL_MS} ms",
            self.shown.len()
        );
    }

    /// The run is over (every deadline passed, the driver's end done).
    pub(crate) fn finish(&self) {
        let mut open: Vec<_> = self.open.iter().collect();
        open.sort();
        assert!(open.is_empty(), "intents without an outcome: {open:?}");
    }
}

/// SHA-256 (lowercase hex) of `arguments` in canonical form, `{}` when
/// absent.
pub fn arguments_sha256(arguments: Option<&Value>) -> String {
    let text = match arguments {
        Some(value) => canonical_text(value),
        None => "{}".to_owned(),
    };
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(text.as_bytes()) {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// Compact JSON with every object's members ordered by the bytes of their
/// keys; strings and numbers as serde_json writes a lone value.
fn canonical_text(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&[u8], (&String, &Value)> =
                map.iter().map(|(k, v)| (k.as_bytes(), (k, v))).collect();
            let members: Vec<String> = sorted
                .values()
                .map(|(k, v)| format!("{}:{}", lone_str(k), canonical_text(v)))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical_text).collect();
            format!("[{}]", items.join(","))
        }
        scalar => lone(scalar),
    }
}

fn lone_str(key: &str) -> String {
    serde_json::to_string(key).unwrap_or_else(|e| panic!("serde_json cannot write {key:?}: {e}"))
}

fn lone(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| panic!("serde_json cannot write {value}: {e}"))
}

fn show(line: &[u8]) -> String {
    portcullis_wire::transcript::render_bytes(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oracles_canonical_form_sorts_by_key_bytes() {
        let value: Value = serde_json::from_str(
            "{\"\u{1F600}\":[{\"b\":1,\"a\":\"\\n\"}],\"\u{FF61}\":2,\"e\":1.5}",
        )
        .unwrap();
        assert_eq!(
            canonical_text(&value),
            "{\"e\":1.5,\"\u{FF61}\":2,\"\u{1F600}\":[{\"a\":\"\\n\",\"b\":1}]}"
        );
        assert_eq!(
            arguments_sha256(None),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }
}
