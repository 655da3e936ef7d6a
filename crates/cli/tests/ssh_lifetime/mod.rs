//! A `portcullis mcp` whose SSH tool runs a fake `ssh` that never ends,
//! and the checks that nothing of it outlives the gateway: no client
//! process (nor anything in its process group), no identity material under
//! `TMPDIR`, no private directory.
//!
//! The fake `ssh` (first on `PATH`) records its pid and the pid of a
//! `sleep 300` it starts in its own process group, then waits. The key is
//! a canary text that only the gateway ever sees: the policy reads it from
//! the environment (the gateway must hold it in memory) or from a file
//! outside `TMPDIR`. The gateway runs in a process group of its own, so a
//! test can kill whatever an old binary leaves behind without touching the
//! test runner's group.

#![expect(
    dead_code,
    reason = "mcp_ssh and process_regressions each use only some of these checks"
)]

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ExitStatus};
use std::time::{Duration, Instant};

use crate::common::{Launch, binary, call, drain, frame, handshake};
use serde_json::json;

/// The SSH tool of [`Scenario::policy`].
pub const TOOL: &str = "deploy";

/// The argument of the SSH tool.
pub fn arguments() -> serde_json::Value {
    json!({ "service": "web" })
}

/// Handshake, then one call to the SSH tool (id 2).
pub fn session_with_ssh_call() -> Vec<u8> {
    let mut bytes = handshake();
    bytes.extend(call(2, TOOL, arguments()));
    bytes
}

/// How the policy supplies the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// `env = "DEPLOY_KEY"`: the gateway holds the key in memory.
    Env,
    /// `file = "<files>/deploy_key"`: passed to `ssh` by that path.
    File,
}

/// The directories of one run.
pub struct Scenario {
    /// `TMPDIR` of the gateway.
    pub tmp: tempfile::TempDir,
    /// The fake `ssh`, its pid file, the policy and the key file.
    pub files: tempfile::TempDir,
    /// The gateway's working directory.
    pub cwd: tempfile::TempDir,
    pub source: KeySource,
    /// The key text (a canary: nothing but the gateway and `ssh` may hold
    /// it).
    pub key: String,
}

