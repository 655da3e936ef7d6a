//! The SSH executor: one authorized remote command, run with the system
//! OpenSSH client.
//!
//! Decisions:
//!
//! - **Local side: an argv vector, never a shell.** `ssh` is started with
//!   [`std::process::Command`]; see [`ssh_args`] for the exact options.
//!   User configuration is ignored (`-F none`), the host key must already be
//!   in the policy's `known_hosts` file (`StrictHostKeyChecking=yes`; with
//!   no `known_hosts` configured, `/dev/null` is used, so every host key is
//!   unknown and the call fails), the system-wide known hosts file is not
//!   consulted either, nothing is ever written to a known hosts file, and
//!   only the tool's identity is offered (`IdentitiesOnly=yes`, no agent).
//! - **Remote side: argv semantics preserved.** OpenSSH sends the remote
//!   command as one string, which the remote user's login shell parses.
//!   [`quote_remote_argv`] single-quotes every argument, so each element
//!   arrives as exactly one literal argument (`a b; rm -rf /` stays one
//!   argument). This assumes a POSIX-compatible login shell on the remote
//!   side (sh, bash, dash, zsh, ksh); csh-family or fish shells are not
//!   supported.
//! - **Identity.** A credential read from a file is passed by that path.
//!   One held in memory (from the environment) never touches a disk: it is
//!   written to an anonymous memory file (`memfd_create`, mode 0600, sealed
//!   against writes) that the gateway holds open for the call, and `ssh`
//!   is given `/proc/<gateway pid>/fd/<n>` (`ssh` closes every inherited
//!   descriptor above stderr at startup, so `/dev/fd/<n>` would not do;
//!   OpenSSH checks the mode, so 0600 matters). The memory file vanishes
//!   with the gateway however it ends. Where that path does not work (no
//!   memfd, `/proc` missing or hidden), the key goes to a 0600 file in the
//!   call's private directory (below), removed after the call. A tool
//!   without a credential offers no key at all (`PubkeyAuthentication=no`),
//!   never the user's default keys.
//! - **Lifetime.** Each executor keeps one private 0700 directory per
//!   process, `$TMPDIR/portcullis-ssh-<pid>-<random>`, flock-ed while it
//!   lives, holding one subdirectory per call (the child's `HOME`, and the
//!   fallback identity file). Each `ssh` runs in a process group of its
//!   own, registered with the executor until it is reaped; the whole group
//!   is killed at the deadline. [`SshExecutor::shutdown`] refuses new calls,
//!   kills every running group and removes the directory; the binary calls
//!   it on every exit path. [`sweep_stale`] removes directories left by a
//!   run that could not clean up (killed, crashed): those whose lock is
//!   free and whose owner pid is gone (or which are over a minute old, for
//!   a reused pid).
//! - **Environment.** Cleared, except `PATH`; `HOME` points at a private
//!   empty directory. (OpenSSH takes the home directory from the password
//!   database, not `HOME`; every file it would read from there is
//!   overridden by the options above.) Stdin is `/dev/null`.
//! - **Time.** `action.timeout()` bounds the whole call: `ConnectTimeout`
//!   is set from it, and the client is killed when it is exceeded
//!   (`is_error: true`, `timed out after Ns; …`).
//! - **Output.** stdout and stderr are read concurrently, each kept up to
//!   `max_output_bytes`; the rest is drained and discarded so the remote
//!   side never blocks. UTF-8 passes as-is; anything else is reported as
//!   `<N bytes of binary content>`.
//! - **Result.** stdout, then a `[stderr]` section when stderr is not
//!   empty. Exit status 0 is success; any other status, a signal, a
//!   timeout or a failure to start `ssh` is `is_error: true` with a first
//!   line saying which. Exit status 255 is what `ssh` uses for its own
//!   failures (connection, host key, authentication); a remote command
//!   that itself exits 255 is indistinguishable from that.
//!
//! Modules, in the order a call goes through them: `argv` (the local
//! command line and the remote quoting), `identity` (where the key is),
//! `clients` (the registry of running process groups and the private
//! directory), `collect` (reading output, the deadline, the rendered
//! result) and `sweep` (directories left by runs that died).

mod argv;
mod clients;
mod collect;
mod identity;
mod sweep;

use std::fmt;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use portcullis_gateway::{ActionTarget, AuthorizedAction, Executor, Outcome, SshCommand};
use thiserror::Error;

use self::clients::{Children, kill_group};
use self::collect::{collect, render};
use self::identity::Identity;
use crate::output::{Capped, shown_text};
use crate::scrub::Scrubber;

pub use self::argv::{NO_KNOWN_HOSTS, quote_remote_argv, ssh_args};
pub use self::sweep::{SCRATCH_PREFIX, sweep_stale};

/// `PATH` for the child when the gateway's own is unset.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Why an SSH call could not run to completion.
#[derive(Debug, Error)]
#[non_exhaustive]
pub(crate) enum SshError {
    /// The private scratch directory or identity file could not be made.
    #[error("cannot prepare the ssh call: {0}")]
    Prepare(io::Error),
    /// The `ssh` program could not be started.
    #[error("cannot start the ssh client {program}: {source}")]
    Spawn {
        /// The program that was run.
        program: String,
        /// Why it failed.
        source: io::Error,
    },
    /// A reader thread could not be started.
    #[error("cannot start an output reader: {0}")]
    Thread(io::Error),
    /// [`SshExecutor::shutdown`] was called.
    #[error("not started: the gateway is shutting down")]
    ShuttingDown,
}

