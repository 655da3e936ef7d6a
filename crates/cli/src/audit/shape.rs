//! The exact shape of each record kind, as `portcullis mcp --audit` and
//! `portcullis wrap --audit` write it: the member set, each member's type
//! and range, and the relations between members of one record. Written
//! from the journal format, not from the writers' code: it is the oracle
//! the writers are held to.

use portcullis_wire::Stage;
use serde_json::{Map, Value};

/// Bytes of a text member (`reason`, `method`) kept whole; a longer one is
/// cut at a character and followed by `…(N bytes)`.
pub(super) const MAX_TEXT_BYTES: usize = 4096;
/// Bytes of a tool name shown in a `wrap` record before its cut marker
/// (the escaped form's bytes: `\u{…}` escapes count in full).
pub(super) const NAME_BYTES_SHOWN: usize = 128;
/// `prev` of a session's first record.
pub(super) const FIRST_PREV: &str =
    "0000000000000000000000000000000000000000000000000000000000000000";

const MAX_SAFE: i64 = portcullis_wire::strict_json::MAX_SAFE_INTEGER;

/// Which command writes a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Command {
    Mcp,
    Wrap,
}

impl Command {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Command::Mcp => "mcp",
            Command::Wrap => "wrap",
        }
    }

    pub(super) fn parse(text: &str) -> Option<Self> {
        match text {
            "mcp" => Some(Command::Mcp),
            "wrap" => Some(Command::Wrap),
            _ => None,
        }
    }
}

/// What one member of a record must hold.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`: RFC 3339 in UTC with milliseconds, a
    /// real instant (what the writers print, nothing else).
    Time,
    /// `<pid>-<nanoseconds in lowercase hex>`, neither with a leading zero
    /// (a clock at or before the epoch gives nanoseconds `0`).
    Session,
    /// A stage name of the wire's [`Stage`] enum.
    Stage,
    /// 64 lowercase hex digits (a SHA-256 or an HMAC-SHA-256).
    Hex64,
    /// A tool name as the `mcp` policy allows it: 1-128 of
    /// `A-Z a-z 0-9 _ - .`.
    PolicyTool,
    /// A tool name as `wrap` writes it: see [`is_bounded_name`].
    ShownTool,
    /// Text cut at [`MAX_TEXT_BYTES`]: see [`is_bounded_text`].
    Text,
    /// A JSON-RPC method `wrap` forwards: non-empty, no control
    /// characters, cut like [`Rule::Text`].
    Method,
    /// `http` or `ssh`.
    TargetKind,
    /// 1-255 printable ASCII characters, no space.
    Host,
    /// `mcp` or `wrap`.
    Command,
    /// A version string: 1-64 of `0-9 A-Z a-z . + -`.
    Version,
    /// `sha256:` and 64 lowercase hex digits (a `wrap` pin).
    Pin,
    /// Why `wrap` dropped an upstream message.
    UpstreamDrop,
    /// Exactly this string.
    Exactly(&'static str),
    /// `upstream` or `wrapper`.
    AnsweredBy,
    /// Method → count of forwarded requests (`wrap`'s `session_end`).
    Forwarded,
    /// An integer in `min..=max`.
    Int(i64, i64),
    /// An integer in `min..=max`, or `null`.
    IntOrNull(i64, i64),
    /// `true` or `false`.
    Bool,
}

/// A 1-based input line number.
const LINE: Rule = Rule::Int(1, MAX_SAFE);
/// A count of one or more.
const COUNT: Rule = Rule::Int(1, MAX_SAFE);

/// Members every record has, in the order the line starts with.
const COMMON: &[(&str, Rule)] = &[
    ("time", Rule::Time),
    ("session", Rule::Session),
    ("seq", Rule::Int(0, MAX_SAFE)),
    ("prev", Rule::Hex64),
];

/// The optional last member of every record of a keyed session.
const MAC: (&str, Rule) = ("mac", Rule::Hex64);

/// One record kind: who writes it and its members besides [`COMMON`] and
/// `kind`: exactly these, no more, no fewer (`optional` ones may be
/// absent).
#[derive(Debug)]
pub(super) struct Shape {
    pub(super) kind: &'static str,
    /// `None`: both commands write it.
    pub(super) command: Option<Command>,
    members: &'static [(&'static str, Rule)],
    optional: &'static [(&'static str, Rule)],
}

