//! One test walks `regressions/` and replays every input through its
//! harness, with a time bound and a memory bound per file. Adding a
//! `<name>.bin` with its `<name>.toml` sidecar needs no code change.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use portcullis_testkit::harness;
use portcullis_testkit::regressions::{EXTERNAL_REPLAYS, discover, workspace_root};

const TIME_BOUND: Duration = Duration::from_secs(20);
const MEMORY_BOUND_KIB: u64 = 512 * 1024;

/// Peak resident set of this process so far (Linux), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn every_regression_replays_within_bounds() {
    let root = workspace_root().join("regressions");
    let all = discover(&root);
    assert!(!all.is_empty(), "no regressions under {}", root.display());
    for regression in &all {
        if let Some((_, replayer)) = EXTERNAL_REPLAYS
            .iter()
            .find(|(folder, _)| *folder == regression.target)
        {
            assert!(
                !regression.sidecar.summary.is_empty() && !regression.sidecar.source.is_empty()
            );
            eprintln!(
                "regression {} is replayed by {replayer}",
                regression.path.display()
            );
            continue;
        }
        let run = harness::by_name(&regression.target).unwrap_or_else(|| {
            panic!(
                "{}: folder names no harness (known: {:?})",
                regression.path.display(),
                harness::TARGETS.iter().map(|(n, _)| *n).collect::<Vec<_>>()
            )
        });
        assert!(!regression.sidecar.summary.is_empty() && !regression.sidecar.source.is_empty());
        let bytes = std::fs::read(&regression.path).unwrap();
        let before = peak_rss_kib();
        let started = Instant::now();
        let (done, wait) = mpsc::channel();
        let name = regression.path.display().to_string();
        let worker = std::thread::spawn(move || {
            let result = std::panic::catch_unwind(|| run(&bytes));
            let _ = done.send(result.is_ok());
        });
        match wait.recv_timeout(TIME_BOUND) {
            Ok(true) => {}
            Ok(false) => {
                let _ = worker.join();
                panic!(
                    "{name} ({}) fails its harness again",
                    regression.sidecar.summary
                );
            }
            Err(_) => panic!("{name} exceeded the time bound of {TIME_BOUND:?}"),
        }
        let _ = worker.join();
        if let (Some(b), Some(a)) = (before, peak_rss_kib()) {
            assert!(
                a.saturating_sub(b) < MEMORY_BOUND_KIB,
                "{name} grew peak memory by {} KiB",
                a - b
            );
        }
        eprintln!("regression ok: {name} in {:?}", started.elapsed());
    }
    eprintln!("{} regressions replayed", all.len());
}
