//! Launch the server under test the way a client does (stdin, stdout and
//! stderr as three separate pipes), feed it, and capture its raw stdout
//! with arrival times, and its stderr's head and tail. Every wait and
//! every capture is bounded; both pipes are drained to the end, so the
//! server never blocks on a full pipe.

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

/// stderr kept from its start: the startup logs and the first error.
pub const STDERR_HEAD: usize = 1024 * 1024;
/// stderr kept from its end: where a runtime prints the report of the
/// crash that ended the process.
pub const STDERR_TAIL: usize = 1024 * 1024;

/// stderr as captured: its first [`STDERR_HEAD`] bytes and its last
/// [`STDERR_TAIL`] bytes. A server may log without limit, and its logs
/// are evidence, never judged for framing, so the middle of a flood is
/// counted and dropped.
#[derive(Debug, Default)]
pub struct StderrCapture {
    head: Vec<u8>,
    /// The bytes after the head; only its last [`STDERR_TAIL`] count (it
    /// is trimmed when it reaches twice that, so trimming stays cheap).
    tail: Vec<u8>,
    /// Every byte the server wrote to stderr.
    total: u64,
}

impl StderrCapture {
    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = STDERR_HEAD.saturating_sub(self.head.len()).min(bytes.len());
        let (head, rest) = bytes.split_at(room);
        self.head.extend_from_slice(head);
        self.tail.extend_from_slice(rest);
        if self.tail.len() >= 2 * STDERR_TAIL {
            self.tail.drain(..self.tail.len() - STDERR_TAIL);
        }
    }

    /// The first bytes, up to [`STDERR_HEAD`].
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The last bytes after the head, up to [`STDERR_TAIL`].
    pub fn tail(&self) -> &[u8] {
        &self.tail[self.tail.len().saturating_sub(STDERR_TAIL)..]
    }

    /// How many bytes the server wrote to stderr in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// How many bytes between the head and the tail were not kept.
    pub fn dropped(&self) -> u64 {
        self.total - (self.head.len() + self.tail().len()) as u64
    }

    /// The stretches of stderr kept, each contiguous as written: one when
    /// nothing was dropped, else the head and the tail. Text searched for
    /// must be searched in each, never across the cut.
    pub fn kept(&self) -> Vec<Vec<u8>> {
        if self.dropped() == 0 {
            vec![[self.head(), self.tail()].concat()]
        } else {
            vec![self.head.clone(), self.tail().to_vec()]
        }
    }
}

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
type SharedStderr = Arc<Mutex<StderrCapture>>;

/// A running server.
#[derive(Debug)]
pub struct Session {
    child: Child,
    stdin: Option<mpsc::Sender<Vec<u8>>>,
    stdin_broken: Arc<AtomicBool>,
    started: Instant,
    stdout: Shared,
    stdout_thread: Option<JoinHandle<()>>,
    stderr: SharedStderr,
    stderr_thread: Option<JoinHandle<()>>,
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
    pub stderr: StderrCapture,
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
                // Chunks of the same millisecond share one entry: the
                // arrival time of every byte is the same, and a server
                // writing a byte at a time cannot grow the list past one
                // entry per millisecond.
                let ms = started.elapsed().as_millis();
                if cap.chunks.last().is_none_or(|(last, _)| *last != ms) {
                    cap.chunks.push((ms, at));
                }
                cap.bytes.extend_from_slice(&buf[..n]);
                cvar.notify_all();
            }
        });
        let stderr: SharedStderr = Arc::default();
        let log = Arc::clone(&stderr);
        let stderr_thread = thread::spawn(move || {
            // Read to the end whatever is kept: a server blocked on a
            // full stderr pipe would stop answering.
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match err.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => log
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return,
                }
            }
        });
        Ok(Self {
            child,
            stdin: Some(stdin),
            stdin_broken,
            started,
            stdout: shared,
            stdout_thread: Some(stdout_thread),
            stderr,
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
        if let Some(t) = self.stderr_thread.take()
            && wait_joinable(&t, Duration::from_secs(2))
        {
            let _ = t.join();
        }
        // What arrived so far, even when a grandchild still writes.
        let stderr = std::mem::take(&mut *self.stderr.lock().unwrap_or_else(|e| e.into_inner()));
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
