//! The nightly report: `report.json` for machines, `report.md` for people.

use serde::{Deserialize, Serialize};

use crate::budget::format_secs;
use crate::nightly::FloorCheck;

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// When the run started (UTC).
    pub started: String,
    /// Fuzzing budget for all targets together, in seconds.
    pub budget_secs: u64,
    pub jobs: u32,
    /// How each target's share was fuzzed: `address`, `none`, or a split
    /// such as `none 80% + address 20%` (each target's `runs` say more).
    pub sanitizer: String,
    /// `rustc +nightly --version`.
    pub toolchain: String,
    /// `cargo fuzz --version`.
    pub cargo_fuzz: String,
    /// Time spent building the fuzz targets.
    pub build_secs: f64,
    /// Wall time of the whole run.
    pub total_secs: f64,
    pub targets: Vec<TargetReport>,
    pub crashes: usize,
    /// Targets whose judged throughput is under their floor (flagged, not
    /// failed: see `nightly::floors`).
    pub under_floor: Vec<String>,
    /// No crashes and no errors.
    pub ok: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    pub target: String,
    /// `ok`, `crashed` or `error`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// This target's share of the budget, in seconds.
    pub budget_secs: u64,
    /// Wall time of the fuzzing run.
    pub duration_secs: f64,
    /// Over all of this target's runs.
    pub execs: u64,
    /// Over all of this target's runs: their executions over their wall time.
    pub execs_per_sec: u64,
    /// Over all of this target's runs: their executions over the CPU time
    /// they used (per core, whatever else the machine was running).
    pub execs_per_cpu_sec: Option<u64>,
    /// This target's figure in the previous nightly that fuzzed it.
    pub previous: Option<PreviousFigure>,
    /// Its throughput floor and whether this run fell under it; `None`
    /// for a target without a floor.
    pub floor: Option<FloorCheck>,
    /// One libFuzzer run per sanitizer, in the order they ran.
    pub runs: Vec<RunReport>,
    /// Last `cov:` figure (coverage counters).
    pub coverage: Option<u64>,
    /// Last `ft:` figure (features).
    pub features: Option<u64>,
    pub peak_rss_mb: Option<u64>,
    /// Files in the checked-in `corpus/<target>/` before and after merging.
    pub corpus_size_before: usize,
    pub corpus_size_after: usize,
    /// Files in the scratch working corpus `fuzz/corpus/<target>/`.
    pub working_corpus_size: usize,
    /// Regression inputs used as extra seeds.
    pub regression_seeds: usize,
    pub crashes: usize,
    pub candidates: Vec<Candidate>,
    pub log: String,
}

/// One libFuzzer run of a target (one sanitizer's part of its share).
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// `address` or `none`.
    pub sanitizer: String,
    /// This run's part of the target's share, in seconds.
    pub budget_secs: u64,
    pub duration_secs: f64,
    /// User + system CPU time of the libFuzzer process and its workers.
    pub cpu_secs: Option<f64>,
    pub execs: u64,
    pub execs_per_sec: u64,
    pub execs_per_cpu_sec: Option<u64>,
    pub log: String,
}

/// A target's throughput in an earlier nightly, kept in
/// `exec-history.json` beside the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviousFigure {
    pub execs_per_sec: u64,
    /// When that nightly started.
    pub started: String,
    /// How it was fuzzed (the report's `sanitizer`).
    pub sanitizer: String,
    /// Its share of the budget, in seconds.
    pub budget_secs: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    /// `crash`, `timeout`, `oom` or `leak`.
    pub kind: String,
    /// The minimized input, `candidates/<target>/<name>.bin`.
    pub path: String,
    /// Its sidecar, `candidates/<target>/<name>.toml`.
    pub sidecar: String,
    /// The raw artifact libFuzzer wrote.
    pub artifact: String,
    pub summary: String,
    pub size_bytes: u64,
    /// Whether `cargo fuzz tmin` produced a smaller input.
    pub minimized: bool,
}

/// `5000`, `5000 ⚠️ under` or `5000 (not judged)` for the report's table.
fn floor_cell(floor: Option<&FloorCheck>) -> String {
    match floor {
        None => "–".to_owned(),
        Some(f) if f.under => format!("{} ⚠️ under", f.exec_per_cpu_sec),
        Some(f) if f.judged => f.exec_per_cpu_sec.to_string(),
        Some(f) => format!("{} (not judged)", f.exec_per_cpu_sec),
    }
}

fn opt(value: Option<u64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| v.to_string())
}

/// `1203 (address, 1m)`: the figure and how that run fuzzed, so a change of
/// sanitizer or budget is not mistaken for a change in the code.
fn previous(figure: Option<&PreviousFigure>) -> String {
    figure.map_or_else(
        || "–".to_owned(),
        |p| {
            format!(
                "{} ({}, {})",
                p.execs_per_sec,
                p.sanitizer,
                format_secs(p.budget_secs)
            )
        },
    )
}

