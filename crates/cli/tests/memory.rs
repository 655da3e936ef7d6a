//! `portcullis mcp` holds session state bounded by configuration, not by the
//! length of the session: its peak resident set over a long stream of varied
//! traffic stays within `4 × max_frame_bytes + 32 MiB`.
//!
//! The traffic is generated round by round into the child's stdin from a
//! writer thread (never held whole): pings whose ids are nearly a frame
//! long, pings with ids near the id cap, calls with an argument nearly a
//! frame long (one executed, one refused by the schema), a call with a
//! 32 KiB argument sent to a fast loopback upstream, a frame that is not
//! JSON, an over-long line, a thousand small pings and a `tools/list`. The
//! figure is the child's `VmHWM`, read from `/proc` once the last request
//! is answered and before stdin closes.
//!
//! Against the release binary (`PORTCULLIS_BIN`, as `.ci/run` sets it) the
//! stream is 1 GiB; against the debug build it is [`DEBUG_TRAFFIC`], which
//! checks the same bound on a shorter session.

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use common::{Fixture, Launch, drain, vm_hwm_kib, wait_limited};
use portcullis_testkit::fakes::FakeHttp;

const MAX_FRAME_BYTES: usize = 1024 * 1024;
const RELEASE_TRAFFIC: u64 = 1024 * 1024 * 1024;
const DEBUG_TRAFFIC: u64 = 24 * 1024 * 1024;
const SMALL_PINGS_PER_ROUND: usize = 1000;
const LAST_ID: &str = "memory-test-last";

/// A loopback HTTP service that reads each request head to its end (however
/// long the URL), keeps none of it, and answers at once.
struct FastUpstream {
    port: u16,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl FastUpstream {
    fn start() -> Self {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, halt) = (Arc::clone(&requests), Arc::clone(&stop));
        thread::spawn(move || {
            for stream in listener.incoming() {
                if halt.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let count = Arc::clone(&count);
                thread::spawn(move || answer(stream, &count));
            }
        });
        Self {
            port,
            requests,
            stop,
        }
    }
}

impl Drop for FastUpstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
    }
}

fn answer(mut stream: TcpStream, count: &AtomicUsize) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut buf = vec![0u8; 64 * 1024];
    let mut tail = [0u8; 4];
    'head: loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                for &b in &buf[..n] {
                    tail = [tail[1], tail[2], tail[3], b];
                    if &tail == b"\r\n\r\n" {
                        break 'head;
                    }
                }
            }
        }
    }
    count.fetch_add(1, Ordering::SeqCst);
    let _ = stream.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
    );
}

fn policy(port: u16) -> String {
    format!(
        r#"[server]
name = "memory-test"
on_invalid = "keep-open"
max_frame_bytes = {MAX_FRAME_BYTES}

[[tools]]
name = "echo"
timeout_ms = 10000
[tools.http]
method = "GET"
url = "http://127.0.0.1:{port}/echo/{{text}}"
allow = ["127.0.0.1:{port}"]
[tools.input_schema]
type = "object"
required = ["text"]
additionalProperties = false
properties.text = {{ type = "string", pattern = "^[a-z0-9]+$" }}
"#
    )
}

/// One round of traffic appended to `out`; returns the frames it answers.
fn round(out: &mut Vec<u8>, round: u64, next_id: &mut u64) -> u64 {
    let pad = |n: usize, byte: u8| vec![byte; n];
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).expect("ascii");
    let mut line = |s: &str| {
        out.extend_from_slice(s.as_bytes());
        out.push(b'\n');
    };
    // An id nearly a frame long (refused by the id cap, echoed).
    line(&format!(
        r#"{{"jsonrpc":"2.0","id":"long-{round}-{}","method":"ping"}}"#,
        text(pad(MAX_FRAME_BYTES - 100, b'i'))
    ));
    // An id near the default cap (served, remembered as a digest).
    line(&format!(
        r#"{{"jsonrpc":"2.0","id":"near-{round}-{}","method":"ping"}}"#,
        text(pad(1000, b'n'))
    ));
    // A call whose argument is nearly a frame long: run (or answered busy).
    line(&format!(
        r#"{{"jsonrpc":"2.0","id":"run-{round}","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        text(pad(MAX_FRAME_BYTES - 200, b'a'))
    ));
    // A call the upstream receives (URLs past 64 KiB are refused by the
    // HTTP client, after the action was queued and run).
    line(&format!(
        r#"{{"jsonrpc":"2.0","id":"sent-{round}","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        text(pad(32 * 1024, b'c'))
    ));
    // The same size refused by the schema (the pattern).
    line(&format!(
        r#"{{"jsonrpc":"2.0","id":"refused-{round}","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}-"}}}}}}"#,
        text(pad(MAX_FRAME_BYTES - 200, b'b'))
    ));
    // Not JSON: rejected, nothing to answer (no readable id under keep-open).
    line(&format!(
        r#"{{"jsonrpc":"2.0","id":"broken-{round}","x":"{}"#,
        text(pad(MAX_FRAME_BYTES / 2, b'x'))
    ));
    // An over-long line: rejected while streaming, never buffered.
    out.extend(std::iter::repeat_n(b'o', 3 * MAX_FRAME_BYTES));
    out.push(b'\n');
    for _ in 0..SMALL_PINGS_PER_ROUND {
        *next_id += 1;
        out.extend_from_slice(
            format!(r#"{{"jsonrpc":"2.0","id":{},"method":"ping"}}"#, *next_id).as_bytes(),
        );
        out.push(b'\n');
    }
    *next_id += 1;
    out.extend_from_slice(
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/list"}}"#,
            *next_id
        )
        .as_bytes(),
    );
    out.push(b'\n');
    5 + SMALL_PINGS_PER_ROUND as u64 + 1
}

