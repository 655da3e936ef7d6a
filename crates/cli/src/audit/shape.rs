//! The exact shape of each record kind: its member set, and for each
//! member the type and range `portcullis mcp --audit` writes.

use portcullis_wire::Stage;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;

/// What one member of a record must hold.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// `rejection`, `intent` or `outcome`.
    Kind,
    /// RFC 3339, in UTC.
    Time,
    /// `<pid>-<nanoseconds in lowercase hex>`, as [`Journal::open`] makes it.
    Session,
    /// A stage name of the wire's [`Stage`] enum.
    Stage,
    /// 64 lowercase hex digits (a SHA-256).
    Fingerprint,
    /// A tool name as the policy allows it: 1-128 of `A-Z a-z 0-9 _ - .`.
    Tool,
    /// `http` or `ssh`.
    TargetKind,
    /// 1-255 printable ASCII characters, no space.
    Host,
    /// An integer in `min..=max`.
    Int(i64, i64),
    /// An integer in `min..=max`, or `null`.
    IntOrNull(i64, i64),
    /// `true` or `false`.
    Bool,
}

const MAX_SAFE: i64 = portcullis_wire::strict_json::MAX_SAFE_INTEGER;

/// A 1-based input line number.
const LINE: Rule = Rule::Int(1, MAX_SAFE);
/// A ticket of the gateway (counts from 0).
const TICKET: Rule = Rule::Int(0, MAX_SAFE);

/// Members every record has.
const COMMON: &[(&str, Rule)] = &[
    ("kind", Rule::Kind),
    ("time", Rule::Time),
    ("session", Rule::Session),
];

/// The members of each kind besides [`COMMON`]: exactly these, no more,
/// no fewer (what [`Journal`] writes).
const KINDS: &[(&str, &[(&str, Rule)])] = &[
    (
        "rejection",
        &[
            ("line", LINE),
            ("stage", Rule::Stage),
            // JSON-RPC's reserved range: every code a stage maps to.
            ("code", Rule::Int(-32768, -32000)),
            ("fingerprint", Rule::Fingerprint),
        ],
    ),
    (
        "intent",
        &[
            ("ticket", TICKET),
            ("line", Rule::IntOrNull(1, MAX_SAFE)),
            ("tool", Rule::Tool),
            ("target_kind", Rule::TargetKind),
            ("host", Rule::Host),
            ("port", Rule::Int(1, 65535)),
            ("target_fingerprint", Rule::Fingerprint),
            // The policy's `timeout_ms` range.
            ("timeout_ms", Rule::Int(1, 600_000)),
        ],
    ),
    (
        "outcome",
        &[
            ("ticket", TICKET),
            ("is_error", Rule::Bool),
            ("executed", Rule::Bool),
            ("cancelled", Rule::Bool),
            ("late", Rule::Bool),
            ("elapsed_ms", Rule::Int(0, MAX_SAFE)),
        ],
    ),
];

/// Why `value` breaks `rule`, as the end of a sentence starting with the
/// member's name. Never echoes the value (a forged journal may hold
/// anything).
fn check(rule: Rule, value: &Value) -> Result<(), String> {
    let text = || value.as_str().ok_or_else(|| "is not a string".to_owned());
    match rule {
        Rule::Kind => {
            let kind = text()?;
            if !KINDS.iter().any(|(k, _)| *k == kind) {
                return Err("is not a known record kind".into());
            }
        }
        Rule::Time => {
            let time = text()?;
            let parsed = time::OffsetDateTime::parse(time, &Rfc3339)
                .map_err(|_| "is not an RFC 3339 time".to_owned())?;
            if !parsed.offset().is_utc() {
                return Err("is an RFC 3339 time but not in UTC".into());
            }
        }
        Rule::Session => {
            let session = text()?;
            let well_formed = session.len() <= 64
                && session.split_once('-').is_some_and(|(pid, nanos)| {
                    !pid.is_empty()
                        && !nanos.is_empty()
                        && pid.bytes().all(|b| b.is_ascii_digit())
                        && nanos
                            .bytes()
                            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
                });
            if !well_formed {
                return Err("is not a session id (<pid>-<hex>)".into());
            }
        }
        Rule::Stage => {
            let stage = text()?;
            if !Stage::ALL.iter().any(|s| s.as_str() == stage) {
                return Err(format!(
                    "is not a stage name (one of {})",
                    Stage::ALL.map(Stage::as_str).join(", ")
                ));
            }
        }
        Rule::Fingerprint => {
            let hex = text()?;
            if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                return Err("is not 64 lowercase hex digits".into());
            }
        }
        Rule::Tool => {
            let tool = text()?;
            if !(1..=128).contains(&tool.len())
                || !tool
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
            {
                return Err("is not a tool name (1-128 of A-Z a-z 0-9 _ - .)".into());
            }
        }
        Rule::TargetKind => {
            if !matches!(text()?, "http" | "ssh") {
                return Err("is neither \"http\" nor \"ssh\"".into());
            }
        }
        Rule::Host => {
            let host = text()?;
            if !(1..=255).contains(&host.len()) || !host.bytes().all(|b| b.is_ascii_graphic()) {
                return Err("is not a host (1-255 printable ASCII characters)".into());
            }
        }
        Rule::Int(min, max) => integer(value, min, max)?,
        Rule::IntOrNull(min, max) => {
            if !value.is_null() {
                integer(value, min, max).map_err(|why| format!("{why} nor null"))?;
            }
        }
        Rule::Bool => {
            if !value.is_boolean() {
                return Err("is not a boolean".into());
            }
        }
    }
    Ok(())
}

fn integer(value: &Value, min: i64, max: i64) -> Result<(), String> {
    match value.as_i64() {
        Some(n) if (min..=max).contains(&n) => Ok(()),
        Some(_) => Err(format!("is out of range ({min}..={max})")),
        // `as_i64` is None for fractions and exponents too: the journal
        // writes plain integers only.
        None => Err("is not an integer".into()),
    }
}

/// Every way `record` departs from its kind's member set and rules.
pub(super) fn problems(record: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut found = Vec::new();
    let kind_rules = match record.get("kind") {
        None => {
            found.push("missing field \"kind\"".to_owned());
            None
        }
        Some(kind) => match check(Rule::Kind, kind) {
            Err(why) => {
                found.push(format!("field \"kind\" {why}"));
                None
            }
            Ok(()) => KINDS
                .iter()
                .find(|(k, _)| Some(*k) == kind.as_str())
                .map(|(_, rules)| *rules),
        },
    };
    let rules: Vec<(&str, Rule)> = COMMON
        .iter()
        .chain(kind_rules.unwrap_or_default())
        .copied()
        .collect();
    // `kind` was checked above.
    for (name, rule) in rules.iter().filter(|(name, _)| *name != "kind") {
        match record.get(*name) {
            None => found.push(format!("missing field {name:?}")),
            Some(value) => {
                if let Err(why) = check(*rule, value) {
                    found.push(format!("field {name:?} {why}"));
                }
            }
        }
    }
    // Without a known kind the member set is unknown: only its own
    // problem is reported.
    if kind_rules.is_some() {
        for name in record.keys() {
            if !rules.iter().any(|(n, _)| n == name) {
                found.push(format!(
                    "unknown member {}",
                    portcullis_wire::strict_json::display_name(name)
                ));
            }
        }
    }
    found
}
