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
use portcullis_wire::{Fingerprint, Limits};
use serde::Serialize;
use serde_json::Value;

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
    /// Check that a journal is well-formed JSON Lines with known record
    /// kinds, and list intents that have no outcome (interrupted actions).
    /// Exit 0 when well-formed (interrupted actions are reported, not
    /// errors), 1 when any line is malformed, 2 when the file cannot be
    /// read.
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
    Ok(if tally.malformed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

impl Tally {
    fn record(&mut self, number: usize, line: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_owned())?;
        let value = portcullis_wire::strict_json::parse_value(text, &Limits::default())
            .map_err(|r| format!("not one strict JSON value ({})", r.reason))?;
        let Value::Object(record) = value else {
            return Err("not a JSON object".into());
        };
        let string = |key: &str| -> Result<&str, String> {
            record
                .get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("missing or non-string {key:?}"))
        };
        let unsigned = |key: &str| -> Result<u64, String> {
            record
                .get(key)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("missing or non-integer {key:?}"))
        };
        let kind = string("kind")?;
        let time = string("time")?;
        let session = string("session")?;
        match kind {
            "rejection" => {
                unsigned("line")?;
                string("stage")?;
                record
                    .get("code")
                    .and_then(Value::as_i64)
                    .ok_or("missing or non-integer \"code\"")?;
                let fingerprint = string("fingerprint")?;
                if fingerprint.len() != 64 || !fingerprint.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err("fingerprint is not 64 hex digits".into());
                }
                self.rejections += 1;
            }
            "intent" => {
                let ticket = unsigned("ticket")?;
                let tool = string("tool")?;
                if !matches!(string("target_kind")?, "http" | "ssh") {
                    return Err("target_kind is neither \"http\" nor \"ssh\"".into());
                }
                let key = (session.to_owned(), ticket);
                if self.open.contains_key(&key) {
                    return Err(format!(
                        "ticket {ticket} has a second intent in session {session}"
                    ));
                }
                self.open
                    .insert(key, (number, tool.to_owned(), time.to_owned()));
                self.intents += 1;
            }
            "outcome" => {
                let ticket = unsigned("ticket")?;
                record
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .ok_or("missing or non-boolean \"is_error\"")?;
                if self.open.remove(&(session.to_owned(), ticket)).is_none() {
                    return Err(format!(
                        "outcome for ticket {ticket} in session {session} has no open intent before it"
                    ));
                }
                self.outcomes += 1;
            }
            other => {
                return Err(format!(
                    "unknown kind {:?}",
                    portcullis_wire::strict_json::display_name(other)
                ));
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

    #[test]
    fn tally_pairs_intents_with_outcomes_per_session() {
        let mut t = Tally::default();
        let fp = "0".repeat(64);
        let lines = [
            format!(r#"{{"kind":"rejection","time":"t","session":"a","line":1,"stage":"utf8","code":-32700,"fingerprint":"{fp}"}}"#),
            r#"{"kind":"intent","time":"t","session":"a","ticket":0,"tool":"x","target_kind":"http"}"#.to_owned(),
            r#"{"kind":"intent","time":"t","session":"b","ticket":0,"tool":"x","target_kind":"ssh"}"#.to_owned(),
            r#"{"kind":"outcome","time":"t","session":"a","ticket":0,"is_error":false}"#.to_owned(),
        ];
        for (i, line) in lines.iter().enumerate() {
            t.record(i + 1, line.as_bytes()).unwrap();
        }
        assert_eq!(
            (t.rejections, t.intents, t.outcomes, t.open.len()),
            (1, 2, 1, 1)
        );
        let orphan = r#"{"kind":"outcome","time":"t","session":"a","ticket":0,"is_error":false}"#;
        assert!(t.record(5, orphan.as_bytes()).is_err());
        let dup = r#"{"kind":"intent","time":"t","session":"b","ticket":0,"ticket":0,"tool":"x","target_kind":"ssh"}"#;
        assert!(t.record(6, dup.as_bytes()).is_err());
        assert!(
            t.record(7, br#"{"kind":"party","time":"t","session":"a"}"#)
                .is_err()
        );
    }
}
