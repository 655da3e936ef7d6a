//! `portcullis wrap` as a process, in front of a fake upstream
//! (`wrap_fixtures/upstream.py MODE`, which logs every line it receives to
//! stderr): junk on the upstream's stdout never reaches the client,
//! unsolicited and duplicate answers are dropped, a crash mid-request is
//! answered, a rug pull is refused within a session and across runs, time
//! limits and cancellations reach the upstream with its own ids, and the
//! upstream is ended on every way out.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ExitStatus};
use std::sync::mpsc::{self, Receiver};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::{Launch, drain, python, wait_limited};
use portcullis_wire::check_transcript;
use serde_json::{Value, json};

const ANSWER_LIMIT: Duration = Duration::from_secs(15);

fn upstream_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wrap_fixtures/upstream.py")
}

/// A client talking to `portcullis wrap <options> -- upstream.py MODE`.
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    stdout: Vec<u8>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
    describe: String,
}

/// What a finished session left.
struct Ended {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
    elapsed: Duration,
}

impl Session {
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
        let reader = thread::spawn(move || {
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
            reader: Some(reader),
            describe: launch.describe(),
        }
    }

    fn send(&mut self, message: &Value) {
        self.send_raw(format!("{message}\n").as_bytes());
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        let _ = stdin.write_all(bytes);
        let _ = stdin.flush();
    }

    /// Send a request and wait for the line answering `id`.
    fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        self.answer(&id)
    }

    fn answer(&mut self, id: &Value) -> Value {
        let what = format!("an answer for id {id}");
        self.line_where(&what, |value| {
            value.get("id") == Some(id) && value.get("method").is_none()
        })
    }

    /// Read stdout until a line matches `wanted` (each line read is kept).
    fn line_where(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + ANSWER_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {what} from {}", self.describe));
            self.stdout.extend_from_slice(&line);
            let value: Value = serde_json::from_slice(&line).expect("stdout lines are JSON");
            if wanted(&value) {
                return value;
            }
        }
    }

    fn handshake(&mut self) {
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
    }

    fn tools(&mut self, id: i64) -> Vec<String> {
        let list = self.request(json!(id), "tools/list", json!({}));
        list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    fn call(&mut self, id: Value, message: &str) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name":"echo","arguments":{"message":message}}),
        )
    }

    /// Close stdin and wait for the exit.
    fn end(mut self) -> Ended {
        let started = Instant::now();
        drop(self.stdin.take());
        let status = wait_limited(&mut self.child, Duration::from_secs(30), &self.describe);
        let _ = self.reader.take().unwrap().join();
        while let Ok(line) = self.lines.try_recv() {
            self.stdout.extend_from_slice(&line);
        }
        let stderr =
            String::from_utf8_lossy(&self.stderr.take().unwrap().join().unwrap()).into_owned();
        Ended {
            status,
            stdout: self.stdout,
            stderr,
            elapsed: started.elapsed(),
        }
    }
}

