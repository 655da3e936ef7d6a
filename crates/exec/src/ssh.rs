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

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt as _, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{Duration, Instant, SystemTime};

use portcullis_gateway::{ActionTarget, AuthorizedAction, Executor, Outcome, SshCommand};
use thiserror::Error;

use rustix::fs::{FlockOperation, MemfdFlags, Mode, SealFlags};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use tempfile::TempDir;

use crate::fmt_duration;
use crate::output::{Capped, Overflow, read_capped, text_of};
use crate::scrub::Scrubber;

/// The known hosts file used when a tool names none: empty, so every host
/// key is unknown and strict checking refuses the connection.
pub const NO_KNOWN_HOSTS: &str = "/dev/null";

/// `PATH` for the child when the gateway's own is unset.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Name prefix of the per-process private directory under the temporary
/// directory: `portcullis-ssh-<pid>-<random>`.
pub const SCRATCH_PREFIX: &str = "portcullis-ssh-";

/// A private directory whose lock is free but whose pid is alive is stale
/// only past this age (the pid was reused); younger ones may be a gateway
/// between creating its directory and locking it.
const STALE_AGE: Duration = Duration::from_secs(60);

/// How long a killed client may take to be reaped before it is left to
/// the operating system.
const REAP_LIMIT: Duration = Duration::from_secs(5);

/// Why an SSH call could not run to completion.
#[derive(Debug, Error)]
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
        Ok(render(&waited, stdout.as_ref(), stderr.as_ref(), timeout))
    }
}

/// Where `ssh` finds the key for one call.
enum Identity {
    /// The policy's own key file.
    Given(PathBuf),
    /// An anonymous memory file, held open for the call, and the
    /// `/proc/<pid>/fd/<n>` path that reaches it.
    Memory { _fd: OwnedFd, path: PathBuf },
    /// The fallback: a 0600 file in the call's private directory.
    File(PathBuf),
}

impl Identity {
    /// The key held in memory, as a memory file when that works, else as
    /// a file in `dir`.
    fn private(key: &str, dir: &Path, force_file: bool) -> io::Result<Self> {
        if !force_file {
            match memory_file(key) {
                Ok((fd, path)) => return Ok(Self::Memory { _fd: fd, path }),
                Err(err) => tracing::debug!(
                    error = %err,
                    "no usable memory file for the identity; using a private file"
                ),
            }
        }
        let path = dir.join("identity");
        write_private(&path, key)?;
        Ok(Self::File(path))
    }

    fn path(&self) -> &Path {
        match self {
            Self::Given(path) | Self::Memory { path, .. } | Self::File(path) => path,
        }
    }
}

