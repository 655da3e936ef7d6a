//! Each line judged on its own (shape, layout) and as a link of its
//! session's chain (`seq`, `prev`, `mac`, times, intents and outcomes).
//! State is kept per session, not per line: a session's next `seq` and
//! `prev`, its latest time, its open intents.

use std::collections::{BTreeMap, HashMap};

use hmac::{Hmac, Mac as _};
use portcullis_wire::Limits;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use super::Line;
use super::layout::is_canonical;
use super::lines::MAX_LINE_BYTES;
use crate::audit::shape::{self, Command, SHAPES, Shape};

/// A problem, by the line it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::audit) struct Problem {
    pub(in crate::audit) line: u64,
    pub(in crate::audit) problem: String,
}

/// An intent with no outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::audit) struct Interrupted {
    /// The intent's line.
    pub(in crate::audit) line: u64,
    /// `ticket` (`mcp`) or `call` (`wrap`): the member that names the action.
    pub(in crate::audit) id_name: &'static str,
    pub(in crate::audit) id: u64,
    pub(in crate::audit) tool: String,
}

/// One session of the file, as far as its lines tell.
#[derive(Debug)]
pub(in crate::audit) struct Session {
    pub(in crate::audit) id: String,
    /// From its `session_start`; `None` when it has none.
    pub(in crate::audit) command: Option<Command>,
    pub(in crate::audit) keyed: Option<bool>,
    pub(in crate::audit) first_line: u64,
    pub(in crate::audit) last_line: u64,
    /// Lines that name the session (with a readable `seq` and `prev`).
    pub(in crate::audit) records: u64,
    /// The line of its `session_end`.
    pub(in crate::audit) closed_at: Option<u64>,
    /// Filled in by [`Verifier::finish`], by line.
    pub(in crate::audit) interrupted: Vec<Interrupted>,
    /// The line of its latest `session_start`.
    started_at: Option<u64>,
    /// What the next record must hold, and the line that says so.
    next_seq: u64,
    prev: [u8; 32],
    chain_line: u64,
    /// The latest `time` (the writers' one layout orders as text does).
    last_time: Option<String>,
    time_line: u64,
    /// Intents without an outcome yet, by ticket or call.
    open: BTreeMap<u64, Interrupted>,
    /// The highest ticket or call of an intent so far: they count up.
    highest_intent: Option<u64>,
    /// Whether "not keyed" was said once already (under `--key-env`).
    unkeyed_said: bool,
}

impl Session {
    fn new(id: &str, line: u64) -> Self {
        Self {
            id: id.to_owned(),
            command: None,
            keyed: None,
            first_line: line,
            last_line: line,
            records: 0,
            closed_at: None,
            interrupted: Vec::new(),
            started_at: None,
            next_seq: 0,
            prev: [0; 32],
            chain_line: line,
            last_time: None,
            time_line: line,
            open: BTreeMap::new(),
            highest_intent: None,
            unkeyed_said: false,
        }
    }

    /// The session starts over (a replay, a journal appended twice): what
    /// was open stays interrupted, the rest is judged afresh.
    fn restart(&mut self) {
        self.interrupted
            .extend(std::mem::take(&mut self.open).into_values());
        self.highest_intent = None;
        self.closed_at = None;
        self.last_time = None;
        self.command = None;
        self.keyed = None;
    }
}

