//! Nothing outlives `portcullis mcp`: every way the session ends (end of
//! input, close on invalid input, a stdout failure, SIGINT, SIGTERM) kills
//! the `ssh` clients still running and removes their identity material.
//!
//! - **At startup** [`Lifetime::start`] sweeps the temporary directory for
//!   private ssh directories left by runs that could not clean up (killed
//!   with SIGKILL, crashed; see [`portcullis_exec::ssh::sweep_stale`]).
//! - **At exit** the [`ExitGuard`] (dropped when `mcp::run` returns or
//!   unwinds) calls [`Lifetime::finish`]: the SSH executor refuses new
//!   calls, kills the process group of every running client, waits at most
//!   [`REAP_WAIT`] for the workers to reap them, and removes the private
//!   directory. An in-memory key never reaches a disk at all (an anonymous
//!   memory file that dies with the process).
//! - **SIGINT and SIGTERM** (caught with `signal-hook`, which keeps the
//!   signal handler itself trivial) end the session at once, without the
//!   grace period: the core stops, then the same cleanup runs and the exit
//!   status is 128 + the signal number ([`exit_code`]: 130 for SIGINT, 143
//!   for SIGTERM), as a shell reports a process ended by that signal. When
//!   the core cannot stop within [`SIGNAL_DEADLINE`] (say, blocked writing
//!   to a client that does not read), or a second signal arrives, the
//!   signal thread does the cleanup and exits itself.

use std::thread;
use std::time::Duration;

use anyhow::Context as _;
use portcullis_exec::SshExecutor;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// How long the exit waits for killed clients to be reaped.
pub const REAP_WAIT: Duration = Duration::from_secs(2);

/// How long after SIGINT or SIGTERM the process ends even if the core has
/// not stopped.
pub const SIGNAL_DEADLINE: Duration = Duration::from_secs(3);

/// The exit status for a session ended by `signal`: 128 + its number.
pub fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}

/// What must not outlive the process.
#[derive(Debug, Clone)]
pub struct Lifetime {
    ssh: SshExecutor,
}

impl Lifetime {
    /// Take charge of `ssh` (a clone of the executor the workers use) and
    /// sweep what earlier runs left behind.
    pub fn start(ssh: SshExecutor) -> Self {
        let removed = portcullis_exec::ssh::sweep_stale(&std::env::temp_dir());
        if !removed.is_empty() {
            tracing::info!(
                removed = removed.len(),
                "removed private ssh directories left by earlier runs"
            );
        }
        Self { ssh }
    }

    /// A guard that calls [`Self::finish`] when dropped.
    pub fn exit_guard(&self) -> ExitGuard {
        ExitGuard(self.clone())
    }

    /// Catch SIGINT and SIGTERM: the first calls `notify` with the exit
    /// status to end with; a second one, or [`SIGNAL_DEADLINE`] without
    /// the process ending, cleans up and exits from the signal thread.
    pub fn watch_signals(&self, notify: impl Fn(u8) + Send + 'static) -> anyhow::Result<()> {
        let mut signals =
            Signals::new([SIGINT, SIGTERM]).context("cannot install the signal handlers")?;
        let this = self.clone();
        thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let mut first = None;
                for signal in signals.forever() {
                    let code = exit_code(signal);
                    if let Some(first) = first {
                        tracing::warn!(signal, "second signal; exiting now");
                        this.finish();
                        std::process::exit(i32::from(first));
                    }
                    first = Some(code);
                    tracing::warn!(signal, "signal received; ending the session");
                    notify(code);
                    let watchdog = this.clone();
                    let _ =
                        thread::Builder::new()
                            .name("signal-deadline".into())
                            .spawn(move || {
                                thread::sleep(SIGNAL_DEADLINE);
                                tracing::error!(
                                    "the session did not end in time after a signal; exiting now"
                                );
                                watchdog.finish();
                                std::process::exit(i32::from(code));
                            });
                }
            })
            .context("cannot start the signal thread")?;
        Ok(())
    }

    /// Kill every running `ssh` client (its whole process group), wait at
    /// most [`REAP_WAIT`] for them to be reaped, and remove the private
    /// directory. Idempotent.
    pub fn finish(&self) {
        let killed = self.ssh.shutdown();
        if killed > 0 {
            let reaped = self.ssh.wait_reaped(REAP_WAIT);
            tracing::warn!(killed, reaped, "killed ssh clients still running at exit");
        }
    }
}

/// Calls [`Lifetime::finish`] when dropped, so it runs on every return
/// from `mcp::run` and when it unwinds.
#[derive(Debug)]
pub struct ExitGuard(Lifetime);

impl Drop for ExitGuard {
    fn drop(&mut self) {
        self.0.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_exit_with_128_plus_their_number() {
        assert_eq!(exit_code(SIGINT), 130);
        assert_eq!(exit_code(SIGTERM), 143);
    }
}