#[test]
fn peak_memory_over_a_long_varied_session_stays_within_four_frames_and_32_mib() {
    if !std::path::Path::new("/proc/self/status").exists() {
        eprintln!("no /proc: cannot read the child's peak resident set; skipping");
        return;
    }
    let traffic = if std::env::var_os("PORTCULLIS_BIN").is_some() {
        RELEASE_TRAFFIC
    } else {
        DEBUG_TRAFFIC
    };
    let upstream = FastUpstream::start();
    let fx = Fixture::new(&policy(upstream.port));
    let launch =
        Launch::new(fx.cwd.path(), &["mcp", "--log-level", "error", "--policy"]).arg(&fx.policy);
    let started = Instant::now();
    let mut child = launch.spawn();
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let stderr = drain(child.stderr.take().expect("stderr"));

    // stdout: count frames, spot the answer to the last request.
    let (last_seen, answered) = mpsc::channel();
    let reader = thread::spawn(move || {
        let mut stdout = stdout;
        let mut buf = vec![0u8; 64 * 1024];
        let mut frames = 0u64;
        let mut bytes = 0u64;
        let mut short = Vec::new();
        let mut long = false;
        loop {
            let n = match stdout.read(&mut buf) {
                Ok(0) | Err(_) => return (frames, bytes),
                Ok(n) => n,
            };
            bytes += n as u64;
            for &b in &buf[..n] {
                if b == b'\n' {
                    frames += 1;
                    if !long
                        && short
                            .windows(LAST_ID.len())
                            .any(|w| w == LAST_ID.as_bytes())
                    {
                        let _ = last_seen.send(());
                    }
                    short.clear();
                    long = false;
                } else if !long {
                    short.push(b);
                    long = short.len() > 256;
                }
            }
        }
    });

    // stdin: the handshake, rounds until `traffic` bytes, the last request.
    let writer = thread::spawn(move || {
        let mut expected = 1u64;
        let mut written = 0u64;
        let mut rounds = 0u64;
        let mut next_id = 1u64;
        let mut out = Vec::with_capacity(8 * MAX_FRAME_BYTES);
        out.extend_from_slice(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"memory-test","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
"#,
        );
        while written < traffic {
            expected += round(&mut out, rounds, &mut next_id);
            rounds += 1;
            stdin.write_all(&out).expect("the gateway reads on");
            written += out.len() as u64;
            out.clear();
        }
        stdin
            .write_all(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{LAST_ID}\",\"method\":\"ping\"}}\n")
                    .as_bytes(),
            )
            .expect("the gateway reads on");
        (stdin, expected + 1, written, rounds)
    });

    let (stdin, expected, written, rounds) = writer.join().expect("writer");
    answered
        .recv_timeout(Duration::from_secs(600))
        .expect("the last request is answered");
    let peak_kib = vm_hwm_kib(pid).expect("VmHWM");
    drop(stdin);
    let status = wait_limited(&mut child, Duration::from_secs(60), &launch.describe());
    let (frames, stdout_bytes) = reader.join().expect("stdout reader");
    let stderr = String::from_utf8_lossy(&stderr.join().expect("stderr")).into_owned();
    let bound_kib = (4 * MAX_FRAME_BYTES as u64 + 32 * 1024 * 1024) / 1024;
    eprintln!(
        "portcullis mcp: peak RSS {peak_kib} KiB (bound {bound_kib} KiB = 4 x max_frame_bytes {MAX_FRAME_BYTES} + 32 MiB) over {} MiB in {rounds} rounds, {frames} frames ({} MiB) out, {} upstream requests, {:?}",
        written / (1024 * 1024),
        stdout_bytes / (1024 * 1024),
        upstream.requests.load(Ordering::SeqCst),
        started.elapsed()
    );
    assert_eq!(status.code(), Some(0), "exit status\nstderr:\n{stderr}");
    assert_eq!(
        frames, expected,
        "every request is answered exactly once\nstderr:\n{stderr}"
    );
    assert!(
        upstream.requests.load(Ordering::SeqCst) > 0,
        "some calls ran against the upstream"
    );
    assert!(
        peak_kib <= bound_kib,
        "peak RSS {peak_kib} KiB exceeds 4 x max_frame_bytes + 32 MiB = {bound_kib} KiB over {} MiB of traffic",
        written / (1024 * 1024)
    );
}

