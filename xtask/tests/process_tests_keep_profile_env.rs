//! The process tests launch the `portcullis` binary with a cleared
//! environment. Under `cargo xtask coverage` that binary is instrumented and
//! writes its profile where `LLVM_PROFILE_FILE` says; a launch that drops
//! the variable leaves the binary's own lines uncounted (they would show as
//! never run), so every `env_clear()` in `crates/cli/tests` must pass the
//! profile variables on (`common::profile_env()`).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Each `.env_clear()` call in `source` whose statement (up to the next
/// `;`) never adds the profile variables back, by line number.
fn launches_without_profile_env(source: &str) -> Vec<usize> {
    source
        .match_indices(".env_clear()")
        .filter(|(at, _)| {
            let rest = &source[*at..];
            let statement = rest.find(';').map_or(rest, |end| &rest[..end]);
            !statement.contains("profile_env()")
        })
        .map(|(at, _)| source[..at].lines().count())
        .collect()
}

#[test]
fn a_launch_that_drops_the_profile_variables_is_found() {
    let kept =
        "cmd.env_clear()\n    .env(\"PATH\", p)\n    .envs(common::profile_env())\n    .spawn();\n";
    assert!(launches_without_profile_env(kept).is_empty());
    let dropped = "let a = 1;\ncmd.env_clear()\n    .env(\"PATH\", p)\n    .spawn();\nx.envs(profile_env());\n";
    assert_eq!(launches_without_profile_env(dropped), [2]);
}

#[test]
fn every_process_test_launch_keeps_the_coverage_profile_variables() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    rust_files(&root.join("crates/cli/tests"), &mut files);
    files.sort();
    let mut clearing = 0;
    let mut missing = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a test source");
        clearing += source.matches(".env_clear()").count();
        for line in launches_without_profile_env(&source) {
            missing.push(format!("{}:{line}", file.display()));
        }
    }
    assert!(
        clearing > 0,
        "no process test clears its child's environment any more: drop this test"
    );
    assert!(
        missing.is_empty(),
        "these launches clear the environment without `common::profile_env()`, so \
         `cargo xtask coverage` cannot count the binary's lines they run: {missing:?}"
    );
}
