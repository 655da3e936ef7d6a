//! `portcullis wrap` holds memory bounded by the frame cap on both sides,
//! not by the length of the session: its peak resident set over a long
//! stream stays within `4 × max_frame_bytes + 32 MiB`. The client sends
//! pings whose params are nearly a frame long (each forwarded, re-encoded);
//! the upstream (`wrap_fixtures/upstream.py flood`) answers each, then
//! writes an over-long junk line (twice the cap; quarantined while it
//! streams past) and an unsolicited answer a large part of a frame long
//! (dropped). The figure is the wrapper's `VmHWM`, read from `/proc` once
//! the last ping is answered and before stdin closes.
//!
//! Against the release binary (`PORTCULLIS_BIN`) the stream is 256 MiB
//! from the client (and about three times that from the upstream); against
//! the debug build it is 24 MiB.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::thread;

use common::{Launch, drain, vm_hwm_kib, wait_limited};

const MAX_FRAME_BYTES: usize = 1024 * 1024;
const RELEASE_TRAFFIC: usize = 256 * 1024 * 1024;
const DEBUG_TRAFFIC: usize = 24 * 1024 * 1024;

#[test]
fn peak_memory_is_bounded_by_the_frame_cap_on_both_sides() {
    let traffic = if std::env::var_os("PORTCULLIS_BIN").is_some() {
        RELEASE_TRAFFIC
    } else {
        DEBUG_TRAFFIC
    };
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("wrap.toml");
    std::fs::write(
        &policy,
        format!("[server]\nname = \"m\"\nmax_frame_bytes = {MAX_FRAME_BYTES}\n"),
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wrap_fixtures/upstream.py");
    let launch = Launch::new(
        dir.path(),
        &[
            "wrap",
            "--log-level",
            "error",
            "--policy",
            policy.to_str().unwrap(),
            "--",
            "python3",
            script.to_str().unwrap(),
            "flood",
        ],
    )
    .env("FLOOD_BYTES", &(2 * MAX_FRAME_BYTES).to_string());
    let mut child = launch.spawn();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let stderr = drain(child.stderr.take().unwrap());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let pad = "x".repeat(MAX_FRAME_BYTES - 1024);
    let rounds = traffic / pad.len();
    let pad_bytes = pad.len();
    let writer = thread::spawn(move || {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"m","version":"1"}}}"#;
        writeln!(stdin, "{init}").unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        for n in 1..=rounds {
            writeln!(
                stdin,
                r#"{{"jsonrpc":"2.0","id":{n},"method":"ping","params":{{"pad":"{pad}"}}}}"#
            )
            .unwrap();
        }
        stdin
    });
    let mut answered = 0;
    let mut line = String::new();
    while answered < rounds {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "stdout ended after {answered} answers"
        );
        // Each ping is answered once: by the upstream, or by the wrapper
        // when too many are in flight.
        if line.contains("\"id\":") && !line.contains("\"id\":0,") {
            answered += 1;
        }
    }
    let peak_kib = vm_hwm_kib(pid).expect("VmHWM");
    drop(writer.join().unwrap());
    let status = wait_limited(
        &mut child,
        std::time::Duration::from_secs(60),
        &launch.describe(),
    );
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let bound_kib = (4 * MAX_FRAME_BYTES as u64 + 32 * 1024 * 1024) / 1024;
    eprintln!(
        "wrap peak RSS: {peak_kib} KiB over {rounds} rounds ({} MiB from the client, about {} MiB from the upstream); bound {bound_kib} KiB",
        rounds * pad_bytes / (1024 * 1024),
        rounds * (2 * MAX_FRAME_BYTES + MAX_FRAME_BYTES * 2 / 3) / (1024 * 1024),
    );
    assert!(
        peak_kib <= bound_kib,
        "peak RSS {peak_kib} KiB exceeds {bound_kib} KiB"
    );
}

/// The values one frame may hold by default (`[server] max_frame_values`).
const DEFAULT_MAX_FRAME_VALUES: usize = 16_384;

/// Objects of one member nested 30 deep: the costliest shape per value
/// once a frame's tree is copied into `serde_json` maps (one map node per
/// object), 31 values in 160 bytes.
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

/// What one wrap session of `frames` (after the handshake, before a last
/// ping) did: the peak resident set in KiB, read once every id in `until`
/// is answered, the string ids answered (each with whether it was a
/// result rather than an error), the exit status and stderr.
struct Dense {
    peak_kib: u64,
    answers: BTreeMap<String, bool>,
    status: std::process::ExitStatus,
    stderr: String,
}

