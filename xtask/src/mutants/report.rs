//! `mutants.json` for machines and `mutants.md` for people: the score, the
//! counts (in all and per crate), and every survivor and timeout as
//! `file:line` with its mutation.

use std::fmt::Write as _;

use serde::Serialize;

use super::outcomes::{Outcomes, Tested, Verdict, by_file};

/// A mutant the committed exclusions leave out, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Excluded {
    pub name: String,
    pub package: String,
    pub reason: String,
}

/// One crate's share of the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrateCounts {
    pub package: String,
    /// What of it is mutated: the package, or the files in scope.
    pub scope: String,
    /// caught / (caught + missed); `None` when neither happened.
    pub score: Option<f64>,
    pub tested: usize,
    pub caught: usize,
    pub missed: usize,
    pub timeout: usize,
    pub unviable: usize,
    pub excluded: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// When the run started (UTC).
    pub started: String,
    pub cargo_mutants: String,
    /// `full`, or `diff` for mutants in code changed since `base`.
    pub mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// `k/n` when only one shard ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    pub packages: Vec<String>,
    /// `--file` globs the run was narrowed to (none: every file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// caught / (caught + missed); `None` when neither happened.
    pub score: Option<f64>,
    /// Mutants tested (every verdict).
    pub tested: usize,
    pub caught: usize,
    pub missed: usize,
    pub timeout: usize,
    pub unviable: usize,
    pub excluded: usize,
    /// The same counts per crate, in scope order (every crate in scope,
    /// tested or not).
    pub crates: Vec<CrateCounts>,
    /// What a reader of the figures should know (e.g. tests that skipped).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Mean build and test time per tested mutant, in seconds.
    pub mean_build_secs: f64,
    pub mean_test_secs: f64,
    /// Wall time of the whole run.
    pub total_secs: f64,
    /// The missed mutants: each one needs a test or an exclusion.
    pub survivors: Vec<Tested>,
    pub timeouts: Vec<Tested>,
    pub excluded_mutants: Vec<Excluded>,
    /// No survivors.
    pub ok: bool,
}

/// What the run was, beside its outcomes.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    pub started: String,
    pub mode: String,
    pub base: Option<String>,
    pub shard: Option<String>,
    pub packages: Vec<String>,
    /// Each package's scope in words (see `scope::describe`), beside `packages`.
    pub scopes: Vec<String>,
    pub files: Vec<String>,
    pub notes: Vec<String>,
    pub total_secs: f64,
}

/// The counts of one package's mutants.
fn crate_counts(
    package: &str,
    scope: &str,
    outcomes: &Outcomes,
    excluded: &[Excluded],
) -> CrateCounts {
    let of = |verdict: Verdict| {
        outcomes
            .with(verdict)
            .filter(|m| m.mutant.package == package)
            .count()
    };
    let (caught, missed) = (of(Verdict::CaughtMutant), of(Verdict::MissedMutant));
    CrateCounts {
        package: package.to_owned(),
        scope: scope.to_owned(),
        score: score(caught, missed),
        tested: outcomes
            .mutants
            .iter()
            .filter(|m| m.mutant.package == package)
            .count(),
        caught,
        missed,
        timeout: of(Verdict::Timeout),
        unviable: of(Verdict::Unviable),
        excluded: excluded.iter().filter(|e| e.package == package).count(),
    }
}

