//! The file under both audit journals (`portcullis mcp --audit` and
//! `portcullis wrap --audit`): JSON Lines appended to a file created 0600,
//! each session a hash chain of its own (several runs may append to one
//! file, even at once), and nothing more appended after a failed write.
//!
//! A record is one line, `{"kind":..,"time":..,"session":..,"seq":..,
//! "prev":..,<the kind's members, by name>}`, and in a keyed session
//! `,"mac":..` before the closing brace. `seq` counts the session's records
//! from 0 (`session_start`); `prev` is the SHA-256 of the session's previous
//! line as written (64 zeros for the first), so a deleted, inserted, edited
//! or reordered line breaks the chain at the next one; `mac` is the
//! HMAC-SHA-256 under the key of the line without its `mac` member, so a
//! writer without the key cannot rebuild the chain after an edit. The last
//! record, `session_end`, holds the count and the last hash: a session
//! without it was cut short.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use hmac::{Hmac, Mac as _};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use super::rfc3339;

/// `prev` of a session's first record.
pub const FIRST_PREV: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Bytes a key must have at least: a shorter one can be guessed.
pub const MIN_KEY_BYTES: usize = 16;

/// The key of a keyed journal (`--audit-key-env NAME`): the bytes of that
/// environment variable, never shown.
pub struct AuditKey(Vec<u8>);

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditKey(..)")
    }
}

impl AuditKey {
    /// Read the key from the environment variable `name`: set, and at
    /// least [`MIN_KEY_BYTES`] long. The error names the variable, never its
    /// value.
    pub fn from_env(name: &str) -> anyhow::Result<Self> {
        Self::from_variable(name, std::env::var_os(name))
    }

    /// The key `value` of the variable `name` (`None`: not set).
    pub(super) fn from_variable(
        name: &str,
        value: Option<std::ffi::OsString>,
    ) -> anyhow::Result<Self> {
        let Some(value) = value else {
            bail!("the audit key variable {name} is not set");
        };
        let bytes = std::os::unix::ffi::OsStringExt::into_vec(value);
        if bytes.len() < MIN_KEY_BYTES {
            bail!(
                "the audit key in {name} has {} bytes; at least {MIN_KEY_BYTES} are needed",
                bytes.len()
            );
        }
        Ok(Self(bytes))
    }

    /// The key as given, for a journal opened by a test.
    #[cfg(test)]
    pub fn from_bytes(bytes: &[u8]) -> Self {
        Self(bytes.to_vec())
    }

    fn mac(&self, bytes: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(bytes);
        hex(&mac.finalize().into_bytes())
    }
}

/// Where a session's lines go: the journal file (or, in tests, a sink
/// that fails on cue, to hold the writer to failing closed).
pub trait Sink: Write + Send {
    /// Make what was written durable before the caller goes ahead.
    fn sync_data(&mut self) -> io::Result<()>;
}

impl Sink for File {
    fn sync_data(&mut self) -> io::Result<()> {
        match File::sync_data(self) {
            // Not a regular file (a pipe, a terminal): nothing to sync; the
            // write itself succeeded.
            Err(err) if err.kind() == io::ErrorKind::InvalidInput => Ok(()),
            other => other,
        }
    }
}

/// The wall clock a session reads its times from (stepped in tests, as an
/// administrator or NTP may step the real one).
pub type Clock = Box<dyn FnMut() -> SystemTime + Send>;

/// An open journal file: one session's chain.
pub struct JournalFile {
    sink: Box<dyn Sink>,
    clock: Clock,
    session: String,
    key: Option<AuditKey>,
    /// The next record's `seq`.
    seq: u64,
    /// The next record's `prev`.
    prev: String,
    /// The latest `time` written: a clock stepped back never makes a
    /// session's times go backwards.
    last_time: SystemTime,
    /// Set after a failed write: a partial line may be in the file, so
    /// nothing more is appended.
    broken: bool,
    /// Set once `session_end` is written.
    closed: bool,
}

