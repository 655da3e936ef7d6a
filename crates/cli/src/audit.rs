//! The audit journal (`portcullis mcp --audit FILE`) and
//! `portcullis audit verify FILE`.
//!
//! The journal is JSON Lines, appended, one record per line. Every record
//! has `kind`, `time` (RFC 3339, UTC, from the system clock of the driver;
//! the gateway core has no clock) and `session` (an id unique to one run of
//! `portcullis mcp`, so several runs may append to one file). Records never
//! hold raw frame bytes, argument values or credentials:
//!
//! - `{"kind":"rejection","line":N,"stage":..,"code":..,"fingerprint":..}`
//!   for every refused frame (the fingerprint is the SHA-256 of the frame);
//! - `{"kind":"intent","ticket":T,"line":N,"tool":..,"target_kind":"http"|"ssh",
//!   "host":..,"port":..,"target_fingerprint":..,"timeout_ms":..}`, written
//!   and synced to disk *before* the action is handed to a worker; if it
//!   cannot be written the action is denied;
//! - `{"kind":"outcome","ticket":T,"is_error":..,"executed":..,"cancelled":..,
//!   "late":..,"elapsed_ms":..}` when the worker is done with it
//!   (`executed: false` when it never ran; `late` when the driver had
//!   already stopped waiting for it).
//!
//! An intent without an outcome is an *interrupted* action: the process
//! ended while it ran, and whether it took effect is unknown.
//!
//! `audit verify` holds every line to exactly that shape, since a journal
//! that merely parses proves nothing: per kind, the member set (an unknown
//! or a missing member is an error), each member's type and range
//! (`line` ≥ 1, `port` 1..=65535, `code` in JSON-RPC's reserved
//! −32768..=−32000, `timeout_ms` in the policy's 1..=600000, tickets and
//! milliseconds within ±(2^53−1)), `time` as RFC 3339 in UTC, `stage` one
//! of the wire's [`Stage`] names, fingerprints as 64 lowercase hex digits,
//! `session` as `<pid>-<hex>`, `tool` as the policy's tool names; then
//! that no ticket has two intents and every outcome follows its intent.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use clap::{Args, Subcommand};
use portcullis_gateway::{ActionTarget, AuthorizedAction, Outcome, RejectionRecord, Ticket};
use portcullis_wire::{Fingerprint, Limits, Stage};
use serde::Serialize;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;

// ---------------------------------------------------------------------------
// Writing

/// An open audit journal.
#[derive(Debug)]
pub struct Journal {
    file: File,
    session: String,
    /// Set after a failed write: a partial line may be in the file, so
    /// nothing more is appended and every later action is denied.
    broken: bool,
}

impl Journal {
    /// Open `path` for appending (created 0600 when missing).
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Ok(Self {
            file,
            session: format!("{}-{:x}", std::process::id(), now.as_nanos()),
            broken: false,
        })
    }

    fn append(&mut self, kind: &str, body: impl Serialize, sync: bool) -> io::Result<()> {
        if self.broken {
            return Err(io::Error::other(
                "the journal is unavailable after an earlier write failure",
            ));
        }
        let record = Record {
            kind,
            time: rfc3339(SystemTime::now()),
            session: &self.session,
            body,
        };
        let mut line = serde_json::to_vec(&record).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut result = self.file.write_all(&line);
        if result.is_ok() && sync {
            result = match self.file.sync_data() {
                // Not a regular file (a pipe, a terminal): nothing to sync;
                // the write itself succeeded.
                Err(err) if err.kind() == io::ErrorKind::InvalidInput => Ok(()),
                other => other,
            };
        }
        if result.is_err() {
            self.broken = true;
        }
        result
    }

    /// Record one refused frame.
    pub fn rejection(&mut self, r: &RejectionRecord) -> io::Result<()> {
        #[derive(Serialize)]
        struct Rejection<'a> {
            line: u64,
            stage: &'a str,
            code: i64,
            fingerprint: String,
        }
        let body = Rejection {
            line: r.line,
            stage: r.stage.as_str(),
            code: r.code,
            fingerprint: r.fingerprint.to_hex(),
        };
        self.append("rejection", body, false)
    }

    /// Record, and sync, that `action` is about to run.
    pub fn intent(
        &mut self,
        ticket: Ticket,
        line: Option<u64>,
        action: &AuthorizedAction,
    ) -> io::Result<()> {
        #[derive(Serialize)]
        struct Intent<'a> {
            ticket: u64,
            line: Option<u64>,
            tool: &'a str,
            target_kind: &'a str,
            host: String,
            port: u16,
            target_fingerprint: String,
            timeout_ms: u64,
        }
        let (host, port) = match action.target() {
            ActionTarget::Http(h) => (
                h.url().host_str().unwrap_or_default().to_owned(),
                h.url().port_or_known_default().unwrap_or(0),
            ),
            ActionTarget::Ssh(s) => (s.host().to_owned(), s.port()),
        };
        let body = Intent {
            ticket: ticket.0,
            line,
            tool: action.tool(),
            target_kind: action.kind(),
            host,
            port,
            target_fingerprint: Fingerprint::of(action.describe_target().as_bytes()).to_hex(),
            timeout_ms: u64::try_from(action.timeout().as_millis()).unwrap_or(u64::MAX),
        };
        self.append("intent", body, true)
    }

    /// Record what became of an action.
    pub fn outcome(&mut self, ticket: Ticket, done: &OutcomeRecord<'_>) -> io::Result<()> {
        #[derive(Serialize)]
        struct Outcome {
            ticket: u64,
            is_error: bool,
            executed: bool,
            cancelled: bool,
            late: bool,
            elapsed_ms: u64,
        }
        let body = Outcome {
            ticket: ticket.0,
            is_error: done.outcome.is_error,
            executed: done.executed,
            cancelled: done.cancelled,
            late: done.late,
            elapsed_ms: u64::try_from(done.elapsed.as_millis()).unwrap_or(u64::MAX),
        };
        self.append("outcome", body, false)
    }

    /// Sync everything written so far (at shutdown).
    pub fn sync(&mut self) {
        if !self.broken {
            let _ = self.file.sync_data();
        }
    }
}

