//! `portcullis wrap --audit` as a process (issue 29), in front of the fake
//! upstream (`wrap_fixtures/upstream.py MODE`, which logs every line it
//! receives to stderr as `recv: LINE`): every forwarded `tools/call` has
//! its intent (synced before forwarding) and exactly one outcome, in a
//! chain of `seq`/`prev` (and `mac` under `--audit-key-env`) checked here
//! independently of the writer and accepted by `portcullis audit verify`;
//! a journal that cannot be written, from the start or mid-session, denies
//! every call and forwards none; a flood of blank upstream lines leaves a
//! journal and a stderr of a few records.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ExitStatus};
use std::sync::mpsc::{self, Receiver};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::{Launch, drain, python, wait_limited};
use hmac::{Hmac, Mac as _};
use portcullis_wire::check_transcript;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// How long a client waits for one answer (the flood takes seconds in a
/// debug build).
const ANSWER_LIMIT: Duration = Duration::from_secs(60);
/// The key of the keyed runs (32 bytes).
const KEY: &str = "0123456789abcdef0123456789abcdef";

fn upstream_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wrap_fixtures/upstream.py")
}

/// A client talking to `portcullis wrap <options> -- upstream.py MODE`.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    stdout: Vec<u8>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    describe: String,
}

struct Ended {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
    elapsed: Duration,
}

impl Client {
    fn start(dir: &Path, options: &[&str], mode: &str, env: &[(&str, &str)]) -> Self {
        let python = python();
        let script = upstream_script();
        let mut launch = Launch::new(dir, &["wrap", "--log-level", "info"])
            .args(options)
            .args(&[
                "--",
                python.to_str().unwrap(),
                script.to_str().unwrap(),
                mode,
            ]);
        for (k, v) in env {
            launch = launch.env(k, v);
        }
        let mut child = launch.spawn();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let stderr = drain(child.stderr.take().unwrap());
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
            stdout: Vec::new(),
            stderr: Some(stderr),
            describe: launch.describe(),
        }
    }

    fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        let line = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
        self.send(&line);
        let deadline = Instant::now() + ANSWER_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer for {id} from {}", self.describe));
            self.stdout.extend_from_slice(&line);
            let value: Value = serde_json::from_slice(&line).expect("stdout lines are JSON");
            if value.get("id") == Some(&id) && value.get("method").is_none() {
                return value;
            }
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        let _ = stdin.write_all(format!("{message}\n").as_bytes());
        let _ = stdin.flush();
    }

    /// initialize, initialized and tools/list (the upstream's `echo`).
    fn ready(&mut self) {
        let init = self.request(
            json!(0),
            "initialize",
            json!({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}),
        );
        assert_eq!(
            init["result"]["serverInfo"]["name"], "fake-upstream",
            "{init}"
        );
        self.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        let list = self.request(json!("list"), "tools/list", json!({}));
        assert_eq!(list["result"]["tools"][0]["name"], "echo", "{list}");
    }

    fn call(&mut self, id: i64, message: &str) -> Value {
        self.request(
            json!(id),
            "tools/call",
            json!({"name":"echo","arguments":{"message":message}}),
        )
    }

    fn end(mut self) -> Ended {
        let started = Instant::now();
        drop(self.stdin.take());
        let status = wait_limited(&mut self.child, Duration::from_secs(60), &self.describe);
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.stdout.extend_from_slice(&line);
        }
        let stderr =
            String::from_utf8_lossy(&self.stderr.take().unwrap().join().unwrap()).into_owned();
        if let Err(v) = check_transcript(&self.stdout) {
            panic!("{v}\nstderr:\n{stderr}");
        }
        Ended {
            status,
            stdout: self.stdout,
            stderr,
            elapsed: started.elapsed(),
        }
    }
}

impl Ended {
    /// The `tools/call` requests that reached the upstream.
    fn calls_upstream(&self) -> Vec<Value> {
        self.stderr
            .lines()
            .filter_map(|l| l.strip_prefix("recv: "))
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|m| m["method"] == "tools/call")
            .collect()
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The journal's lines, each with its record.
fn journal(path: &Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| (l.to_owned(), serde_json::from_str(l).unwrap()))
        .collect()
}

