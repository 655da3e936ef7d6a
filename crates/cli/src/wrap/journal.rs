//! The wrap audit journal (`portcullis wrap --audit FILE [--audit-key-env
//! NAME]`): the session's chain in the shared journal file (see
//! `crate::audit::JournalFile`: `session_start`, every record with `seq`,
//! `prev` and, keyed, `mac`, then `session_end` with the count of forwarded
//! requests per method). Every other record is one of the core's
//! [`AuditRecord`]s (kinds `wrap_rejection`, `wrap_denied`,
//! `wrap_quarantine`, `wrap_dropped`, `wrap_pinned`, `wrap_rug_pull`,
//! `wrap_withheld`, `wrap_timeout`, `wrap_upstream_exited`, `wrap_outcome`)
//! or an [`Intent`] (`wrap_intent`, synced before its call is forwarded);
//! none holds frame bytes, ids or argument values.
//!
//! A write that fails breaks the journal for the rest of the run (a
//! partial line may be in the file); the driver then makes the core fail
//! closed.
//!
//! A tool name is chosen by the client or the upstream and may be as long
//! as a frame: a record's `tool` is written as its
//! [`bounded_name`](portcullis_wrap::tools::bounded_name), and any other
//! text member is cut at [`MAX_TEXT_BYTES`], whoever built the record.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use portcullis_wrap::tools::bounded_name;
use portcullis_wrap::{AuditRecord, Intent};
use serde_json::{Map, Value};

use crate::audit::{AuditKey, JournalFile};

/// Bytes of a text member other than `tool` written to a record (a
/// denial's reason names at most eight failing keywords).
pub const MAX_TEXT_BYTES: usize = 4096;

/// An open wrap journal: this run's session in the file.
#[derive(Debug)]
pub struct WrapJournal {
    file: JournalFile,
}

impl WrapJournal {
    /// Open `path` for appending (created 0600 when missing) and start the
    /// session. A path that cannot be opened is an error; a first record
    /// that cannot be written leaves the journal broken
    /// ([`WrapJournal::is_broken`]).
    pub fn open(path: &Path, key: Option<AuditKey>) -> io::Result<Self> {
        JournalFile::open(path, "wrap", key).map(|file| Self { file })
    }

    /// This run's session id in the file.
    pub fn session(&self) -> &str {
        self.file.session()
    }

    /// Whether a write failed (nothing more is appended).
    pub fn is_broken(&self) -> bool {
        self.file.is_broken()
    }

    /// Append one record.
    pub fn record(&mut self, record: &AuditRecord) -> io::Result<()> {
        self.append(bounded(record), false)
    }

    /// Append a call's intent and sync it to disk: only then may the call
    /// be forwarded.
    pub fn intent(&mut self, intent: &Intent) -> io::Result<()> {
        let mut body = intent.to_json();
        if let Value::Object(map) = &mut body {
            bound_text(map);
        }
        self.append(body, true)
    }

    /// End the session: `session_end`, with `forwarded` (client requests
    /// forwarded, by method).
    pub fn close(&mut self, forwarded: &BTreeMap<String, u64>) -> io::Result<()> {
        let forwarded: Map<String, Value> = forwarded
            .iter()
            .map(|(method, n)| (method.clone(), Value::from(*n)))
            .collect();
        let mut extra = Map::new();
        extra.insert("forwarded".into(), Value::Object(forwarded));
        self.file.close(extra)
    }

    fn append(&mut self, record: Value, sync: bool) -> io::Result<()> {
        let Value::Object(mut body) = record else {
            return Err(io::Error::other("a record that is not an object"));
        };
        let kind = match body.remove("kind") {
            Some(Value::String(kind)) => kind,
            _ => return Err(io::Error::other("a record without its kind")),
        };
        self.file.append(&kind, body, sync)
    }
}

/// The record as JSON with its text members bounded, as it is journaled
/// and logged: a name a peer chose never reaches either whole.
pub fn bounded(record: &AuditRecord) -> Value {
    let mut body = record.to_json();
    if let Value::Object(map) = &mut body {
        bound_text(map);
    }
    body
}

/// Bound the text members of a record: `tool` to its bounded name, the
/// others to [`MAX_TEXT_BYTES`].
fn bound_text(record: &mut Map<String, Value>) {
    for (key, value) in record.iter_mut() {
        let Value::String(text) = value else { continue };
        if key == "tool" {
            *text = bounded_name(text);
        } else if text.len() > MAX_TEXT_BYTES {
            let end = (0..=MAX_TEXT_BYTES)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            let whole = text.len();
            text.truncate(end);
            let _ = write!(text, "…({whole} bytes)");
        }
    }
}
