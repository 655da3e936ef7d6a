//! `cargo xtask nightly`: build every fuzz target, fuzz each for its share of
//! a budget, fold new coverage into `corpus/`, turn crashes into minimized
//! regression candidates, and write a report.
//!
//! In order: [`build`] (toolchain, cargo-fuzz, one build per
//! sanitizer of the [`plan`]), [`fuzz`] (per target, one libFuzzer run per
//! sanitizer over the same working corpus, then the corpus merge),
//! [`triage`] (minimize and summarize each crash into a candidate); this
//! file sequences them and writes the report, with each target's previous
//! throughput from the [`history`].

mod build;
mod floors;
mod fuzz;
mod history;
mod plan;
mod triage;

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail};

use crate::budget::{self, format_secs, split_budget};
use crate::libfuzzer::{Limits, TMIN_RUNS};
use crate::process;
use crate::project::{Project, Sanitizer, select_targets};
use crate::report::TargetReport;
use crate::report::{self, Report};
use crate::sidecar;

pub use floors::{FloorCheck, MIN_JUDGED_SECS};
pub use plan::SanitizerPlan;
pub use triage::{relative_paths, reproduce};
// `cargo xtask bugbench` builds and fuzzes exactly as the nightly does.
pub(crate) use build::{build as build_targets, ensure_cargo_fuzz, ensure_toolchain};
pub(crate) use fuzz::fuzz_target;

/// Fuzz every target for a share of a time budget, merge new coverage into
/// corpus/, minimize crashes into regression candidates, write a report.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Total fuzzing time, split evenly between targets: 90s, 5m, 1h30m.
    /// Building, merging and minimizing come on top.
    #[arg(long, default_value = "10m", value_parser = budget::parse_duration)]
    pub budget: Duration,
    /// libFuzzer jobs (and workers) per target.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
    /// Comma-separated fuzz targets (default: all in fuzz/Cargo.toml).
    #[arg(long, value_delimiter = ',')]
    pub targets: Vec<String>,
    /// Output directory for the report, logs, artifacts and candidates.
    #[arg(long, default_value = "target/nightly")]
    pub out: PathBuf,
    /// Toolchain used as `cargo +<toolchain> fuzz`.
    #[arg(long, default_value = "nightly")]
    pub toolchain: String,
    /// One sanitizer for each target's whole share. Without it, each target
    /// is fuzzed uninstrumented for most of its share, then for
    /// `--asan-share` percent of it under AddressSanitizer over the same
    /// corpus (both builds are made). `address` needs nightly; `none` also
    /// builds on stable and runs several times faster, but loses ASan's
    /// memory checks and the memcmp interception that guides libFuzzer
    /// towards compared byte strings.
    #[arg(long, value_enum)]
    pub sanitizer: Option<Sanitizer>,
    /// Percent of each target's share fuzzed under AddressSanitizer when
    /// `--sanitizer` is not given (0: none at all, 100: all of it).
    #[arg(
        long,
        default_value_t = SanitizerPlan::DEFAULT_ASAN_PERCENT,
        value_parser = clap::value_parser!(u8).range(0..=100),
        conflicts_with = "sanitizer"
    )]
    pub asan_share: u8,
    #[command(flatten)]
    pub limits: Limits,
    /// Mutations per minimization step (`cargo fuzz tmin --runs`).
    #[arg(long, default_value_t = TMIN_RUNS)]
    pub tmin_runs: u64,
    /// Wall-clock bound for minimizing one crash, in seconds.
    #[arg(long, default_value_t = 120)]
    pub tmin_secs: u64,
    /// Leave corpus/ untouched (no `-merge=1` of new coverage), e.g. for
    /// smoke runs in CI.
    #[arg(long)]
    pub no_merge: bool,
}

/// The nightly's options as `cargo xtask nightly` with no flags has them,
/// so other commands fuzz with the same defaults (sanitizer, limits).
pub fn default_options() -> Options {
    #[derive(clap::Parser)]
    struct Defaults {
        #[command(flatten)]
        options: Options,
    }
    <Defaults as clap::Parser>::parse_from(["nightly"]).options
}

impl Options {
    /// Which sanitizer fuzzes for how long.
    pub fn plan(&self) -> SanitizerPlan {
        SanitizerPlan::new(self.sanitizer, self.asan_share)
    }
}