/// One session's chain, checked from the spec alone: `seq` counts from 0,
/// `prev` is the SHA-256 of the previous line (64 zeros first), members
/// after the chain's are sorted by name, `session_end` is last and holds
/// the count and the last hash; under `key` every line ends with the
/// HMAC-SHA-256 of the line without its `mac` member, and without a key no
/// line has one.
fn assert_chain(lines: &[(String, Value)], key: Option<&[u8]>) {
    let mut prev = "0".repeat(64);
    let session = &lines[0].1["session"];
    for (seq, (line, record)) in lines.iter().enumerate() {
        assert_eq!(&record["session"], session, "one session: {line}");
        assert_eq!(record["seq"], seq, "{line}");
        assert_eq!(record["prev"], prev.as_str(), "{line}");
        let mut names = member_names(line);
        assert_eq!(
            names.drain(..5).collect::<Vec<_>>(),
            ["kind", "time", "session", "seq", "prev"],
            "{line}"
        );
        match key {
            Some(key) => {
                assert_eq!(names.pop().as_deref(), Some("mac"), "{line}");
                let (without, mac) = line
                    .rsplit_once(",\"mac\":\"")
                    .unwrap_or_else(|| panic!("no mac: {line}"));
                let mac = mac.strip_suffix("\"}").expect("mac is the last member");
                let mut expected = Hmac::<Sha256>::new_from_slice(key).unwrap();
                expected.update(format!("{without}}}").as_bytes());
                assert_eq!(mac, hex::encode(expected.finalize().into_bytes()), "{line}");
            }
            None => assert!(record.get("mac").is_none(), "{line}"),
        }
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "the kind's members by name: {line}");
        prev = sha256_hex(line.as_bytes());
    }
    let (_, first) = &lines[0];
    assert_eq!(first["kind"], "session_start");
    assert_eq!(first["command"], "wrap");
    assert_eq!(first["keyed"], key.is_some());
    let (last_line, last) = lines.last().unwrap();
    assert_eq!(last["kind"], "session_end", "{last_line}");
    assert_eq!(last["records"], lines.len() - 1);
    assert_eq!(last["last"], last["prev"]);
}

/// The names of a line's members, in the order written.
fn member_names(line: &str) -> Vec<String> {
    struct Names(Vec<String>);
    impl<'de> serde::Deserialize<'de> for Names {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_map(Names(Vec::new()))
        }
    }
    impl<'de> serde::de::Visitor<'de> for Names {
        type Value = Names;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            mut self,
            mut map: A,
        ) -> Result<Names, A::Error> {
            while let Some((name, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                self.0.push(name);
            }
            Ok(self)
        }
    }
    serde_json::from_str::<Names>(line).unwrap().0
}

/// `portcullis audit verify` accepts the journal (under `key_env` when
/// keyed).
fn assert_verifies(dir: &Path, journal: &Path, key_env: Option<&str>) {
    let mut launch = Launch::new(dir, &["audit", "verify"]).arg(journal);
    if let Some(name) = key_env {
        launch = launch.args(&["--key-env", name]).env(name, KEY);
    }
    let run = launch.run(b"");
    assert_eq!(run.code(), Some(0), "{}", run.context());
}

