//! The bugbench report: `bugbench.json` for machines, `bugbench.md` (a
//! summary per stage, then a table of bug × `cargo test` × seconds to the
//! first failure per fuzz target) for people and for the nightly report.

use std::collections::BTreeMap;

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
    /// Every package some `cargo test` run tested (`-p ...`).
    pub test_packages: Vec<String>,
    /// Per stage, the `cargo test` commands each of its bugs ran.
    #[serde(default)]
    pub test_plan: BTreeMap<String, Vec<String>>,
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
    /// The crates the patch changes.
    #[serde(default)]
    pub crates: Vec<String>,
    /// The fuzz targets that reach the patched code (none: judged by
    /// `cargo test` alone).
    #[serde(default)]
    pub targets: Vec<String>,
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

    /// Escaped `cargo test`, or every fuzz target it ran (a bug no target
    /// reaches, or a run without fuzzing, is judged by `cargo test` alone).
    pub fn escaped(&self) -> bool {
        !self.cargo_test.caught || (!self.fuzz.is_empty() && !self.caught_by_fuzzing())
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
    /// The `cargo test` commands run (`test --no-fail-fast -p ...`).
    #[serde(default)]
    pub commands: Vec<String>,
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

/// One stage's bugs: how many, which crates they patch, and what caught them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StageSummary {
    pub bugs: usize,
    pub crates: Vec<String>,
    pub by_tests: usize,
    /// Bugs some fuzz target reaches, and how many of them fuzzing caught.
    pub fuzzed: usize,
    pub by_fuzzing: usize,
}