impl Scenario {
    pub fn new(source: KeySource) -> Self {
        let tmp = tempfile::tempdir().expect("tmp");
        let files = tempfile::tempdir().expect("files");
        let cwd = tempfile::tempdir().expect("cwd");
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let key = format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\nportcullis-canary-key-{}-{nanos}\n-----END OPENSSH PRIVATE KEY-----",
            std::process::id()
        );
        let this = Self {
            tmp,
            files,
            cwd,
            source,
            key,
        };
        let ssh = this.files.path().join("bin/ssh");
        std::fs::create_dir(ssh.parent().expect("bin")).expect("bin dir");
        // The executor clears the environment: the pid file path is baked in.
        std::fs::write(
            &ssh,
            format!(
                "#!/bin/sh\necho $$ >> '{pids}'\nsleep 300 &\necho $! >> '{pids}'\nwait\n",
                pids = this.pid_file().display()
            ),
        )
        .expect("fake ssh");
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::write(this.key_file(), format!("{}\n", this.key)).expect("key file");
        std::fs::set_permissions(this.key_file(), std::fs::Permissions::from_mode(0o600))
            .expect("chmod key");
        std::fs::write(this.policy_path(), this.policy()).expect("policy");
        this
    }

    pub fn pid_file(&self) -> PathBuf {
        self.files.path().join("ssh.pids")
    }

    pub fn key_file(&self) -> PathBuf {
        self.files.path().join("deploy_key")
    }

    pub fn policy_path(&self) -> PathBuf {
        self.files.path().join("policy.toml")
    }

    /// One SSH tool whose call never ends by itself (10 min timeout).
    pub fn policy(&self) -> String {
        let credential = match self.source {
            KeySource::Env => "env = \"DEPLOY_KEY\"".to_owned(),
            KeySource::File => format!(
                "file = {}",
                portcullis_testkit::fakes::toml_string(&self.key_file().display().to_string())
            ),
        };
        format!(
            r#"[server]
name = "ssh-lifetime-test"
on_invalid = "close"
max_frame_bytes = 8192

[credentials.deploy_key]
{credential}

[[tools]]
name = "{TOOL}"
description = "Restart a service on the deploy host"
timeout_ms = 600000
[tools.ssh]
host = "127.0.0.1"
port = 22
user = "deploy"
argv = ["systemctl", "restart", "{{service}}"]
allow = ["127.0.0.1:22"]
credential = "deploy_key"
[tools.input_schema]
type = "object"
required = ["service"]
properties.service = {{ type = "string", pattern = "^[a-z]{{1,16}}$" }}
"#
        )
    }

    /// `portcullis mcp` with the fake `ssh` first on `PATH`, `TMPDIR` and
    /// the key as set up, and `--grace-ms grace_ms`.
    pub fn launch(&self, grace_ms: u64) -> Launch {
        let path = format!(
            "{}:{}",
            self.files.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
        );
        let mut launch = Launch::new(self.cwd.path(), &["mcp", "--policy"])
            .arg(self.policy_path())
            .args(&["--grace-ms", &grace_ms.to_string()])
            .env("PATH", &path)
            .env("TMPDIR", &self.tmp.path().display().to_string());
        if self.source == KeySource::Env {
            launch = launch.env("DEPLOY_KEY", &self.key);
        }
        launch
    }

    /// Start the gateway in a process group of its own.
    pub fn spawn(&self, grace_ms: u64) -> Gateway {
        let launch = self.launch(grace_ms);
        let mut command = launch.command();
        command.process_group(0);
        let mut tries = 0;
        let mut child = loop {
            match command.spawn() {
                Ok(child) => break child,
                Err(err) if err.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(err) => panic!("cannot launch {}: {err}", launch.describe()),
            }
        };
        let stdin = child.stdin.take();
        let stderr = Some(drain(child.stderr.take().expect("stderr")));
        Gateway {
            child,
            stdin,
            stderr,
            launch: launch.describe(),
        }
    }

    /// The fake client's pids once it has started (its own and its
    /// `sleep`'s), waiting at most `limit`.
    pub fn wait_for_client(&self, limit: Duration) -> Option<Vec<u32>> {
        let deadline = Instant::now() + limit;
        loop {
            let pids = self.client_pids();
            if pids.len() >= 2 {
                return Some(pids);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Every pid the fake client recorded so far.
    pub fn client_pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.pid_file())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// What survived: live processes among the client's pids and in the
    /// client's process groups, files under `TMPDIR` holding a line of the
    /// key, and private directories left in `TMPDIR`. Waits up to a second
    /// for killed processes to be gone.
    pub fn survivors(&self) -> Survivors {
        let pids = self.client_pids();
        let deadline = Instant::now() + Duration::from_secs(1);
        let live = loop {
            let mut live: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
            for &group in &pids {
                live.extend(live_in_group(group));
            }
            live.sort_unstable();
            live.dedup();
            if live.is_empty() || Instant::now() >= deadline {
                break live;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let secret_line = self.key.lines().nth(1).expect("key body").to_owned();
        let key_files = files_under(self.tmp.path())
            .into_iter()
            .filter(|f| {
                std::fs::read(f)
                    .map(|bytes| contains(&bytes, secret_line.as_bytes()))
                    .unwrap_or(false)
            })
            .collect();
        let private_dirs = std::fs::read_dir(self.tmp.path())
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("portcullis-ssh-"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Survivors {
            processes: live,
            key_files,
            private_dirs,
        }
    }
}

/// See [`Scenario::survivors`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Survivors {
    pub processes: Vec<u32>,
    pub key_files: Vec<PathBuf>,
    pub private_dirs: Vec<PathBuf>,
}

impl Survivors {
    pub fn none(&self) -> bool {
        *self == Self::default()
    }
}

/// A running gateway.
pub struct Gateway {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
    pub launch: String,
}

impl Gateway {
    pub fn write(&mut self, bytes: &[u8]) {
        if let Some(stdin) = &mut self.stdin {
            let _ = stdin.write_all(bytes);
            let _ = stdin.flush();
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("pid")
    }

    /// Send `signal` to the gateway process alone.
    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.pid()).expect("pid");
        rustix::process::kill_process(pid, signal).expect("kill");
    }

    /// Wait for the exit, at most `limit`; `None` when it did not exit.
    pub fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The gateway's stderr (after it exited).
    pub fn stderr(&mut self) -> String {
        self.stderr
            .take()
            .and_then(|h| h.join().ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for Gateway {
    /// A gateway still running when the test ends is killed with its
    /// process group (its id is reserved while the gateway lives). What an
    /// exited gateway left is for [`kill_leftovers`].
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None))
            && let Some(pgid) = rustix::process::Pid::from_raw(self.pid())
        {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        let _ = self.child.wait();
    }
}

/// Kill what a scenario's client left (by pid, never by group: a group id
/// could be the test runner's).
pub fn kill_leftovers(scenario: &Scenario) {
    for pid in scenario.client_pids() {
        if alive(pid)
            && let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap_or(0))
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// `/proc/<pid>/stat` fields after the command name: state, ppid, pgrp.
fn stat(pid: u32) -> Option<(String, u32, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = text.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.to_owned();
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// A live process (a zombie only waits to be reaped; it runs nothing).
pub fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _, _)| state != "Z" && state != "X")
}

/// Live processes whose process group is `pgid`.
pub fn live_in_group(pgid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|&pid| {
                    stat(pid).is_some_and(|(state, _, pgrp)| {
                        pgrp == pgid && state != "Z" && state != "X"
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => out.extend(files_under(&path)),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The binary under test, for failure messages.
pub fn binary_path() -> &'static Path {
    binary()
}

/// A frame that is not JSON (closes the session under `on_invalid = "close"`).
pub fn invalid_frame() -> Vec<u8> {
    b"this is not json\n".to_vec()
}

/// A `ping` request.
pub fn ping(id: i64) -> Vec<u8> {
    frame(&json!({ "jsonrpc": "2.0", "id": id, "method": "ping" }))
}