fn denial() -> Value {
    json!({"content":[{"type":"text","text":"denied: audit journal unavailable"}],"isError":true})
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn a_wrap_journal_holds_an_intent_for_each_forwarded_call_and_one_outcome_after_it() {
    let dir = tempdir();
    let audit = dir.path().join("audit.jsonl");
    let mut c = Client::start(
        dir.path(),
        &["--audit", audit.to_str().unwrap()],
        "good",
        &[],
    );
    c.ready();
    for (id, message) in [(1, "hi"), (2, "there")] {
        let reply = c.call(id, message);
        assert_eq!(reply["result"]["content"][0]["text"], message, "{reply}");
    }
    let ended = c.end();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    let lines = journal(&audit);
    assert_chain(&lines, None);
    let records: Vec<&Value> = lines.iter().map(|(_, r)| r).collect();
    let calls = ended.calls_upstream();
    assert_eq!(calls.len(), 2);
    for (call, message) in calls.iter().zip(["hi", "there"]) {
        let id = &call["id"];
        let intent = records
            .iter()
            .position(|r| r["kind"] == "wrap_intent" && r["call"] == *id)
            .unwrap_or_else(|| panic!("no intent for call {id}: {records:?}"));
        let arguments = format!(r#"{{"message":"{message}"}}"#);
        assert_eq!(records[intent]["tool"], "echo");
        assert_eq!(
            records[intent]["arguments_sha256"],
            sha256_hex(arguments.as_bytes())
        );
        assert_eq!(records[intent]["timeout_ms"], 60_000);
        assert!(
            records[intent]["line"].as_u64().unwrap() >= 4,
            "{}",
            records[intent]
        );
        let outcomes: Vec<usize> = records
            .iter()
            .enumerate()
            .filter(|(_, r)| r["kind"] == "wrap_outcome" && r["call"] == *id)
            .map(|(at, _)| at)
            .collect();
        assert_eq!(outcomes.len(), 1, "one outcome for call {id}: {records:?}");
        assert!(outcomes[0] > intent, "the outcome after its intent");
        let outcome = records[outcomes[0]];
        assert_eq!(
            (
                &outcome["is_error"],
                &outcome["answered_by"],
                &outcome["cancelled"],
                &outcome["timed_out"]
            ),
            (
                &json!(false),
                &json!("upstream"),
                &json!(false),
                &json!(false)
            ),
            "{outcome}"
        );
        assert!(outcome["elapsed_ms"].is_u64(), "{outcome}");
    }
    assert_eq!(
        records.last().unwrap()["forwarded"],
        json!({"initialize":1,"tools/list":1,"tools/call":2})
    );
    assert_verifies(dir.path(), &audit, None);
}

#[test]
fn a_keyed_wrap_journal_carries_a_mac_under_the_key_on_every_record() {
    let dir = tempdir();
    let audit = dir.path().join("audit.jsonl");
    let mut c = Client::start(
        dir.path(),
        &[
            "--audit",
            audit.to_str().unwrap(),
            "--audit-key-env",
            "WRAP_AUDIT_KEY",
        ],
        "good",
        &[("WRAP_AUDIT_KEY", KEY)],
    );
    c.ready();
    c.call(1, "hi");
    let ended = c.end();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert!(!ended.stderr.contains(KEY), "the key never reaches a log");
    let lines = journal(&audit);
    assert!(lines.iter().any(|(_, r)| r["kind"] == "wrap_intent"));
    assert_chain(&lines, Some(KEY.as_bytes()));
    assert_verifies(dir.path(), &audit, Some("WRAP_AUDIT_KEY"));
}

#[test]
fn an_audit_key_that_is_unset_short_or_without_a_journal_is_a_startup_error() {
    let dir = tempdir();
    let audit = dir.path().join("audit.jsonl");
    let audit = audit.to_str().unwrap();
    let python = python();
    let script = upstream_script();
    let upstream = [
        "--",
        python.to_str().unwrap(),
        script.to_str().unwrap(),
        "good",
    ];
    let cases: [(&[&str], Option<&str>, &str); 3] = [
        (
            &["--audit", audit, "--audit-key-env", "NO_SUCH_KEY"],
            None,
            "NO_SUCH_KEY",
        ),
        (
            &["--audit", audit, "--audit-key-env", "SHORT_KEY"],
            Some("short"),
            "SHORT_KEY",
        ),
        (&["--audit-key-env", "SHORT_KEY"], Some(KEY), "--audit"),
    ];
    for (options, value, named) in cases {
        let mut launch = Launch::new(dir.path(), &["wrap"])
            .args(options)
            .args(&upstream);
        if let Some(value) = value {
            launch = launch.env("SHORT_KEY", value);
        }
        let run = launch.run(b"");
        assert_eq!(run.code(), Some(2), "{}", run.context());
        let stderr = run.stderr_text();
        assert!(stderr.contains(named), "names {named}: {stderr}");
        assert!(
            !stderr.contains("short\n") && !stderr.contains(KEY),
            "never the value: {stderr}"
        );
        assert!(run.stdout.is_empty());
    }
}

#[test]
fn a_journal_on_a_full_device_denies_every_call_and_forwards_none() {
    let dir = tempdir();
    let mut c = Client::start(dir.path(), &["--audit", "/dev/full"], "good", &[]);
    c.ready();
    for id in 1..=3 {
        let reply = c.call(id, "hi");
        assert_eq!(reply["result"], denial(), "{reply}");
    }
    let ping = c.request(json!("p"), "ping", json!({}));
    assert_eq!(ping["result"], json!({}), "other requests still go through");
    let ended = c.end();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert!(
        ended.stderr.contains("recv: ") && ended.calls_upstream().is_empty(),
        "the upstream received no tools/call:\n{}",
        ended.stderr
    );
    assert!(
        ended.stderr.contains("every tools/call is denied"),
        "{}",
        ended.stderr
    );
}

#[test]
fn a_journal_that_breaks_mid_session_denies_the_next_call_and_forwards_it_not() {
    let dir = tempdir();
    let fifo = dir.path().join("audit.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // The journal's reader takes records until the first call's outcome,
    // then goes away: the next write fails.
    let reader_path = fifo.clone();
    let reader = thread::spawn(move || {
        let file = std::fs::File::open(&reader_path).unwrap();
        let mut records = Vec::new();
        for line in BufReader::new(file).lines() {
            let record: Value = serde_json::from_str(&line.unwrap()).unwrap();
            let done = record["kind"] == "wrap_outcome";
            records.push(record);
            if done {
                break;
            }
        }
        records
    });
    let mut c = Client::start(
        dir.path(),
        &["--audit", fifo.to_str().unwrap()],
        "good",
        &[],
    );
    c.ready();
    let first = c.call(1, "hi");
    assert_eq!(first["result"]["content"][0]["text"], "hi", "{first}");
    let records = reader.join().unwrap();
    assert_eq!(
        records.last().unwrap()["kind"],
        "wrap_outcome",
        "{records:?}"
    );
    for id in 2..=3 {
        let reply = c.call(id, "again");
        assert_eq!(reply["result"], denial(), "{reply}");
    }
    let ended = c.end();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    let calls = ended.calls_upstream();
    assert_eq!(
        calls.len(),
        1,
        "only the call journaled before the break: {calls:?}"
    );
    assert_eq!(calls[0]["params"]["arguments"]["message"], "hi");
}

#[test]
fn two_megabytes_of_blank_upstream_lines_leave_a_journal_of_a_few_records() {
    const FLOOD_BYTES: u64 = 2 * 1024 * 1024;
    let dir = tempdir();
    let audit = dir.path().join("audit.jsonl");
    let started = Instant::now();
    let mut c = Client::start(
        dir.path(),
        &["--audit", audit.to_str().unwrap()],
        "newlines",
        &[("FLOOD_BYTES", &FLOOD_BYTES.to_string())],
    );
    c.ready();
    let ping = c.request(json!("p"), "ping", json!({}));
    assert_eq!(ping["result"], json!({}), "{ping}");
    let reply = c.call(1, "after the flood");
    assert_eq!(reply["result"]["content"][0]["text"], "after the flood");
    let ended = c.end();
    let elapsed = started.elapsed().as_secs() + ended.elapsed.as_secs() + 1;
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    let lines = journal(&audit);
    assert_chain(&lines, None);
    let quarantines: Vec<&Value> = lines
        .iter()
        .map(|(_, r)| r)
        .filter(|r| r["kind"] == "wrap_quarantine")
        .collect();
    let lines_counted: u64 = quarantines
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        lines_counted, FLOOD_BYTES,
        "every blank line is accounted for"
    );
    // At most two records per second of the run (the first of an interval
    // and the run of the one before), whatever the upstream wrote.
    let bound = 2 * elapsed + 2;
    assert!(
        quarantines.len() as u64 <= bound,
        "{} quarantine records in {elapsed} s",
        quarantines.len()
    );
    let bytes = std::fs::metadata(&audit).unwrap().len();
    assert!(bytes < 400 * (bound + 10), "a journal of {bytes} bytes");
    let shown = ended
        .stderr
        .lines()
        .filter(|l| l.contains("quarantined"))
        .count() as u64;
    assert!(
        shown <= bound,
        "{shown} stderr lines about quarantined lines"
    );
    assert!(
        ended.stderr.len() < 64 * 1024,
        "{} bytes of stderr",
        ended.stderr.len()
    );
    assert!(ended.stdout.len() < 4096);
    assert_verifies(dir.path(), &audit, None);
}
