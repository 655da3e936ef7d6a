//! `portcullis wrap` holds what a hostile upstream or client can make it
//! spend, as a process (`wrap_fixtures/hostile_upstream.py MODE`):
//!
//! - input schemas that are small as text and huge once compiled (counted
//!   repetitions in patterns, long names nested deep, wide objects, many
//!   tools each within the limits of one) are withheld before they are
//!   compiled, so the peak resident set stays within
//!   `4 × max_frame_bytes + 32 MiB` and the session keeps answering;
//! - a tool name as long as a frame reaches the audit journal and stderr
//!   only as a bounded prefix;
//! - a descendant of the upstream that leaves its process group (`setsid`)
//!   does not outlive the wrapper.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::{binary, drain, python, vm_hwm_kib, wait_limited};
use serde_json::{Value, json};

/// The frame cap of the schema test: every page is just under it.
const MAX_FRAME_BYTES: usize = 256 * 1024;
/// How long a `tools/list` page may take to be answered, and a ping after
/// the pages.
const PAGE_LIMIT: Duration = Duration::from_secs(20);
const PING_LIMIT: Duration = Duration::from_secs(5);
/// Address space the wrapper under test may map: a regression must fail
/// the test, not exhaust the machine that runs it.
const ADDRESS_SPACE_KIB: u64 = 2 * 1024 * 1024;

fn hostile_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wrap_fixtures/hostile_upstream.py")
}

/// A client talking to `portcullis wrap <options> -- hostile_upstream.py
/// MODE`, the wrapper's address space limited to [`ADDRESS_SPACE_KIB`].
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    describe: String,
}

impl Session {
    fn start(dir: &Path, options: &[&str], mode: &str, env: &[(&str, &str)]) -> Self {
        let python = python();
        let script = hostile_script();
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!(
                "ulimit -v {ADDRESS_SPACE_KIB} && exec \"$0\" \"$@\""
            ))
            .arg(binary())
            .arg("wrap")
            .args(options)
            .args([
                "--",
                python.to_str().unwrap(),
                script.to_str().unwrap(),
                mode,
            ])
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .envs(common::profile_env())
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let describe = format!("{command:?}");
        let mut child = command.spawn().expect("launch sh");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let stderr = drain(child.stderr.take().unwrap());
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value = serde_json::from_str(&line).unwrap_or(Value::Null);
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
            stderr: Some(stderr),
            describe,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        let _ = writeln!(stdin, "{message}");
        let _ = stdin.flush();
    }

    /// Send a request; its answer, within `limit`.
    fn request(&mut self, id: i64, method: &str, params: Value, limit: Duration) -> Value {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line["id"] == id && line.get("method").is_none() => return line,
                Ok(_) => {}
                Err(_) => panic!(
                    "no answer to {method} (id {id}) within {limit:?}: {}",
                    self.describe
                ),
            }
        }
    }

    fn handshake(&mut self) {
        let init = self.request(
            0,
            "initialize",
            json!({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}),
            PAGE_LIMIT,
        );
        assert!(init.get("result").is_some(), "{init}");
        self.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    }

    /// Close stdin, wait for the exit; the exit code and stderr.
    fn finish(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let status = wait_limited(&mut self.child, Duration::from_secs(30), &self.describe);
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (status.code(), String::from_utf8_lossy(&stderr).into_owned())
    }
}

fn journal(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a journal line is JSON"))
        .collect()
}

