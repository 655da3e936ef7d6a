//! Shared helpers for the process-level tests: run the built `portcullis`
//! binary the way a user would (a copy in its own directory, that directory
//! as the working directory, an environment holding only `PATH` plus what
//! the test adds), the HTTP test policy, hostile inputs (`hostile`) and the
//! stdout oracle. The fake services are `portcullis_testkit::fakes`.

#![expect(
    dead_code,
    reason = "each test binary that includes this module uses only some of its helpers"
)]

pub mod docs;
pub mod hostile;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use portcullis_wire::check_transcript;
use serde_json::{Value, json};

/// The Python interpreter that runs the fixture servers.
pub fn python() -> PathBuf {
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// The variables an instrumented build reads to write its coverage profile
/// (`LLVM_PROFILE_FILE` and the rest cargo-llvm-cov sets when `cargo xtask
/// coverage` runs these tests): a child's environment is cleared, and
/// without them the binary's own lines would never be counted. An ordinary
/// run has none of them.
pub fn profile_env() -> impl Iterator<Item = (OsString, OsString)> {
    std::env::vars_os().filter(|(name, _)| {
        let name = name.to_string_lossy();
        name.starts_with("LLVM_PROFILE_") || name.starts_with("CARGO_LLVM_COV")
    })
}

/// The binary cargo built for this test run.
const BUILT: &str = env!("CARGO_BIN_EXE_portcullis");

/// How long any one launch may run before the test kills it.
pub const LAUNCH_LIMIT: Duration = Duration::from_secs(30);

/// A copy of the binary under test in a directory of its own (one per test
/// binary, replaced atomically on every run). The binary is the one cargo
/// built for this test run, or `$PORTCULLIS_BIN` when set (so CI can run
/// these tests against a release build without building it twice).
pub fn binary() -> &'static Path {
    static COPY: OnceLock<PathBuf> = OnceLock::new();
    COPY.get_or_init(|| {
        let source = std::env::var_os("PORTCULLIS_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(BUILT));
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("{}-bin", env!("CARGO_CRATE_NAME")));
        std::fs::create_dir_all(&dir).expect("create the binary directory");
        let partial = dir.join(format!("portcullis.{}.partial", std::process::id()));
        std::fs::copy(&source, &partial)
            .unwrap_or_else(|e| panic!("copy {}: {e}", source.display()));
        let dest = dir.join("portcullis");
        std::fs::rename(&partial, &dest).expect("install the binary copy");
        dest
    })
}

/// The workspace's `examples/` directory.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// One step of what the test feeds to the child's stdin.
#[derive(Debug, Clone)]
pub enum Step {
    /// Write these bytes.
    Write(Vec<u8>),
    /// Wait.
    Sleep(Duration),
}

/// How to launch the binary.
#[derive(Debug, Clone)]
pub struct Launch {
    pub args: Vec<OsString>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

/// What a launch produced.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub launch: String,
    pub elapsed: Duration,
}

impl Launch {
    /// `portcullis <args>` run from `cwd` with only `PATH` (and the
    /// coverage profile variables, when set) set.
    pub fn new(cwd: &Path, args: &[&str]) -> Self {
        Self {
            args: args.iter().map(OsString::from).collect(),
            env: Vec::new(),
            cwd: cwd.to_owned(),
        }
    }

    /// Add an environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Add arguments.
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(OsString::from));
        self
    }

    /// Add one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// The command, for failure messages.
    pub fn describe(&self) -> String {
        let mut text = format!("cd {:?} && env -i PATH=\"$PATH\"", self.cwd);
        for (k, v) in &self.env {
            let _ = write!(text, " {k}={v:?}");
        }
        let _ = write!(text, " {}", binary().display());
        for arg in &self.args {
            let _ = write!(text, " {arg:?}");
        }
        text
    }

    /// The configured command, stdio piped.
    pub fn command(&self) -> Command {
        let mut command = Command::new(binary());
        command
            .args(&self.args)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .envs(profile_env())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// Start the child, retrying while the binary copy is still "busy"
    /// (another thread's fork may briefly hold the copy's write handle).
    pub fn spawn(&self) -> Child {
        let mut tries = 0;
        loop {
            match self.command().spawn() {
                Ok(child) => return child,
                Err(err) if err.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                    tries += 1;
                    thread::sleep(Duration::from_millis(20));
                }
                Err(err) => panic!("cannot launch {}: {err}", self.describe()),
            }
        }
    }

    /// Feed `stdin` at once, close it, and wait.
    pub fn run(&self, stdin: &[u8]) -> Run {
        self.run_steps(vec![Step::Write(stdin.to_vec())])
    }

    /// Feed `steps`, close stdin, and wait (at most [`LAUNCH_LIMIT`]).
    pub fn run_steps(&self, steps: Vec<Step>) -> Run {
        let started = Instant::now();
        let mut child = self.spawn();
        let mut stdin = child.stdin.take().expect("stdin");
        let feeder = thread::spawn(move || {
            for step in steps {
                match step {
                    // The child may exit early (closed session); a broken
                    // pipe is expected then.
                    Step::Write(bytes) => {
                        if stdin.write_all(&bytes).is_err() {
                            return;
                        }
                    }
                    Step::Sleep(d) => thread::sleep(d),
                }
            }
        });
        let stdout = drain(child.stdout.take().expect("stdout"));
        let stderr = drain(child.stderr.take().expect("stderr"));
        let status = wait_limited(&mut child, LAUNCH_LIMIT, &self.describe());
        let _ = feeder.join();
        Run {
            status,
            stdout: stdout.join().expect("stdout reader"),
            stderr: stderr.join().expect("stderr reader"),
            launch: self.describe(),
            elapsed: started.elapsed(),
        }
    }
}