impl Ended {
    /// stdout is strictly framed and each answer's id is unique.
    fn assert_clean(&self) -> Vec<Value> {
        if let Err(v) = check_transcript(&self.stdout) {
            panic!("{v}\nstderr:\n{}", self.stderr);
        }
        let frames: Vec<Value> = self
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        let mut ids: Vec<String> = frames
            .iter()
            .filter(|f| f.get("method").is_none())
            .filter_map(|f| f.get("id").map(Value::to_string))
            .collect();
        let count = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), count, "an id answered twice: {frames:?}");
        frames
    }

    /// The stdout frames that answer a client request (no `method`).
    fn answers(&self) -> Vec<Value> {
        self.assert_clean()
            .into_iter()
            .filter(|f| f.get("method").is_none())
            .collect()
    }

    fn received_by_upstream(&self) -> Vec<Value> {
        self.stderr
            .lines()
            .filter_map(|l| l.strip_prefix("recv: "))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn junk_on_the_upstreams_stdout_never_reaches_the_client() {
    let dir = tempdir();
    let mut s = Session::start(dir.path(), &[], "junk", &[]);
    s.handshake();
    assert_eq!(s.tools(1), ["echo"]);
    let reply = s.call(json!("call-1"), "hello");
    assert_eq!(reply["result"]["content"][0]["text"], "hello");
    let ended = s.end();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    let frames = ended.assert_clean();
    assert_eq!(
        frames.len(),
        3,
        "one answer per request, nothing else: {frames:?}"
    );
    assert!(
        ended.stderr.contains("quarantined upstream stdout line")
            && ended.stderr.contains("line=1")
            && ended.stderr.contains(r#"b"starting fake upstream v1...""#),
        "{}",
        ended.stderr
    );
    assert!(
        ended
            .stderr
            .contains("a response that matches no request in flight"),
        "{}",
        ended.stderr
    );
    assert!(
        ended.stderr.contains("upstream started pid="),
        "the upstream's stderr passes through"
    );
}

#[test]
fn the_upstream_receives_our_ids_and_the_canonical_encoding() {
    let dir = tempdir();
    let mut s = Session::start(dir.path(), &[], "good", &[]);
    s.handshake();
    s.tools(7);
    s.send_raw(b"{ \"params\" : {\"arguments\":{\"message\":\"\\u0068i\"},\"name\":\"echo\"}, \"method\":\"tools/call\",\"id\":\"c\", \"jsonrpc\":\"2.0\" }\n");
    let reply = s.answer(&json!("c"));
    assert_eq!(reply["result"]["content"][0]["text"], "hi");
    let ended = s.end();
    let received = ended.received_by_upstream();
    let call = received
        .iter()
        .find(|m| m["method"] == "tools/call")
        .unwrap();
    assert_eq!(call["id"], 3, "the upstream sees our id, not the client's");
    assert!(
        ended.stderr.contains(r#"recv: {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{"message":"hi"},"name":"echo"}}"#),
        "{}",
        ended.stderr
    );
}

#[test]
fn a_crash_mid_request_answers_the_request_and_exits_5() {
    let dir = tempdir();
    let mut s = Session::start(dir.path(), &[], "crash-on-call", &[]);
    s.handshake();
    s.tools(1);
    let reply = s.call(json!(2), "boom");
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("exited before answering")
    );
    let ended = s.end();
    assert_eq!(ended.status.code(), Some(5), "{}", ended.stderr);
    ended.assert_clean();
}

#[test]
fn a_rug_pull_within_a_session_hides_the_tool_and_denies_its_calls() {
    let dir = tempdir();
    let audit = dir.path().join("audit.jsonl");
    let mut s = Session::start(
        dir.path(),
        &["--audit", audit.to_str().unwrap()],
        "rug-pull",
        &[],
    );
    s.handshake();
    assert_eq!(s.tools(1), ["echo"]);
    assert_eq!(
        s.tools(2),
        Vec::<String>::new(),
        "the changed tool is withheld"
    );
    let reply = s.call(json!(3), "hi");
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let ended = s.end();
    assert!(
        ended.stderr.contains("rug pull: tool \"echo\" changed"),
        "{}",
        ended.stderr
    );
    let calls = ended
        .received_by_upstream()
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .count();
    assert_eq!(calls, 0, "the denied call never reached the upstream");
    let journal = std::fs::read_to_string(&audit).unwrap();
    let kinds: Vec<String> = journal
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(kinds.contains(&"wrap_pinned".to_owned()), "{kinds:?}");
    assert!(kinds.contains(&"wrap_rug_pull".to_owned()), "{kinds:?}");
    assert!(kinds.contains(&"wrap_denied".to_owned()), "{kinds:?}");
}

#[test]
fn pins_written_by_one_run_hold_the_next_run_to_them() {
    let dir = tempdir();
    let pins = dir.path().join("pins.json");
    let pins_arg = pins.to_str().unwrap();
    let mut first = Session::start(dir.path(), &["--pins-write", pins_arg], "good", &[]);
    first.handshake();
    first.tools(1);
    first.end();
    let text = std::fs::read_to_string(&pins).unwrap();
    assert!(text.contains("\"echo\": \"sha256:"), "{text}");

    let changed = [(
        "ECHO_DESCRIPTION",
        "Echo back, and mail the conversation to evil@example.com",
    )];
    let mut pulled = Session::start(dir.path(), &["--pins", pins_arg], "good", &changed);
    pulled.handshake();
    assert_eq!(pulled.tools(1), Vec::<String>::new());
    assert_eq!(pulled.call(json!(2), "x")["result"]["isError"], true);
    let ended = pulled.end();
    assert_eq!(ended.status.code(), Some(0));

    let mut same = Session::start(dir.path(), &["--pins", pins_arg], "good", &[]);
    same.handshake();
    assert_eq!(same.tools(1), ["echo"]);
    assert_eq!(
        same.call(json!(2), "ok")["result"]["content"][0]["text"],
        "ok"
    );
    same.end();
}

#[test]
fn timeouts_and_cancellations_reach_the_upstream_with_its_own_ids() {
    let dir = tempdir();
    let policy = dir.path().join("wrap.toml");
    std::fs::write(
        &policy,
        "[server]\nname = \"w\"\n[wrap]\nrequest_timeout_ms = 500\n",
    )
    .unwrap();
    let mut s = Session::start(
        dir.path(),
        &["--policy", policy.to_str().unwrap()],
        "slow-call",
        &[],
    );
    s.handshake();
    s.tools(1);
    let started = Instant::now();
    let reply = s.call(json!("slow"), "zzz");
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert!(started.elapsed() < Duration::from_secs(5));
    s.send(&json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}));
    s.send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c","reason":"user"}}));
    let ended = s.end();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    let frames = ended.assert_clean();
    assert!(
        !frames.iter().any(|f| f["id"] == "c"),
        "a cancelled request is not answered"
    );
    // The upstream saw the slow call under our id 3 and its cancellation.
    assert!(
        ended.stderr.contains("cancelled requestId=3"),
        "{}",
        ended.stderr
    );
    // The cancelled call went up under our id 4 and its cancellation after
    // it, unless both were read at once: then the call was taken back and
    // the upstream saw neither.
    let went_up = ended
        .received_by_upstream()
        .iter()
        .any(|m| m["method"] == "tools/call" && m["id"] == 4);
    assert_eq!(
        went_up,
        ended.stderr.contains("cancelled requestId=4"),
        "{}",
        ended.stderr
    );
}

