//! Credential values bound for one run. Values never appear in `Debug`
//! output, logs, ledgers or errors.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::policy::{CredentialSource, Policy};

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
    /// Missing or empty values are recorded as problems (without values).
    pub fn from_environment(policy: &Policy) -> Self {
        let mut store = Self::default();
        for (name, source) in &policy.credentials {
            match source {
                CredentialSource::Env(var) => match std::env::var(var) {
                    Ok(v) if !v.trim().is_empty() => {
                        store.values.insert(name.clone(), Secret::new(v.trim()));
                    }
                    _ => {
                        store.problems.insert(
                            name.clone(),
                            format!("environment variable {var} is unset or empty"),
                        );
                    }
                },
                CredentialSource::File(path) => match std::fs::read_to_string(path) {
                    Ok(v) if !v.trim().is_empty() => {
                        store.values.insert(
                            name.clone(),
                            Secret {
                                value: v.trim().into(),
                                path: Some(path.clone()),
                            },
                        );
                    }
                    Ok(_) => {
                        store
                            .problems
                            .insert(name.clone(), format!("file {} is empty", path.display()));
                    }
                    Err(err) => {
                        store
                            .problems
                            .insert(name.clone(), format!("file {}: {err}", path.display()));
                    }
                },
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