/// A process's peak resident set (`VmHWM`) in KiB, while it runs; `None`
/// once it has gone.
pub fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Read a pipe to its end on a thread.
pub fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// Wait for `child`, killing it after `limit`.
pub fn wait_limited(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("killed after {limit:?}: {what}");
        }
        thread::sleep(Duration::from_millis(5));
    }
}

impl Run {
    /// The exit code (None when killed by a signal).
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// Context for a failed assertion.
    pub fn context(&self) -> String {
        let stderr = self.stderr_text();
        let tail: String = {
            let start = stderr.len().saturating_sub(4000);
            let start = (start..stderr.len())
                .find(|i| stderr.is_char_boundary(*i))
                .unwrap_or(stderr.len());
            stderr[start..].to_owned()
        };
        format!(
            "launch: {}\nexit: {:?}\nstdout: {}\nstderr (tail):\n{tail}",
            self.launch,
            self.status,
            portcullis_wire::transcript::render_bytes(&self.stdout)
        )
    }

    /// Assert the exit code.
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code(),
            Some(code),
            "unexpected exit status\n{}",
            self.context()
        );
        self
    }

    /// Check stdout byte by byte with the transcript oracle; returns the
    /// number of frames.
    pub fn assert_clean_stdout(&self) -> usize {
        match check_transcript(&self.stdout) {
            Ok(n) => n,
            Err(violation) => panic!("{violation}\n{}", self.context()),
        }
    }

    /// Stdout frames as JSON (after checking them).
    pub fn frames(&self) -> Vec<Value> {
        self.assert_clean_stdout();
        self.stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("checked frames are JSON"))
            .collect()
    }

    /// The frame answering request `id`.
    pub fn answer(&self, id: i64) -> Option<Value> {
        self.frames().into_iter().find(|f| f["id"] == json!(id))
    }

    /// The text of the tool result answering `id`, and its `isError`.
    pub fn tool_result(&self, id: i64) -> (String, bool) {
        let frame = self
            .answer(id)
            .unwrap_or_else(|| panic!("no answer for id {id}\n{}", self.context()));
        let result = &frame["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| {
                panic!(
                    "answer for id {id} is not a tool result: {frame}\n{}",
                    self.context()
                )
            })
            .to_owned();
        (text, result["isError"].as_bool().unwrap_or(false))
    }
}

// ---------------------------------------------------------------------------
// Frames

// The frame builders are testkit's, shared with the in-process tests.
pub use portcullis_testkit::fixtures::{call, frame, legacy_handshake as handshake};

/// The handshake followed by `rest`.
pub fn session(rest: &[&[u8]]) -> Vec<u8> {
    let mut bytes = handshake();
    for part in rest {
        bytes.extend_from_slice(part);
    }
    bytes
}

/// The HTTP test policy: every tool points at `port`.
pub fn http_policy(port: u16) -> String {
    let schema = r#"[tools.input_schema]
type = "object"
required = ["service"]
additionalProperties = false
properties.service = { type = "string", pattern = "^[a-z][a-z0-9-]{0,31}$" }
"#;
    let mut text = String::from(
        r#"[server]
name = "process-test"
on_invalid = "close"
max_frame_bytes = 8192

[credentials.status_token]
env = "TEST_TOKEN"
"#,
    );
    for (name, path, timeout) in [
        ("service_status", "status", 5000),
        ("restart_service", "restart", 5000),
        ("slow_status", "slow", 5000),
        ("panic_tool", "panic", 5000),
        ("hang_tool", "hang", 200),
    ] {
        let _ = write!(
            text,
            r#"
[[tools]]
name = "{name}"
timeout_ms = {timeout}
[tools.http]
method = "GET"
url = "http://127.0.0.1:{port}/{path}/{{service}}"
allow = ["127.0.0.1:{port}"]
credential = "status_token"
{schema}"#
        );
    }
    let _ = write!(
        text,
        r#"
[[tools]]
name = "region_probe"
description = "Probe a host by name; only 127.0.0.1 is allowed"
[tools.http]
method = "GET"
url = "http://{{host}}:{port}/probe"
allow = ["127.0.0.1:{port}"]
[tools.input_schema]
type = "object"
required = ["host"]
additionalProperties = false
properties.host = {{ type = "string", maxLength = 64 }}
"#
    );
    text
}

/// A working directory with nothing in it, and a separate directory
/// holding the policy (and any other files a test needs).
pub struct Fixture {
    pub cwd: tempfile::TempDir,
    pub files: tempfile::TempDir,
    pub policy: std::path::PathBuf,
}

impl Fixture {
    /// Run a report subcommand (`policy`, `audit`, ...) with empty stdin.
    pub fn run(&self, args: &[&str]) -> Run {
        Launch::new(self.cwd.path(), args).run(b"")
    }

    pub fn new(policy_text: &str) -> Self {
        let cwd = tempfile::tempdir().expect("cwd");
        let files = tempfile::tempdir().expect("files");
        let policy = files.path().join("policy.toml");
        std::fs::write(&policy, policy_text).expect("write policy");
        Self { cwd, files, policy }
    }

    pub fn file(&self, name: &str) -> std::path::PathBuf {
        self.files.path().join(name)
    }
}

/// A run's stdout as text.
pub fn stdout_text(run: &Run) -> String {
    String::from_utf8(run.stdout.clone()).expect("utf-8 stdout")
}