fn dense_session(frames: Vec<String>, until: &[&str]) -> Dense {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("wrap.toml");
    std::fs::write(
        &policy,
        format!(
            "[server]\nname = \"m\"\non_invalid = \"keep-open\"\nmax_frame_bytes = {MAX_FRAME_BYTES}\n\n[wrap]\nrequest_timeout_ms = 1000\n"
        ),
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wrap_fixtures/upstream.py");
    let launch = Launch::new(
        dir.path(),
        &[
            "wrap",
            "--log-level",
            "error",
            "--policy",
            policy.to_str().unwrap(),
            "--",
            "python3",
            script.to_str().unwrap(),
            "dense",
        ],
    )
    .env("DENSE_BYTES", &MAX_FRAME_BYTES.to_string())
    .env("DENSE_VALUES", &DEFAULT_MAX_FRAME_VALUES.to_string());
    let mut child = launch.spawn();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let stderr = drain(child.stderr.take().unwrap());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let writer = thread::spawn(move || {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"m","version":"1"}}}"#;
        writeln!(stdin, "{init}").unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        for frame in frames {
            writeln!(stdin, "{frame}").unwrap();
        }
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":"last","method":"ping","params":{{}}}}"#
        )
        .unwrap();
        stdin
    });
    let mut answers = BTreeMap::new();
    let mut line = String::new();
    while !until
        .iter()
        .chain(&["last"])
        .all(|id| answers.contains_key(*id))
    {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "stdout ended after {answers:?}"
        );
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = message["id"].as_str() {
            answers.insert(id.to_owned(), message.get("error").is_none());
        }
    }
    let peak_kib = vm_hwm_kib(pid).expect("VmHWM");
    drop(writer.join().unwrap());
    let status = wait_limited(
        &mut child,
        std::time::Duration::from_secs(60),
        &launch.describe(),
    );
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    Dense {
        peak_kib,
        answers,
        status,
        stderr,
    }
}

/// Frames dense in small JSON values, both ways at once: the client sends
/// pings whose params fill the frame cap with `{"a":1}` objects and with
/// nested one-member objects (refused at the value limit, under
/// `keep-open`) and one holding exactly the limit (forwarded); the
/// upstream (`wrap_fixtures/upstream.py dense`) answers pings that ask for
/// it with lines of the same shapes (quarantined; those pings time out)
/// and one holding exactly the limit (forwarded). The peak resident set of
/// the release binary (`PORTCULLIS_BIN`) stays within
/// `4 × max_frame_bytes + 32 MiB`. A debug build's own code and data take
/// about 10 MiB more, so it is held to its own peak on a session of one
/// ping plus `4 × max_frame_bytes + 20 MiB`, what the bound leaves the
/// release binary over its own (about 12 MiB).
#[test]
fn peak_memory_with_value_dense_frames_both_ways_stays_within_the_bound() {
    let ping = |id: &str, params: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping","params":{params}}}"#)
    };
    // The frame's object, "2.0", the id, the method, `params` and "x".
    let envelope_values = 6;
    let room = MAX_FRAME_BYTES - 100;
    let frames = vec![
        ping(
            "objects",
            &format!(r#"{{"x":{}}}"#, filled(r#"{"a":1}"#, room)),
        ),
        ping("chains", &format!(r#"{{"x":{}}}"#, filled(&chain(), room))),
        ping(
            "at-limit",
            &format!(
                r#"{{"x":{}}}"#,
                exactly(DEFAULT_MAX_FRAME_VALUES - envelope_values)
            ),
        ),
        ping("answer-objects", r#"{"answer":"objects"}"#),
        ping("answer-chains", r#"{"answer":"chains"}"#),
        ping("answer-at-limit", r#"{"answer":"limit"}"#),
    ];
    for frame in &frames {
        assert!(frame.len() <= MAX_FRAME_BYTES, "{}", frame.len());
    }
    // Forwarded and answered: the frames at the limit, both ways; the
    // pings whose answers were quarantined time out with an error. The
    // client's frames past the limit are refused before their id is read,
    // so under keep-open nothing answers them.
    let expected: BTreeMap<String, bool> = [
        ("at-limit", true),
        ("answer-at-limit", true),
        ("answer-objects", false),
        ("answer-chains", false),
        ("last", true),
    ]
    .into_iter()
    .map(|(id, ok)| (id.to_owned(), ok))
    .collect();
    let documented_kib = (4 * MAX_FRAME_BYTES as u64 + 32 * 1024 * 1024) / 1024;
    let bound_kib = if std::env::var_os("PORTCULLIS_BIN").is_some() {
        documented_kib
    } else {
        let own = dense_session(Vec::new(), &[]).peak_kib;
        own + (4 * MAX_FRAME_BYTES as u64 + 20 * 1024 * 1024) / 1024
    };
    let until: Vec<&str> = expected.keys().map(String::as_str).collect();
    let run = dense_session(frames, &until);
    let (peak_kib, stderr) = (run.peak_kib, &run.stderr);
    eprintln!(
        "wrap peak RSS with value-dense frames: {peak_kib} KiB; bound {bound_kib} KiB; answers {:?}",
        run.answers
    );
    assert!(
        peak_kib <= bound_kib,
        "peak RSS {peak_kib} KiB exceeds the bound of {bound_kib} KiB (4 x max_frame_bytes + 32 MiB = {documented_kib} KiB)"
    );
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert_eq!(run.answers, expected, "{stderr}");
}