/// The key of `--key-env`, never shown.
#[derive(Default)]
struct Key(Vec<u8>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

/// Reads a journal line by line ([`Verifier::line`]), then tells what is
/// left open at its end ([`Verifier::finish`]).
#[derive(Debug, Default)]
pub(in crate::audit) struct Verifier {
    /// The key of `--key-env`: every `mac` is checked under it.
    key: Option<Key>,
    pub(in crate::audit) lines: u64,
    /// Lines that are well-formed records.
    pub(in crate::audit) records: u64,
    /// Well-formed records by kind.
    pub(in crate::audit) kinds: BTreeMap<&'static str, u64>,
    /// In order of their first line.
    pub(in crate::audit) sessions: Vec<Session>,
    index: HashMap<String, usize>,
    /// Records carrying a `mac` (checked only under a key).
    pub(in crate::audit) macs: u64,
}

impl Verifier {
    pub(in crate::audit) fn new(key: Option<Vec<u8>>) -> Self {
        Self {
            key: key.map(Key),
            ..Self::default()
        }
    }

    /// Whether `mac`s are checked.
    pub(in crate::audit) fn keyed(&self) -> bool {
        self.key.is_some()
    }

    /// Judge line `number`: what is wrong with it, if anything.
    pub(in crate::audit) fn line(&mut self, number: u64, line: Line<'_>) -> Option<String> {
        self.lines += 1;
        let bytes = match line {
            Line::TooLong { bytes } => {
                return Some(format!(
                    "a line of {bytes} bytes, longer than any record ({MAX_LINE_BYTES} at most): skipped"
                ));
            }
            Line::Unterminated(_) => return Some("truncated final line (no newline)".into()),
            Line::Whole(bytes) => bytes,
        };
        if bytes.is_empty() {
            return Some("empty line".into());
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            return Some("not UTF-8".into());
        };
        let value = match portcullis_wire::strict_json::parse_value(text, &Limits::default()) {
            Ok(value) => value,
            Err(r) => return Some(format!("not one strict JSON value ({})", r.reason)),
        };
        let Value::Object(record) = value else {
            return Some("not a JSON object".into());
        };
        let (mut reasons, shape) = shape::problems(&record);
        let well_formed = reasons.is_empty();
        if well_formed && !is_canonical(&record, text) {
            reasons.push(
                "not laid out as the writers write a record (member order, spacing or escapes)"
                    .into(),
            );
        }
        self.link(number, text, &record, shape, well_formed, &mut reasons);
        if well_formed && let Some(shape) = shape {
            self.records += 1;
            *self.kinds.entry(shape.kind).or_default() += 1;
        }
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }

    /// The line as a link of its session's chain, when it names one with a
    /// readable `seq` and `prev`.
    fn link(
        &mut self,
        number: u64,
        text: &str,
        record: &Map<String, Value>,
        shape: Option<&'static Shape>,
        well_formed: bool,
        reasons: &mut Vec<String>,
    ) {
        let common = |name| shape::valid_common(record, name);
        let (Some(Value::String(id)), Some(seq), Some(prev)) = (
            common("session"),
            common("seq").and_then(Value::as_u64),
            common("prev").and_then(Value::as_str).and_then(hash_of),
        ) else {
            return;
        };
        if record.contains_key("mac") {
            self.macs += 1;
        }
        let at = match self.index.get(id) {
            Some(at) => *at,
            None => {
                self.sessions.push(Session::new(id, number));
                self.index.insert(id.clone(), self.sessions.len() - 1);
                self.sessions.len() - 1
            }
        };
        let session = &mut self.sessions[at];
        place(session, seq, &prev, reasons);
        session.last_line = number;
        session.records += 1;
        session.next_seq = seq.saturating_add(1);
        session.prev = Sha256::digest(text.as_bytes()).into();
        session.chain_line = number;
        if seq == 0 {
            session.started_at = Some(number);
        }
        let Some(shape) = shape else { return };
        let member = |name: &str| record.get(name);
        if shape.kind == "session_start" && well_formed {
            session.command = member("command")
                .and_then(Value::as_str)
                .and_then(Command::parse);
            session.keyed = member("keyed").and_then(Value::as_bool);
        }
        if let (Some(kind_of), Some(command)) = (shape.command, session.command)
            && kind_of != command
        {
            let named = |c: Command| match c {
                Command::Mcp => "an mcp",
                Command::Wrap => "a wrap",
            };
            reasons.push(format!(
                "{} record in {} session",
                named(kind_of),
                named(command)
            ));
        }
        let mac = common("mac").and_then(Value::as_str);
        mac_of(
            self.key.as_ref().map(|k| k.0.as_slice()),
            session,
            text,
            record.contains_key("mac"),
            mac,
            reasons,
        );
        if let Some(time) = common("time").and_then(Value::as_str) {
            if let Some(last) = &session.last_time
                && time < last.as_str()
            {
                reasons.push(format!(
                    "time is earlier than on line {}, the session's previous record",
                    session.time_line
                ));
            }
            session.last_time = Some(time.to_owned());
            session.time_line = number;
        }
        if shape.kind == "session_end" {
            session.closed_at = Some(number);
            let counts = record.contains_key("forwarded");
            match session.command {
                Some(Command::Wrap) if !counts => reasons.push(
                    "missing field \"forwarded\" (the end of a wrap session counts what it forwarded)"
                        .into(),
                ),
                Some(Command::Mcp) if counts => reasons.push(
                    "unknown member \"forwarded\" (the end of an mcp session has none)".into(),
                ),
                _ => {}
            }
        }
        if well_formed {
            pair(session, number, shape.kind, record, reasons);
        }
    }

    /// The end of the file: every open intent is interrupted; every session
    /// without `session_end` was cut short, a problem unless
    /// `allow_cut_short`.
    pub(in crate::audit) fn finish(&mut self, allow_cut_short: bool) -> Vec<Problem> {
        let mut problems = Vec::new();
        for session in &mut self.sessions {
            session
                .interrupted
                .extend(std::mem::take(&mut session.open).into_values());
            session.interrupted.sort_by_key(|i| i.line);
            if session.closed_at.is_none() && !allow_cut_short {
                problems.push(Problem {
                    line: session.last_line,
                    problem: "its session was cut short: this is its last record and no session_end follows"
                        .into(),
                });
            }
        }
        problems
    }

    /// Every kind with its count (0 for those not seen), in the order of
    /// the shapes.
    pub(in crate::audit) fn kind_counts(&self) -> Vec<(&'static str, u64)> {
        let mut counts: Vec<(&'static str, u64)> = Vec::new();
        for shape in SHAPES {
            if !counts.iter().any(|(k, _)| *k == shape.kind) {
                counts.push((
                    shape.kind,
                    self.kinds.get(shape.kind).copied().unwrap_or_default(),
                ));
            }
        }
        counts
    }
}

/// `hex` (64 lowercase hex digits) as bytes.
fn hash_of(hex: &str) -> Option<[u8; 32]> {
    let mut bytes = [0; 32];
    hex::decode_to_slice(hex, &mut bytes).ok()?;
    Some(bytes)
}

/// Where the line stands in its session's chain. Whatever is wrong, the
/// chain goes on from this line (the caller moves it there), so a missing
/// or extra line is one problem, not one per line after it.
fn place(session: &mut Session, seq: u64, prev: &[u8; 32], reasons: &mut Vec<String>) {
    let first = session.records == 0;
    if first {
        if seq != 0 {
            reasons.push(
                "the first record of its session is not its session_start (seq 0): the session's start is missing"
                    .into(),
            );
        }
    } else if seq == 0 {
        reasons.push(match session.started_at {
            Some(line) => format!(
                "its session starts again (its session_start is on line {line}): a journal appended twice, or a session replayed"
            ),
            None => format!(
                "a session_start after records of its session (from line {})",
                session.first_line
            ),
        });
        session.restart();
    } else if let Some(end) = session.closed_at {
        reasons.push(format!(
            "a record after its session's session_end (line {end})"
        ));
    } else if seq == session.next_seq {
        if *prev != session.prev {
            reasons.push(format!(
                "prev is not the SHA-256 of line {}, the session's previous record (that line was edited, or a record was removed or put between)",
                session.chain_line
            ));
        }
    } else if seq > session.next_seq {
        reasons.push(format!(
            "seq skips {} record(s) of its session after line {}: removed, or refused above",
            seq - session.next_seq,
            session.chain_line
        ));
    } else {
        reasons.push(format!(
            "seq goes back: its session was at seq {} on line {} (a record repeated or moved)",
            session.next_seq.saturating_sub(1),
            session.chain_line
        ));
    }
}

/// The line's `mac` against its session's `keyed`, and under the key.
fn mac_of(
    key: Option<&[u8]>,
    session: &mut Session,
    line: &str,
    has_mac: bool,
    mac: Option<&str>,
    reasons: &mut Vec<String>,
) {
    match (session.keyed, has_mac) {
        (Some(true), false) => reasons.push("no mac, though its session is keyed".into()),
        (Some(false), true) => reasons.push("a mac, though its session is not keyed".into()),
        _ => {}
    }
    let Some(key) = key else { return };
    if session.keyed == Some(false) {
        if !session.unkeyed_said {
            session.unkeyed_said = true;
            reasons.push(
                "its session is not keyed, and --key-env asks for a valid mac on every record"
                    .into(),
            );
        }
        return;
    }
    if !has_mac {
        if session.keyed.is_none() {
            reasons.push("no mac, and --key-env asks for one on every record".into());
        }
        return;
    }
    let Some(mac) = mac else { return };
    if !mac_matches(key, line, mac) {
        reasons.push("mac does not match: the line was edited, or written without this key".into());
    }
}

/// Whether `mac` is the HMAC-SHA-256 under `key` of `line` without its
/// `mac` member (the line's suffix `,"mac":"…"}` read as `}`).
fn mac_matches(key: &[u8], line: &str, mac: &str) -> bool {
    let suffix = format!(",\"mac\":\"{mac}\"}}");
    let (Some(signed), Some(expected), Ok(mut hmac)) = (
        line.strip_suffix(&suffix),
        hash_of(mac),
        Hmac::<Sha256>::new_from_slice(key),
    ) else {
        return false;
    };
    hmac.update(signed.as_bytes());
    hmac.update(b"}");
    hmac.verify_slice(&expected).is_ok()
}

/// Intents and outcomes, by ticket (`mcp`) or call (`wrap`): one intent
/// each, counting up, and an outcome only for an open intent.
fn pair(
    session: &mut Session,
    number: u64,
    kind: &str,
    record: &Map<String, Value>,
    reasons: &mut Vec<String>,
) {
    let (id_name, intent) = match kind {
        "intent" => ("ticket", true),
        "outcome" => ("ticket", false),
        "wrap_intent" => ("call", true),
        "wrap_outcome" => ("call", false),
        _ => return,
    };
    let Some(id) = record.get(id_name).and_then(Value::as_u64) else {
        return;
    };
    if !intent {
        if session.open.remove(&id).is_none() {
            reasons.push(format!(
                "an outcome with no open intent for its {id_name} in its session"
            ));
        }
        return;
    }
    if let Some(open) = session.open.get(&id) {
        reasons.push(format!(
            "a second intent for the {id_name} of line {}",
            open.line
        ));
        return;
    }
    if session.highest_intent.is_some_and(|highest| id <= highest) {
        reasons.push(format!(
            "an intent whose {id_name} is not above its session's earlier intents' (each action has one intent, in order)"
        ));
    }
    session.highest_intent = Some(session.highest_intent.map_or(id, |h| h.max(id)));
    let tool = record
        .get("tool")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    session.open.insert(
        id,
        Interrupted {
            line: number,
            id_name,
            id,
            tool,
        },
    );
}
