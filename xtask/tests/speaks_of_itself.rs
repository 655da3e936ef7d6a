//! The repository speaks of itself alone: no document, comment, test or
//! sidecar refers to the history of the work (numbered work sessions, "this
//! morning", who did what), and measurements with their dates and commits
//! live only in the generated evidence (`docs/evidence.md` and its data,
//! `docs/evidence/history.jsonl`), where `cargo xtask evidence` puts them.

use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the workspace root")
}

/// Files in the repository, tracked or about to be (untracked but not
/// ignored), from the root.
fn files() -> Vec<String> {
    let out = Command::new("git")
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .current_dir(root())
        .output()
        .expect("run git ls-files");
    assert!(
        out.status.success(),
        "git ls-files failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8 paths")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Where dates and commits belong, and inputs that are bytes rather than text.
fn exempt(path: &str) -> bool {
    path == "docs/evidence.md"
        || path.starts_with("docs/evidence/")
        || path.starts_with("corpus/")
        || path.ends_with(".bin")
        || path.ends_with("Cargo.lock")
        || path == "xtask/tests/speaks_of_itself.rs"
}

/// Phrases that only a notebook of the work would hold.
fn history_phrases() -> Regex {
    let ordinal =
        "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|[0-9]+(?:st|nd|rd|th)";
    Regex::new(&format!(
        r"(?i)\b(?:this|that) (?:morning|afternoon|evening)\b|\bearlier (?:today|that day)\b|\byesterday\b|\bthe lead\b|\bsittings?\b|\((?:{ordinal}) session\)|\b(?:in|at|of|from) the (?:{ordinal}) (?:session|stop)\b|\b(?:work )?session [0-9]+\b|\bstop[ -][0-9]+\b"
    ))
    .expect("a valid pattern")
}

/// A calendar date (not an MCP revision, a timestamp or a quoted example).
fn dates() -> Regex {
    Regex::new(r#"(^|[^"0-9])(20[0-9]{2}-[01][0-9]-[0-3][0-9])($|[^T0-9])"#)
        .expect("a valid pattern")
}

/// The MCP revisions are names, not dates of work.
const REVISIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const MODERN_REVISION: &str = "2026-07-28";

/// A short commit hash: 7 to 12 hex digits with both a digit and a letter.
fn commit_like(word: &str) -> bool {
    (7..=12).contains(&word.len())
        && word
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_alphabetic())
        && word != "ed25519"
}

/// The line with every `code span` blanked out.
fn outside_code_spans(line: &str) -> String {
    line.split('`')
        .enumerate()
        .map(|(i, part)| if i % 2 == 0 { part } else { "" })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn no_file_refers_to_the_history_of_the_work() {
    let phrases = history_phrases();
    let dates = dates();
    let mut found = Vec::new();
    let mut read = 0;
    for path in files().into_iter().filter(|p| !exempt(p)) {
        let Ok(text) = std::fs::read_to_string(root().join(&path)) else {
            continue; // deleted in the work tree, or not text
        };
        read += 1;
        let prose = path.ends_with(".md") || path.starts_with("regressions/");
        for (index, line) in text.lines().enumerate() {
            let at = format!("{path}:{}", index + 1);
            if let Some(m) = phrases.find(line) {
                found.push(format!("{at}: {:?} in {line:?}", m.as_str()));
            }
            if !prose {
                continue;
            }
            // A date in a code span is an example of a format, not a record.
            for caps in dates.captures_iter(&outside_code_spans(line)) {
                let date = &caps[2];
                let sidecar_found = path.ends_with(".toml") && line.starts_with("found = ");
                if !REVISIONS.contains(&date) && date != MODERN_REVISION && !sidecar_found {
                    found.push(format!("{at}: the date {date} in {line:?}"));
                }
            }
            // Hyphens join: a UUID or a slug is one word, not a commit.
            for word in line.split(|c: char| !c.is_ascii_alphanumeric() && c != '-') {
                if commit_like(word) {
                    found.push(format!("{at}: {word:?} looks like a commit in {line:?}"));
                }
            }
        }
    }
    assert!(
        read > 100,
        "only {read} files read: is git ls-files working here?"
    );
    assert!(
        found.is_empty(),
        "the history of the work belongs in generated evidence (cargo xtask evidence), not here:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_patterns_catch_what_they_are_for() {
    let phrases = history_phrases();
    for hit in [
        "Measured again in full (sixth session) at",
        "that morning the figure was",
        "a note by the lead",
        "numbered work sittings",
        "as in stop 24",
        "stop-23 run",
        "earlier that day",
    ] {
        assert!(phrases.is_match(hit), "{hit:?} should be caught");
    }
    for miss in [
        "A second session appends to the same file.",
        "the tools of the session's first complete tools/list",
        "the leader of the process group",
        "stop reading on the first invalid frame",
        "in this session",
    ] {
        assert!(!phrases.is_match(miss), "{miss:?} should pass");
    }
    let dates = dates();
    assert!(dates.is_match("measured on 2026-12-03 at"));
    assert!(!dates.is_match("time 2025-11-30T01:26:00.123Z"));
    assert!(!dates.is_match(r#"found = "2026-11-30""#));
    assert!(!dates.is_match(&outside_code_spans("a full date, e.g. `2026-01-31`")));
    assert!(dates.is_match(&outside_code_spans("`cargo xtask bench` on 2026-12-03")));
    assert!(commit_like("793ae12") && commit_like("1c9f14e"));
    assert!(
        !commit_like("ed25519") && !commit_like("deadbeefcafe00112233") && !commit_like("1234567")
    );
}
