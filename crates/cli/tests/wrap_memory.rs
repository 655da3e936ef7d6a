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

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::thread;

use common::{Launch, drain, wait_limited};

const MAX_FRAME_BYTES: usize = 1024 * 1024;
const RELEASE_TRAFFIC: usize = 256 * 1024 * 1024;
const DEBUG_TRAFFIC: usize = 24 * 1024 * 1024;

fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

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
    let peak_kib = vm_hwm_kib(pid);
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