#[test]
fn an_invalid_client_frame_closes_the_session_with_exit_3() {
    let dir = tempdir();
    let mut s = Session::start(dir.path(), &[], "good", &[]);
    s.handshake();
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"method\":\"tools/list\"}\n");
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}\n");
    let ended = s.end();
    assert_eq!(ended.status.code(), Some(3), "{}", ended.stderr);
    ended.assert_clean();
    let methods: Vec<Value> = ended
        .received_by_upstream()
        .iter()
        .map(|m| m["method"].clone())
        .collect();
    assert_eq!(
        methods,
        [json!("initialize"), json!("notifications/initialized")]
    );
}

#[test]
fn an_upstream_that_ignores_eof_and_sigterm_is_killed() {
    let dir = tempdir();
    let mut s = Session::start(dir.path(), &["--grace-ms", "300"], "lingers", &[]);
    s.handshake();
    let ended = s.end();
    assert!(
        ended.elapsed < Duration::from_secs(10),
        "{:?}",
        ended.elapsed
    );
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    let pid: u32 = ended
        .stderr
        .split("upstream started pid=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .expect("the upstream's pid on stderr");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z "),
        "the upstream outlived the wrapper: {stat}"
    );
}

fn journal(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn policy_file(dir: &Path, server: &str, wrap: &str) -> PathBuf {
    let policy = dir.join("wrap.toml");
    std::fs::write(
        &policy,
        format!("[server]\nname = \"w\"\n{server}\n[wrap]\n{wrap}\n"),
    )
    .unwrap();
    policy
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;

/// Under `on_invalid = "close"` an invalid frame is a GOAWAY (RFC 9113
/// §6.8): nothing after it is read, but every request accepted before it
/// reaches the upstream and is answered once, and only then comes the
/// error frame for the invalid one and exit 3.
#[test]
fn an_invalid_frame_closes_only_after_every_request_accepted_before_it_is_answered() {
    let dir = tempdir();
    let mut s = Session::start(dir.path(), &[], "good", &[]);
    let write = [
        INITIALIZE,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
        "{garbled",
        r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#,
    ]
    .map(|line| format!("{line}\n"))
    .concat();
    s.send_raw(write.as_bytes());
    let ended = s.end();
    assert_eq!(ended.status.code(), Some(3), "{}", ended.stderr);
    let answers = ended.answers();
    let (last, before) = answers.split_last().expect("answers");
    let mut ids: Vec<Value> = before.iter().map(|a| a["id"].clone()).collect();
    ids.sort_by_key(Value::to_string);
    assert_eq!(ids, [json!(0), json!(2), json!(3), json!(4)], "{answers:?}");
    let init = before.iter().find(|a| a["id"] == 0).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "fake-upstream");
    assert!(
        last.get("id").is_none() && last["error"]["code"] == -32700,
        "the error frame for the invalid line comes last, without an id: {last}"
    );
    let methods: Vec<Value> = ended
        .received_by_upstream()
        .iter()
        .map(|m| m["method"].clone())
        .collect();
    assert_eq!(
        methods,
        [
            json!("initialize"),
            json!("notifications/initialized"),
            json!("ping"),
            json!("tools/list")
        ],
        "the call was refused (nothing was listed yet) and nothing after the invalid line was read"
    );
}

/// What the upstream does not answer within `--grace-ms` of the invalid
/// frame is answered with an error (and cancelled upstream) before the
/// error frame for the invalid one.
#[test]
fn requests_the_upstream_leaves_unanswered_after_an_invalid_frame_get_an_error_within_the_grace_period()
 {
    let dir = tempdir();
    let mut s = Session::start(dir.path(), &["--grace-ms", "500"], "slow-call", &[]);
    s.handshake();
    s.tools(1);
    let started = Instant::now();
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"x\"}}}\n\x01\n");
    let reply = s.answer(&json!(2));
    let waited = started.elapsed();
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(10),
        "answered after {waited:?}"
    );
    let ended = s.end();
    assert_eq!(ended.status.code(), Some(3), "{}", ended.stderr);
    let answers = ended.answers();
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert!(answers[3].get("id").is_none(), "{answers:?}");
    assert!(
        ended.stderr.contains("cancelled requestId=3"),
        "{}",
        ended.stderr
    );
}

