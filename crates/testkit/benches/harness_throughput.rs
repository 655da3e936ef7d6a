//! Harness throughput without libFuzzer: each fuzz target's harness run
//! over its checked-in corpus (`corpus/<target>/`) in a loop, in a plain
//! release build, printing inputs per second. This is the stable figure
//! behind the nightly's exec/s (which also pays for libFuzzer's mutation
//! and feature collection, and for the sanitizer when one is on).
//!
//! `cargo bench -p portcullis-testkit --bench harness_throughput [-- TARGET...] `
//! (`HARNESS_BENCH_SECS`, default 5, bounds each target's loop).

#![expect(
    clippy::print_stdout,
    reason = "a bench binary: the figures on stdout are its output"
)]

use std::path::Path;
use std::time::{Duration, Instant};

use portcullis_testkit::harness::TARGETS;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let secs: u64 = std::env::var("HARNESS_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    // `cargo bench` passes `--bench`; anything else names targets.
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    println!(
        "harness throughput over corpus/<target>/ ({secs}s per target, release, no libFuzzer)"
    );
    for (name, harness) in TARGETS {
        if !wanted.is_empty() && !wanted.iter().any(|w| w == name) {
            continue;
        }
        let dir = root.join("corpus").join(name);
        let mut inputs: Vec<Vec<u8>> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| std::fs::read(e.path()).ok())
                    .collect()
            })
            .unwrap_or_default();
        inputs.sort();
        if inputs.is_empty() {
            println!("{name:<16} no corpus in {}", dir.display());
            continue;
        }
        let bytes: usize = inputs.iter().map(Vec::len).sum();
        let budget = Duration::from_secs(secs);
        let started = Instant::now();
        let mut runs = 0u64;
        let mut passes = 0u64;
        while started.elapsed() < budget || passes == 0 {
            for input in &inputs {
                harness(input);
                runs += 1;
            }
            passes += 1;
        }
        let elapsed = started.elapsed().as_secs_f64();
        println!(
            "{name:<16} {:>9.0} inputs/s  ({} inputs, {} bytes, {passes} pass(es) in {elapsed:.1}s)",
            runs as f64 / elapsed,
            inputs.len(),
            bytes,
        );
    }
}
