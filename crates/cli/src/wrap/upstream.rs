//! The upstream process: launched with stdin, stdout and stderr as three
//! pipes, in a process group of its own (an `npx` or `uvx` launcher runs
//! the server as a grandchild), and ended in steps: stdin closed, then at
//! most the grace period, then SIGTERM to the group, then SIGKILL.
//!
//! A descendant may leave the group (`setsid`, `setpgid`) and outlive the
//! process that started it. On Linux the wrapper is a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`): every orphaned descendant becomes its child
//! instead of init's, so once the group is killed, every child left is
//! killed and reaped too, round after round (a child that dies hands its
//! own children to the wrapper), for at most [`REAP_WAIT`].

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rustix::process::{Pid, Signal, kill_process_group};

/// How long after SIGTERM the group gets SIGKILL.
pub const TERM_WAIT: Duration = Duration::from_secs(2);
/// How long the wrapper keeps killing and reaping the descendants left
/// after the group is gone.
pub const REAP_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub struct Upstream {
    pub child: Child,
    status: Option<ExitStatus>,
}

impl Upstream {
    /// Launch `command` with three pipes.
    pub fn spawn(command: &[String]) -> anyhow::Result<Self> {
        let (program, args) = command.split_first().context("no upstream command given")?;
        orphans::adopt();
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
        // Whatever the leader did, nothing of its group outlives us, nor
        // anything that left the group.
        self.signal_group(Signal::KILL);
        self.kill_orphans();
        match self.status {
            Some(status) => tracing::info!(%status, "the upstream exited"),
            None => tracing::error!("the upstream could not be reaped"),
        }
    }

    /// Kill and reap every child of ours but the leader (which `Child`
    /// reaps): the descendants that left the group and were orphaned. Each
    /// round may bring more (the children of those just killed); at most
    /// [`REAP_WAIT`].
    fn kill_orphans(&mut self) {
        let deadline = Instant::now() + REAP_WAIT;
        let leader = self.child.id();
        loop {
            let leader_unreaped = !self.exited();
            let children: Vec<u32> = orphans::children()
                .into_iter()
                .filter(|&pid| !(leader_unreaped && pid == leader))
                .collect();
            if children.is_empty() {
                return;
            }
            for &pid in &children {
                orphans::kill_and_reap(pid);
            }
            if Instant::now() >= deadline {
                tracing::error!(
                    left = children.len(),
                    "descendants of the upstream could not all be reaped"
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Descendants that leave the upstream's process group.
#[cfg(target_os = "linux")]
mod orphans {
    use rustix::process::{Pid, Signal, WaitOptions, getpid, kill_process, waitpid};

    /// Make orphaned descendants our children (once per process; a failure
    /// is logged, and only the process group is ended then).
    pub fn adopt() {
        if let Err(err) = rustix::process::set_child_subreaper(Some(getpid())) {
            tracing::warn!(
                error = %err,
                "cannot become a child subreaper: a descendant of the upstream that leaves its process group may outlive the wrapper"
            );
        }
    }

    /// Our children now, from `/proc` (every process whose parent we are).
    pub fn children() -> Vec<u32> {
        let me = getpid().as_raw_nonzero().get().unsigned_abs();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| parent_of(pid) == Some(me))
            .collect()
    }

    /// The parent of `pid`, from `/proc/PID/stat`: `pid (comm) state ppid
    /// …`, where `comm` may hold spaces and parentheses.
    fn parent_of(pid: u32) -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after_comm = &stat[stat.rfind(')')? + 1..];
        after_comm.split_whitespace().nth(1)?.parse().ok()
    }

    /// SIGKILL our child `pid` and reap it if it is gone already (a later
    /// round reaps it otherwise). A child of ours is never reaped by anyone
    /// else, so its pid cannot be reused before we reap it.
    pub fn kill_and_reap(pid: u32) {
        let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            return;
        };
        let _ = kill_process(pid, Signal::KILL);
        let _ = waitpid(Some(pid), WaitOptions::NOHANG);
    }
}

/// Elsewhere orphans go to init; only the process group is ended.
#[cfg(not(target_os = "linux"))]
mod orphans {
    pub fn adopt() {}

    pub fn children() -> Vec<u32> {
        Vec::new()
    }

    pub fn kill_and_reap(_pid: u32) {}
}