pub fn build(info: RunInfo, outcomes: &Outcomes, excluded: Vec<Excluded>) -> Report {
    let caught = outcomes.count(Verdict::CaughtMutant);
    let missed = outcomes.count(Verdict::MissedMutant);
    let tested = outcomes.mutants.len();
    let mean = |f: fn(&Tested) -> f64| {
        if tested == 0 {
            0.0
        } else {
            outcomes.mutants.iter().map(f).sum::<f64>() / tested as f64
        }
    };
    let crates = info
        .packages
        .iter()
        .enumerate()
        .map(|(i, package)| {
            let scope = info.scopes.get(i).map_or(package.as_str(), String::as_str);
            crate_counts(package, scope, outcomes, &excluded)
        })
        .collect();
    Report {
        started: info.started,
        cargo_mutants: outcomes.cargo_mutants_version.clone(),
        mode: info.mode,
        base: info.base,
        shard: info.shard,
        packages: info.packages,
        files: info.files,
        score: score(caught, missed),
        tested,
        caught,
        missed,
        timeout: outcomes.count(Verdict::Timeout),
        unviable: outcomes.count(Verdict::Unviable),
        excluded: excluded.len(),
        crates,
        notes: info.notes,
        mean_build_secs: mean(|m| m.build_secs),
        mean_test_secs: mean(|m| m.test_secs),
        total_secs: info.total_secs,
        survivors: outcomes.with(Verdict::MissedMutant).cloned().collect(),
        timeouts: outcomes.with(Verdict::Timeout).cloned().collect(),
        excluded_mutants: excluded,
        ok: missed == 0,
    }
}

/// caught / (caught + missed).
pub fn score(caught: usize, missed: usize) -> Option<f64> {
    let judged = caught + missed;
    (judged > 0).then(|| caught as f64 / judged as f64)
}

fn percent(score: Option<f64>) -> String {
    score.map_or_else(|| "n/a".to_owned(), |s| format!("{:.1}%", s * 100.0))
}

pub fn render_markdown(report: &Report) -> String {
    let mut md = String::new();
    let mut scope = match (&report.mode[..], &report.base) {
        ("diff", Some(base)) => format!("mutants in code changed since `{base}`"),
        _ => "every mutant".to_owned(),
    };
    if !report.files.is_empty() {
        let globs: Vec<String> = report.files.iter().map(|g| format!("`{g}`")).collect();
        scope = format!("{scope} in files matching {}", globs.join(", "));
    }
    let _ = writeln!(md, "# Mutation score\n");
    let _ = writeln!(
        md,
        "**{}** ({} caught of {} caught or missed) — {} of {}{}, cargo-mutants {}, started {}.\n",
        percent(report.score),
        report.caught,
        report.caught + report.missed,
        scope,
        report.packages.join(", "),
        report
            .shard
            .as_ref()
            .map(|s| format!(", shard {s}"))
            .unwrap_or_default(),
        report.cargo_mutants,
        report.started,
    );
    let _ = writeln!(
        md,
        "| caught | missed | timeout | unviable | excluded | tested |"
    );
    let _ = writeln!(md, "| ---: | ---: | ---: | ---: | ---: | ---: |");
    let _ = writeln!(
        md,
        "| {} | {} | {} | {} | {} | {} |\n",
        report.caught,
        report.missed,
        report.timeout,
        report.unviable,
        report.excluded,
        report.tested
    );
    let _ = writeln!(
        md,
        "Per mutant: {:.1} s build + {:.1} s test on average; {:.0} s in all.\n",
        report.mean_build_secs, report.mean_test_secs, report.total_secs
    );
    if !report.crates.is_empty() {
        let _ = writeln!(md, "## Per crate\n");
        let _ = writeln!(
            md,
            "| crate | score | caught | missed | timeout | unviable | excluded | tested |"
        );
        let _ = writeln!(
            md,
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        for c in &report.crates {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                c.scope,
                percent(c.score),
                c.caught,
                c.missed,
                c.timeout,
                c.unviable,
                c.excluded,
                c.tested
            );
        }
        let _ = writeln!(md);
    }
    for note in &report.notes {
        let _ = writeln!(md, "> **Note:** {note}\n");
    }

    let _ = writeln!(md, "## Survivors ({})\n", report.survivors.len());
    if report.survivors.is_empty() {
        let _ = writeln!(
            md,
            "None: every mutant tested was caught, timed out or did not build.\n"
        );
    } else {
        let _ = writeln!(
            md,
            "Each needs a test that fails with it, or an `exclude_re` entry with a one-line \
             reason in `.cargo/mutants.toml` when no test can tell it from the original.\n"
        );
        let files = by_file(report.survivors.iter());
        for (file, n) in &files {
            let _ = writeln!(md, "- `{file}`: {n}");
        }
        let _ = writeln!(md);
        list(&mut md, &report.survivors);
    }
    if !report.timeouts.is_empty() {
        let _ = writeln!(md, "## Timeouts ({})\n", report.timeouts.len());
        list(&mut md, &report.timeouts);
    }
    if !report.excluded_mutants.is_empty() {
        let _ = writeln!(md, "## Excluded ({})\n", report.excluded_mutants.len());
        for e in &report.excluded_mutants {
            let _ = writeln!(md, "- `{}` — {}", e.name, e.reason);
        }
        let _ = writeln!(md);
    }
    md
}

