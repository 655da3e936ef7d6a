//! Portcullis executors: the code that finally touches a network or a
//! process, and only with an [`AuthorizedAction`].
//!
//! - [`HttpExecutor`] sends one HTTP request with `ureq` (no proxy, no
//!   redirects, no cookies, a global timeout, a capped body).
//! - [`SshExecutor`] runs one remote command with the system OpenSSH client
//!   (argv on the local side, single-quoted words on the remote side,
//!   strict host key checking, a killed child at the deadline, capped
//!   output).
//! - [`RealExecutor`] dispatches on the action's target; the binary uses it.
//!
//! Every outcome is an [`Outcome`]; nothing here panics on anything the
//! remote side does, prints to stdout, or puts a credential in a message
//! or a log line. Whatever an executor returns passes, at its single
//! exit, through a [`scrub::Scrubber`] that replaces the tool's credential
//! (raw, percent-, JSON-, HTML-escaped, base64, hex) by `[redacted]`, so a
//! credential reflected by the remote side never reaches the client.
//! Logs carry the tool, host and port, never URLs, argv or credentials
//! (argument values may be secrets).
//!
//! Modules, in the order an action flows through them:
//!
//! | module | what it does |
//! | --- | --- |
//! | `lib.rs` | [`RealExecutor`]: dispatch on the action's target |
//! | [`http`] | one HTTP request with `ureq` |
//! | [`ssh`] | one remote command: `argv` (command lines), `identity` (the key), `clients` (process groups, private directory), `collect` (output, deadline, result), `sweep` (leftovers of dead runs) |
//! | `output` | capped reading and the text of what was read |
//! | [`scrub`] | the single exit: the credential in every spelling becomes `[redacted]` |
//!
//! Test machinery (a private sshd, fake HTTP services) lives in
//! `portcullis-testkit`, not here.

#![forbid(unsafe_code)]

pub mod http;
mod output;
pub mod scrub;
pub mod ssh;

use std::time::Duration;

use portcullis_gateway::{ActionTarget, AuthorizedAction, Executor, Outcome};

pub use crate::http::HttpExecutor;
pub use crate::ssh::{SshExecutor, quote_remote_argv, ssh_args};

/// Dispatches each action to the HTTP or SSH executor by its target.
#[derive(Debug, Clone, Default)]
pub struct RealExecutor {
    http: HttpExecutor,
    ssh: SshExecutor,
}

impl RealExecutor {
    /// Default HTTP executor, and `ssh` from `PATH`.
    pub fn new() -> Self {
        Self::default()
    }

    /// From configured parts.
    pub fn with_parts(http: HttpExecutor, ssh: SshExecutor) -> Self {
        Self { http, ssh }
    }

    /// The HTTP executor.
    pub fn http(&self) -> &HttpExecutor {
        &self.http
    }

    /// The SSH executor.
    pub fn ssh(&self) -> &SshExecutor {
        &self.ssh
    }
}

impl Executor for RealExecutor {
    fn execute(&self, action: &AuthorizedAction) -> Outcome {
        match action.target() {
            ActionTarget::Http(_) => self.http.execute(action),
            ActionTarget::Ssh(_) => self.ssh.execute(action),
        }
    }
}

/// `2s`, or `1500ms` when not a whole number of seconds.
pub(crate) fn fmt_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The accessors hand out the very executors the dispatcher was made
    /// of (an SSH executor's clones share its running clients, so a copy
    /// would not do).
    #[test]
    fn the_accessors_return_the_executors_it_was_made_of() {
        let real = RealExecutor::with_parts(
            HttpExecutor::new(),
            SshExecutor::with_program("/opt/test/bin/ssh"),
        );
        assert_eq!(
            real.ssh().program(),
            std::path::Path::new("/opt/test/bin/ssh")
        );
        assert!(std::ptr::eq(real.ssh(), &real.ssh));
        assert!(std::ptr::eq(real.http(), &real.http));
        assert_eq!(
            format!("{real:?}"),
            "RealExecutor { http: HttpExecutor { .. }, ssh: SshExecutor { program: \"/opt/test/bin/ssh\" } }"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(fmt_duration(Duration::from_secs(2)), "2s");
        assert_eq!(fmt_duration(Duration::from_millis(1500)), "1500ms");
    }
}
