//! The wrap audit journal (`portcullis wrap --audit FILE`): JSON Lines,
//! appended, created 0600. Every record is one of the core's
//! [`AuditRecord`]s (kinds `wrap_rejection`, `wrap_denied`,
//! `wrap_quarantine`, `wrap_dropped`, `wrap_pinned`, `wrap_rug_pull`,
//! `wrap_withheld`, `wrap_timeout`, `wrap_upstream_exited`) with `time`
//! and `session` added; none holds frame bytes, ids or argument values.

use std::io;
use std::path::Path;
use std::time::SystemTime;

use portcullis_wrap::AuditRecord;
use serde_json::Value;

use crate::audit::{JournalFile, rfc3339};

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
        let mut body = record.to_json();
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