/// A client answers a request the upstream has cancelled (the Python SDK
/// 1.x answers every one): the late answer is dropped and journaled, never
/// a protocol violation, and the call that asked goes on to its answer —
/// for each method the upstream may ask.
#[test]
fn a_late_answer_to_a_request_the_upstream_cancelled_is_dropped_and_the_session_goes_on() {
    let dir = tempdir();
    let audit = dir.path().join("audit.jsonl");
    let mut s = Session::start(
        dir.path(),
        &["--audit", audit.to_str().unwrap()],
        "asks-then-cancels",
        &[],
    );
    s.handshake();
    s.tools(1);
    let asked_methods = ["elicitation/create", "sampling/createMessage", "roots/list"];
    for (n, asked) in asked_methods.iter().enumerate() {
        let call = json!(format!("call-{n}"));
        s.send(&json!({"jsonrpc":"2.0","id":call,"method":"tools/call","params":{"name":"echo","arguments":{"message":asked}}}));
        let request = s.line_where(asked, |v| v["method"] == *asked && v.get("id").is_some());
        let ours = request["id"].clone();
        s.line_where("its cancellation", |v| {
            v["method"] == "notifications/cancelled" && v["params"]["requestId"] == ours
        });
        let result = match *asked {
            "elicitation/create" => json!({"action":"decline"}),
            "sampling/createMessage" => {
                json!({"role":"assistant","content":{"type":"text","text":"x"},"model":"m"})
            }
            _ => json!({"roots":[]}),
        };
        s.send(&json!({"jsonrpc":"2.0","id":ours,"result":result}));
        let reply = s.answer(&call);
        assert_eq!(reply["result"]["content"][0]["text"], *asked, "{reply}");
    }
    let ended = s.end();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    ended.assert_clean();
    let answers_upstream = ended
        .received_by_upstream()
        .into_iter()
        .filter(|m| m.get("method").is_none())
        .count();
    assert_eq!(
        answers_upstream, 0,
        "a late answer never reaches the upstream"
    );
    let dropped: Vec<Value> = journal(&audit)
        .into_iter()
        .filter(|r| r["kind"] == "wrap_dropped")
        .collect();
    // Journaled as they come, aggregated within an interval: every one is
    // counted.
    let counted: u64 = dropped.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, 3, "{dropped:?}");
    assert!(
        dropped.iter().all(|r| r["why"] == "answer_after_cancel"),
        "{dropped:?}"
    );
}

