//! `.ci/run` reruns the process tests against the release binary, the way a
//! user runs it, by naming each test file: a new file in `crates/cli/tests`
//! that it does not name would run only against the debug build.

use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn ci_reruns_every_process_test_against_the_release_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = std::fs::read_to_string(root.join(".ci/run")).expect(".ci/run");
    let words: Vec<&str> = script.split_whitespace().collect();
    let named: BTreeSet<&str> = words
        .windows(2)
        .filter(|pair| pair[0] == "--test")
        .map(|pair| pair[1])
        .collect();
    let files: BTreeSet<String> = std::fs::read_dir(root.join("crates/cli/tests"))
        .expect("crates/cli/tests")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .into_string()
                .expect("UTF-8")
        })
        .filter_map(|name| name.strip_suffix(".rs").map(str::to_owned))
        .collect();
    let missing: Vec<&String> = files
        .iter()
        .filter(|f| !named.contains(f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "crates/cli/tests files .ci/run never runs against the release binary: {missing:?}"
    );
    let stale: Vec<&&str> = named.iter().filter(|n| !files.contains(**n)).collect();
    assert!(
        stale.is_empty(),
        ".ci/run names test files that do not exist: {stale:?}"
    );
}