const fn shape(
    kind: &'static str,
    command: Option<Command>,
    members: &'static [(&'static str, Rule)],
) -> Shape {
    Shape {
        kind,
        command,
        members,
        optional: &[],
    }
}

/// `wrap_dropped` has two member sets, told apart by `why`: drops of
/// upstream messages, and of client answers after a cancel.
const DROPPED_UPSTREAM: Shape = shape(
    "wrap_dropped",
    Some(Command::Wrap),
    &[
        ("upstream_line", LINE),
        ("why", Rule::UpstreamDrop),
        ("count", COUNT),
        ("last_upstream_line", LINE),
    ],
);
const DROPPED_CLIENT: Shape = shape(
    "wrap_dropped",
    Some(Command::Wrap),
    &[
        ("line", LINE),
        ("why", Rule::Exactly(ANSWER_AFTER_CANCEL)),
        ("count", COUNT),
        ("last_line", LINE),
    ],
);
const ANSWER_AFTER_CANCEL: &str = "answer_after_cancel";

/// Every kind, in the order reports list them.
pub(super) const SHAPES: &[Shape] = &[
    shape(
        "session_start",
        None,
        &[
            ("command", Rule::Command),
            ("version", Rule::Version),
            ("keyed", Rule::Bool),
        ],
    ),
    Shape {
        kind: "session_end",
        command: None,
        members: &[("records", Rule::Int(1, MAX_SAFE)), ("last", Rule::Hex64)],
        // Present in `wrap` sessions only; the session's command decides.
        optional: &[("forwarded", Rule::Forwarded)],
    },
    shape(
        "rejection",
        Some(Command::Mcp),
        &[
            ("line", LINE),
            ("stage", Rule::Stage),
            // JSON-RPC's reserved range: every code a stage maps to.
            ("code", Rule::Int(-32768, -32000)),
            ("fingerprint", Rule::Hex64),
        ],
    ),
    shape(
        "intent",
        Some(Command::Mcp),
        &[
            ("ticket", Rule::Int(0, MAX_SAFE)),
            ("line", Rule::IntOrNull(1, MAX_SAFE)),
            ("tool", Rule::PolicyTool),
            ("target_kind", Rule::TargetKind),
            ("host", Rule::Host),
            ("port", Rule::Int(1, 65535)),
            ("target_fingerprint", Rule::Hex64),
            // The policy's `timeout_ms` range.
            ("timeout_ms", Rule::Int(1, 600_000)),
        ],
    ),
    shape(
        "outcome",
        Some(Command::Mcp),
        &[
            ("ticket", Rule::Int(0, MAX_SAFE)),
            ("is_error", Rule::Bool),
            ("executed", Rule::Bool),
            ("cancelled", Rule::Bool),
            ("late", Rule::Bool),
            ("elapsed_ms", Rule::Int(0, MAX_SAFE)),
        ],
    ),
    shape(
        "wrap_intent",
        Some(Command::Wrap),
        &[
            ("line", LINE),
            // wrap's upstream ids count from 1.
            ("call", Rule::Int(1, MAX_SAFE)),
            ("tool", Rule::ShownTool),
            ("arguments_sha256", Rule::Hex64),
            // The policy's `[wrap] request_timeout_ms` range.
            ("timeout_ms", Rule::Int(1, 3_600_000)),
        ],
    ),
    shape(
        "wrap_outcome",
        Some(Command::Wrap),
        &[
            ("call", Rule::Int(1, MAX_SAFE)),
            ("is_error", Rule::Bool),
            ("answered_by", Rule::AnsweredBy),
            ("cancelled", Rule::Bool),
            ("timed_out", Rule::Bool),
            ("elapsed_ms", Rule::Int(0, MAX_SAFE)),
        ],
    ),
    shape(
        "wrap_rejection",
        Some(Command::Wrap),
        &[
            ("line", LINE),
            ("stage", Rule::Stage),
            ("code", Rule::Int(-32768, -32000)),
            ("fingerprint", Rule::Hex64),
        ],
    ),
    shape(
        "wrap_denied",
        Some(Command::Wrap),
        &[
            ("line", LINE),
            ("tool", Rule::ShownTool),
            ("reason", Rule::Text),
        ],
    ),
    shape(
        "wrap_quarantine",
        Some(Command::Wrap),
        &[
            ("upstream_line", LINE),
            ("stage", Rule::Stage),
            ("fingerprint", Rule::Hex64),
            ("count", COUNT),
            ("last_upstream_line", LINE),
        ],
    ),
    DROPPED_UPSTREAM,
    shape(
        "wrap_pinned",
        Some(Command::Wrap),
        &[("tool", Rule::ShownTool), ("pin", Rule::Pin)],
    ),
    shape(
        "wrap_rug_pull",
        Some(Command::Wrap),
        &[
            ("tool", Rule::ShownTool),
            ("pinned", Rule::Pin),
            ("seen", Rule::Pin),
        ],
    ),
    shape(
        "wrap_withheld",
        Some(Command::Wrap),
        &[("tool", Rule::ShownTool), ("reason", Rule::Text)],
    ),
    shape(
        "wrap_timeout",
        Some(Command::Wrap),
        &[("line", LINE), ("method", Rule::Method)],
    ),
    shape(
        "wrap_upstream_exited",
        Some(Command::Wrap),
        &[("unanswered", Rule::Int(0, MAX_SAFE))],
    ),
];