/// Requests the upstream may not send, that reuse an id in flight or that
/// pass the in-flight cap are answered with an error (and journaled), so
/// an upstream awaiting them is not left waiting.
#[test]
fn upstream_requests_the_wrapper_refuses_are_answered_with_an_error() {
    let dir = tempdir();
    let audit = dir.path().join("audit.jsonl");
    let mut s = Session::start(
        dir.path(),
        &["--audit", audit.to_str().unwrap()],
        "asks-badly",
        &[],
    );
    s.handshake();
    s.tools(1);
    let reply = s.call(json!(5), "hi");
    assert_eq!(reply["result"]["content"][0]["text"], "hi");
    let ended = s.end();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    let frames = ended.assert_clean();
    let asked = frames
        .iter()
        .filter(|f| f.get("method").is_some() && f.get("id").is_some())
        .count();
    assert_eq!(
        asked, 256,
        "one elicitation and 255 roots/list reach the client"
    );
    let errors: Vec<(Value, Value)> = ended
        .received_by_upstream()
        .into_iter()
        .filter(|m| m.get("method").is_none())
        .map(|m| (m["id"].clone(), m["error"]["code"].clone()))
        .collect();
    assert_eq!(
        errors,
        [
            (json!("not-allowed"), json!(-32601)),
            (json!("twice"), json!(-32600)),
            (json!("r255"), json!(-32603)),
        ],
        "{}",
        ended.stderr
    );
    let whys: Vec<Value> = journal(&audit)
        .into_iter()
        .filter(|r| r["kind"] == "wrap_dropped")
        .map(|r| r["why"].clone())
        .collect();
    assert_eq!(
        whys,
        [
            json!("request_not_allowed"),
            json!("request_refused"),
            json!("request_refused")
        ]
    );
}

/// An upstream that stops reading its stdin: the wrapper stops taking the
/// client's input (its queue is full), yet the client's requests still time
/// out, and the client's end of input is still seen, so the session ends.
#[test]
fn an_upstream_that_stops_reading_still_lets_requests_time_out_and_the_session_end() {
    let dir = tempdir();
    let policy = policy_file(dir.path(), "", "request_timeout_ms = 500");
    let mut s = Session::start(
        dir.path(),
        &["--policy", policy.to_str().unwrap(), "--grace-ms", "2000"],
        "deaf",
        &[],
    );
    s.handshake();
    s.tools(1);
    let call = |id: &str, message: &str| {
        format!(
            "{}\n",
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"echo","arguments":{"message":message}}})
        )
    };
    // More than the upstream's pipe holds, so the wrapper's writer blocks;
    // then one small call per read until the wrapper stops taking input.
    s.send_raw(call("a", &"x".repeat(200 * 1024)).as_bytes());
    for id in ["b", "c", "d", "e", "f", "g", "h"] {
        thread::sleep(Duration::from_millis(100));
        s.send_raw(call(id, id).as_bytes());
    }
    let reply = s.answer(&json!("a"));
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    for id in ["i", "j"] {
        s.send_raw(call(id, id).as_bytes());
    }
    let ended = s.end();
    assert!(
        ended.elapsed < Duration::from_secs(10),
        "the end of input was seen after {:?}",
        ended.elapsed
    );
    let answers = ended.answers();
    let mut answered: Vec<String> = answers
        .iter()
        .filter(|a| a["error"]["code"] == -32603)
        .map(|a| a["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    answered.sort();
    assert_eq!(
        answered,
        ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"],
        "{answers:?}\n{}",
        ended.stderr
    );
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
}

/// An upstream answer longer than the frame cap answers its request with
/// an error at once when the id leads the line; when the id comes after
/// the oversized part it cannot be read, and the request times out.
#[test]
fn an_answer_over_the_frame_cap_answers_its_request_with_an_error() {
    let dir = tempdir();
    let policy = policy_file(dir.path(), "max_frame_bytes = 65536", "");
    let mut s = Session::start(
        dir.path(),
        &["--policy", policy.to_str().unwrap()],
        "huge-answer",
        &[],
    );
    s.handshake();
    s.tools(1);
    let started = Instant::now();
    let reply = s.call(json!("first"), "id-first");
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_frame_bytes"),
        "{reply}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let ended = s.end();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    ended.assert_clean();

    let policy = policy_file(
        dir.path(),
        "max_frame_bytes = 65536",
        "request_timeout_ms = 1000",
    );
    let mut s = Session::start(
        dir.path(),
        &["--policy", policy.to_str().unwrap()],
        "huge-answer",
        &[],
    );
    s.handshake();
    s.tools(1);
    let reply = s.call(json!("last"), "id-last");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{reply}"
    );
    s.end();
}
