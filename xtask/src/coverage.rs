//! `cargo xtask coverage`: line and region coverage of every product crate
//! (`crates/wire`, `gateway`, `exec`, `wrap` and the `cli` binary, with the
//! scrubber, the audit code and the wrap driver on rows of their own), by
//! `cargo test` and by replaying each fuzz target's checked-in seeds, with
//! the uncovered lines listed.
//!
//! The binary's own lines count when the process tests run it: they launch
//! the instrumented `portcullis` that cargo built for them, and pass on the
//! profile variables cargo-llvm-cov sets (`LLVM_PROFILE_FILE`), so each
//! launch writes its profile beside the test binaries'.
//!
//! Everything runs under cargo-llvm-cov on the stable toolchain, in its own
//! instrumented target directory (`target/llvm-cov-target`). The corpus is
//! replayed by `crates/testkit/examples/replay_corpus.rs`, one target per
//! run, each run exported on its own; the figure for all targets together is
//! the union of those exports (the same binaries, so the same mapping), so
//! the seeds are replayed once. [`llvm`] finds the tools, [`export`] reads
//! llvm-cov's JSON, [`scope`] says which lines count, [`report`] renders.

mod export;
mod llvm;
mod report;
mod scope;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, bail};

use crate::process::{self, capture, describe};
use crate::project::{Project, select_targets};
use crate::sidecar;
use export::FileCoverage;
use report::{Measurement, Report};

/// Line and region coverage by `cargo test` and by corpus replay.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Comma-separated fuzz targets whose seeds are replayed (default: all
    /// in fuzz/Cargo.toml).
    #[arg(long, value_delimiter = ',')]
    pub targets: Vec<String>,
    /// Output directory for coverage.md and coverage.json.
    #[arg(long, default_value = "target/nightly")]
    pub out: PathBuf,
    /// Skip the `cargo test` measurement.
    #[arg(long)]
    pub no_tests: bool,
    /// Skip the corpus replay measurements.
    #[arg(long)]
    pub no_corpus: bool,
    /// Keep the instrumented build of the workspace's own crates from the
    /// last run (faster while iterating; by default it is rebuilt, so that
    /// the binary of a removed test cannot linger in the report).
    #[arg(long)]
    pub no_clean: bool,
}

/// The replay driver (`crates/testkit/examples/replay_corpus.rs`).
const REPLAY_EXAMPLE: &str = "replay_corpus";

struct Runner<'a> {
    project: &'a Project,
    tools: llvm::Tools,
    exports: tempfile::TempDir,
    scope: BTreeMap<String, Vec<std::ops::RangeInclusive<u32>>>,
}

impl Runner<'_> {
    /// `cargo llvm-cov ARGS` with the located LLVM tools.
    fn llvm_cov(&self, args: &[&str]) -> Command {
        let mut cmd = process::cargo(None);
        cmd.arg("llvm-cov")
            .args(args)
            .current_dir(&self.project.root)
            .env("LLVM_COV", &self.tools.cov)
            .env("LLVM_PROFDATA", &self.tools.profdata);
        cmd
    }

    fn run(&self, args: &[&str]) -> Result<bool> {
        let mut cmd = self.llvm_cov(args);
        println!("$ {}", describe(&cmd));
        let status = cmd
            .stdin(std::process::Stdio::null())
            .status()
            .with_context(|| format!("could not run `{}`", describe(&cmd)))?;
        Ok(status.success())
    }

    fn clean_profiles(&self) -> Result<()> {
        if !self.run(&["clean", "--profraw-only"])? {
            bail!("`cargo llvm-cov clean --profraw-only` failed");
        }
        Ok(())
    }

    /// Exports the profiles collected so far and reduces them to the
    /// counted files, relative to the repository.
    fn export(&self, id: &str) -> Result<BTreeMap<String, FileCoverage>> {
        let path = self
            .exports
            .path()
            .join(format!("{}.json", id.replace(':', "-")));
        let path_arg = path.to_string_lossy().into_owned();
        if !self.run(&["report", "--json", "--output-path", &path_arg])? {
            bail!("`cargo llvm-cov report` failed for {id}");
        }
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let files = export::parse(&text).with_context(|| format!("in {}", path.display()))?;
        fs::remove_file(&path).ok();
        Ok(self.scoped(files))
    }

    fn scoped(&self, files: BTreeMap<String, FileCoverage>) -> BTreeMap<String, FileCoverage> {
        files
            .into_iter()
            .filter_map(|(name, coverage)| {
                let relative = Path::new(&name)
                    .strip_prefix(&self.project.root)
                    .ok()?
                    .to_str()?
                    .to_owned();
                let tests = self.scope.get(&relative)?;
                let kept = coverage.without(|line| tests.iter().any(|r| r.contains(&line)));
                Some((relative, kept))
            })
            .collect()
    }

    fn tests(&self) -> Result<Measurement> {
        let started = Instant::now();
        let args = [
            "--no-report",
            "--workspace",
            "--exclude",
            "xtask",
            "--no-fail-fast",
        ];
        let ok = self.run(&args)?;
        let files = self.export("tests")?;
        Ok(Measurement {
            id: "tests".into(),
            name: "cargo test".into(),
            command: format!("cargo llvm-cov {}", args.join(" ")),
            ok,
            secs: started.elapsed().as_secs_f64(),
            files,
        })
    }

    fn corpus(&self, target: &str) -> Result<Measurement> {
        let started = Instant::now();
        self.clean_profiles()?;
        let args = [
            "run",
            "--no-report",
            "-p",
            "portcullis-testkit",
            "--example",
            REPLAY_EXAMPLE,
            "--",
            target,
        ];
        if !self.run(&args)? {
            bail!("replaying the corpus of {target} failed (see above)");
        }
        let id = format!("corpus:{target}");
        let files = self.export(&id)?;
        Ok(Measurement {
            id,
            name: format!("corpus replay: {target}"),
            command: format!("cargo llvm-cov {}", args.join(" ")),
            ok: true,
            secs: started.elapsed().as_secs_f64(),
            files,
        })
    }
}