/// One journal line: the common fields first, then the kind's own.
#[derive(Serialize)]
struct Record<'a, T> {
    kind: &'a str,
    time: String,
    session: &'a str,
    #[serde(flatten)]
    body: T,
}

/// What became of one action, for [`Journal::outcome`].
#[derive(Debug)]
pub struct OutcomeRecord<'a> {
    /// The outcome (only `is_error` is recorded, never the text).
    pub outcome: &'a Outcome,
    /// Whether the executor ran at all.
    pub executed: bool,
    /// Whether the client cancelled it.
    pub cancelled: bool,
    /// Whether the driver had stopped waiting for it (timeout).
    pub late: bool,
    /// Time spent in the worker.
    pub elapsed: Duration,
}

/// `time` as RFC 3339 in UTC with milliseconds, e.g.
/// `2025-11-30T01:26:00.123Z`.
pub fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days(i64::try_from(secs / 86_400).unwrap_or(0));
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

// ---------------------------------------------------------------------------
// `portcullis audit verify`

/// Arguments of `portcullis audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Check that every line of a journal is a record exactly as
    /// `portcullis mcp --audit` writes it (per kind: the member set, no
    /// unknown members, types and ranges, RFC 3339 UTC times, stage names,
    /// 64-hex fingerprints), that outcomes follow their intents, and list
    /// intents that have no outcome (interrupted actions). Exit 0 when
    /// well-formed (interrupted actions are reported, not errors), 1 when
    /// any line is malformed (each named on stderr with its line number
    /// and field), 2 when the file cannot be read.
    Verify {
        /// The journal file.
        file: PathBuf,
    },
}

/// Run `portcullis audit`.
pub fn run(args: &AuditArgs, out: impl Write) -> anyhow::Result<ExitCode> {
    match &args.command {
        AuditCommand::Verify { file } => verify(file, out),
    }
}

/// Malformed lines shown in full; the rest are counted.
const SHOWN_PROBLEMS: usize = 20;

#[derive(Debug, Default)]
struct Tally {
    records: u64,
    rejections: u64,
    intents: u64,
    outcomes: u64,
    /// (session, ticket) → (line, tool, time) of intents awaiting an outcome.
    open: BTreeMap<(String, u64), (usize, String, String)>,
    malformed: Vec<(usize, String)>,
}