/// Renders the Markdown report.
pub fn render_markdown(report: &Report) -> String {
    let mut md = String::new();
    let mut verdict = if report.ok {
        "✅ no crashes".to_owned()
    } else if report.crashes > 0 {
        format!("❌ {} crash(es)", report.crashes)
    } else {
        "⚠️ errors (see below)".to_owned()
    };
    if !report.under_floor.is_empty() {
        let under: Vec<String> = report
            .targets
            .iter()
            .filter(|t| report.under_floor.contains(&t.target))
            .map(|t| {
                format!(
                    "`{}` ({} < {})",
                    t.target,
                    opt(t.execs_per_cpu_sec),
                    t.floor.as_ref().map_or(0, |f| f.exec_per_cpu_sec)
                )
            })
            .collect();
        verdict.push_str(&format!(
            "; ⚠️ under the throughput floor (exec per CPU-second): {}",
            under.join(", ")
        ));
    }
    md.push_str("# Nightly fuzzing report\n\n");
    md.push_str(&format!(
        "- **Result:** {verdict}\n- **Started:** {}\n- **Budget:** {} over {} target(s), {} job(s) each, sanitizer {}\n- **Build:** {:.0}s; **total wall time:** {:.0}s\n- **Toolchain:** {}; {}\n\n",
        report.started,
        format_secs(report.budget_secs),
        report.targets.len(),
        report.jobs,
        report.sanitizer,
        report.build_secs,
        report.total_secs,
        report.toolchain,
        report.cargo_fuzz,
    ));
    md.push_str("| target | status | time | execs | exec/s | exec/CPU-s | floor | previous exec/s | cov | ft | corpus (before → after) | crashes | peak RSS |\n");
    md.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for t in &report.targets {
        md.push_str(&format!(
            "| `{}` | {} | {:.0}s / {} | {} | {} | {} | {} | {} | {} | {} | {} → {} | {} | {} |\n",
            t.target,
            t.status,
            t.duration_secs,
            format_secs(t.budget_secs),
            t.execs,
            t.execs_per_sec,
            opt(t.execs_per_cpu_sec),
            floor_cell(t.floor.as_ref()),
            previous(t.previous.as_ref()),
            opt(t.coverage),
            opt(t.features),
            t.corpus_size_before,
            t.corpus_size_after,
            t.crashes,
            t.peak_rss_mb
                .map_or_else(|| "–".to_owned(), |mb| format!("{mb} MB")),
        ));
    }

    md.push_str(&format!(
        "\nFloor: the executions per CPU-second a target must reach (`xtask/src/nightly/floors.rs`), judged on shares of at least {} s fuzzed whole in the default configuration; a target under it is flagged, and the run still passes.\n",
        crate::nightly::MIN_JUDGED_SECS
    ));

    if report.targets.iter().any(|t| t.runs.len() > 1) {
        md.push_str("\n## Throughput by sanitizer\n\n");
        md.push_str(
            "| target | sanitizer | time | execs | exec/s | exec/CPU-s |\n|---|---|---:|---:|---:|---:|\n",
        );
        for t in &report.targets {
            for r in &t.runs {
                md.push_str(&format!(
                    "| `{}` | {} | {:.0}s / {} | {} | {} | {} |\n",
                    t.target,
                    r.sanitizer,
                    r.duration_secs,
                    format_secs(r.budget_secs),
                    r.execs,
                    r.execs_per_sec,
                    opt(r.execs_per_cpu_sec),
                ));
            }
        }
    }

    let crashed: Vec<_> = report
        .targets
        .iter()
        .filter(|t| !t.candidates.is_empty())
        .collect();
    if !crashed.is_empty() {
        md.push_str("\n## Crashes\n\nEach candidate is minimized and has a sidecar; after fixing the defect, promote it so that `cargo test` replays it forever:\n");
        for t in crashed {
            for c in &t.candidates {
                md.push_str(&format!(
                    "\n### `{}` {}: {}\n\n- input: `{}` ({} bytes{})\n- sidecar: `{}`\n- raw artifact: `{}`\n- reproduce: `cargo +nightly fuzz run {} {}`\n- promote: `cargo xtask promote {} --target {}`\n",
                    t.target,
                    c.kind,
                    c.summary,
                    c.path,
                    c.size_bytes,
                    if c.minimized { ", minimized" } else { "" },
                    c.sidecar,
                    c.artifact,
                    t.target,
                    c.path,
                    c.path,
                    t.target,
                ));
            }
        }
    }

    let errors: Vec<_> = report
        .targets
        .iter()
        .filter(|t| t.error.is_some())
        .collect();
    if !errors.is_empty() {
        md.push_str("\n## Errors\n\n");
        for t in errors {
            md.push_str(&format!(
                "- `{}`: {} (log: `{}`)\n",
                t.target,
                t.error.as_deref().unwrap_or_default(),
                t.log
            ));
        }
    }

    md.push_str("\n## Logs\n\n");
    for t in &report.targets {
        if t.runs.len() > 1 {
            for r in &t.runs {
                md.push_str(&format!(
                    "- `{}` ({}): `{}`\n",
                    t.target, r.sanitizer, r.log
                ));
            }
        } else {
            md.push_str(&format!("- `{}`: `{}`\n", t.target, t.log));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(name: &str) -> TargetReport {
        TargetReport {
            target: name.to_owned(),
            status: "ok".to_owned(),
            error: None,
            budget_secs: 60,
            duration_secs: 60.4,
            execs: 1000,
            execs_per_sec: 16,
            execs_per_cpu_sec: None,
            previous: None,
            floor: None,
            runs: vec![RunReport {
                sanitizer: "address".to_owned(),
                budget_secs: 60,
                duration_secs: 60.4,
                cpu_secs: None,
                execs: 1000,
                execs_per_sec: 16,
                execs_per_cpu_sec: None,
                log: format!("target/nightly/logs/{name}/fuzz.log"),
            }],
            coverage: Some(71),
            features: Some(272),
            peak_rss_mb: Some(28),
            corpus_size_before: 3,
            corpus_size_after: 9,
            working_corpus_size: 40,
            regression_seeds: 0,
            crashes: 0,
            candidates: Vec::new(),
            log: format!("target/nightly/logs/{name}/fuzz.log"),
        }
    }

    #[test]
    fn markdown_has_a_row_per_target_and_a_section_per_crash() {
        let mut crashed = target("chunking");
        crashed.status = "crashed".to_owned();
        crashed.crashes = 1;
        crashed.candidates.push(Candidate {
            kind: "crash".to_owned(),
            path: "target/nightly/candidates/chunking/crash-abc.bin".to_owned(),
            sidecar: "target/nightly/candidates/chunking/crash-abc.toml".to_owned(),
            artifact: "target/nightly/artifacts/chunking/crash-abc".to_owned(),
            summary: "boom (panicked at src/lib.rs:1:1)".to_owned(),
            size_bytes: 3,
            minimized: true,
        });
        let report = Report {
            started: "2025-06-18T01:02:03Z".to_owned(),
            budget_secs: 120,
            jobs: 1,
            sanitizer: "address".to_owned(),
            toolchain: "rustc 1.97.0-nightly".to_owned(),
            cargo_fuzz: "cargo-fuzz 0.13.2".to_owned(),
            build_secs: 100.0,
            total_secs: 230.0,
            targets: vec![target("strict_json"), crashed],
            crashes: 1,
            under_floor: Vec::new(),
            ok: false,
        };
        let md = render_markdown(&report);
        assert!(md.contains("❌ 1 crash(es)"), "{md}");
        assert!(
            md.contains(
                "| `strict_json` | ok | 60s / 1m | 1000 | 16 | – | – | – | 71 | 272 | 3 → 9 | 0 | 28 MB |"
            ),
            "{md}"
        );
        assert!(!md.contains("Throughput by sanitizer"), "{md}");
        assert!(
            md.contains("### `chunking` crash: boom (panicked at src/lib.rs:1:1)"),
            "{md}"
        );
        assert!(md.contains("cargo xtask promote target/nightly/candidates/chunking/crash-abc.bin --target chunking"), "{md}");

        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["targets"][1]["candidates"][0]["kind"], "crash");
        assert_eq!(json["targets"][0]["corpus_size_after"], 9);
        assert!(json["targets"][0].get("error").is_none());
        assert_eq!(json["targets"][0]["runs"][0]["sanitizer"], "address");
    }

    #[test]
    fn a_split_run_shows_each_sanitizers_share_and_the_previous_figure_beside_the_new() {
        let mut t = target("stdin_bytes");
        t.execs = 492_000;
        t.execs_per_sec = 8200;
        t.execs_per_cpu_sec = Some(9_840);
        t.previous = Some(PreviousFigure {
            execs_per_sec: 1203,
            started: "2026-11-30T00:00:00Z".to_owned(),
            sanitizer: "address".to_owned(),
            budget_secs: 60,
        });
        t.runs = vec![
            RunReport {
                sanitizer: "none".to_owned(),
                budget_secs: 48,
                duration_secs: 48.0,
                cpu_secs: Some(40.0),
                execs: 480_000,
                execs_per_sec: 10_000,
                execs_per_cpu_sec: Some(12_000),
                log: "target/nightly/logs/stdin_bytes/none/fuzz.log".to_owned(),
            },
            RunReport {
                sanitizer: "address".to_owned(),
                budget_secs: 12,
                duration_secs: 12.0,
                cpu_secs: Some(10.0),
                execs: 12_000,
                execs_per_sec: 1000,
                execs_per_cpu_sec: Some(1200),
                log: "target/nightly/logs/stdin_bytes/address/fuzz.log".to_owned(),
            },
        ];
        let report = Report {
            started: "2026-12-01T00:00:00Z".to_owned(),
            budget_secs: 60,
            jobs: 1,
            sanitizer: "none 80% + address 20%".to_owned(),
            toolchain: "rustc 1.97.0-nightly".to_owned(),
            cargo_fuzz: "cargo-fuzz 0.13.2".to_owned(),
            build_secs: 1.0,
            total_secs: 62.0,
            targets: vec![t],
            crashes: 0,
            under_floor: Vec::new(),
            ok: true,
        };
        let md = render_markdown(&report);
        assert!(md.contains("sanitizer none 80% + address 20%"), "{md}");
        assert!(
            md.contains(
                "| `stdin_bytes` | ok | 60s / 1m | 492000 | 8200 | 9840 | – | 1203 (address, 1m) |"
            ),
            "{md}"
        );
        assert!(md.contains("## Throughput by sanitizer"), "{md}");
        assert!(
            md.contains("| `stdin_bytes` | none | 48s / 48s | 480000 | 10000 | 12000 |"),
            "{md}"
        );
        assert!(
            md.contains("| `stdin_bytes` | address | 12s / 12s | 12000 | 1000 | 1200 |"),
            "{md}"
        );
        assert!(
            md.contains(
                "- `stdin_bytes` (address): `target/nightly/logs/stdin_bytes/address/fuzz.log`"
            ),
            "{md}"
        );

        let json = serde_json::to_value(&report).unwrap();
        let t = &json["targets"][0];
        assert_eq!(t["execs_per_sec"], 8200);
        assert_eq!(t["previous"]["execs_per_sec"], 1203);
        assert_eq!(t["previous"]["sanitizer"], "address");
        assert_eq!(t["runs"][0]["sanitizer"], "none");
        assert_eq!(t["runs"][1]["execs_per_sec"], 1000);
        assert_eq!(t["execs_per_cpu_sec"], 9840);
        assert_eq!(t["runs"][0]["cpu_secs"], 40.0);
    }

    #[test]
    fn a_target_under_its_floor_is_flagged_in_the_result_its_row_and_the_json() {
        let mut slow = target("wrap_session");
        slow.execs_per_cpu_sec = Some(1_802);
        slow.floor = Some(FloorCheck {
            exec_per_cpu_sec: 5_000,
            judged: true,
            under: true,
            not_judged: String::new(),
        });
        let mut fast = target("stdin_bytes");
        fast.execs_per_cpu_sec = Some(9_000);
        fast.floor = Some(FloorCheck {
            exec_per_cpu_sec: 7_500,
            judged: true,
            under: false,
            not_judged: String::new(),
        });
        let mut smoke = target("chunking");
        smoke.floor = Some(FloorCheck {
            exec_per_cpu_sec: 9_000,
            judged: false,
            under: false,
            not_judged: "10 s of fuzzing".to_owned(),
        });
        let report = Report {
            started: "2026-12-01T00:00:00Z".to_owned(),
            budget_secs: 180,
            jobs: 1,
            sanitizer: "none 80% + address 20%".to_owned(),
            toolchain: "rustc 1.97.0-nightly".to_owned(),
            cargo_fuzz: "cargo-fuzz 0.13.2".to_owned(),
            build_secs: 1.0,
            total_secs: 200.0,
            targets: vec![slow, fast, smoke],
            crashes: 0,
            under_floor: vec!["wrap_session".to_owned()],
            ok: true,
        };
        let md = render_markdown(&report);
        assert!(
            md.contains(
                "✅ no crashes; ⚠️ under the throughput floor (exec per CPU-second): `wrap_session` (1802 < 5000)"
            ),
            "{md}"
        );
        assert!(md.contains("| 1802 | 5000 ⚠️ under |"), "{md}");
        assert!(md.contains("| 9000 | 7500 |"), "{md}");
        assert!(md.contains("| 9000 (not judged) |"), "{md}");
        assert!(md.contains("judged on shares of at least 60 s"), "{md}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["under_floor"][0], "wrap_session");
        assert_eq!(json["targets"][0]["floor"]["exec_per_cpu_sec"], 5000);
        assert_eq!(json["targets"][0]["floor"]["under"], true);
        assert!(json["targets"][0]["floor"].get("not_judged").is_none());
        assert_eq!(json["targets"][2]["floor"]["judged"], false);
        assert_eq!(json["targets"][2]["floor"]["not_judged"], "10 s of fuzzing");
    }
}