/// Installs cargo-llvm-cov when `cargo llvm-cov --version` does not answer.
fn ensure_cargo_llvm_cov() -> Result<()> {
    let mut probe = process::cargo(None);
    probe.args(["llvm-cov", "--version"]);
    if capture(&mut probe).is_ok_and(|(status, _)| status.success()) {
        return Ok(());
    }
    println!("cargo-llvm-cov is missing; installing it");
    process::run_visible(process::cargo(None).args(["install", "--locked", "cargo-llvm-cov"]))
}

/// All targets together: what any of the per-target runs covered.
fn united(per_target: &[Measurement]) -> Measurement {
    let mut files: BTreeMap<String, FileCoverage> = BTreeMap::new();
    for m in per_target {
        for (path, coverage) in &m.files {
            files.entry(path.clone()).or_default().unite(coverage);
        }
    }
    let targets: Vec<&str> = per_target
        .iter()
        .filter_map(|m| m.id.strip_prefix("corpus:"))
        .collect();
    Measurement {
        id: "corpus".into(),
        name: "corpus replay (all targets)".into(),
        command: format!(
            "cargo llvm-cov run --example {REPLAY_EXAMPLE} -- {} (one run each, united)",
            targets.join(" ")
        ),
        ok: per_target.iter().all(|m| m.ok),
        secs: per_target.iter().map(|m| m.secs).sum(),
        files,
    }
}

pub fn run(project: &Project, opts: &Options) -> Result<()> {
    let started_at = SystemTime::now();
    let started = Instant::now();
    let targets = select_targets(&project.fuzz_targets()?, &opts.targets)?;
    let tools = llvm::locate(&project.root)?;
    println!(
        "llvm-cov: {} ({}), llvm-profdata: {}",
        tools.cov.display(),
        tools.source,
        tools.profdata.display()
    );
    ensure_cargo_llvm_cov()?;
    let runner = Runner {
        project,
        exports: tempfile::tempdir().context("creating a scratch directory")?,
        scope: scope::counted_files(&project.root)?,
        tools,
    };
    if opts.no_clean {
        runner.clean_profiles()?;
    } else if !runner.run(&["clean", "--workspace"])? {
        bail!("`cargo llvm-cov clean --workspace` failed");
    }
    let mut measurements = Vec::new();
    if !opts.no_tests {
        measurements.push(runner.tests()?);
    }
    if !opts.no_corpus {
        let mut per_target = Vec::new();
        for target in &targets {
            per_target.push(runner.corpus(target)?);
        }
        runner.clean_profiles()?;
        measurements.push(united(&per_target));
        measurements.extend(per_target);
    }
    let reports: Vec<_> = measurements.iter().map(Measurement::report).collect();
    let report = Report {
        started: sidecar::iso_datetime(started_at),
        total_secs: started.elapsed().as_secs_f64().round(),
        llvm_cov: format!("{} ({})", runner.tools.cov.display(), runner.tools.source),
        scope: format!(
            "crates/{{{}}}/src without unit-test modules; parts: {}",
            scope::CRATES.join(","),
            scope::PARTS
                .iter()
                .map(|p| format!("{} ({})", p.name, p.paths.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        goals: report::goals(&reports),
        measurements: reports,
    };
    let out = project.root.join(&opts.out);
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let md = out.join("coverage.md");
    let json = out.join("coverage.json");
    fs::write(&md, report::render_markdown(&report))
        .with_context(|| format!("writing {}", md.display()))?;
    fs::write(&json, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", json.display()))?;
    println!();
    print!("{}", report::render_summary(&report));
    println!(
        "report: {} and {} ({:.0} s)",
        project.display(&md),
        project.display(&json),
        report.total_secs
    );
    if let Some(failed) = report.measurements.iter().find(|m| !m.ok) {
        bail!("{} failed; its figures describe a partial run", failed.name);
    }
    Ok(())
}
