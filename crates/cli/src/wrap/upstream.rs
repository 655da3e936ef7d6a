//! The upstream process: launched with stdin, stdout and stderr as three
//! pipes, in a process group of its own (an `npx` or `uvx` launcher runs
//! the server as a grandchild), and ended in steps: stdin closed, then at
//! most the grace period, then SIGTERM to the group, then SIGKILL.

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rustix::process::{Pid, Signal, kill_process_group};

/// How long after SIGTERM the group gets SIGKILL.
pub const TERM_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub struct Upstream {
    pub child: Child,
    status: Option<ExitStatus>,
}

impl Upstream {
    /// Launch `command` with three pipes.
    pub fn spawn(command: &[String]) -> anyhow::Result<Self> {
        let (program, args) = command.split_first().context("no upstream command given")?;
        let child = std::os::unix::process::CommandExt::process_group(
            Command::new(program)
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
            0,
        )
        .spawn()
        .with_context(|| format!("cannot launch the upstream server {program:?}"))?;
        Ok(Self {
            child,
            status: None,
        })
    }

    /// Whether it has exited (reaping it if so).
    pub fn exited(&mut self) -> bool {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status.is_some()
    }

    /// Send `signal` to its process group.
    pub fn signal(&mut self, signal: Signal) {
        if self.exited() {
            return;
        }
        self.signal_group(signal);
    }

    /// Send `signal` to the group even when the leader has exited: a
    /// grandchild may still hold the group.
    fn signal_group(&self, signal: Signal) {
        let pid = i32::try_from(self.child.id()).ok().and_then(Pid::from_raw);
        if let Some(pid) = pid {
            let _ = kill_process_group(pid, signal);
        }
    }

    /// Wait until it exits or `deadline` passes.
    pub fn wait_until(&mut self, deadline: Instant) -> bool {
        while !self.exited() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// End it: wait at most `grace` (its stdin is already closed), then
    /// SIGTERM, then SIGKILL. Logs how it ended.
    pub fn end(&mut self, grace: Duration) {
        if !self.wait_until(Instant::now() + grace) {
            tracing::warn!(
                grace_ms = grace.as_millis(),
                "the upstream did not exit after its stdin closed; sending SIGTERM"
            );
            self.signal(Signal::TERM);
            if !self.wait_until(Instant::now() + TERM_WAIT) {
                tracing::warn!("the upstream ignored SIGTERM; sending SIGKILL");
                self.signal(Signal::KILL);
                self.wait_until(Instant::now() + TERM_WAIT);
            }
        }
        // Whatever the leader did, nothing of its group outlives us.
        self.signal_group(Signal::KILL);
        match self.status {
            Some(status) => tracing::info!(%status, "the upstream exited"),
            None => tracing::error!("the upstream could not be reaped"),
        }
    }
}
