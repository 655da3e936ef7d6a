//! Launch the server under test the way a client does (stdin, stdout and
//! stderr as three separate pipes), feed it, and capture its raw stdout
//! with arrival times. Every wait is bounded.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How to start the server.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Variables set on top of the inherited environment.
    pub env: Vec<(String, OsString)>,
    pub cwd: Option<PathBuf>,
}

impl Launch {
    /// The command line, for reports.
    pub fn describe(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| {
                let a = a.to_string_lossy();
                if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '"') {
                    format!("{a:?}")
                } else {
                    a.into_owned()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// stdout as captured: the bytes, and when each chunk arrived.
#[derive(Debug, Default)]
pub struct Capture {
    pub bytes: Vec<u8>,
    /// (milliseconds since launch, offset of the chunk's first byte).
    pub chunks: Vec<(u128, usize)>,
    pub eof: bool,
    /// More than [`MAX_CAPTURE`] bytes arrived; the rest was dropped.
    pub truncated: bool,
}

/// stdout kept per run: far beyond any test script's answers.
pub const MAX_CAPTURE: usize = 64 * 1024 * 1024;

impl Capture {
    /// Milliseconds since launch at which the byte at `offset` arrived.
    pub fn arrival_ms(&self, offset: usize) -> u128 {
        self.chunks
            .iter()
            .take_while(|(_, start)| *start <= offset)
            .last()
            .map_or(0, |(t, _)| *t)
    }
}

type Shared = Arc<(Mutex<Capture>, Condvar)>;

/// A running server.
#[derive(Debug)]
pub struct Session {
    child: Child,
    stdin: Option<mpsc::Sender<Vec<u8>>>,
    stdin_broken: Arc<AtomicBool>,
    started: Instant,
    stdout: Shared,
    stdout_thread: Option<JoinHandle<()>>,
    stderr_thread: Option<JoinHandle<Vec<u8>>>,
}

/// What waiting for a response found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Answered,
    /// stdout ended first.
    Closed,
    /// Nothing within the limit.
    TimedOut,
}

/// How the session ended.
#[derive(Debug)]
pub struct Ended {
    pub stdout: Capture,
    pub stderr: Vec<u8>,
    /// `None` when the process had to be killed.
    pub status: Option<ExitStatus>,
}

impl Session {
    /// Start the server; an error here means the command cannot be launched.
    pub fn start(launch: &Launch) -> std::io::Result<Self> {
        let mut command = Command::new(&launch.program);
        command
            .args(&launch.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &launch.env {
            command.env(key, value);
        }
        if let Some(cwd) = &launch.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn()?;
        let started = Instant::now();
        let mut pipe = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin pipe"))?;
        // Writes go through a thread of their own: a server that stops
        // reading would otherwise block the checker on a full pipe.
        let (stdin, queue) = mpsc::channel::<Vec<u8>>();
        let stdin_broken = Arc::new(AtomicBool::new(false));
        let broken = Arc::clone(&stdin_broken);
        thread::spawn(move || {
            for bytes in queue {
                if pipe.write_all(&bytes).and_then(|()| pipe.flush()).is_err() {
                    broken.store(true, Ordering::SeqCst);
                    return;
                }
            }
        });
        let mut out = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout pipe"))?;
        let mut err = child
            .stderr
            .take()
            .ok_or_else(|| std::io::Error::other("no stderr pipe"))?;
        let shared: Shared = Arc::default();
        let sink = Arc::clone(&shared);
        let stdout_thread = thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = out.read(&mut buf).unwrap_or(0);
                let (lock, cvar) = &*sink;
                let mut cap = lock.lock().unwrap_or_else(|e| e.into_inner());
                if n == 0 {
                    cap.eof = true;
                    cvar.notify_all();
                    return;
                }
                let at = cap.bytes.len();
                if at >= MAX_CAPTURE {
                    // Keep draining so the server never blocks on a full
                    // pipe, but stop holding what it writes.
                    cap.truncated = true;
                    continue;
                }
                cap.chunks.push((started.elapsed().as_millis(), at));
                cap.bytes.extend_from_slice(&buf[..n]);
                cvar.notify_all();
            }
        });
        let stderr_thread = thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = err.read_to_end(&mut bytes);
            bytes
        });
        Ok(Self {
            child,
            stdin: Some(stdin),
            stdin_broken,
            started,
            stdout: shared,
            stdout_thread: Some(stdout_thread),
            stderr_thread: Some(stderr_thread),
        })
    }

    /// Milliseconds since launch.
    pub fn elapsed_ms(&self) -> u128 {
        self.started.elapsed().as_millis()
    }

    /// Write bytes to stdin. False when the server no longer reads them.
    pub fn send(&mut self, bytes: &[u8]) -> bool {
        if self.stdin_broken.load(Ordering::SeqCst) {
            self.stdin = None;
        }
        let Some(stdin) = self.stdin.as_ref() else {
            return false;
        };
        if stdin.send(bytes.to_vec()).is_err() {
            self.stdin = None;
            return false;
        }
        true
    }

    /// Wait until stdout holds a complete line answering `id` (JSON text),
    /// stdout ends, or `limit` passes.
    pub fn wait_for_answer(&self, id: &str, limit: Duration) -> Answer {
        let deadline = Instant::now() + limit;
        let (lock, cvar) = &*self.stdout;
        let mut cap = lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut scanned = 0;
        loop {
            while let Some(end) = cap.bytes[scanned..].iter().position(|&b| b == b'\n') {
                let line = &cap.bytes[scanned..scanned + end];
                scanned += end + 1;
                if answers(line, id) {
                    return Answer::Answered;
                }
            }
            if cap.eof {
                return Answer::Closed;
            }
            let now = Instant::now();
            if now >= deadline {
                return Answer::TimedOut;
            }
            cap = cvar
                .wait_timeout(cap, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Bytes of stdout so far.
    pub fn stdout_len(&self) -> usize {
        let (lock, _) = &*self.stdout;
        lock.lock().unwrap_or_else(|e| e.into_inner()).bytes.len()
    }

    /// Close stdin, wait at most `limit` for the process to exit (killing it
    /// after that) and collect everything it wrote.
    pub fn finish(mut self, limit: Duration) -> Ended {
        self.stdin = None;
        let deadline = Instant::now() + limit;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        // A grandchild may still hold the pipes open; don't wait on it forever.
        let stdout = self.take_stdout(Duration::from_secs(2));
        let stderr = match self.stderr_thread.take() {
            Some(t) if wait_joinable(&t, Duration::from_secs(2)) => t.join().unwrap_or_default(),
            _ => Vec::new(),
        };
        Ended {
            stdout,
            stderr,
            status,
        }
    }

    fn take_stdout(&mut self, limit: Duration) -> Capture {
        if let Some(t) = self.stdout_thread.take()
            && wait_joinable(&t, limit)
        {
            let _ = t.join();
        }
        let (lock, _) = &*self.stdout;
        std::mem::take(&mut *lock.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn wait_joinable<T>(handle: &JoinHandle<T>, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while !handle.is_finished() {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(2));
    }
    true
}

/// Whether a stdout line is a response (or error) for `id`.
fn answers(line: &[u8], id: &str) -> bool {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
        return false;
    };
    !message.contains_key("method")
        && message
            .get("id")
            .and_then(|v| serde_json::to_string(v).ok())
            .is_some_and(|text| text == id)
}