impl Drop for Identity {
    fn drop(&mut self) {
        if let Self::File(path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `key` (plus the final newline OpenSSH wants) in a sealed 0600 memory
/// file, and a path to it that other processes of this user can open.
fn memory_file(key: &str) -> io::Result<(OwnedFd, PathBuf)> {
    let fd = rustix::fs::memfd_create(
        "portcullis-ssh-identity",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    rustix::fs::fchmod(&fd, Mode::RUSR | Mode::WUSR)?;
    let mut file = File::from(fd);
    file.write_all(key.as_bytes())?;
    file.write_all(b"\n")?;
    rustix::fs::fcntl_add_seals(
        &file,
        SealFlags::SEAL | SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE,
    )?;
    let path = PathBuf::from(format!(
        "/proc/{}/fd/{}",
        std::process::id(),
        file.as_raw_fd()
    ));
    // The path must reach this very file (procfs mounted and not hidden).
    let (seen, held) = (std::fs::metadata(&path)?, file.metadata()?);
    if (seen.dev(), seen.ino()) != (held.dev(), held.ino()) {
        return Err(io::Error::other(
            "the /proc path does not reach the memory file",
        ));
    }
    Ok((file.into(), path))
}

// ---------------------------------------------------------------------------
// Lifetime: running clients and the private directory

/// What an executor and its clones started.
#[derive(Default)]
struct Children {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// [`SshExecutor::shutdown`] was called: nothing new starts.
    closed: bool,
    /// Process group ids (= pids) of clients spawned and not yet reaped.
    /// A pid leaves the set only under the lock, in the same step that
    /// reaps it, so a group is never signalled after its id is freed.
    groups: BTreeSet<i32>,
    /// The per-process directory, made at the first call.
    dir: Option<ScratchDir>,
}

impl Children {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh 0700 directory for one call inside the per-process one.
    fn call_dir(&self) -> io::Result<TempDir> {
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
    fn spawn(&self, command: &mut Command, program: &Path) -> Result<Tracked<'_>, SshError> {
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
struct Tracked<'a> {
    child: Child,
    pid: i32,
    children: &'a Children,
}

impl Tracked<'_> {
    /// `try_wait`, unregistering the group once the client is reaped.
    /// Whatever the client left running in its group is killed first: the
    /// unreaped client still holds the group id, so it cannot have been
    /// reused.
    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
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
    fn kill_and_reap(&mut self) -> Option<ExitStatus> {
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

fn kill_group(pid: i32) {
    if let Some(pid) = Pid::from_raw(pid) {
        let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    }
}

/// The per-process private directory, flock-ed for as long as it lives so
/// [`sweep_stale`] can tell it from one left by a dead run.
struct ScratchDir {
    dir: TempDir,
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

/// The arguments passed to `ssh` (after the program name) for `cmd`.
///
/// ```text
/// -T -n -F none
/// -o BatchMode=yes -o StrictHostKeyChecking=yes -o GlobalKnownHostsFile=/dev/null
/// -o UpdateHostKeys=no -o CheckHostIP=no
/// -o IdentitiesOnly=yes -o IdentityAgent=none
/// -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no
/// -o ForwardAgent=no -o ForwardX11=no -o ClearAllForwardings=yes
/// -o ControlMaster=no -o ControlPath=none -o PermitLocalCommand=no
/// -o ProxyCommand=none -o ProxyJump=none -o EscapeChar=none -o LogLevel=ERROR
/// -o UserKnownHostsFile=<known_hosts | /dev/null>
/// -o ConnectTimeout=<timeout rounded up to whole seconds, at least 1>
/// (-i <identity> | -o PubkeyAuthentication=no)
/// -p <port> -l <user> -- <host> <quote_remote_argv(argv)>
/// ```
pub fn ssh_args(cmd: &SshCommand, identity: Option<&Path>, timeout: Duration) -> Vec<OsString> {
    let known_hosts: OsString = cmd
        .known_hosts()
        .map_or_else(|| NO_KNOWN_HOSTS.into(), |p| p.as_os_str().to_owned());
    let connect_secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
    let mut args: Vec<OsString> = vec!["-T".into(), "-n".into(), "-F".into(), "none".into()];
    let mut opt = |o: OsString| {
        args.push("-o".into());
        args.push(o);
    };
    for fixed in [
        "BatchMode=yes",
        "StrictHostKeyChecking=yes",
        "GlobalKnownHostsFile=/dev/null",
        "UpdateHostKeys=no",
        "CheckHostIP=no",
        "IdentitiesOnly=yes",
        "IdentityAgent=none",
        "PasswordAuthentication=no",
        "KbdInteractiveAuthentication=no",
        "ForwardAgent=no",
        "ForwardX11=no",
        "ClearAllForwardings=yes",
        "ControlMaster=no",
        "ControlPath=none",
        "PermitLocalCommand=no",
        "ProxyCommand=none",
        "ProxyJump=none",
        "EscapeChar=none",
        "LogLevel=ERROR",
    ] {
        opt(fixed.into());
    }
    let mut known = OsString::from("UserKnownHostsFile=");
    known.push(&known_hosts);
    opt(known);
    opt(format!("ConnectTimeout={}", connect_secs.max(1)).into());
    match identity {
        Some(path) => {
            args.push("-i".into());
            args.push(path.as_os_str().to_owned());
        }
        None => {
            args.push("-o".into());
            args.push("PubkeyAuthentication=no".into());
        }
    }
    args.push("-p".into());
    args.push(cmd.port().to_string().into());
    args.push("-l".into());
    args.push(cmd.user().into());
    args.push("--".into());
    args.push(ssh_host(cmd.host()).into());
    args.push(quote_remote_argv(cmd.argv()).into());
    args
}

/// The host as the `ssh` command line wants it: IPv6 without brackets.
fn ssh_host(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// Join `argv` into one POSIX shell command line in which every element is
/// exactly one literal word: each is wrapped in single quotes, and each
/// `'` inside becomes `'\''` (close quote, escaped quote, reopen).
/// Nothing inside single quotes is special to a POSIX shell, so `$`, `` ` ``,
/// `;`, `|`, `*`, newlines and spaces all stay literal.
pub fn quote_remote_argv(argv: &[String]) -> String {
    let mut out = String::new();
    for (i, arg) in argv.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push('\'');
        for c in arg.chars() {
            if c == '\'' {
                out.push_str("'\\''");
            } else {
                out.push(c);
            }
        }
        out.push('\'');
    }
    out
}

/// Append one stream to `text`: stdout unlabelled, stderr under a
/// `[stderr]` line; then a truncation note when the cap was hit.
fn stream_section(text: &mut String, name: &str, captured: Option<&Capped>) {
    let mut section = |piece: &str| {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(piece);
    };
    let Some(captured) = captured else {
        section(&format!(
            "[{name} not collected: still open {}s after ssh ended]",
            READER_GRACE.as_secs()
        ));
        return;
    };
    if !captured.bytes.is_empty() {
        if name != "stdout" {
            section(&format!("[{name}]\n"));
        }
        section(&text_of(&captured.bytes, captured.truncated));
    }
    if captured.truncated {
        section(&format!(
            "[{name} truncated at {} bytes; {} more bytes discarded]",
            captured.bytes.len(),
            captured.discarded
        ));
    }
}

fn write_private(path: &Path, key: &str) -> io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(key.as_bytes())?;
    // The store trims values; OpenSSH wants the key's final newline.
    file.write_all(b"\n")?;
    file.sync_all()
}

/// How the child ended.
#[derive(Debug)]
enum Waited {
    Exited(ExitStatus),
    TimedOut,
    WaitFailed(io::Error),
}

/// How long the output readers may take to see end-of-file once `ssh` has
/// ended. Only a process that inherited the pipes and outlived `ssh` can
/// hold them open that long; its output is then not collected.
const READER_GRACE: Duration = Duration::from_secs(2);

/// The end state plus stdout and stderr (`None`: still open at the grace
/// deadline).
type Collected = (Waited, Option<Capped>, Option<Capped>);

fn spawn_reader<R: io::Read + Send + 'static>(
    stream: R,
    cap: usize,
    name: &str,
) -> io::Result<mpsc::Receiver<Capped>> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(format!("ssh-{name}"))
        .spawn(move || {
            let captured = match read_capped(stream, cap, Overflow::Drain) {
                Ok(c) => c,
                Err((_, partial)) => partial,
            };
            let _ = tx.send(captured);
        })?;
    Ok(rx)
}

/// Read stdout and stderr concurrently (one thread each) while waiting for
/// the child, killing its group at the deadline.
fn collect(child: &mut Tracked<'_>, cap: usize, timeout: Duration) -> Result<Collected, SshError> {
    let deadline = Instant::now() + timeout;
    let out = child
        .child
        .stdout
        .take()
        .map(|s| spawn_reader(s, cap, "stdout"))
        .transpose()
        .map_err(SshError::Thread)?;
    let err = child
        .child
        .stderr
        .take()
        .map(|s| spawn_reader(s, cap, "stderr"))
        .transpose()
        .map_err(SshError::Thread)?;
    let waited = wait_until(child, deadline);
    let grace = Instant::now() + READER_GRACE;
    let receive = |rx: Option<mpsc::Receiver<Capped>>| match rx {
        None => Some(Capped::default()),
        Some(rx) => rx
            .recv_timeout(grace.saturating_duration_since(Instant::now()))
            .ok(),
    };
    let out = receive(out);
    let err = receive(err);
    Ok((waited, out, err))
}

fn wait_until(child: &mut Tracked<'_>, deadline: Instant) -> Waited {
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Waited::Exited(status),
            Ok(None) => {}
            Err(e) => return Waited::WaitFailed(e),
        }
        let now = Instant::now();
        if now >= deadline {
            child.kill_and_reap();
            return Waited::TimedOut;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

fn render(
    waited: &Waited,
    stdout: Option<&Capped>,
    stderr: Option<&Capped>,
    timeout: Duration,
) -> Outcome {
    let (headline, is_error) = match waited {
        Waited::Exited(status) => match (status.code(), status.signal()) {
            (Some(0), _) => (None, false),
            (Some(255), _) => (
                Some(
                    "ssh failed (exit status 255): connection, host key or authentication error"
                        .to_owned(),
                ),
                true,
            ),
            (Some(code), _) => (
                Some(format!("remote command failed: exit status {code}")),
                true,
            ),
            (None, Some(signal)) => (Some(format!("ssh was killed by signal {signal}")), true),
            (None, None) => (Some("ssh ended abnormally".to_owned()), true),
        },
        Waited::TimedOut => (
            Some(format!(
                "timed out after {}; the ssh client was killed",
                fmt_duration(timeout)
            )),
            true,
        ),
        Waited::WaitFailed(e) => (Some(format!("waiting for ssh failed: {e}")), true),
    };
    let mut text = String::new();
    if let Some(line) = &headline {
        text.push_str(line);
    }
    stream_section(&mut text, "stdout", stdout);
    stream_section(&mut text, "stderr", stderr);
    if text.is_empty() {
        text.push_str("exit status 0 (no output)");
    }
    Outcome { text, is_error }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn quoting_is_one_literal_word_per_element() {
        assert_eq!(quote_remote_argv(&s(&["ls", "-l"])), "'ls' '-l'");
        assert_eq!(quote_remote_argv(&s(&["a b; rm -rf /"])), "'a b; rm -rf /'");
        assert_eq!(quote_remote_argv(&s(&["it's"])), "'it'\\''s'");
        assert_eq!(quote_remote_argv(&s(&[""])), "''");
        assert_eq!(quote_remote_argv(&s(&["''"])), "''\\'''\\'''");
        assert_eq!(quote_remote_argv(&s(&["$(id)`id`\n*"])), "'$(id)`id`\n*'");
        assert_eq!(quote_remote_argv(&[]), "");
    }

    /// The quoting round-trips through a real POSIX shell: `sh -c` with the
    /// quoted line hands each element to `printf` as exactly one argument.
    #[test]
    fn quoting_round_trips_through_sh() {
        let args = s(&[
            "a b; touch /nonexistent/pwned",
            "it's",
            "",
            "$(echo no)",
            "`echo no`",
            "*",
            "line1\nline2",
            "back\\slash",
            "'",
            "\"dq\"",
            "~",
            "héllo",
        ]);
        let mut line = vec!["printf".to_owned(), "<%s>".to_owned()];
        line.extend(args.iter().cloned());
        let out = Command::new("/bin/sh")
            .arg("-c")
            .arg(quote_remote_argv(&line))
            .env_clear()
            .current_dir("/")
            .output()
            .expect("run /bin/sh");
        assert!(out.status.success());
        let expected: String = args.iter().map(|a| format!("<{a}>")).collect();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    }

    #[test]
    fn ipv6_hosts_lose_their_brackets() {
        assert_eq!(ssh_host("[::1]"), "::1");
        assert_eq!(ssh_host("example.com"), "example.com");
        assert_eq!(ssh_host("127.0.0.1"), "127.0.0.1");
    }

    #[test]
    fn rendering() {
        let cap = |b: &[u8]| Capped {
            bytes: b.to_vec(),
            truncated: false,
            discarded: 0,
        };
        let ok = Waited::Exited(ExitStatus::from_raw(0));
        let t = Duration::from_secs(3);
        assert_eq!(
            render(&ok, Some(&cap(b"hi\n")), Some(&cap(b"")), t),
            Outcome::success("hi\n")
        );
        assert_eq!(
            render(&ok, Some(&cap(b"")), Some(&cap(b"")), t),
            Outcome::success("exit status 0 (no output)")
        );
        assert_eq!(
            render(&ok, Some(&cap(b"out")), Some(&cap(b"warn\n")), t),
            Outcome::success("out\n[stderr]\nwarn\n")
        );
        let failed = Waited::Exited(ExitStatus::from_raw(3 << 8));
        assert_eq!(
            render(&failed, Some(&cap(b"")), Some(&cap(b"nope")), t),
            Outcome::failure("remote command failed: exit status 3\n[stderr]\nnope")
        );
        let timed = render(&Waited::TimedOut, Some(&cap(b"")), None, t);
        assert!(timed.is_error);
        assert_eq!(
            timed.text,
            "timed out after 3s; the ssh client was killed\n[stderr not collected: still open 2s after ssh ended]"
        );
        let cut = Capped {
            bytes: b"abc".to_vec(),
            truncated: true,
            discarded: 7,
        };
        assert_eq!(
            render(&ok, Some(&cut), Some(&cap(b"")), t).text,
            "abc\n[stdout truncated at 3 bytes; 7 more bytes discarded]"
        );
    }
}