fn withheld_reasons(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["kind"] == "wrap_withheld")
        .map(|r| r["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Pages of input schemas that compile to hundreds of times their size —
/// two such pages drove the wrapper to 1.11 GB and seconds of CPU a page —
/// leave it within its memory bound and answering.
#[test]
fn schemas_that_compile_huge_are_withheld_and_memory_stays_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("wrap.toml");
    std::fs::write(
        &policy,
        format!("[server]\nname = \"r\"\nmax_frame_bytes = {MAX_FRAME_BYTES}\n"),
    )
    .unwrap();
    let audit = dir.path().join("audit.jsonl");
    let page_bytes = (MAX_FRAME_BYTES - 4096).to_string();
    let mut s = Session::start(
        dir.path(),
        &[
            "--log-level",
            "warn",
            "--policy",
            policy.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
        ],
        "schemas",
        &[("PAGES", "4"), ("PAGE_BYTES", &page_bytes)],
    );
    let pid = s.child.id();
    s.handshake();
    let mut cursor: Option<String> = None;
    let mut shown = Vec::new();
    for page in 0..4 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let answer = s.request(10 + page, "tools/list", params, PAGE_LIMIT);
        let result = &answer["result"];
        for tool in result["tools"].as_array().expect("a tools list") {
            shown.push(tool["name"].as_str().unwrap().to_owned());
        }
        cursor = result["nextCursor"].as_str().map(str::to_owned);
    }
    assert_eq!(cursor, None, "four pages were listed");
    let asked = Instant::now();
    let pong = s.request(20, "ping", json!({}), PING_LIMIT);
    assert!(pong.get("result").is_some(), "{pong}");
    let pong_after = asked.elapsed();
    let call = s.request(
        21,
        "tools/call",
        json!({"name":"echo","arguments":{"message":"still here"}}),
        PING_LIMIT,
    );
    assert_eq!(call["result"]["content"][0]["text"], "still here", "{call}");
    let peak_kib = vm_hwm_kib(pid).expect("VmHWM");
    let (code, stderr) = s.finish();
    assert_eq!(code, Some(0), "{stderr}");

    let bound_kib = (4 * MAX_FRAME_BYTES as u64 + 32 * 1024 * 1024) / 1024;
    eprintln!(
        "wrap peak RSS {peak_kib} KiB (bound {bound_kib} KiB); ping answered in {pong_after:?}; shown {shown:?}"
    );
    assert!(
        peak_kib <= bound_kib,
        "peak RSS {peak_kib} KiB exceeds {bound_kib} KiB"
    );
    let records = journal(&audit);
    let reasons = withheld_reasons(&records);
    for limit in [
        "is not a \"regex\"",
        "KiB compiled, past the limit of 8 MiB per tool",
        "nodes, past the limit of 4096 per tool",
        "the compiled tool schemas would pass their budget of 8704 KiB per session (8 MiB + 2 × max_frame_bytes)",
    ] {
        assert!(
            reasons.iter().any(|r| r.contains(limit)),
            "no tool withheld for {limit:?}: {:?}",
            reasons.iter().take(8).collect::<Vec<_>>()
        );
    }
    assert!(
        shown.iter().any(|n| n == "echo"),
        "an ordinary tool listed after the hostile ones is shown: {shown:?}"
    );
    assert!(
        shown.iter().all(|n| n == "echo" || n.starts_with("near3_")),
        "only the ordinary tool and tools within every limit are shown: {shown:?}"
    );
    assert!(
        !shown
            .iter()
            .any(|n| n.starts_with("regex") || n.starts_with("deep") || n.starts_with("wide")),
        "{shown:?}"
    );
}

