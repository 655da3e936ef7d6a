//! Appending records to the journal, each synced before what it records
//! goes ahead.

use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use portcullis_gateway::{ActionTarget, AuthorizedAction, Outcome, RejectionRecord, Ticket};
use portcullis_wire::Fingerprint;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{AuditKey, JournalFile};
#[cfg(test)]
use super::{Clock, Sink};

/// An open audit journal. After a failed write every later append fails,
/// so every later action is denied.
#[derive(Debug)]
pub struct Journal {
    file: JournalFile,
}

impl Journal {
    /// Open `path` for appending (created 0600 when missing) and start
    /// this run's chain, keyed when `key` is given.
    pub fn open(path: &Path, key: Option<AuditKey>) -> io::Result<Self> {
        JournalFile::open(path, "mcp", key).map(|file| Self { file })
    }

    /// Start the session on `sink`, reading times from `clock` (a test's
    /// sink that fails on cue, a test's stepped clock), and whether its
    /// first record was written.
    #[cfg(test)]
    pub fn on(sink: Box<dyn Sink>, clock: Clock, key: Option<AuditKey>) -> (Self, io::Result<()>) {
        let (file, started) = JournalFile::start(sink, clock, "mcp", key);
        (Self { file }, started)
    }

    fn append(&mut self, kind: &str, body: impl Serialize, sync: bool) -> io::Result<()> {
        // Each body is a struct: it serializes to an object's members.
        let body: Map<String, Value> = serde_json::to_value(body)
            .and_then(serde_json::from_value)
            .map_err(io::Error::other)?;
        self.file.append(kind, body, sync)
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
            ActionTarget::Http(h) => (h.host().to_owned(), h.port()),
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

    /// End the session (at shutdown): its closing record, synced.
    pub fn close(&mut self) {
        if self.file.is_broken() {
            return;
        }
        if let Err(err) = self.file.close(Map::new()) {
            tracing::error!(error = %err, "cannot write the end of the session to the audit journal");
        }
    }
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
    // A clock beyond the year 9999 is not a time to panic in the audit path.
    let epoch = time::OffsetDateTime::UNIX_EPOCH;
    let at = time::Duration::try_from(since)
        .ok()
        .and_then(|d| epoch.checked_add(d))
        .unwrap_or(epoch);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    )
}