fn list(md: &mut String, mutants: &[Tested]) {
    for m in mutants {
        let _ = writeln!(
            md,
            "- `{}:{}`: {}",
            m.mutant.file, m.mutant.line, m.mutant.mutation
        );
    }
    let _ = writeln!(md);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutants::outcomes::parse;

    fn sample() -> Report {
        let outcomes = parse(include_str!("testdata/outcomes.json")).unwrap();
        let info = RunInfo {
            started: "2026-12-01 00:00:00 UTC".into(),
            mode: "full".into(),
            packages: vec![
                "portcullis-wire".into(),
                "portcullis-gateway".into(),
                "portcullis-cli".into(),
            ],
            scopes: vec![
                "portcullis-wire".into(),
                "portcullis-gateway".into(),
                "portcullis-cli (crates/cli/src/audit/)".into(),
            ],
            total_secs: 300.0,
            ..RunInfo::default()
        };
        let excluded = vec![Excluded {
            name: "crates/wire/src/frame.rs:1:1: replace f with ()".into(),
            package: "portcullis-wire".into(),
            reason: "a capacity hint".into(),
        }];
        build(info, &outcomes, excluded)
    }

    #[test]
    fn score_is_caught_over_caught_and_missed() {
        assert_eq!(score(3, 1), Some(0.75));
        assert_eq!(score(0, 0), None);
        let report = sample();
        assert_eq!(report.score, Some(2.0 / 3.0));
        assert_eq!(
            (
                report.caught,
                report.missed,
                report.timeout,
                report.unviable,
                report.excluded
            ),
            (2, 1, 0, 1, 1)
        );
        assert_eq!(report.tested, 4);
        assert!(!report.ok);
    }

    #[test]
    fn each_crate_in_scope_has_its_own_counts_and_score() {
        let report = sample();
        let names: Vec<&str> = report.crates.iter().map(|c| c.package.as_str()).collect();
        assert_eq!(
            names,
            ["portcullis-wire", "portcullis-gateway", "portcullis-cli"]
        );
        let wire = &report.crates[0];
        assert_eq!(
            (
                wire.caught,
                wire.missed,
                wire.unviable,
                wire.excluded,
                wire.tested
            ),
            (2, 1, 1, 1, 4)
        );
        assert_eq!(wire.score, Some(2.0 / 3.0));
        let gateway = &report.crates[1];
        assert_eq!((gateway.caught, gateway.missed, gateway.tested), (0, 0, 0));
        assert_eq!(gateway.score, None);
        let cli = &report.crates[2];
        assert_eq!((cli.tested, cli.score), (0, None));
        assert_eq!(cli.scope, "portcullis-cli (crates/cli/src/audit/)");
        let md = render_markdown(&report);
        assert!(md.contains("## Per crate"), "{md}");
        assert!(
            md.contains("| portcullis-wire | 66.7% | 2 | 1 | 0 | 1 | 1 | 4 |"),
            "{md}"
        );
        assert!(
            md.contains("| portcullis-gateway | n/a | 0 | 0 | 0 | 0 | 0 | 0 |"),
            "{md}"
        );
        assert!(
            md.contains("| portcullis-cli (crates/cli/src/audit/) | n/a | 0 | 0 | 0 | 0 | 0 | 0 |"),
            "{md}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["crates"][0]["package"], "portcullis-wire");
        assert_eq!(json["crates"][0]["missed"], 1);
        assert_eq!(json["crates"][0]["excluded"], 1);
        assert!(json["crates"][1]["score"].is_null());
        assert_eq!(
            json["crates"][2]["scope"],
            "portcullis-cli (crates/cli/src/audit/)"
        );
    }

    #[test]
    fn notes_are_shown_and_kept() {
        let outcomes = parse(include_str!("testdata/outcomes.json")).unwrap();
        let info = RunInfo {
            notes: vec!["sshd is not installed".into()],
            ..RunInfo::default()
        };
        let report = build(info, &outcomes, Vec::new());
        assert!(render_markdown(&report).contains("> **Note:** sshd is not installed"));
        assert_eq!(
            serde_json::to_value(&report).unwrap()["notes"][0],
            "sshd is not installed"
        );
        let quiet = build(RunInfo::default(), &outcomes, Vec::new());
        assert!(serde_json::to_value(&quiet).unwrap().get("notes").is_none());
    }

    #[test]
    fn markdown_names_each_survivor_by_file_line_and_mutation() {
        let md = render_markdown(&sample());
        assert!(
            md.contains("**66.7%** (2 caught of 3 caught or missed)"),
            "{md}"
        );
        assert!(md.contains("| 2 | 1 | 0 | 1 | 1 | 4 |"), "{md}");
        assert!(
            md.contains(
                "- `crates/wire/src/id.rs:19`: replace <impl fmt::Display for Id>::fmt \
                 -> fmt::Result with Ok(Default::default())"
            ),
            "{md}"
        );
        assert!(md.contains("## Excluded (1)"), "{md}");
        assert!(md.contains("— a capacity hint"), "{md}");
        assert!(!md.contains("## Timeouts"), "{md}");
    }

    #[test]
    fn json_carries_the_counts_and_the_survivors() {
        let json = serde_json::to_value(sample()).unwrap();
        assert_eq!(json["missed"], 1);
        assert_eq!(json["excluded"], 1);
        assert_eq!(json["survivors"][0]["file"], "crates/wire/src/id.rs");
        assert_eq!(json["survivors"][0]["line"], 19);
        assert_eq!(json["survivors"][0]["verdict"], "MissedMutant");
        assert!(json.get("base").is_none());
    }

    #[test]
    fn a_clean_diff_run_says_so() {
        let outcomes = parse(
            r#"{"cargo_mutants_version":"27.1.0","outcomes":[
                {"scenario":"Baseline","summary":"Success","diff_path":null}]}"#,
        )
        .unwrap();
        let info = RunInfo {
            mode: "diff".into(),
            base: Some("main".into()),
            ..RunInfo::default()
        };
        let report = build(info, &outcomes, Vec::new());
        assert!(report.ok);
        let md = render_markdown(&report);
        assert!(md.contains("**n/a**"), "{md}");
        assert!(md.contains("code changed since `main`"), "{md}");
        assert!(md.contains("None: every mutant tested"), "{md}");
    }

    #[test]
    fn a_narrowed_run_says_which_files_and_shard() {
        let outcomes = parse(include_str!("testdata/outcomes.json")).unwrap();
        let info = RunInfo {
            mode: "full".into(),
            shard: Some("0/16".into()),
            files: vec!["crates/wire/src/**".into()],
            ..RunInfo::default()
        };
        let md = render_markdown(&build(info, &outcomes, Vec::new()));
        assert!(
            md.contains("every mutant in files matching `crates/wire/src/**` of"),
            "{md}"
        );
        assert!(md.contains(", shard 0/16,"), "{md}");
    }
}