/// The shape `record` claims by its `kind` (and, for `wrap_dropped`, its
/// `why`).
fn shape_of(kind: &str, record: &Map<String, Value>) -> Option<&'static Shape> {
    if kind == "wrap_dropped"
        && record.get("why").and_then(Value::as_str) == Some(ANSWER_AFTER_CANCEL)
    {
        return Some(&DROPPED_CLIENT);
    }
    SHAPES.iter().find(|s| s.kind == kind)
}

fn is_hex(text: &str) -> bool {
    text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Digits without a leading zero (as `{}` and `{:x}` print a number).
fn is_number(text: &str, max_len: usize, digit: fn(u8) -> bool) -> bool {
    (1..=max_len).contains(&text.len()) && !text.starts_with('0') && text.bytes().all(digit)
}

/// Why `value` breaks `rule`, as the end of a sentence starting with the
/// member's name. Never echoes the value (a forged journal may hold
/// anything).
fn check(rule: Rule, value: &Value) -> Result<(), String> {
    let text = || value.as_str().ok_or_else(|| "is not a string".to_owned());
    match rule {
        Rule::Time => {
            if parse_time(text()?).is_none() {
                return Err(
                    "is not an RFC 3339 UTC time with milliseconds (YYYY-MM-DDTHH:MM:SS.mmmZ)"
                        .into(),
                );
            }
        }
        Rule::Session => {
            let session = text()?;
            let well_formed = session.split_once('-').is_some_and(|(pid, nanos)| {
                is_number(pid, 10, |b| b.is_ascii_digit())
                    && (nanos == "0"
                        || is_number(nanos, 32, |b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
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
        Rule::Hex64 => {
            let hex = text()?;
            if hex.len() != 64 || !is_hex(hex) {
                return Err("is not 64 lowercase hex digits".into());
            }
        }
        Rule::PolicyTool => {
            let tool = text()?;
            if !(1..=128).contains(&tool.len())
                || !tool
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
            {
                return Err("is not a tool name (1-128 of A-Z a-z 0-9 _ - .)".into());
            }
        }
        Rule::ShownTool => {
            if !is_bounded_name(text()?) {
                return Err(
                    "is not a tool name as wrap shows it (128 bytes at most, escaped, then a cut marker)"
                        .into(),
                );
            }
        }
        Rule::Text => {
            if !is_bounded_text(text()?) {
                return Err("is longer than 4096 bytes without its cut marker".into());
            }
        }
        Rule::Method => {
            let method = text()?;
            if method.is_empty() || method.chars().any(char::is_control) {
                return Err("is not a method name (non-empty, no control characters)".into());
            }
            if !is_bounded_text(method) {
                return Err("is longer than 4096 bytes without its cut marker".into());
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
        Rule::Command => {
            if Command::parse(text()?).is_none() {
                return Err("is neither \"mcp\" nor \"wrap\"".into());
            }
        }
        Rule::Version => {
            let version = text()?;
            if !(1..=64).contains(&version.len())
                || !version
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".+-".contains(&b))
            {
                return Err("is not a version (1-64 of 0-9 A-Z a-z . + -)".into());
            }
        }
        Rule::Pin => {
            let pin = text()?;
            if !pin
                .strip_prefix("sha256:")
                .is_some_and(|hex| hex.len() == 64 && is_hex(hex))
            {
                return Err("is not a pin (sha256: and 64 lowercase hex digits)".into());
            }
        }
        Rule::UpstreamDrop => {
            const WHY: [&str; 6] = [
                "unmatched_response",
                "late_response",
                "error_without_id",
                "request_not_allowed",
                "request_refused",
                "notification_not_allowed",
            ];
            let why = text()?;
            if !WHY.contains(&why) {
                return Err(format!(
                    "is not a reason for a drop (one of {}, {ANSWER_AFTER_CANCEL})",
                    WHY.join(", ")
                ));
            }
        }
        Rule::Exactly(expected) => {
            if text()? != expected {
                return Err(format!("is not {expected:?}"));
            }
        }
        Rule::AnsweredBy => {
            if !matches!(text()?, "upstream" | "wrapper") {
                return Err("is neither \"upstream\" nor \"wrapper\"".into());
            }
        }
        Rule::Forwarded => {
            let Value::Object(methods) = value else {
                return Err("is not an object".into());
            };
            for (method, count) in methods {
                if method.is_empty() || method.chars().any(char::is_control) {
                    return Err(
                        "has a member that is not a method name (non-empty, no control characters)"
                            .into(),
                    );
                }
                integer(count, 0, MAX_SAFE).map_err(|why| format!("has a count that {why}"))?;
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

/// `text` as the writers print a time, `YYYY-MM-DDTHH:MM:SS.mmmZ`, when it
/// is a real instant. Times of that one form order as their text does.
pub(super) fn parse_time(text: &str) -> Option<time::OffsetDateTime> {
    let b = text.as_bytes();
    let layout = b"dddd-dd-ddTdd:dd:dd.dddZ";
    if b.len() != layout.len()
        || !b.iter().zip(layout).all(|(c, l)| {
            if *l == b'd' {
                c.is_ascii_digit()
            } else {
                c == l
            }
        })
    {
        return None;
    }
    let n = |range: std::ops::Range<usize>| -> u16 {
        b[range].iter().fold(0, |n, d| n * 10 + u16::from(d - b'0'))
    };
    let month = time::Month::try_from(u8::try_from(n(5..7)).ok()?).ok()?;
    let date =
        time::Date::from_calendar_date(i32::from(n(0..4)), month, u8::try_from(n(8..10)).ok()?)
            .ok()?;
    let at = time::Time::from_hms_milli(
        u8::try_from(n(11..13)).ok()?,
        u8::try_from(n(14..16)).ok()?,
        u8::try_from(n(17..19)).ok()?,
        n(20..23),
    )
    .ok()?;
    Some(time::PrimitiveDateTime::new(date, at).assume_utc())
}

/// Characters a shown tool name holds only as `\u{…}` escapes: controls,
/// separators other than the space, and format and private-use
/// characters (bidi overrides, zero widths, tags...).
pub(super) fn escaped_in_names(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            u32::from(c),
            0xAD | 0x34F
                | 0x61C
                | 0x115F..=0x1160
                | 0x17B4..=0x17B5
                | 0x180B..=0x180F
                | 0x200B..=0x200F
                | 0x202A..=0x202E
                | 0x2060..=0x206F
                | 0x3164
                | 0xE000..=0xF8FF
                | 0xFE00..=0xFE0F
                | 0xFEFF
                | 0xFFA0
                | 0xFFF0..=0xFFFB
                | 0x1D173..=0x1D17A
                | 0xE0000..=0xE0FFF
                | 0xF0000..
        )
}

/// The byte length of the name `shown` renders when it is exactly a
/// rendering: every character shown as itself except `\` (written `\\`)
/// and the characters [`escaped_in_names`] (written `\u{hex}`, lowercase,
/// no leading zero), which never appear as themselves.
fn rendered_len(shown: &str) -> Option<usize> {
    let mut raw = 0;
    let mut rest = shown;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        if c != '\\' {
            if escaped_in_names(c) {
                return None;
            }
            raw += c.len_utf8();
            continue;
        }
        if let Some(after) = rest.strip_prefix('\\') {
            rest = after;
            raw += 1;
            continue;
        }
        let (hex, after) = rest.strip_prefix("u{")?.split_once('}')?;
        if !is_number(hex, 6, |b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) && hex != "0" {
            return None;
        }
        let escaped = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
        if !escaped_in_names(escaped) {
            return None;
        }
        raw += escaped.len_utf8();
        rest = after;
    }
    Some(raw)
}

/// The fewest bytes a character takes in a name when its rendering takes
/// at least `shown` bytes (1: one byte, or `\\`, or a one-byte control's
/// `\u{1f}`; longer escapes stand for longer characters).
fn fewest_bytes_rendered_in(shown: usize) -> Option<usize> {
    match shown {
        0..=6 => Some(1),
        7 => Some(2),
        8 => Some(3),
        // `\u{10000}` to `\u{10ffff}`.
        9..=10 => Some(4),
        _ => None,
    }
}

/// Whether `shown` is a tool name as `wrap` writes it: a rendering (see
/// [`rendered_len`]) of at most [`NAME_BYTES_SHOWN`] bytes; or one cut
/// before the character that would have taken it past that bound, followed
/// by `…(N bytes)` with N the whole name's length.
pub(super) fn is_bounded_name(shown: &str) -> bool {
    if shown.len() <= NAME_BYTES_SHOWN && rendered_len(shown).is_some() {
        return true;
    }
    let Some((kept, whole)) = cut_marker(shown) else {
        return false;
    };
    let Some(raw) = rendered_len(kept) else {
        return false;
    };
    kept.len() <= NAME_BYTES_SHOWN
        && fewest_bytes_rendered_in(NAME_BYTES_SHOWN + 1 - kept.len())
            .is_some_and(|next| whole >= (raw + next) as u64)
}

/// Whether `text` is a text member as the writers bound it: at most
/// [`MAX_TEXT_BYTES`] bytes; or cut at the last character boundary within
/// them and followed by `…(N bytes)`, N its whole length (more than the
/// bound).
pub(super) fn is_bounded_text(text: &str) -> bool {
    if text.len() <= MAX_TEXT_BYTES {
        return true;
    }
    cut_marker(text).is_some_and(|(kept, whole)| {
        // A character is at most 4 bytes: the cut lands within its last 3.
        (MAX_TEXT_BYTES - 3..=MAX_TEXT_BYTES).contains(&kept.len()) && whole > MAX_TEXT_BYTES as u64
    })
}

/// `text` split into what was kept and the whole length its cut marker
/// `…(N bytes)` states (N in decimal, no leading zero).
fn cut_marker(text: &str) -> Option<(&str, u64)> {
    let rest = text.strip_suffix(" bytes)")?;
    let (kept, number) = rest.rsplit_once("…(")?;
    if !is_number(number, 20, |b| b.is_ascii_digit()) {
        return None;
    }
    Some((kept, number.parse().ok()?))
}

/// Every way `record` departs from its kind's member set and rules, and
/// the kind's shape when it is known.
pub(super) fn problems(record: &Map<String, Value>) -> (Vec<String>, Option<&'static Shape>) {
    let mut found = Vec::new();
    let shape = match record.get("kind") {
        None => {
            found.push("missing field \"kind\"".to_owned());
            None
        }
        Some(Value::String(kind)) => {
            let shape = shape_of(kind, record);
            if shape.is_none() {
                found.push("field \"kind\" is not a known record kind".to_owned());
            }
            shape
        }
        Some(_) => {
            found.push("field \"kind\" is not a string".to_owned());
            None
        }
    };
    let members = shape.map(|s| s.members).unwrap_or_default();
    for (name, rule) in COMMON.iter().chain(members) {
        match record.get(*name) {
            None => found.push(format!("missing field {name:?}")),
            Some(value) => {
                if let Err(why) = check(*rule, value) {
                    found.push(format!("field {name:?} {why}"));
                }
            }
        }
    }
    let optional = shape.map(|s| s.optional).unwrap_or_default();
    for (name, rule) in optional.iter().chain([&MAC]) {
        if let Some(value) = record.get(*name)
            && let Err(why) = check(*rule, value)
        {
            found.push(format!("field {name:?} {why}"));
        }
    }
    // Without a known kind the member set is unknown: only its own
    // problem is reported.
    if shape.is_some() {
        for name in record.keys() {
            let known = name == "kind"
                || name == MAC.0
                || COMMON
                    .iter()
                    .chain(members)
                    .chain(optional)
                    .any(|(n, _)| n == name);
            if !known {
                found.push(format!(
                    "unknown member {}",
                    portcullis_wire::strict_json::display_name(name)
                ));
            }
        }
    }
    if found.is_empty()
        && let Some(shape) = shape
    {
        found.extend(relations(shape, record));
    }
    (found, shape)
}

/// What must hold between members of one well-typed record.
fn relations(shape: &Shape, record: &Map<String, Value>) -> Vec<String> {
    let int = |name: &str| record.get(name).and_then(Value::as_i64).unwrap_or_default();
    let text = |name: &str| record.get(name).and_then(Value::as_str).unwrap_or_default();
    let flag = |name: &str| {
        record
            .get(name)
            .and_then(Value::as_bool)
            .unwrap_or_default()
    };
    let mut found = Vec::new();
    let seq = int("seq");
    if (seq == 0) != (shape.kind == "session_start") {
        found.push(if seq == 0 {
            "seq is 0 but the record is not a session_start".to_owned()
        } else {
            "a session_start whose seq is not 0".to_owned()
        });
    } else if (seq == 0) != (text("prev") == FIRST_PREV) {
        found.push(if seq == 0 {
            "prev of a session's first record (seq 0) is not 64 zeros".to_owned()
        } else {
            "prev is 64 zeros but seq is not 0".to_owned()
        });
    }
    let mut run = |first: &str, last: &str| {
        let (first, last, count) = (int(first), int(last), int("count"));
        if last < first {
            found.push("the run's last line is before its first".to_owned());
        } else if count > last - first + 1 {
            found.push("count is more than the lines of the run".to_owned());
        } else if count == 1 && last != first {
            found.push("a run of one line has two line numbers".to_owned());
        }
    };
    match shape.kind {
        "session_end" => {
            if int("records") != seq {
                found.push("records is not the session_end's own seq".to_owned());
            }
            if text("last") != text("prev") {
                found.push("last is not the session_end's own prev".to_owned());
            }
        }
        "wrap_quarantine" => run("upstream_line", "last_upstream_line"),
        "wrap_dropped" if record.contains_key("last_line") => run("line", "last_line"),
        "wrap_dropped" => run("upstream_line", "last_upstream_line"),
        "wrap_rug_pull" if text("pinned") == text("seen") => {
            found.push("a rug pull whose pinned and seen pins are equal".to_owned());
        }
        "wrap_outcome" => {
            // How wrap ends a call: the upstream's answer (error or not), or
            // the wrapper's error, time-out error, or silence on a cancel.
            let ended = (
                text("answered_by"),
                flag("is_error"),
                flag("cancelled"),
                flag("timed_out"),
            );
            let possible = matches!(
                ended,
                ("upstream", _, false, false)
                    | ("wrapper", true, false, _)
                    | ("wrapper", false, true, false)
            );
            if !possible {
                found.push(
                    "answered_by, is_error, cancelled and timed_out are not an end a call can have"
                        .to_owned(),
                );
            }
        }
        _ => {}
    }
    found
}

/// The value of `name`, a member every record has (or `mac`), when it
/// keeps its rule: what the chain is read from, even in a record whose
/// other members are wrong.
pub(super) fn valid_common<'a>(record: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    let (_, rule) = COMMON.iter().chain([&MAC]).find(|(n, _)| *n == name)?;
    let value = record.get(name)?;
    check(*rule, value).ok().map(|()| value)
}
