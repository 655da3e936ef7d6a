//! Replays the checked-in seeds of fuzz targets — `corpus/<target>/` and the
//! `.bin` inputs of `regressions/<target>/` — through their harnesses, each
//! input once, on the stable toolchain. `cargo xtask coverage` runs it under
//! cargo-llvm-cov to measure what the corpus alone exercises (the bolero
//! iterations of `tests/fuzz_harnesses.rs` would add random inputs to that).
//!
//! `cargo run -p portcullis-testkit --example replay_corpus -- [TARGET...]`
//! replays every fuzz target when none is named and exits nonzero, naming the
//! input, when one fails its harness.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use portcullis_testkit::harness;
use portcullis_testkit::regressions::workspace_root;

/// The seed files of `target`, sorted: its corpus, then its regressions.
fn seeds(root: &Path, target: &str) -> Vec<PathBuf> {
    let files_of = |dir: PathBuf, keep: fn(&Path) -> bool| {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && keep(p))
            .collect();
        files.sort();
        files
    };
    let mut all = files_of(root.join("corpus").join(target), |_| true);
    all.extend(files_of(root.join("regressions").join(target), |p| {
        p.extension().is_some_and(|e| e == "bin")
    }));
    all
}

fn main() -> ExitCode {
    let root = workspace_root();
    let requested: Vec<String> = std::env::args().skip(1).collect();
    let targets: Vec<&str> = if requested.is_empty() {
        harness::TARGETS.iter().map(|(name, _)| *name).collect()
    } else {
        requested.iter().map(String::as_str).collect()
    };
    for target in targets {
        let Some(run) = harness::TARGETS
            .iter()
            .find(|(name, _)| *name == target)
            .map(|(_, run)| *run)
        else {
            let known: Vec<&str> = harness::TARGETS.iter().map(|(n, _)| *n).collect();
            eprintln!(
                "unknown fuzz target {target:?}; known: {}",
                known.join(", ")
            );
            return ExitCode::FAILURE;
        };
        let files = seeds(&root, target);
        for path in &files {
            let bytes = match std::fs::read(path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    eprintln!("{}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
            };
            if std::panic::catch_unwind(|| run(&bytes)).is_err() {
                eprintln!("{target}: {} fails its harness", path.display());
                return ExitCode::FAILURE;
            }
        }
        eprintln!("{target}: replayed {} inputs", files.len());
    }
    ExitCode::SUCCESS
}