pub fn run(project: &Project, opts: &Options) -> Result<()> {
    if opts.budget.is_zero() {
        bail!("--budget must be more than 0s");
    }
    let out = std::path::absolute(&opts.out)
        .with_context(|| format!("resolving --out {}", opts.out.display()))?;
    let opts = &Options {
        out,
        ..opts.clone()
    };
    let started_at = SystemTime::now();
    let started = Instant::now();
    let all = project.fuzz_targets()?;
    let targets = select_targets(&all, &opts.targets)?;
    let shares = split_budget(opts.budget.as_secs(), targets.len()).map_err(anyhow::Error::msg)?;

    let toolchain = build::ensure_toolchain(&opts.toolchain)?;
    let cargo_fuzz = build::ensure_cargo_fuzz()?;
    let host = process::host_triple(&opts.toolchain)?;
    println!(
        "==> nightly fuzzing: {} target(s), budget {} ({} each), {} job(s) per target, sanitizer {}; {toolchain}, {cargo_fuzz}",
        targets.len(),
        format_secs(opts.budget.as_secs()),
        if shares.iter().all(|s| *s == shares[0]) {
            format_secs(shares[0])
        } else {
            format!(
                "{}–{}",
                format_secs(shares[shares.len() - 1]),
                format_secs(shares[0])
            )
        },
        opts.jobs,
        opts.plan().describe(),
    );
    println!(
        "    (building, corpus merging and crash minimization take time on top of the budget)"
    );

    let build_started = Instant::now();
    for sanitizer in opts.plan().sanitizers() {
        build::build(
            project,
            &opts.toolchain,
            sanitizer,
            &host,
            &targets,
            targets.len() == all.len(),
        )?;
    }
    let build_secs = build_started.elapsed().as_secs_f64();
    println!(
        "==> built {} fuzz target(s) in {build_secs:.0}s",
        targets.len()
    );

    fs::create_dir_all(&opts.out).with_context(|| format!("creating {}", opts.out.display()))?;
    // Read before this run's report replaces the previous one.
    let mut history = history::History::load(&opts.out);
    let mut reports = Vec::new();
    for (i, (target, share)) in targets.iter().zip(&shares).enumerate() {
        let position = format!("[{}/{}]", i + 1, targets.len());
        let report = fuzz::fuzz_target(project, opts, &host, target, *share, &position)
            .unwrap_or_else(|e| {
                println!("  {position} {target}: error: {e:#}");
                fuzz::error_report(project, opts, target, *share, &e)
            });
        let floor = floors::check(
            target,
            floors::RunShape {
                plan: opts.plan(),
                jobs: opts.jobs,
                share_secs: report.budget_secs,
                completed: report.status == "ok",
                execs_per_cpu_sec: report.execs_per_cpu_sec,
            },
        );
        reports.push(TargetReport {
            previous: history.previous(target),
            floor,
            ..report
        });
    }
    let under_floor: Vec<String> = reports
        .iter()
        .filter(|r| r.floor.as_ref().is_some_and(|f| f.under))
        .map(|r| r.target.clone())
        .collect();

    let crashes: usize = reports.iter().map(|r| r.crashes).sum();
    let errors = reports.iter().filter(|r| r.error.is_some()).count();
    let report = Report {
        started: sidecar::iso_datetime(started_at),
        budget_secs: opts.budget.as_secs(),
        jobs: opts.jobs,
        sanitizer: opts.plan().describe(),
        toolchain,
        cargo_fuzz,
        build_secs,
        total_secs: started.elapsed().as_secs_f64(),
        targets: reports,
        crashes,
        under_floor,
        ok: crashes == 0 && errors == 0,
    };
    let json_path = opts.out.join("report.json");
    let md_path = opts.out.join("report.md");
    fs::write(&json_path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    // The planted-bug table of the last `cargo xtask bugbench`, when there is one.
    let bugbench = crate::bugbench::nightly_section(&opts.out).unwrap_or_default();
    fs::write(&md_path, report::render_markdown(&report) + &bugbench)
        .with_context(|| format!("writing {}", md_path.display()))?;
    history.record(&report);
    history.save(&opts.out)?;

    println!("==> summary ({:.0}s in total)", report.total_secs);
    for t in &report.targets {
        println!(
            "    {:<14} {:<7} execs {:>10}  exec/s {:>7} (previous {:>7})  cov {:>5}  ft {:>6}  corpus {} -> {}  crashes {}",
            t.target,
            t.status,
            t.execs,
            t.execs_per_sec,
            t.previous
                .as_ref()
                .map_or_else(|| "-".to_owned(), |p| p.execs_per_sec.to_string()),
            t.coverage.map_or_else(|| "-".to_owned(), |c| c.to_string()),
            t.features.map_or_else(|| "-".to_owned(), |f| f.to_string()),
            t.corpus_size_before,
            t.corpus_size_after,
            t.crashes,
        );
        if let Some(f) = t.floor.as_ref().filter(|f| f.under) {
            println!(
                "        under its floor of {} exec per CPU-second",
                f.exec_per_cpu_sec
            );
        }
        for c in &t.candidates {
            println!("        {} {}: {}", c.kind, c.path, c.summary);
        }
    }
    println!("    report: {}", project.display(&md_path));
    println!("            {}", project.display(&json_path));

    if crashes > 0 {
        bail!(
            "{crashes} crash(es) found; minimized regression candidates are listed in {}",
            project.display(&md_path)
        );
    }
    if !report.under_floor.is_empty() {
        // Flagged, not failed: a slow machine or a busy one lowers every
        // figure, and the crash verdict must not hang on it.
        println!(
            "==> under the throughput floor: {} (see {})",
            report.under_floor.join(", "),
            project.display(&md_path)
        );
    }
    if errors > 0 {
        bail!(
            "{errors} target(s) failed to fuzz; see {}",
            project.display(&md_path)
        );
    }
    Ok(())
}