impl std::fmt::Debug for JournalFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalFile")
            .field("session", &self.session)
            .field("keyed", &self.key.is_some())
            .field("seq", &self.seq)
            .field("broken", &self.broken)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl JournalFile {
    /// Open `path` for appending (created 0600 when missing) and start this
    /// run's session (`session_start`, synced). A path that cannot be opened
    /// is an error; a first record that cannot be written leaves the journal
    /// broken, so the command fails closed as after any failed write.
    pub fn open(path: &Path, command: &str, key: Option<AuditKey>) -> io::Result<Self> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)?;
        let (journal, started) =
            Self::start(Box::new(file), Box::new(SystemTime::now), command, key);
        if let Err(err) = started {
            tracing::error!(error = %err, path = %path.display(), "cannot write to the audit journal");
        }
        Ok(journal)
    }

    /// Start a session of `command` on `sink`: its `session_start`,
    /// synced, and whether that record was written (when it was not, the
    /// journal is broken).
    pub fn start(
        sink: Box<dyn Sink>,
        mut clock: Clock,
        command: &str,
        key: Option<AuditKey>,
    ) -> (Self, io::Result<()>) {
        let now = clock();
        let nanos = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        let mut journal = Self {
            sink,
            clock,
            session: format!("{}-{:x}", std::process::id(), nanos.as_nanos()),
            seq: 0,
            prev: FIRST_PREV.to_owned(),
            last_time: now,
            broken: false,
            closed: false,
            key,
        };
        let mut start = Map::new();
        start.insert("command".into(), command.into());
        start.insert("version".into(), env!("CARGO_PKG_VERSION").into());
        start.insert("keyed".into(), journal.key.is_some().into());
        let started = journal.append("session_start", start, true);
        (journal, started)
    }

    /// This run's session id, `<pid>-<nanoseconds in lowercase hex>`.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Whether an earlier write failed (nothing more is appended).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Append one record of `kind` with `body`'s members, with one write,
    /// then sync the data to disk when `sync` is set.
    pub fn append(&mut self, kind: &str, body: Map<String, Value>, sync: bool) -> io::Result<()> {
        if self.broken {
            return Err(io::Error::other(
                "the journal is unavailable after an earlier write failure",
            ));
        }
        if self.closed {
            return Err(io::Error::other("the journal's session has ended"));
        }
        let line = self.line(kind, &body)?;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let mut result = self.sink.write_all(&bytes);
        if result.is_ok() && sync {
            result = self.sink.sync_data();
        }
        match result {
            Ok(()) => {
                self.seq += 1;
                self.prev = hex(&Sha256::digest(line.as_bytes()));
                Ok(())
            }
            Err(err) => {
                self.broken = true;
                Err(err)
            }
        }
    }

    /// End the session: `session_end` with the count and last hash, and
    /// `extra`'s members, synced. Nothing may be appended after it.
    pub fn close(&mut self, mut extra: Map<String, Value>) -> io::Result<()> {
        extra.insert("records".into(), self.seq.into());
        extra.insert("last".into(), self.prev.clone().into());
        let result = self.append("session_end", extra, true);
        self.closed = true;
        result
    }

    /// The record's line, without its newline.
    fn line(&mut self, kind: &str, body: &Map<String, Value>) -> io::Result<String> {
        let now = (self.clock)().max(self.last_time);
        self.last_time = now;
        let json = |v: &Value| serde_json::to_string(v).map_err(io::Error::other);
        let mut line = String::with_capacity(256);
        line.push_str("{\"kind\":");
        line.push_str(&json(&kind.into())?);
        line.push_str(",\"time\":");
        line.push_str(&json(&rfc3339(now).into())?);
        line.push_str(",\"session\":");
        line.push_str(&json(&self.session.as_str().into())?);
        line.push_str(",\"seq\":");
        line.push_str(&self.seq.to_string());
        line.push_str(",\"prev\":\"");
        line.push_str(&self.prev);
        line.push('"');
        for (name, value) in body {
            if matches!(
                name.as_str(),
                "kind" | "time" | "session" | "seq" | "prev" | "mac"
            ) {
                return Err(io::Error::other(format!(
                    "a record may not set the chain member {name:?}"
                )));
            }
            line.push(',');
            line.push_str(&json(&name.as_str().into())?);
            line.push(':');
            line.push_str(&json(value)?);
        }
        line.push('}');
        if let Some(key) = &self.key {
            let mac = key.mac(line.as_bytes());
            line.pop();
            line.push_str(",\"mac\":\"");
            line.push_str(&mac);
            line.push_str("\"}");
        }
        Ok(line)
    }
}

/// Read the key named by `--audit-key-env`, if any, for a journal at
/// `audit` (a key without a journal is a usage error).
pub fn key_for(audit: Option<&Path>, key_env: Option<&str>) -> anyhow::Result<Option<AuditKey>> {
    match (audit, key_env) {
        (_, None) => Ok(None),
        (None, Some(_)) => bail!("--audit-key-env needs --audit FILE"),
        (Some(_), Some(name)) => AuditKey::from_env(name)
            .context("cannot key the audit journal")
            .map(Some),
    }
}

fn hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}
