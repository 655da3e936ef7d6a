//! The bugbench report: `bugbench.json` for machines, `bugbench.md` (a
//! table of bug × `cargo test` × seconds to the first failure per fuzz
//! target) for people and for the nightly report.

use serde::{Deserialize, Serialize};

use crate::budget::format_secs;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchReport {
    /// When the run started (UTC).
    pub started: String,
    /// The commit the scratch worktree was made from.
    pub commit: String,
    /// Fuzzing cap per target and bug, in seconds.
    pub cap_secs: u64,
    pub sanitizer: String,
    /// The packages `cargo test` ran (`-p ...`).
    pub test_packages: Vec<String>,
    /// Every fuzz target in the table's columns, in manifest order.
    pub targets: Vec<String>,
    pub bugs: Vec<BugResult>,
    pub total_secs: f64,
    /// Every bug caught by `cargo test` and by at least one fuzz target.
    pub ok: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BugResult {
    pub name: String,
    pub stage: String,
    pub class: String,
    pub summary: String,
    pub cargo_test: TestResult,
    /// Building the fuzz targets with the bug in, in seconds.
    pub fuzz_build_secs: f64,
    pub fuzz: Vec<FuzzResult>,
    /// Set when the bug could not be benchmarked (e.g. the fuzz build failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl BugResult {
    pub fn caught_by_fuzzing(&self) -> bool {
        self.fuzz.iter().any(|f| f.caught)
    }

    /// Escaped `cargo test` or every fuzz target it ran.
    pub fn escaped(&self) -> bool {
        !self.cargo_test.caught || !self.caught_by_fuzzing()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestResult {
    /// `cargo test` failed (a test failed or the tests no longer build).
    pub caught: bool,
    /// `failed`, `passed` or `build-failed`.
    pub status: String,
    /// `<test binary>::<test name>` of every failed test, and
    /// `<test binary> (exited: ...)` for a binary that failed without naming one.
    pub failed_tests: Vec<String>,
    pub secs: f64,
    pub log: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FuzzResult {
    pub target: String,
    /// The target failed (crash, timeout, OOM) within the cap.
    pub caught: bool,
    /// Seconds from the start of the run (corpus loading included) to the
    /// first failure; the time run when nothing failed.
    pub secs: f64,
    /// `crashed`, `ok` (ran the whole cap) or `error`.
    pub status: String,
    /// The first line of the failure, from the minimized candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    pub log: String,
}

fn cell(result: Option<&FuzzResult>, cap: u64) -> String {
    match result {
        None => "·".to_owned(),
        Some(f) if f.caught => format!("**{:.1}s**", f.secs),
        Some(f) if f.status == "error" => "error".to_owned(),
        Some(_) => format!("> {}", format_secs(cap)),
    }
}

fn escape_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Renders the Markdown table and, per bug, what failed.
pub fn render_markdown(report: &BenchReport) -> String {
    let mut md = String::new();
    let escaped: Vec<&str> = report
        .bugs
        .iter()
        .filter(|b| b.escaped())
        .map(|b| b.name.as_str())
        .collect();
    let verdict = if escaped.is_empty() {
        format!(
            "✅ all {} planted bugs caught by `cargo test` and by a fuzz target within {}",
            report.bugs.len(),
            format_secs(report.cap_secs)
        )
    } else {
        format!("❌ escaped: {}", escaped.join(", "))
    };
    md.push_str("## Planted bugs (bugbench)\n\n");
    md.push_str(&format!(
        "- **Result:** {verdict}\n- **Commit:** {}; started {}; total wall time {}\n- **cargo test:** `-p {}`; **fuzzing:** sanitizer {}, from `corpus/<target>` (and `regressions/<target>`), cap {} per target\n\n",
        report.commit,
        report.started,
        format_secs(report.total_secs.round() as u64),
        report.test_packages.join(" -p "),
        report.sanitizer,
        format_secs(report.cap_secs),
    ));
    md.push_str("Seconds until each fuzz target first fails (**bold**: caught; `·`: not run, the target does not reach the code).\n\n");
    md.push_str("| bug | stage | cargo test |");
    for t in &report.targets {
        md.push_str(&format!(" `{t}` |"));
    }
    md.push_str("\n|---|---|---|");
    for _ in &report.targets {
        md.push_str("---:|");
    }
    md.push('\n');
    for bug in &report.bugs {
        let test = match bug.cargo_test.status.as_str() {
            "failed" => format!(
                "**caught** ({} failed, {:.0}s)",
                bug.cargo_test.failed_tests.len(),
                bug.cargo_test.secs
            ),
            "build-failed" => format!("**caught** (build fails, {:.0}s)", bug.cargo_test.secs),
            other => format!("ESCAPED ({other})"),
        };
        md.push_str(&format!("| `{}` | {} | {test} |", bug.name, bug.stage));
        for t in &report.targets {
            let result = bug.fuzz.iter().find(|f| &f.target == t);
            md.push_str(&format!(" {} |", cell(result, report.cap_secs)));
        }
        md.push('\n');
    }
    md.push_str("\n### What each bug is and what caught it\n\n");
    for bug in &report.bugs {
        md.push_str(&format!(
            "- `{}` ({}): {}. *Class:* {}.\n",
            bug.name,
            bug.stage,
            escape_cell(&bug.summary),
            escape_cell(&bug.class)
        ));
        if !bug.cargo_test.failed_tests.is_empty() {
            let shown: Vec<String> = bug
                .cargo_test
                .failed_tests
                .iter()
                .take(6)
                .map(|t| format!("`{t}`"))
                .collect();
            let more = bug.cargo_test.failed_tests.len().saturating_sub(6);
            md.push_str(&format!(
                "  - cargo test: {}{}\n",
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        for f in bug.fuzz.iter().filter(|f| f.caught) {
            if let Some(finding) = &f.finding {
                md.push_str(&format!(
                    "  - `{}` after {:.1}s: {}\n",
                    f.target,
                    f.secs,
                    escape_cell(finding)
                ));
            }
        }
        if let Some(e) = &bug.error {
            md.push_str(&format!("  - error: {}\n", escape_cell(e)));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fuzz(target: &str, caught: bool, secs: f64) -> FuzzResult {
        FuzzResult {
            target: target.to_owned(),
            caught,
            secs,
            status: if caught { "crashed" } else { "ok" }.to_owned(),
            finding: caught.then(|| "strict accepted what serde_json rejects".to_owned()),
            log: String::new(),
        }
    }

    fn bug(name: &str, test_caught: bool, fuzzing: Vec<FuzzResult>) -> BugResult {
        BugResult {
            name: name.to_owned(),
            stage: "strict-json".to_owned(),
            class: "parser differential".to_owned(),
            summary: "trailing | content accepted".to_owned(),
            cargo_test: TestResult {
                caught: test_caught,
                status: if test_caught { "failed" } else { "passed" }.to_owned(),
                failed_tests: if test_caught {
                    vec![
                        "properties::one".to_owned(),
                        "jsontestsuite::two".to_owned(),
                    ]
                } else {
                    Vec::new()
                },
                secs: 41.2,
                log: String::new(),
            },
            fuzz_build_secs: 90.0,
            fuzz: fuzzing,
            error: None,
        }
    }

    fn report(bugs: Vec<BugResult>) -> BenchReport {
        BenchReport {
            started: "2026-12-01T00:00:00Z".to_owned(),
            commit: "abc1234".to_owned(),
            cap_secs: 120,
            sanitizer: "address".to_owned(),
            test_packages: vec![
                "portcullis-wire".to_owned(),
                "portcullis-testkit".to_owned(),
            ],
            targets: vec![
                "stdin_bytes".to_owned(),
                "strict_json".to_owned(),
                "chunking".to_owned(),
            ],
            ok: bugs.iter().all(|b| !b.escaped()),
            bugs,
            total_secs: 600.0,
        }
    }

    #[test]
    fn a_row_per_bug_with_seconds_per_target_and_dots_for_targets_not_run() {
        let r = report(vec![bug(
            "trailing",
            true,
            vec![
                fuzz("stdin_bytes", false, 120.3),
                fuzz("strict_json", true, 2.04),
            ],
        )]);
        let md = render_markdown(&r);
        assert!(md.contains("✅ all 1 planted bugs caught"), "{md}");
        assert!(
            md.contains(
                "| `trailing` | strict-json | **caught** (2 failed, 41s) | > 2m | **2.0s** | · |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| bug | stage | cargo test | `stdin_bytes` | `strict_json` | `chunking` |"
            ),
            "{md}"
        );
        assert!(md.contains("trailing \\| content accepted"), "{md}");
        assert!(
            md.contains("`properties::one`, `jsontestsuite::two`"),
            "{md}"
        );
        assert!(
            md.contains("`strict_json` after 2.0s: strict accepted"),
            "{md}"
        );
    }

    #[test]
    fn a_bug_that_escapes_cargo_test_or_every_target_is_named() {
        let r = report(vec![
            bug("quiet", false, vec![fuzz("strict_json", true, 1.0)]),
            bug("slippery", true, vec![fuzz("strict_json", false, 120.0)]),
            bug("caught", true, vec![fuzz("strict_json", true, 1.0)]),
        ]);
        assert!(!r.ok);
        let md = render_markdown(&r);
        assert!(md.contains("❌ escaped: quiet, slippery"), "{md}");
        assert!(
            md.contains("| `quiet` | strict-json | ESCAPED (passed) |"),
            "{md}"
        );

        let json = serde_json::to_string(&r).unwrap();
        let back: BenchReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back.bugs[1].fuzz[0].secs, 120.0);
        assert!(back.bugs[2].error.is_none());
    }
}