#[test]
fn queued_actions_are_bounded_by_bytes_and_a_call_past_the_bound_is_answered_busy() {
    // Frames of at most 64 KiB: queued and running targets may hold 128 KiB.
    let server = FakeHttp::start();
    let port = server.port();
    let fx = Fixture::new(&format!(
        r#"[server]
name = "memory-test"
max_frame_bytes = 65536

[[tools]]
name = "slow_echo"
[tools.http]
method = "GET"
url = "http://127.0.0.1:{port}/slow/{{text}}"
allow = ["127.0.0.1:{port}"]
[tools.input_schema]
type = "object"
required = ["text"]
additionalProperties = false
properties.text = {{ type = "string", pattern = "^[a-z]+$" }}
"#
    ));
    // Three slow calls of 45 KB targets each: the third would take the
    // queue past 128 KiB while the first two run.
    let text = "a".repeat(45_000);
    let calls: Vec<Vec<u8>> = (2..=4)
        .map(|id| common::call(id, "slow_echo", serde_json::json!({ "text": text })))
        .collect();
    let run = Launch::new(fx.cwd.path(), &["mcp", "--policy"])
        .arg(&fx.policy)
        .run(&common::session(&[&calls[0], &calls[1], &calls[2]]));
    run.assert_code(0);
    for id in [2, 3] {
        let (answer, is_error) = run.tool_result(id);
        let shown: String = answer.chars().take(80).collect();
        assert!(
            !is_error && answer.starts_with("status ok for /slow/aaa"),
            "{id}: {shown}"
        );
    }
    let (answer, is_error) = run.tool_result(4);
    let shown: String = answer.chars().take(80).collect();
    assert!(
        is_error && answer.starts_with("busy:"),
        "the third call ran: {shown}"
    );
    assert_eq!(server.connections(), 2, "{}", run.context());
}

/// The values one frame may hold by default (`[server] max_frame_values`).
const DEFAULT_MAX_FRAME_VALUES: usize = 16_384;

/// Objects of one member nested 30 deep: the costliest shape per value
/// (the arguments of a call are copied into `serde_json` maps for the
/// schema validator, one map node per object), 31 values in 160 bytes.
const CHAIN_DEPTH: usize = 30;

fn chain() -> String {
    format!(
        "{}{{}}{}",
        "{\"a\":".repeat(CHAIN_DEPTH),
        "}".repeat(CHAIN_DEPTH)
    )
}

/// `[unit,unit,…]` as long as fits in `bytes`.
fn filled(unit: &str, bytes: usize) -> String {
    let items = vec![unit; bytes / (unit.len() + 1)];
    format!("[{}]", items.join(","))
}

/// `[chain,…,0,…]` holding exactly `values` values.
fn exactly(values: usize) -> String {
    let chain = chain();
    let mut items = vec![chain.as_str(); values / (CHAIN_DEPTH + 1)];
    items.extend(vec!["0"; values % (CHAIN_DEPTH + 1)]);
    format!("[{}]", items.join(","))
}

/// What one session of `frames` (after the handshake) did: the peak
/// resident set in KiB, read once `LAST_ID` is answered, the string ids
/// answered in order (each with whether it was a tool error), the exit
/// status and stderr.
struct Dense {
    peak_kib: u64,
    answered: Vec<(String, bool)>,
    status: std::process::ExitStatus,
    stderr: String,
}

