//! The file under both audit journals (`portcullis mcp --audit` and
//! `portcullis wrap --audit`): JSON Lines appended to a file created 0600,
//! a session id unique to this run (so several runs may append to one
//! file), and nothing more appended after a failed write.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// An open journal file.
#[derive(Debug)]
pub struct JournalFile {
    file: File,
    session: String,
    /// Set after a failed write: a partial line may be in the file, so
    /// nothing more is appended.
    broken: bool,
}

impl JournalFile {
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

    /// This run's session id, `<pid>-<nanoseconds in lowercase hex>`.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Whether an earlier write failed (nothing more is appended).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Append `line` and a newline with one write, then sync the data to
    /// disk when `sync` is set.
    pub fn write_line(&mut self, mut line: Vec<u8>, sync: bool) -> io::Result<()> {
        if self.broken {
            return Err(io::Error::other(
                "the journal is unavailable after an earlier write failure",
            ));
        }
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

    /// Sync everything written so far (at shutdown).
    pub fn sync(&mut self) {
        if !self.broken {
            let _ = self.file.sync_data();
        }
    }
}