fn verify(path: &Path, out: impl Write) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut tally = Tally::default();
    let mut rest = &bytes[..];
    let mut number = 0;
    while !rest.is_empty() {
        number += 1;
        let (line, next, terminated) = match memchr::memchr(b'\n', rest) {
            Some(end) => (&rest[..end], &rest[end + 1..], true),
            None => (rest, &rest[rest.len()..], false),
        };
        rest = next;
        if !terminated {
            tally
                .malformed
                .push((number, "truncated final line (no newline)".into()));
            continue;
        }
        if let Err(why) = tally.record(number, line) {
            tally.malformed.push((number, why));
        }
    }
    let mut out = io::BufWriter::new(out);
    writeln!(out, "{}: {} records", path.display(), tally.records)?;
    writeln!(out, "rejections: {}", tally.rejections)?;
    writeln!(out, "intents: {}", tally.intents)?;
    writeln!(out, "outcomes: {}", tally.outcomes)?;
    writeln!(out, "interrupted: {}", tally.open.len())?;
    for ((session, ticket), (line, tool, time)) in &tally.open {
        writeln!(
            out,
            "  line {line}: session {session} ticket {ticket} tool {tool:?} at {time}: no outcome (interrupted)"
        )?;
    }
    writeln!(out, "malformed: {}", tally.malformed.len())?;
    for (line, why) in tally.malformed.iter().take(SHOWN_PROBLEMS) {
        writeln!(out, "  line {line}: {why}")?;
    }
    if tally.malformed.len() > SHOWN_PROBLEMS {
        writeln!(
            out,
            "  ... and {} more",
            tally.malformed.len() - SHOWN_PROBLEMS
        )?;
    }
    out.flush()?;
    // The verdict, for whoever reads only stderr (a script checking the
    // exit status): each malformed line, by number, and what is wrong.
    let mut err = io::stderr().lock();
    for (line, why) in tally.malformed.iter().take(SHOWN_PROBLEMS) {
        writeln!(err, "portcullis: {}: line {line}: {why}", path.display())?;
    }
    if tally.malformed.len() > SHOWN_PROBLEMS {
        writeln!(
            err,
            "portcullis: {}: ... and {} more malformed lines",
            path.display(),
            tally.malformed.len() - SHOWN_PROBLEMS
        )?;
    }
    Ok(if tally.malformed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

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
fn problems(record: &serde_json::Map<String, Value>) -> Vec<String> {
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

impl Tally {
    fn record(&mut self, number: usize, line: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_owned())?;
        let value = portcullis_wire::strict_json::parse_value(text, &Limits::default())
            .map_err(|r| format!("not one strict JSON value ({})", r.reason))?;
        let Value::Object(record) = value else {
            return Err("not a JSON object".into());
        };
        let found = problems(&record);
        if !found.is_empty() {
            return Err(found.join("; "));
        }
        // Every member is present and well-typed past this point.
        let string = |key: &str| record.get(key).and_then(Value::as_str).unwrap_or_default();
        let ticket = record
            .get("ticket")
            .and_then(Value::as_u64)
            .unwrap_or_default();
        let session = string("session");
        match string("kind") {
            "rejection" => self.rejections += 1,
            "intent" => {
                let key = (session.to_owned(), ticket);
                if self.open.contains_key(&key) {
                    return Err(format!(
                        "ticket {ticket} has a second intent in session {session}"
                    ));
                }
                self.open.insert(
                    key,
                    (number, string("tool").to_owned(), string("time").to_owned()),
                );
                self.intents += 1;
            }
            _ => {
                if self.open.remove(&(session.to_owned(), ticket)).is_none() {
                    return Err(format!(
                        "outcome for ticket {ticket} in session {session} has no open intent before it"
                    ));
                }
                self.outcomes += 1;
            }
        }
        self.records += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_matches_known_instants() {
        let at = |secs: u64, millis: u64| {
            rfc3339(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_700_000_000, 999), "2023-11-14T22:13:20.999Z");
        assert_eq!(at(4_107_542_399, 0), "2100-02-28T23:59:59.000Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
    }

    const FP: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn rejection(session: &str) -> Value {
        serde_json::json!({"kind":"rejection","time":"2026-11-30T01:26:00.123Z","session":session,
            "line":1,"stage":"utf8","code":-32700,"fingerprint":FP})
    }

    fn intent(session: &str, ticket: u64) -> Value {
        serde_json::json!({"kind":"intent","time":"2026-11-30T01:26:00.123Z","session":session,
            "ticket":ticket,"line":3,"tool":"service_status","target_kind":"http",
            "host":"127.0.0.1","port":8080,"target_fingerprint":FP,"timeout_ms":30000})
    }

    fn outcome(session: &str, ticket: u64) -> Value {
        serde_json::json!({"kind":"outcome","time":"2026-11-30T01:26:01.000Z","session":session,
            "ticket":ticket,"is_error":false,"executed":true,"cancelled":false,"late":false,
            "elapsed_ms":12})
    }

    fn line(v: &Value) -> Vec<u8> {
        serde_json::to_vec(v).unwrap()
    }

    #[test]
    fn tally_pairs_intents_with_outcomes_per_session() {
        let mut t = Tally::default();
        let lines = [
            rejection("1-a"),
            intent("1-a", 0),
            intent("2-b", 0),
            outcome("1-a", 0),
        ];
        for (i, l) in lines.iter().enumerate() {
            t.record(i + 1, &line(l)).unwrap();
        }
        assert_eq!(
            (t.rejections, t.intents, t.outcomes, t.open.len()),
            (1, 2, 1, 1)
        );
        let orphan = t.record(5, &line(&outcome("1-a", 0))).unwrap_err();
        assert!(orphan.contains("no open intent"), "{orphan}");
        let second = t.record(6, &line(&intent("2-b", 0))).unwrap_err();
        assert!(second.contains("second intent"), "{second}");
        let dup = br#"{"kind":"outcome","kind":"outcome"}"#;
        assert!(t.record(7, dup).unwrap_err().contains("strict JSON"));
    }

    #[test]
    fn what_the_journal_writes_verifies() {
        // Times from the writer itself, at instants with every width.
        for secs in [0, 951_782_400, 1_700_000_000, 4_107_542_399] {
            let mut v = intent("4242-18f3a", 7);
            v["time"] = rfc3339(UNIX_EPOCH + Duration::from_secs(secs)).into();
            v["line"] = Value::Null;
            assert_eq!(problems(v.as_object().unwrap()), Vec::<String>::new());
        }
        for stage in Stage::ALL {
            let mut v = rejection("1-a");
            v["stage"] = stage.as_str().into();
            assert_eq!(problems(v.as_object().unwrap()), Vec::<String>::new());
        }
        let mut v = outcome("1-a", 0);
        v["time"] = "2026-11-30T01:26:00+00:00".into();
        assert_eq!(problems(v.as_object().unwrap()), Vec::<String>::new());
    }

    /// `base` with `key` set to `value` (or removed, for `None`): exactly
    /// one problem, naming `key`, and saying `what`.
    fn one_problem(base: Value, key: &str, value: Option<Value>, what: &str) {
        let mut v = base;
        let map = v.as_object_mut().unwrap();
        match value {
            Some(value) => {
                map.insert(key.to_owned(), value);
            }
            None => {
                map.remove(key);
            }
        }
        let found = problems(map);
        assert_eq!(found.len(), 1, "{key}: {found:?}");
        assert!(found[0].contains(key), "{key}: {found:?}");
        assert!(found[0].contains(what), "{key}: {found:?}");
        let mut t = Tally::default();
        assert!(t.record(1, &line(&v)).is_err());
    }

    #[test]
    fn each_forged_member_is_refused_on_its_own() {
        use serde_json::json;
        let cases: &[(Value, &str, Option<Value>, &str)] = &[
            // The forgeries of the issue.
            (intent("1-a", 0), "time", Some(json!("garbage")), "RFC 3339"),
            (
                rejection("1-a"),
                "stage",
                Some(json!("nonsense")),
                "stage name",
            ),
            (intent("1-a", 0), "host", None, "missing"),
            (intent("1-a", 0), "target_fingerprint", None, "missing"),
            (intent("1-a", 0), "timeout_ms", None, "missing"),
            (
                outcome("1-a", 0),
                "elevated",
                Some(json!(true)),
                "unknown member",
            ),
            (
                rejection("1-a"),
                "raw",
                Some(json!("frame bytes")),
                "unknown member",
            ),
            // Times: not RFC 3339, or not UTC.
            (
                intent("1-a", 0),
                "time",
                Some(json!("2026-11-30 01:26:00")),
                "RFC 3339",
            ),
            (
                intent("1-a", 0),
                "time",
                Some(json!("2026-13-30T01:26:00Z")),
                "RFC 3339",
            ),
            (
                intent("1-a", 0),
                "time",
                Some(json!("2026-11-30T01:26:00")),
                "RFC 3339",
            ),
            (
                intent("1-a", 0),
                "time",
                Some(json!(1_764_465_960)),
                "not a string",
            ),
            (
                intent("1-a", 0),
                "time",
                Some(json!("2026-11-30T01:26:00+02:00")),
                "UTC",
            ),
            // Fingerprints.
            (
                rejection("1-a"),
                "fingerprint",
                Some(json!("abc")),
                "64 lowercase hex",
            ),
            (
                rejection("1-a"),
                "fingerprint",
                Some(json!(FP.to_uppercase())),
                "64 lowercase hex",
            ),
            (
                rejection("1-a"),
                "fingerprint",
                Some(json!(format!("{}g", &FP[1..]))),
                "64 lowercase hex",
            ),
            (
                intent("1-a", 0),
                "target_fingerprint",
                Some(json!(format!("{FP}0"))),
                "64 lowercase hex",
            ),
            // Integers: type and range.
            (rejection("1-a"), "line", Some(json!(0)), "out of range"),
            (rejection("1-a"), "line", Some(json!("3")), "not an integer"),
            (rejection("1-a"), "line", Some(json!(1.5)), "not an integer"),
            (
                rejection("1-a"),
                "line",
                Some(Value::Null),
                "not an integer",
            ),
            (rejection("1-a"), "code", Some(json!(200)), "out of range"),
            (
                rejection("1-a"),
                "code",
                Some(json!(-31999)),
                "out of range",
            ),
            (intent("1-a", 0), "port", Some(json!(0)), "out of range"),
            (intent("1-a", 0), "port", Some(json!(65536)), "out of range"),
            (intent("1-a", 0), "ticket", Some(json!(-1)), "out of range"),
            (intent("1-a", 0), "line", Some(json!(0)), "out of range"),
            (intent("1-a", 0), "line", Some(json!(true)), "nor null"),
            (
                intent("1-a", 0),
                "timeout_ms",
                Some(json!(0)),
                "out of range",
            ),
            (
                intent("1-a", 0),
                "timeout_ms",
                Some(json!(600_001)),
                "out of range",
            ),
            (
                outcome("1-a", 0),
                "elapsed_ms",
                Some(json!(-5)),
                "out of range",
            ),
            (
                outcome("1-a", 0),
                "ticket",
                Some(json!("0")),
                "not an integer",
            ),
            // Booleans.
            (
                outcome("1-a", 0),
                "is_error",
                Some(json!("false")),
                "not a boolean",
            ),
            (outcome("1-a", 0), "late", Some(json!(0)), "not a boolean"),
            (outcome("1-a", 0), "executed", None, "missing"),
            (outcome("1-a", 0), "cancelled", None, "missing"),
            // Strings with a shape.
            (
                intent("1-a", 0),
                "target_kind",
                Some(json!("ftp")),
                "neither",
            ),
            (intent("1-a", 0), "tool", Some(json!("")), "tool name"),
            (
                intent("1-a", 0),
                "tool",
                Some(json!("rm -rf /")),
                "tool name",
            ),
            (intent("1-a", 0), "host", Some(json!("")), "host"),
            (intent("1-a", 0), "host", Some(json!("a b")), "host"),
            (intent("1-a", 0), "session", Some(json!("")), "session id"),
            (
                intent("1-a", 0),
                "session",
                Some(json!("forged")),
                "session id",
            ),
            (intent("1-a", 0), "session", Some(json!(12)), "not a string"),
            (intent("1-a", 0), "session", None, "missing"),
            (outcome("1-a", 0), "time", None, "missing"),
            // Members of another kind are unknown here.
            (
                outcome("1-a", 0),
                "tool",
                Some(json!("x")),
                "unknown member",
            ),
            (rejection("1-a"), "ticket", Some(json!(0)), "unknown member"),
        ];
        for (base, key, value, what) in cases {
            one_problem(base.clone(), key, value.clone(), what);
        }
    }

    #[test]
    fn an_unknown_or_missing_kind_is_the_only_problem_reported() {
        let mut v = outcome("1-a", 0);
        v["kind"] = "party".into();
        assert_eq!(
            problems(v.as_object().unwrap()),
            ["field \"kind\" is not a known record kind"]
        );
        v.as_object_mut().unwrap().remove("kind");
        assert_eq!(problems(v.as_object().unwrap()), ["missing field \"kind\""]);
        // A member name that is not name-like is withheld, not echoed.
        let mut v = outcome("1-a", 0);
        v["\u{1b}[31mred"] = 1.into();
        assert_eq!(
            problems(v.as_object().unwrap()),
            ["unknown member (name withheld)"]
        );
    }

    #[test]
    fn every_problem_of_a_line_is_named() {
        let forged = serde_json::json!({"kind":"intent","time":"garbage","session":"1-a",
            "ticket":0,"tool":"x","target_kind":"http","extra":1});
        let found = problems(forged.as_object().unwrap());
        for expected in [
            "field \"time\" is not an RFC 3339 time",
            "missing field \"line\"",
            "missing field \"host\"",
            "missing field \"port\"",
            "missing field \"target_fingerprint\"",
            "missing field \"timeout_ms\"",
            "unknown member \"extra\"",
        ] {
            assert!(found.iter().any(|f| f == expected), "{expected}: {found:?}");
        }
        assert_eq!(found.len(), 7, "{found:?}");
    }
}