/// A name as long as the client likes, or the upstream, is written to the
/// journal and to stderr as at most 128 bytes of it and its length.
#[test]
fn a_long_tool_name_reaches_the_journal_and_stderr_only_as_a_bounded_prefix() {
    const NAME_BYTES: usize = 500_000;
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let name_bytes = NAME_BYTES.to_string();
    let mut s = Session::start(
        dir.path(),
        &["--log-level", "info", "--audit", audit.to_str().unwrap()],
        "long-name",
        &[("NAME_BYTES", &name_bytes)],
    );
    s.handshake();
    let listed = s.request(1, "tools/list", json!({}), PAGE_LIMIT);
    let listed_names: Vec<usize> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().len())
        .collect();
    assert!(listed_names.contains(&NAME_BYTES), "{listed_names:?}");
    // A name no listing showed, with a control character in it.
    let unknown = format!("m\u{1b}[31m{}", "m".repeat(NAME_BYTES));
    let denied = s.request(
        2,
        "tools/call",
        json!({"name": unknown, "arguments": {}}),
        PAGE_LIMIT,
    );
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    let text = denied["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.len() < 1024, "the tool error is {} bytes", text.len());
    assert!(!text.contains('\u{1b}'), "{text}");
    // The upstream's long-named tool, with arguments its schema refuses.
    let listed_long = "n".repeat(NAME_BYTES);
    let refused = s.request(
        3,
        "tools/call",
        json!({"name": listed_long, "arguments": {"x": 1}}),
        PAGE_LIMIT,
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let (code, stderr) = s.finish();
    assert_eq!(code, Some(0), "{stderr}");

    let text = std::fs::read_to_string(&audit).unwrap();
    let records = journal(&audit);
    let kinds: Vec<&str> = records.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert!(kinds.contains(&"wrap_pinned"), "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "wrap_denied").count(),
        2,
        "{kinds:?}"
    );
    assert!(
        text.len() < 16 * 1024,
        "the journal is {} bytes for {} records",
        text.len(),
        records.len()
    );
    for record in &records {
        let line = record.to_string();
        assert!(line.len() < 2048, "a record of {} bytes", line.len());
        if let Some(tool) = record["tool"].as_str()
            && tool != "echo"
        {
            assert!(
                [NAME_BYTES, NAME_BYTES + 6].contains(&tool_len(tool)),
                "a long name is cut and says how long it was: {tool}"
            );
            assert!(tool.len() <= 128 + "…(500006 bytes)".len(), "{tool}");
        }
        assert!(!line.contains('\u{1b}'), "{line}");
    }
    assert!(
        records.iter().any(|r| r["tool"]
            .as_str()
            .is_some_and(|t| t.starts_with("m\\u{1b}[31m") && t.ends_with("…(500006 bytes)"))),
        "the denied name is shown escaped and cut: {records:?}"
    );
    assert!(
        stderr.len() < 64 * 1024,
        "stderr is {} bytes:\n{}",
        stderr.len(),
        &stderr[..stderr.len().min(2000)]
    );
    assert!(
        !stderr.contains(&"n".repeat(129)) && !stderr.contains(&"m".repeat(129)),
        "a tool name longer than its bounded prefix reached stderr"
    );
}

/// The whole length a bounded name says it cut, from its `…(N bytes)`.
fn tool_len(bounded: &str) -> usize {
    bounded
        .rsplit_once("…(")
        .and_then(|(_, n)| n.strip_suffix(" bytes)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Whether `pid` is a live process (a zombie is not: it only waits to be
/// reaped).
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|end| stat[end + 1..].split_whitespace().next());
    state != Some("Z")
}

/// A grandchild that calls `setsid` (a session and process group of its
/// own, out of the upstream's group) and ignores SIGTERM is gone once the
/// client's input ended and the wrapper exited.
#[test]
fn a_grandchild_that_leaves_the_process_group_does_not_outlive_the_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let mut s = Session::start(
        dir.path(),
        &["--log-level", "info", "--grace-ms", "500"],
        "setsid",
        &[("GRANDCHILD_PID_FILE", pid_file.to_str().unwrap())],
    );
    s.handshake();
    let deadline = Instant::now() + PAGE_LIMIT;
    let grandchild: i32 = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file) {
            break text.trim().parse().expect("a pid");
        }
        assert!(Instant::now() < deadline, "the grandchild never started");
        thread::sleep(Duration::from_millis(20));
    };
    assert!(
        alive(grandchild),
        "the grandchild runs while the session does"
    );
    let (code, stderr) = s.finish();
    assert_eq!(code, Some(0), "{stderr}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(grandchild) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    let outlived = alive(grandchild);
    if outlived {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(grandchild).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
    assert!(
        !outlived,
        "grandchild {grandchild} outlived the wrapper:\n{stderr}"
    );
}