/// Runs authorized commands with the system OpenSSH client.
///
/// Clones share one registry of running clients and one private directory,
/// so a clone kept by the caller can [`shutdown`](Self::shutdown) the
/// calls made through another.
#[derive(Clone)]
pub struct SshExecutor {
    program: PathBuf,
    children: Arc<Children>,
    file_identity: bool,
}

impl fmt::Debug for SshExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshExecutor")
            .field("program", &self.program)
            .finish()
    }
}

impl Default for SshExecutor {
    fn default() -> Self {
        Self::new()
    }
}

impl SshExecutor {
    /// Runs `ssh`, found on `PATH`.
    pub fn new() -> Self {
        Self::with_program("ssh")
    }

    /// Runs the given client program (an OpenSSH `ssh`).
    pub fn with_program(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            children: Arc::default(),
            file_identity: false,
        }
    }

    /// Test hook: always use the fallback identity file, never a memory
    /// file.
    #[doc(hidden)]
    pub fn with_file_identity(mut self) -> Self {
        self.file_identity = true;
        self
    }

    /// Clients running now (spawned and not yet reaped).
    pub fn running(&self) -> usize {
        self.children.lock().groups.len()
    }

    /// The private per-process directory, when one exists.
    pub fn scratch_dir(&self) -> Option<PathBuf> {
        self.children
            .lock()
            .dir
            .as_ref()
            .map(|d| d.dir.path().to_owned())
    }

    /// End everything this executor (and its clones) started: refuse new
    /// calls, kill the process group of every running client, and remove
    /// the private directory with any identity file in it. Calls in
    /// progress return `ssh was killed by signal 9`. Returns the number of
    /// process groups killed.
    pub fn shutdown(&self) -> usize {
        let (killed, dir) = {
            let mut inner = self.children.lock();
            inner.closed = true;
            for &pid in &inner.groups {
                kill_group(pid);
            }
            (inner.groups.len(), inner.dir.take())
        };
        drop(dir);
        killed
    }

    /// Wait until every killed client has been reaped by its call, at most
    /// `limit`; whether none is left.
    pub fn wait_reaped(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.running() == 0 {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The client program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The full command for `cmd`: program, [`ssh_args`], cleared
    /// environment with `PATH` and `HOME = home`, stdin null, stdout and
    /// stderr piped, in a new process group (so the client and anything it
    /// starts can be killed as one, and a terminal's Ctrl-C reaches only
    /// the gateway, which then ends them itself).
    pub fn command(
        &self,
        cmd: &SshCommand,
        identity: Option<&Path>,
        home: &Path,
        timeout: Duration,
    ) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(ssh_args(cmd, identity, timeout))
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| FALLBACK_PATH.into()),
            )
            .env("HOME", home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        command
    }

    fn run(&self, action: &AuthorizedAction, cmd: &SshCommand) -> Outcome {
        let started = Instant::now();
        let secret = action.credential().map(|s| s.expose());
        let result = self.run_inner(action, cmd);
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(err) => Outcome::failure(err.to_string()),
        };
        let outcome = Scrubber::new(secret).scrub_outcome(outcome);
        tracing::info!(
            tool = action.tool(),
            host = cmd.host(),
            port = cmd.port(),
            is_error = outcome.is_error,
            elapsed_ms,
            "ssh action finished"
        );
        outcome
    }

    fn run_inner(&self, action: &AuthorizedAction, cmd: &SshCommand) -> Result<Outcome, SshError> {
        // One private directory per call, inside the per-process one: HOME
        // for the child, and the fallback identity file. Removed on drop,
        // after the client (declared later, dropped first) is reaped.
        let call = self.children.call_dir().map_err(SshError::Prepare)?;
        let home = call.path().join("home");
        std::fs::create_dir(&home).map_err(SshError::Prepare)?;
        let identity = match action.credential() {
            None => None,
            Some(secret) => Some(match secret.path() {
                Some(path) => Identity::Given(path.to_owned()),
                None => Identity::private(secret.expose(), call.path(), self.file_identity)
                    .map_err(SshError::Prepare)?,
            }),
        };
        let timeout = action.timeout();
        let mut command = self.command(cmd, identity.as_ref().map(Identity::path), &home, timeout);
        let mut child = self.children.spawn(&mut command, &self.program)?;
        let cap = cmd.max_output_bytes();
        let (waited, stdout, stderr) = collect(&mut child, cap, timeout)?;
        drop(child);
        drop(identity);
        drop(call);
        let scrubber = Scrubber::new(action.credential().map(|s| s.expose()));
        let stdout = stdout.map(|c| scrub_cut_stream(&scrubber, c));
        let stderr = stderr.map(|c| scrub_cut_stream(&scrubber, c));
        Ok(render(&waited, stdout.as_ref(), stderr.as_ref(), timeout))
    }
}

/// A stream cut at its cap may end inside the credential, where the whole
/// outcome's scrub (which runs after rendering) cannot see it as a cut: the
/// stream is scrubbed on its own with the cut rule first.
fn scrub_cut_stream(scrubber: &Scrubber, mut captured: Capped) -> Capped {
    if captured.truncated
        && let Some(text) = shown_text(&captured.bytes, true)
    {
        captured.bytes = scrubber.scrub_cut(text).into_bytes();
    }
    captured
}

impl Executor for SshExecutor {
    fn execute(&self, action: &AuthorizedAction) -> Outcome {
        match action.target() {
            ActionTarget::Ssh(cmd) => self.run(action, cmd),
            ActionTarget::Http(_) => {
                Outcome::failure("internal: the SSH executor was handed an HTTP action")
            }
        }
    }
}