fn dense_session(launch: &Launch, frames: Vec<String>) -> Dense {
    let mut child = launch.spawn();
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let writer = thread::spawn(move || {
        stdin
            .write_all(
                br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"memory-test","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
"#,
            )
            .expect("the gateway reads on");
        for frame in frames {
            stdin
                .write_all(frame.as_bytes())
                .expect("the gateway reads on");
            stdin.write_all(b"\n").expect("the gateway reads on");
        }
        stdin
            .write_all(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{LAST_ID}\",\"method\":\"ping\"}}\n")
                    .as_bytes(),
            )
            .expect("the gateway reads on");
        stdin
    });
    let mut answered = Vec::new();
    let mut line = String::new();
    while !answered.iter().any(|(id, _)| id == LAST_ID) {
        line.clear();
        let n = std::io::BufRead::read_line(&mut stdout, &mut line).expect("stdout");
        assert!(n > 0, "stdout ended after {answered:?}");
        let message: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
        if let Some(id) = message["id"].as_str() {
            answered.push((id.to_owned(), message["result"]["isError"] == true));
        }
    }
    let peak_kib = vm_hwm_kib(pid).expect("VmHWM");
    drop(writer.join().expect("writer"));
    let status = wait_limited(&mut child, Duration::from_secs(60), &launch.describe());
    let stderr = String::from_utf8_lossy(&stderr.join().expect("stderr")).into_owned();
    Dense {
        peak_kib,
        answered,
        status,
        stderr,
    }
}

/// Calls whose arguments are dense in small JSON values: frames at the
/// cap filled with `{"a":1}` objects, with one-member objects nested 30
/// deep and with zeros (refused at the value limit, under `keep-open`),
/// and a call holding exactly the limit of the costliest shape (read,
/// copied for the schema validator and refused by the schema). The peak
/// resident set of the release binary (`PORTCULLIS_BIN`) stays within
/// `4 × max_frame_bytes + 32 MiB`. A debug build's own code and data take
/// about 10 MiB more, so it is held to its own peak on a session of one
/// ping plus `4 × max_frame_bytes + 20 MiB`, what the bound leaves the
/// release binary over its own (about 12 MiB).
#[test]
fn peak_memory_with_value_dense_calls_stays_within_four_frames_and_32_mib() {
    if !std::path::Path::new("/proc/self/status").exists() {
        eprintln!("no /proc: cannot read the child's peak resident set; skipping");
        return;
    }
    let fx = Fixture::new(&policy(9));
    let launch =
        Launch::new(fx.cwd.path(), &["mcp", "--log-level", "error", "--policy"]).arg(&fx.policy);
    let call = |id: &str, x: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"a","x":{x}}}}}}}"#
        )
    };
    // The frame's object, "2.0", the id, the method, `params`, the tool
    // name, `arguments`, its "a" and "x".
    let envelope_values = 9;
    let room = MAX_FRAME_BYTES - 200;
    let frames = vec![
        call("objects", &filled(r#"{"a":1}"#, room)),
        call("chains", &filled(&chain(), room)),
        call("zeros", &filled("0", room)),
        call(
            "at-limit",
            &exactly(DEFAULT_MAX_FRAME_VALUES - envelope_values),
        ),
    ];
    for frame in &frames {
        assert!(frame.len() <= MAX_FRAME_BYTES, "{}", frame.len());
    }
    let documented_kib = (4 * MAX_FRAME_BYTES as u64 + 32 * 1024 * 1024) / 1024;
    let bound_kib = if std::env::var_os("PORTCULLIS_BIN").is_some() {
        documented_kib
    } else {
        let own = dense_session(&launch, Vec::new()).peak_kib;
        own + (4 * MAX_FRAME_BYTES as u64 + 20 * 1024 * 1024) / 1024
    };
    let run = dense_session(&launch, frames);
    let (peak_kib, stderr) = (run.peak_kib, &run.stderr);
    eprintln!(
        "portcullis mcp with value-dense calls: peak RSS {peak_kib} KiB (bound {bound_kib} KiB), answers {:?}",
        run.answered
    );
    assert!(
        peak_kib <= bound_kib,
        "peak RSS {peak_kib} KiB exceeds the bound of {bound_kib} KiB (4 x max_frame_bytes + 32 MiB = {documented_kib} KiB)"
    );
    assert_eq!(run.status.code(), Some(0), "exit status\nstderr:\n{stderr}");
    // The frames past the limit are refused before their id is read, so
    // under keep-open nothing answers them.
    assert_eq!(
        run.answered,
        [("at-limit".to_owned(), true), (LAST_ID.to_owned(), false)],
        "the call at the limit is read and refused by the schema\nstderr:\n{stderr}"
    );
}
