//! The wrap audit journal (`portcullis wrap --audit FILE`): JSON Lines,
//! appended, created 0600. Every record is one of the core's
//! [`AuditRecord`]s (kinds `wrap_rejection`, `wrap_denied`,
//! `wrap_quarantine`, `wrap_dropped`, `wrap_pinned`, `wrap_rug_pull`,
//! `wrap_withheld`, `wrap_timeout`, `wrap_upstream_exited`) with `time`
//! and `session` added; none holds frame bytes, ids or argument values.
//!
//! A tool name is chosen by the client or the upstream and may be as long
//! as a frame: a record's `tool` is written as its
//! [`bounded_name`](portcullis_wrap::tools::bounded_name), and any other
//! text member is cut at [`MAX_TEXT_BYTES`], whoever built the record.

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::SystemTime;

use portcullis_wrap::AuditRecord;
use portcullis_wrap::tools::bounded_name;
use serde_json::{Map, Value};

use crate::audit::{JournalFile, rfc3339};

/// Bytes of a text member other than `tool` written to a record (a
/// denial's reason names at most eight failing keywords).
pub const MAX_TEXT_BYTES: usize = 4096;

/// An open wrap journal. After a failed write nothing more is appended (a
/// partial line may be in the file).
#[derive(Debug)]
pub struct WrapJournal {
    file: JournalFile,
}

impl WrapJournal {
    /// Open `path` for appending (created 0600 when missing).
    pub fn open(path: &Path) -> io::Result<Self> {
        JournalFile::open(path).map(|file| Self { file })
    }

    /// Append one record.
    pub fn append(&mut self, record: &AuditRecord) {
        if self.file.is_broken() {
            return;
        }
        let mut body = bounded(record);
        if let Value::Object(map) = &mut body {
            map.insert("time".into(), Value::String(rfc3339(SystemTime::now())));
            map.insert(
                "session".into(),
                Value::String(self.file.session().to_owned()),
            );
        }
        if let Err(err) = self.file.write_line(body.to_string().into_bytes(), false) {
            tracing::error!(error = %err, "cannot write the audit journal; no more records will be written");
        }
    }

    /// Flush what was written to disk.
    pub fn sync(&mut self) {
        self.file.sync();
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