/// Per stage, in the order stages first appear among the bugs.
pub fn by_stage(bugs: &[BugResult]) -> Vec<(String, StageSummary)> {
    let mut stages: Vec<(String, StageSummary)> = Vec::new();
    for bug in bugs {
        let at = match stages.iter().position(|(s, _)| *s == bug.stage) {
            Some(at) => at,
            None => {
                stages.push((bug.stage.clone(), StageSummary::default()));
                stages.len() - 1
            }
        };
        let summary = &mut stages[at].1;
        summary.bugs += 1;
        for krate in &bug.crates {
            if !summary.crates.contains(krate) {
                summary.crates.push(krate.clone());
            }
        }
        summary.by_tests += usize::from(bug.cargo_test.caught);
        if !bug.fuzz.is_empty() {
            summary.fuzzed += 1;
            summary.by_fuzzing += usize::from(bug.caught_by_fuzzing());
        }
    }
    stages
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
        "- **Result:** {verdict}\n- **Commit:** {}; started {}; total wall time {}\n- **cargo test:** {}; **fuzzing:** sanitizer {}, from `corpus/<target>` (and `regressions/<target>`), cap {} per target\n\n",
        report.commit,
        report.started,
        format_secs(report.total_secs.round() as u64),
        if report.test_plan.is_empty() {
            format!("`-p {}`", report.test_packages.join(" -p "))
        } else {
            "the runs of each bug's stage (below)".to_owned()
        },
        report.sanitizer,
        format_secs(report.cap_secs),
    ));
    md.push_str("| stage | crates | bugs | caught by `cargo test` | caught by fuzzing | `cargo test` runs |\n|---|---|---:|---:|---:|---|\n");
    for (stage, s) in by_stage(&report.bugs) {
        let crates: Vec<String> = s.crates.iter().map(|c| format!("`{c}`")).collect();
        let runs: Vec<String> = report
            .test_plan
            .get(&stage)
            .into_iter()
            .flatten()
            .map(|c| format!("`cargo {c}`"))
            .collect();
        md.push_str(&format!(
            "| {stage} | {} | {} | {} | {} | {} |\n",
            if crates.is_empty() {
                "–".to_owned()
            } else {
                crates.join(", ")
            },
            s.bugs,
            s.by_tests,
            if s.fuzzed == 0 {
                "no target reaches it".to_owned()
            } else {
                format!("{} of {}", s.by_fuzzing, s.fuzzed)
            },
            if runs.is_empty() {
                "–".to_owned()
            } else {
                runs.join(", ")
            },
        ));
    }
    md.push('\n');
    md.push_str("Seconds until each fuzz target first fails (**bold**: caught; `·`: not run, the target does not reach the code; a bug no target reaches is judged by `cargo test` alone).\n\n");
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
            crates: vec!["wire".to_owned()],
            targets: fuzzing.iter().map(|f| f.target.clone()).collect(),
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
                commands: vec!["test --no-fail-fast -p portcullis-wire".to_owned()],
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
            test_plan: BTreeMap::from([(
                "strict-json".to_owned(),
                vec!["test --no-fail-fast -p portcullis-wire".to_owned()],
            )]),
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

    fn audit(name: &str, test_caught: bool) -> BugResult {
        BugResult {
            stage: "audit".to_owned(),
            crates: vec!["cli".to_owned()],
            targets: Vec::new(),
            ..bug(name, test_caught, Vec::new())
        }
    }

    #[test]
    fn a_bug_no_target_reaches_is_judged_by_cargo_test_alone() {
        assert!(!audit("caught", true).escaped());
        assert!(audit("quiet", false).escaped());
        let r = report(vec![audit("caught", true)]);
        assert!(r.ok);
        let md = render_markdown(&r);
        assert!(md.contains("✅ all 1 planted bugs caught"), "{md}");
        assert!(
            md.contains("| audit | `cli` | 1 | 1 | no target reaches it | – |"),
            "{md}"
        );
        // A fuzzed bug that every target missed still escapes.
        assert!(bug("slippery", true, vec![fuzz("strict_json", false, 120.0)]).escaped());
    }

    #[test]
    fn each_stage_is_summed_up_with_its_crates_and_test_runs() {
        let r = report(vec![
            bug("a", true, vec![fuzz("strict_json", true, 1.0)]),
            bug("b", true, vec![fuzz("strict_json", false, 120.0)]),
            audit("c", true),
            audit("d", false),
        ]);
        let stages = by_stage(&r.bugs);
        assert_eq!(stages.len(), 2);
        assert_eq!(stages[0].0, "strict-json");
        assert_eq!(
            stages[0].1,
            StageSummary {
                bugs: 2,
                crates: vec!["wire".to_owned()],
                by_tests: 2,
                fuzzed: 2,
                by_fuzzing: 1,
            }
        );
        assert_eq!(
            (stages[1].1.bugs, stages[1].1.by_tests, stages[1].1.fuzzed),
            (2, 1, 0)
        );
        let md = render_markdown(&r);
        assert!(
            md.contains(
                "| strict-json | `wire` | 2 | 2 | 1 of 2 | `cargo test --no-fail-fast -p portcullis-wire` |"
            ),
            "{md}"
        );
        assert!(
            md.contains("**cargo test:** the runs of each bug's stage"),
            "{md}"
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["bugs"][2]["crates"][0], "cli");
        assert_eq!(
            json["test_plan"]["strict-json"][0],
            "test --no-fail-fast -p portcullis-wire"
        );
    }

    #[test]
    fn a_report_written_before_stages_had_test_runs_still_reads() {
        let old = r#"{"started":"s","commit":"c","cap_secs":120,"sanitizer":"none",
            "test_packages":["portcullis-wire"],"targets":["chunking"],"total_secs":1.0,"ok":true,
            "bugs":[{"name":"n","stage":"framing","class":"c","summary":"s",
              "cargo_test":{"caught":true,"status":"failed","failed_tests":[],"secs":1.0,"log":""},
              "fuzz_build_secs":1.0,"fuzz":[{"target":"chunking","caught":true,"secs":0.5,"status":"crashed","log":""}]}]}"#;
        let report: BenchReport = serde_json::from_str(old).unwrap();
        assert!(report.bugs[0].crates.is_empty() && report.test_plan.is_empty());
        let md = render_markdown(&report);
        assert!(md.contains("**cargo test:** `-p portcullis-wire`"), "{md}");
        assert!(md.contains("| framing | – | 1 | 1 | 1 of 1 | – |"), "{md}");
    }
}
