//! Credential values bound for one run. Values never appear in `Debug`
//! output, logs, ledgers or errors.
//!
//! A value that cannot be used safely is treated like a missing one: the
//! credential gets a problem instead of a value, and every tool that uses
//! it is denied. That covers a value shorter than the scrubber can redact
//! ([`MIN_CREDENTIAL_BYTES`]: it would be sent upstream and echoed back to
//! the client in the clear), one longer than [`MAX_CREDENTIAL_BYTES`], and
//! a `file` that is not a regular file (a FIFO would block start-up, a
//! device such as `/dev/zero` would never end).

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};

use crate::policy::{CredentialSource, Policy};

/// The shortest usable credential value, in bytes after trimming. It is the
/// scrubber's minimum (`portcullis_exec::scrub::MIN_SECRET_BYTES`, held
/// equal by a test): the executor redacts nothing shorter from what a tool
/// returns, so a shorter credential would reach the client whenever the
/// upstream echoes it.
pub const MIN_CREDENTIAL_BYTES: usize = 4;

/// The longest credential value, in bytes as stored (64 KiB): a bearer
/// token or an OpenSSH private key is far smaller, and a `file` is never
/// read past it.
pub const MAX_CREDENTIAL_BYTES: usize = 64 * 1024;

/// A credential value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    value: Arc<str>,
    path: Option<PathBuf>,
}

impl Secret {
    /// A secret held in memory.
    pub fn new(value: impl Into<Arc<str>>) -> Self {
        Self {
            value: value.into(),
            path: None,
        }
    }

    /// The value. Callers must not log it.
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// The file it was read from, when it came from one (SSH passes the
    /// identity file to the client by path).
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Credential values by name; a name that is absent is not present for
/// this run, and tools that need it are denied at authorization.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretStore {
    values: BTreeMap<String, Secret>,
    problems: BTreeMap<String, String>,
}

impl SecretStore {
    /// Resolve every credential of `policy` from the environment and files.
    /// Values that are missing or unusable are recorded as problems, each
    /// naming the variable or file and the reason (never the value).
    pub fn from_environment(policy: &Policy) -> Self {
        let mut store = Self::default();
        for (name, source) in &policy.credentials {
            let (read, path) = match source {
                CredentialSource::Env(var) => (read_env(var), None),
                CredentialSource::File(path) => (read_file(path), Some(path.clone())),
            };
            match read.and_then(|text| usable(source, text)) {
                Ok(value) => {
                    store.values.insert(
                        name.clone(),
                        Secret {
                            value: value.into(),
                            path,
                        },
                    );
                }
                Err(problem) => {
                    store.problems.insert(name.clone(), problem);
                }
            }
        }
        store
    }

    /// Bind a stand-in value to every credential of `policy`: for replay
    /// and tests, where the Recorder never uses them but authorization
    /// should decide as it would in production with credentials present.
    pub fn stand_ins(policy: &Policy) -> Self {
        let mut store = Self::default();
        for name in policy.credentials.keys() {
            store
                .values
                .insert(name.clone(), Secret::new(format!("stand-in:{name}")));
        }
        store
    }

    /// Set one value.
    pub fn insert(&mut self, name: impl Into<String>, secret: Secret) {
        self.values.insert(name.into(), secret);
    }

    /// The value bound to `name`.
    pub fn get(&self, name: &str) -> Option<&Secret> {
        self.values.get(name)
    }

    /// Why credentials are missing, by name (never values).
    pub fn problems(&self) -> &BTreeMap<String, String> {
        &self.problems
    }
}

/// Where a value comes from, as a problem names it.
fn origin(source: &CredentialSource) -> String {
    match source {
        CredentialSource::Env(var) => format!("environment variable {var}"),
        CredentialSource::File(path) => format!("file {}", path.display()),
    }
}

/// The trimmed value of `text`, if a tool may use it.
fn usable(source: &CredentialSource, text: String) -> Result<String, String> {
    let value = text.trim();
    if value.is_empty() {
        return Err(match source {
            CredentialSource::Env(var) => format!("environment variable {var} is unset or empty"),
            CredentialSource::File(path) => format!("file {} is empty", path.display()),
        });
    }
    if value.len() < MIN_CREDENTIAL_BYTES {
        return Err(format!(
            "{} holds a value of {} bytes, shorter than the {MIN_CREDENTIAL_BYTES} bytes \
             the gateway needs to redact it from what tools return",
            origin(source),
            value.len(),
        ));
    }
    Ok(value.to_owned())
}

fn read_env(var: &str) -> Result<String, String> {
    let too_long =
        || format!("environment variable {var} is longer than {MAX_CREDENTIAL_BYTES} bytes");
    match std::env::var(var) {
        Ok(text) if text.len() > MAX_CREDENTIAL_BYTES => Err(too_long()),
        Ok(text) => Ok(text),
        Err(std::env::VarError::NotPresent) => {
            Err(format!("environment variable {var} is unset or empty"))
        }
        Err(std::env::VarError::NotUnicode(raw)) if raw.len() > MAX_CREDENTIAL_BYTES => {
            Err(too_long())
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(format!("environment variable {var} is not UTF-8 text"))
        }
    }
}

/// The text of a credential file: a regular file of at most
/// [`MAX_CREDENTIAL_BYTES`], read without ever blocking or reading more.
fn read_file(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let io = |err: std::io::Error| format!("file {shown}: {err}");
    // Checked before opening: opening a FIFO waits for a writer, and
    // opening a device may act on it (a watchdog arms on open).
    let before = std::fs::metadata(path).map_err(io)?;
    regular(path, &before)?;
    // Should the path be swapped for a FIFO after that check, opening it
    // without blocking still returns at once; the open file is checked
    // again.
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| io(errno.into()))?;
    let file = File::from(fd);
    regular(path, &file.metadata().map_err(io)?)?;
    let mut bytes = Vec::new();
    file.take(MAX_CREDENTIAL_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() > MAX_CREDENTIAL_BYTES {
        return Err(format!(
            "file {shown} is larger than {MAX_CREDENTIAL_BYTES} bytes"
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("file {shown} is not UTF-8 text"))
}

/// Refuse anything but a regular file of at most [`MAX_CREDENTIAL_BYTES`].
fn regular(path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    let kind = meta.file_type();
    let what = if kind.is_file() {
        if meta.len() > MAX_CREDENTIAL_BYTES as u64 {
            return Err(format!(
                "file {} is larger than {MAX_CREDENTIAL_BYTES} bytes",
                path.display()
            ));
        }
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(format!(
        "file {} is {what}; a credential file must be a regular file",
        path.display()
    ))
}
