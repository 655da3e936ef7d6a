//! Appending records to the journal, each synced before what it records
//! goes ahead.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use portcullis_gateway::{ActionTarget, AuthorizedAction, Outcome, RejectionRecord, Ticket};
use portcullis_wire::Fingerprint;
use serde::Serialize;

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
