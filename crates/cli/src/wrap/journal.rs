//! The wrap audit journal (`portcullis wrap --audit FILE`): JSON Lines,
//! appended, created 0600. Every record is one of the core's
//! [`AuditRecord`]s (kinds `wrap_rejection`, `wrap_denied`,
//! `wrap_quarantine`, `wrap_dropped`, `wrap_pinned`, `wrap_rug_pull`,
//! `wrap_withheld`, `wrap_timeout`, `wrap_upstream_exited`) with `time`
//! and `session` added; none holds frame bytes, ids or argument values.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use portcullis_wrap::AuditRecord;
use serde_json::Value;

use crate::audit::rfc3339;

/// An open wrap journal. After a failed write nothing more is appended (a
/// partial line may be in the file).
#[derive(Debug)]
pub struct WrapJournal {
    file: Option<File>,
    session: String,
}

impl WrapJournal {
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
            file: Some(file),
            session: format!("{}-{:x}", std::process::id(), now.as_nanos()),
        })
    }

    /// Append one record.
    pub fn append(&mut self, record: &AuditRecord) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut body = record.to_json();
        if let Value::Object(map) = &mut body {
            map.insert("time".into(), Value::String(rfc3339(SystemTime::now())));
            map.insert("session".into(), Value::String(self.session.clone()));
        }
        let mut line = body.to_string().into_bytes();
        line.push(b'\n');
        if let Err(err) = file.write_all(&line) {
            tracing::error!(error = %err, "cannot write the audit journal; no more records will be written");
            self.file = None;
        }
    }

    /// Flush what was written to disk.
    pub fn sync(&mut self) {
        if let Some(file) = &self.file {
            let _ = file.sync_data();
        }
    }
}
