//! Directories left behind by runs that could not clean up (killed,
//! crashed), found by name, lock and owner pid, and removed.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustix::fs::FlockOperation;
use rustix::process::Pid;

/// Name prefix of the per-process private directory under the temporary
/// directory: `portcullis-ssh-<pid>-<random>`.
pub const SCRATCH_PREFIX: &str = "portcullis-ssh-";

/// A private directory whose lock is free but whose pid is alive is stale
/// only past this age (the pid was reused); younger ones may be a gateway
/// between creating its directory and locking it.
const STALE_AGE: Duration = Duration::from_secs(60);

/// Remove private directories (`SCRATCH_PREFIX<pid>-…` in `tmp`, owned by
/// this user) left behind by runs that could not clean up: a directory is
/// stale when nobody holds its lock and either its pid is gone or it is
/// older than a minute (its pid was reused). Returns the directories
/// removed; failures are logged and skipped.
pub fn sweep_stale(tmp: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return removed;
    };
    let uid = rustix::process::getuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SCRATCH_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid {
            continue;
        }
        let Ok(lock) = File::open(&path) else {
            continue;
        };
        if rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
            continue;
        }
        let old = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age > STALE_AGE);
        if process_alive(pid) && !old {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed.push(path),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => tracing::warn!(
                error = %err,
                dir = %path.display(),
                "cannot remove a stale ssh scratch directory"
            ),
        }
    }
    removed
}

fn process_alive(pid: i32) -> bool {
    Pid::from_raw(pid).is_some_and(|pid| {
        !matches!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        )
    })
}
