//! JSONTestSuite conformance of the strict JSON profile.
//!
//! Reads the corpus from `$JSONTESTSUITE_DIR/test_parsing/` and the
//! strictness table from `STRICTNESS.md`. Every `n_` case must be rejected,
//! every `y_` case accepted unless the table lists it with a reason, and every
//! `i_` case must be recorded in the table. Listed decisions must match what
//! the parser does, and every listed file must exist.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use portcullis_wire::{Limits, strict_json, utf8};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Accept,
    Reject,
}

impl Decision {
    fn as_str(self) -> &'static str {
        match self {
            Decision::Accept => "accept",
            Decision::Reject => "reject",
        }
    }
}

/// `file -> (decision, reason)` from the markdown table in STRICTNESS.md.
fn strictness_table() -> BTreeMap<String, (Decision, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("STRICTNESS.md");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut table = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let file = cells[0];
        if file == "file" || file.starts_with('-') {
            continue;
        }
        assert_eq!(
            cells.len(),
            3,
            "STRICTNESS.md line {}: expected `| file | decision | reason |`",
            number + 1
        );
        let decision = match cells[1] {
            "accept" => Decision::Accept,
            "reject" => Decision::Reject,
            other => panic!(
                "STRICTNESS.md line {}: decision must be accept or reject, got {other:?}",
                number + 1
            ),
        };
        assert!(
            !cells[2].is_empty(),
            "STRICTNESS.md line {}: {file} has no reason",
            number + 1
        );
        let previous = table.insert(file.to_owned(), (decision, cells[2].to_owned()));
        assert!(
            previous.is_none(),
            "STRICTNESS.md lists {file} more than once"
        );
    }
    table
}

fn corpus_dir() -> Option<PathBuf> {
    let Some(root) = std::env::var_os("JSONTESTSUITE_DIR").filter(|v| !v.is_empty()) else {
        say(format_args!(
            "jsontestsuite: SKIPPED: JSONTESTSUITE_DIR is not set"
        ));
        return None;
    };
    let dir = PathBuf::from(root).join("test_parsing");
    if !dir.is_dir() {
        say(format_args!(
            "jsontestsuite: SKIPPED: {} is not a directory",
            dir.display()
        ));
        return None;
    }
    Some(dir)
}

fn decide(bytes: &[u8]) -> Decision {
    let value =
        utf8::decode(bytes).and_then(|text| strict_json::parse_value(text, &Limits::default()));
    // The borrowed reader (what the envelope uses for `params`) must decide
    // every case alike and read the same value.
    let borrowed = utf8::decode(bytes)
        .and_then(|text| strict_json::parse_json(text, &Limits::default()))
        .map(portcullis_wire::Json::into_value);
    assert_eq!(
        value.as_ref().ok(),
        borrowed.as_ref().ok(),
        "parse_value and parse_json disagree on {:?}",
        String::from_utf8_lossy(bytes)
    );
    // The reference reading through serde_json decides every case alike.
    let reference = utf8::decode(bytes)
        .and_then(|text| strict_json::reference::parse_value(text, &Limits::default()));
    assert_eq!(
        value.as_ref().ok(),
        reference.as_ref().ok(),
        "the reader and the reference disagree on {:?}",
        String::from_utf8_lossy(bytes)
    );
    match value {
        Ok(_) => Decision::Accept,
        Err(_) => Decision::Reject,
    }
}

#[test]
fn jsontestsuite_conformance() {
    let table = strictness_table();
    let Some(dir) = corpus_dir() else {
        return;
    };
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").file_name())
        .filter_map(|name| name.into_string().ok())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "{} holds no .json files", dir.display());

    let mut failures = Vec::new();
    let (mut y_accepted, mut y_refused, mut n_rejected, mut i_recorded) = (0, 0, 0, 0);
    for name in &names {
        let bytes = std::fs::read(dir.join(name)).expect("read corpus file");
        let actual = decide(&bytes);
        let listed = table.get(name.as_str());
        if let Some((expected, _)) = listed
            && *expected != actual
        {
            failures.push(format!(
                "{name}: STRICTNESS.md says {}, parser does {}",
                expected.as_str(),
                actual.as_str()
            ));
            continue;
        }
        match name.as_bytes().first() {
            Some(b'n') => {
                if actual == Decision::Accept {
                    failures.push(format!("{name}: n_ case accepted"));
                } else if listed.is_some() {
                    failures.push(format!("{name}: n_ cases must not be listed"));
                } else {
                    n_rejected += 1;
                }
            }
            Some(b'y') => match (actual, listed) {
                (Decision::Accept, _) => y_accepted += 1,
                (Decision::Reject, Some(_)) => y_refused += 1,
                (Decision::Reject, None) => failures.push(format!(
                    "{name}: y_ case rejected but not listed in STRICTNESS.md"
                )),
            },
            Some(b'i') => {
                if listed.is_some() {
                    i_recorded += 1;
                } else {
                    failures.push(format!(
                        "{name}: i_ case ({}) not recorded in STRICTNESS.md",
                        actual.as_str()
                    ));
                }
            }
            _ => failures.push(format!("{name}: unknown case prefix")),
        }
    }
    for listed in table.keys() {
        if names.binary_search(listed).is_err() {
            failures.push(format!(
                "{listed}: listed in STRICTNESS.md but not in the corpus"
            ));
        }
    }
    say(format_args!(
        "jsontestsuite: {y_accepted} y accepted, {y_refused} y refused by profile, \
         {n_rejected} n rejected, {i_recorded} i recorded"
    ));
    assert!(
        failures.is_empty(),
        "{} conformance failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Written past the test harness's output capture, so the summary shows in
/// CI logs even when the test passes.
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}
