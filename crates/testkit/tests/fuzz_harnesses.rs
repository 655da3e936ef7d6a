//! Every fuzz harness in plain `cargo test`: first the checked-in corpus
//! (`corpus/<target>/`) and the regressions (`regressions/<target>/`), then
//! bolero's random inputs for a bounded number of iterations.

use std::path::Path;

use portcullis_testkit::harness;
use portcullis_testkit::regressions::workspace_root;

fn replay_dir(target: &str, dir: &Path, run: fn(&[u8])) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "toml"))
        .collect();
    files.sort();
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let result = std::panic::catch_unwind(|| run(&bytes));
        if let Err(panic) = result {
            std::panic::resume_unwind(Box::new(format!(
                "{target}: {} fails its harness: {}",
                path.display(),
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            )));
        }
    }
    files.len()
}

/// Random inputs per harness: 2000, unless `PORTCULLIS_FUZZ_HARNESS_ITERATIONS`
/// says otherwise. `.cargo/mutants.toml` lowers it, because cargo-mutants runs
/// this file once per mutant and the corpus replay above already runs in full.
fn random_iterations() -> usize {
    std::env::var("PORTCULLIS_FUZZ_HARNESS_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000)
}

fn check(target: &str) {
    let run = harness::by_name(target).expect("known target");
    let root = workspace_root();
    let seeds = replay_dir(target, &root.join("corpus").join(target), run)
        + replay_dir(target, &root.join("regressions").join(target), run);
    assert!(
        seeds > 0,
        "{target}: no checked-in corpus or regression inputs"
    );
    bolero::check!()
        .with_iterations(random_iterations())
        .with_max_len(4096)
        .for_each(|input: &[u8]| run(input));
}

#[test]
fn stdin_bytes() {
    check("stdin_bytes");
}

#[test]
fn session_model() {
    check("session_model");
}

#[test]
fn chunking() {
    check("chunking");
}

#[test]
fn stdout_frames() {
    check("stdout_frames");
}

#[test]
fn strict_json() {
    check("strict_json");
}

#[test]
fn authz_expansion() {
    check("authz_expansion");
}

#[test]
fn schema_nesting() {
    check("schema_nesting");
}

#[test]
fn wrap_session() {
    check("wrap_session");
}

#[test]
fn policy_load() {
    check("policy_load");
}

#[test]
fn transcript_check() {
    check("transcript_check");
}
