//! The lifetime of what an executor starts: the registry of running
//! clients (one process group each, killed as one) and the per-process
//! private directory.

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rustix::fs::FlockOperation;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use tempfile::TempDir;

use super::SshError;
use super::sweep::SCRATCH_PREFIX;

/// How long a killed client may take to be reaped before it is left to
/// the operating system.
const REAP_LIMIT: Duration = Duration::from_secs(5);

/// What an executor and its clones started.
#[derive(Default)]
pub(super) struct Children {
    inner: Mutex<Inner>,
}

#[derive(Default)]
pub(super) struct Inner {
    /// [`SshExecutor::shutdown`] was called: nothing new starts.
    pub(super) closed: bool,
    /// Process group ids (= pids) of clients spawned and not yet reaped.
    /// A pid leaves the set only under the lock, in the same step that
    /// reaps it, so a group is never signalled after its id is freed.
    pub(super) groups: BTreeSet<i32>,
    /// The per-process directory, made at the first call.
    pub(super) dir: Option<ScratchDir>,
}

impl Children {
    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh 0700 directory for one call inside the per-process one.
    pub(super) fn call_dir(&self) -> io::Result<TempDir> {
        let parent = {
            let mut inner = self.lock();
            if inner.closed {
                return Err(io::Error::other("the gateway is shutting down"));
            }
            if inner.dir.is_none() {
                inner.dir = Some(ScratchDir::create()?);
            }
            inner.dir.as_ref().map(|d| d.dir.path().to_owned())
        };
        let parent = parent.ok_or_else(|| io::Error::other("no private directory"))?;
        let dir = tempfile::Builder::new()
            .prefix("call-")
            .tempdir_in(parent)?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        Ok(dir)
    }

    /// Spawn and register, in one step that [`SshExecutor::shutdown`]
    /// cannot fall between.
    pub(super) fn spawn(
        &self,
        command: &mut Command,
        program: &Path,
    ) -> Result<Tracked<'_>, SshError> {
        let mut inner = self.lock();
        if inner.closed {
            return Err(SshError::ShuttingDown);
        }
        let child = command.spawn().map_err(|source| SshError::Spawn {
            program: program.display().to_string(),
            source,
        })?;
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        inner.groups.insert(pid);
        Ok(Tracked {
            child,
            pid,
            children: self,
        })
    }
}

/// A running client, registered until reaped; dropping it kills its group
/// and reaps it.
pub(super) struct Tracked<'a> {
    pub(super) child: Child,
    pid: i32,
    children: &'a Children,
}

impl Tracked<'_> {
    /// `try_wait`, unregistering the group once the client is reaped.
    /// Whatever the client left running in its group is killed first: the
    /// unreaped client still holds the group id, so it cannot have been
    /// reused.
    pub(super) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let mut inner = self.children.lock();
        if let Some(pid) = Pid::from_raw(self.pid) {
            let exited = rustix::process::waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
            );
            if matches!(exited, Ok(Some(_))) {
                kill_group(self.pid);
            }
        }
        let result = self.child.try_wait();
        if !matches!(result, Ok(None)) {
            inner.groups.remove(&self.pid);
        }
        result
    }

    /// Kill the client's process group, if it is still registered.
    fn kill(&self) {
        let inner = self.children.lock();
        if inner.groups.contains(&self.pid) {
            kill_group(self.pid);
        }
    }

    /// Kill the group and reap the client (bounded: a process stuck in
    /// the kernel is left to the operating system).
    pub(super) fn kill_and_reap(&mut self) -> Option<ExitStatus> {
        self.kill();
        let deadline = Instant::now() + REAP_LIMIT;
        loop {
            match self.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Ok(None) | Err(_) => return None,
            }
        }
    }
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        let registered = self.children.lock().groups.contains(&self.pid);
        if registered {
            self.kill_and_reap();
        }
    }
}

pub(super) fn kill_group(pid: i32) {
    if let Some(pid) = Pid::from_raw(pid) {
        let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    }
}

/// The per-process private directory, flock-ed for as long as it lives so
/// [`sweep_stale`] can tell it from one left by a dead run.
pub(super) struct ScratchDir {
    pub(super) dir: TempDir,
    _lock: File,
}

impl ScratchDir {
    fn create() -> io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{SCRATCH_PREFIX}{}-", std::process::id()))
            .tempdir()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        let lock = File::open(dir.path())?;
        rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive)?;
        Ok(Self { dir, _lock: lock })
    }
}
