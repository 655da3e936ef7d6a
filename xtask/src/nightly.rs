//! `cargo xtask nightly`: build every fuzz target, fuzz each for its share of
//! a budget, fold new coverage into `corpus/`, turn crashes into minimized
//! regression candidates, and write a report.

use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail};

use crate::budget::{format_secs, split_budget};
use crate::libfuzzer::{self, LogStats, Totals, artifact_kind, crash_summary};
use crate::process::{self, Kill, capture, cargo, describe, run_streaming, run_visible};
use crate::project::{Project, Sanitizer, copy_missing, files_in, select_targets};
use crate::report::{self, Candidate, Report, TargetReport};
use crate::sidecar::{self, Sidecar};

/// What a nightly candidate's sidecar names as its source.
const SOURCE: &str = "cargo xtask nightly";

#[derive(Debug, Clone)]
pub struct Options {
    /// Fuzzing time for all targets together.
    pub budget: Duration,
    /// libFuzzer `-jobs`/`-workers` per target.
    pub jobs: u32,
    /// Targets to fuzz (all when empty).
    pub targets: Vec<String>,
    /// Output directory (absolute).
    pub out: PathBuf,
    /// Toolchain for `cargo +<toolchain> fuzz`.
    pub toolchain: String,
    pub sanitizer: Sanitizer,
    pub limits: Limits,
    /// `cargo fuzz tmin -r` and the wall-clock bound for one minimization.
    pub tmin_runs: u64,
    pub tmin_secs: u64,
    /// Merge new coverage into `corpus/<target>/`.
    pub merge: bool,
}

/// libFuzzer limits shared by fuzzing, merging, minimizing and reproducing.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_len: u64,
    /// Per-input timeout in seconds (`-timeout`).
    pub unit_timeout: u64,
    pub rss_limit_mb: u64,
}

impl Limits {
    fn flags(self) -> [String; 2] {
        [
            format!("-timeout={}", self.unit_timeout),
            format!("-rss_limit_mb={}", self.rss_limit_mb),
        ]
    }
}

/// `ASAN_OPTIONS` as `cargo fuzz run` sets them (Rust binaries trip ODR
/// violation false positives), on top of the caller's.
pub fn asan_options() -> String {
    match std::env::var("ASAN_OPTIONS") {
        Ok(opts) if !opts.is_empty() => format!("{opts}:detect_odr_violation=0"),
        _ => "detect_odr_violation=0".to_owned(),
    }
}

/// Build flags shared by `cargo fuzz build` and `cargo fuzz tmin`, so that
/// minimization reuses the binary instead of rebuilding. `-O --debug-assertions`
/// is what plain `cargo fuzz build` does: optimized, with overflow checks.
pub fn build_flags(project: &Project, sanitizer: Sanitizer, host: &str) -> Vec<OsString> {
    vec![
        "-O".into(),
        "--debug-assertions".into(),
        "--sanitizer".into(),
        sanitizer.as_str().into(),
        "--target".into(),
        host.into(),
        "--target-dir".into(),
        project.fuzz_target_dir(sanitizer).into(),
    ]
}

/// Runs one input through a fuzz target binary; returns whether it crashed
/// and what it printed.
pub fn reproduce(bin: &Path, input: &Path, limits: Limits, log: &Path) -> Result<(bool, String)> {
    let mut cmd = Command::new(bin);
    cmd.args(limits.flags())
        .arg(input)
        .env("ASAN_OPTIONS", asan_options())
        .env("RUST_BACKTRACE", "1");
    let output = RefCell::new(String::new());
    let streamed = run_streaming(
        &mut cmd,
        log,
        Duration::from_secs(limits.unit_timeout + 30),
        Kill::Child,
        |line| {
            let mut out = output.borrow_mut();
            out.push_str(line);
            out.push('\n');
        },
        |_| {},
    )?;
    Ok((!streamed.status.success(), output.into_inner()))
}

pub fn run(project: &Project, opts: &Options) -> Result<()> {
    let started_at = SystemTime::now();
    let started = Instant::now();
    let all = project.fuzz_targets()?;
    let targets = select_targets(&all, &opts.targets)?;
    let shares = split_budget(opts.budget.as_secs(), targets.len()).map_err(anyhow::Error::msg)?;

    let toolchain = ensure_toolchain(&opts.toolchain)?;
    let cargo_fuzz = ensure_cargo_fuzz()?;
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
        opts.sanitizer.as_str(),
    );
    println!(
        "    (building, corpus merging and crash minimization take time on top of the budget)"
    );

    let build_started = Instant::now();
    build(
        project,
        &opts.toolchain,
        opts.sanitizer,
        &host,
        &targets,
        targets.len() == all.len(),
    )?;
    let build_secs = build_started.elapsed().as_secs_f64();
    println!(
        "==> built {} fuzz target(s) in {build_secs:.0}s",
        targets.len()
    );

    fs::create_dir_all(&opts.out).with_context(|| format!("creating {}", opts.out.display()))?;
    let mut reports = Vec::new();
    for (i, (target, share)) in targets.iter().zip(&shares).enumerate() {
        let position = format!("[{}/{}]", i + 1, targets.len());
        let report =
            fuzz_target(project, opts, &host, target, *share, &position).unwrap_or_else(|e| {
                println!("  {position} {target}: error: {e:#}");
                error_report(project, opts, target, *share, &e)
            });
        reports.push(report);
    }

    let crashes: usize = reports.iter().map(|r| r.crashes).sum();
    let errors = reports.iter().filter(|r| r.error.is_some()).count();
    let report = Report {
        started: sidecar::iso_datetime(started_at),
        budget_secs: opts.budget.as_secs(),
        jobs: opts.jobs,
        sanitizer: opts.sanitizer.as_str().to_owned(),
        toolchain,
        cargo_fuzz,
        build_secs,
        total_secs: started.elapsed().as_secs_f64(),
        targets: reports,
        crashes,
        ok: crashes == 0 && errors == 0,
    };
    let json_path = opts.out.join("report.json");
    let md_path = opts.out.join("report.md");
    fs::write(&json_path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    fs::write(&md_path, report::render_markdown(&report))
        .with_context(|| format!("writing {}", md_path.display()))?;

    println!("==> summary ({:.0}s in total)", report.total_secs);
    for t in &report.targets {
        println!(
            "    {:<14} {:<7} execs {:>10}  exec/s {:>7}  cov {:>5}  ft {:>6}  corpus {} -> {}  crashes {}",
            t.target,
            t.status,
            t.execs,
            t.execs_per_sec,
            t.coverage.map_or_else(|| "-".to_owned(), |c| c.to_string()),
            t.features.map_or_else(|| "-".to_owned(), |f| f.to_string()),
            t.corpus_size_before,
            t.corpus_size_after,
            t.crashes,
        );
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
    if errors > 0 {
        bail!(
            "{errors} target(s) failed to fuzz; see {}",
            project.display(&md_path)
        );
    }
    Ok(())
}

/// Fails with a clear message unless `rustc +<toolchain>` works; returns its version.
fn ensure_toolchain(toolchain: &str) -> Result<String> {
    let mut cmd = Command::new("rustc");
    cmd.arg(format!("+{toolchain}")).arg("--version");
    process::scrub_env(&mut cmd);
    match capture(&mut cmd) {
        Ok((status, text)) if status.success() => Ok(text.trim().to_owned()),
        Ok((_, text)) => bail!(
            "the `{toolchain}` toolchain is required (cargo-fuzz builds with AddressSanitizer, \
             a nightly-only rustc flag) but `rustc +{toolchain} --version` failed:\n{}\n\
             install it with: rustup toolchain install {toolchain} --profile minimal",
            text.split("Stack backtrace:")
                .next()
                .unwrap_or_default()
                .trim()
        ),
        Err(e) => bail!(
            "the `{toolchain}` toolchain is required but rustc could not be run ({e:#}); \
             install rustup and then: rustup toolchain install {toolchain} --profile minimal"
        ),
    }
}

/// Installs cargo-fuzz when `cargo fuzz --version` fails; returns its version.
fn ensure_cargo_fuzz() -> Result<String> {
    let version = || -> Option<String> {
        let (status, text) = capture(cargo(None).args(["fuzz", "--version"])).ok()?;
        status.success().then(|| text.trim().to_owned())
    };
    if let Some(v) = version() {
        return Ok(v);
    }
    println!("==> cargo-fuzz not found; installing it with `cargo install --locked cargo-fuzz`");
    run_visible(cargo(None).args(["install", "--locked", "cargo-fuzz"]))?;
    version().context("`cargo fuzz --version` still fails after installing cargo-fuzz")
}

/// The first C++ compiler found, which libfuzzer-sys needs to build libFuzzer.
fn find_cxx() -> Option<String> {
    let from_env = std::env::var("CXX")
        .ok()
        .and_then(|cxx| cxx.split_whitespace().next().map(str::to_owned));
    from_env
        .into_iter()
        .chain(["c++", "g++", "clang++"].map(str::to_owned))
        .find(|cxx| {
            Command::new(cxx)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

fn build(
    project: &Project,
    toolchain: &str,
    sanitizer: Sanitizer,
    host: &str,
    targets: &[String],
    all: bool,
) -> Result<()> {
    // One invocation builds every target; a subset is built target by target.
    let runs: Vec<Option<&String>> = if all {
        vec![None]
    } else {
        targets.iter().map(Some).collect()
    };
    for target in runs {
        let mut cmd = cargo(Some(toolchain));
        cmd.current_dir(&project.root)
            .args(["fuzz", "build"])
            .args(build_flags(project, sanitizer, host));
        cmd.args(target);
        println!("==> {}", describe(&cmd));
        if let Err(e) = run_visible(&mut cmd) {
            if find_cxx().is_none() {
                return Err(e.context(
                    "no C++ compiler found (tried $CXX, c++, g++, clang++); libfuzzer-sys \
                     compiles libFuzzer's C++ runtime: install one, e.g. `apt-get install g++`",
                ));
            }
            return Err(e);
        }
    }
    for target in targets {
        let bin = project.fuzz_binary(sanitizer, host, target);
        if !bin.is_file() {
            bail!("the build succeeded but {} is missing", bin.display());
        }
    }
    Ok(())
}

/// How often to print a status line: about six times per target, within 5–30s.
fn status_interval(share_secs: u64) -> Duration {
    Duration::from_secs((share_secs / 6).clamp(5, 30))
}

/// Panic locations of workspace crates are absolute (they are path
/// dependencies of the fuzz crate); show them relative to the repository.
pub fn relative_paths(text: &str, root: &Path) -> String {
    text.replace(&format!("{}/", root.display()), "")
}

/// Lines worth showing as they happen.
fn is_notable(line: &str) -> bool {
    line.contains("ERROR: ")
        || line.contains(" panicked at ")
        || line.contains("has overflowed its stack")
        || line.contains("Test unit written to")
        || line.starts_with("SUMMARY: ")
}

/// Per-job logs written by libFuzzer's `-jobs` mode into its working directory.
fn job_logs(log_dir: &Path) -> Result<Vec<LogStats>> {
    let mut jobs = Vec::new();
    for file in files_in(log_dir)? {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with("fuzz-") && name.ends_with(".log") {
            let text = fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            jobs.push(LogStats::from_text(&String::from_utf8_lossy(&text)));
        }
    }
    Ok(jobs)
}

fn condensed_totals(totals: &Totals, jobs: usize) -> String {
    let mut out = format!("#{}", totals.execs);
    if let Some(cov) = totals.cov {
        out.push_str(&format!(" cov: {cov}"));
    }
    if let Some(ft) = totals.ft {
        out.push_str(&format!(" ft: {ft}"));
    }
    out.push_str(&format!(" exec/s: {} ({jobs} jobs)", totals.execs_per_sec));
    out
}

fn fuzz_target(
    project: &Project,
    opts: &Options,
    host: &str,
    target: &str,
    share: u64,
    position: &str,
) -> Result<TargetReport> {
    let bin = project.fuzz_binary(opts.sanitizer, host, target);
    let corpus = project.corpus(target);
    let work = project.working_corpus(target);
    fs::create_dir_all(&corpus).with_context(|| format!("creating {}", corpus.display()))?;
    let corpus_size_before = files_in(&corpus)?.len();
    copy_missing(&corpus, &work)?;

    // regressions/<target>/ also holds .toml sidecars: seed only the inputs.
    let seeds = tempfile::Builder::new()
        .prefix(&format!("portcullis-{target}-seeds-"))
        .tempdir()?;
    let mut regression_seeds = 0;
    for file in files_in(&project.regressions(target))? {
        if file.extension().is_some_and(|e| e == "bin") {
            let name = file.file_name().context("regression file name")?;
            fs::copy(&file, seeds.path().join(name))
                .with_context(|| format!("copying {}", file.display()))?;
            regression_seeds += 1;
        }
    }

    let artifacts = opts.out.join("artifacts").join(target);
    fs::create_dir_all(&artifacts)?;
    let earlier: HashSet<PathBuf> = files_in(&artifacts)?.into_iter().collect();
    let log_dir = opts.out.join("logs").join(target);
    if log_dir.exists() {
        fs::remove_dir_all(&log_dir).with_context(|| format!("clearing {}", log_dir.display()))?;
    }
    fs::create_dir_all(&log_dir)?;
    let log = log_dir.join("fuzz.log");

    let mut cmd = Command::new(&bin);
    // In -jobs mode libFuzzer writes fuzz-<job>.log into its working directory.
    cmd.current_dir(&log_dir)
        .env("ASAN_OPTIONS", asan_options())
        .arg(&work);
    if regression_seeds > 0 {
        cmd.arg(seeds.path());
    }
    cmd.arg(format!("-dict={}", project.dict().display()))
        .arg(format!("-max_total_time={share}"))
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg(format!("-max_len={}", opts.limits.max_len))
        .args(opts.limits.flags());
    if opts.jobs > 1 {
        cmd.arg(format!("-jobs={}", opts.jobs))
            .arg(format!("-workers={}", opts.jobs));
    }

    println!(
        "  {position} {target}: fuzzing for {} ({} corpus inputs, {regression_seeds} regression seeds)",
        format_secs(share),
        files_in(&work)?.len(),
    );
    let stats = RefCell::new(LogStats::default());
    let interval = status_interval(share);
    let mut last_print = Instant::now();
    let mut panic_message_next = false;
    let started = Instant::now();
    let streamed = run_streaming(
        &mut cmd,
        &log,
        Duration::from_secs(share + opts.limits.unit_timeout + 60),
        Kill::Child,
        |line| {
            stats.borrow_mut().feed_line(line);
            // A panic's message is on the line after its location.
            if is_notable(line) || panic_message_next {
                println!("      {target}: {line}");
            }
            panic_message_next = line.contains(" panicked at ") && line.ends_with(':');
        },
        |elapsed| {
            if last_print.elapsed() < interval {
                return;
            }
            last_print = Instant::now();
            let status = if opts.jobs > 1 {
                job_logs(&log_dir)
                    .ok()
                    .filter(|jobs| !jobs.is_empty())
                    .map(|jobs| condensed_totals(&libfuzzer::combine(&jobs), jobs.len()))
            } else {
                stats.borrow().last_status.as_ref().map(|s| s.condensed())
            };
            println!(
                "  {position} {target} {}/{} {}",
                format_secs(elapsed.as_secs().min(share)),
                format_secs(share),
                status.as_deref().unwrap_or("starting…"),
            );
        },
    )?;
    let duration_secs = started.elapsed().as_secs_f64();
    let totals = if opts.jobs > 1 {
        libfuzzer::combine(&job_logs(&log_dir)?)
    } else {
        libfuzzer::combine(&[stats.into_inner()])
    };

    let mut error = None;
    if streamed.timed_out {
        error = Some(format!(
            "libFuzzer was still running {}s past its {share}s budget and was killed",
            opts.limits.unit_timeout + 60
        ));
    }

    // Findings: artifacts that this run wrote.
    let mut candidates = Vec::new();
    let found: Vec<PathBuf> = files_in(&artifacts)?
        .into_iter()
        .filter(|a| !earlier.contains(a))
        .filter(|a| {
            a.file_name()
                .and_then(|n| n.to_str())
                .and_then(artifact_kind)
                .is_some()
        })
        .collect();
    if !found.is_empty() {
        let fuzz_log = String::from_utf8_lossy(&fs::read(&log)?).into_owned();
        let mut seen: Vec<Vec<u8>> = Vec::new();
        for artifact in &found {
            let candidate = make_candidate(project, opts, host, target, &bin, artifact, &fuzz_log)?;
            // Parallel jobs often hit the same defect: keep one per minimized input.
            let bytes = fs::read(project.root.join(&candidate.path))?;
            if seen.contains(&bytes) {
                println!(
                    "      {target}: {} minimizes to an input already reported; dropped",
                    candidate.artifact
                );
                for file in [&candidate.path, &candidate.sidecar] {
                    let _ = fs::remove_file(project.root.join(file));
                }
                continue;
            }
            seen.push(bytes);
            candidates.push(candidate);
        }
    } else if !streamed.status.success() && error.is_none() {
        error = Some(format!(
            "libFuzzer exited with {} without writing an artifact",
            streamed.status
        ));
    }

    // Fold new coverage into the checked-in corpus.
    let merge_log = log_dir.join("merge.log");
    let added = if !opts.merge {
        None
    } else {
        match merge_corpus(opts.limits, &bin, &corpus, &work, &log_dir, &merge_log) {
            Ok(added) => added,
            Err(e) => {
                error.get_or_insert(format!("{e:#}"));
                None
            }
        }
    };
    let corpus_size_after = files_in(&corpus)?.len();
    let working_corpus_size = files_in(&work)?.len();

    let status = if !candidates.is_empty() {
        "crashed"
    } else if error.is_some() {
        "error"
    } else {
        "ok"
    };
    println!(
        "  {position} {target}: {status} after {duration_secs:.0}s: {} execs ({} exec/s), cov {} ft {}, corpus/{target} {corpus_size_before} -> {corpus_size_after}{}, {} crash(es)",
        totals.execs,
        totals.execs_per_sec,
        totals.cov.map_or_else(|| "-".to_owned(), |c| c.to_string()),
        totals.ft.map_or_else(|| "-".to_owned(), |f| f.to_string()),
        added.map_or_else(String::new, |n| format!(" (+{n} from the merge)")),
        candidates.len(),
    );
    if let Some(e) = &error {
        println!("      {target}: error: {e}");
    }

    Ok(TargetReport {
        target: target.to_owned(),
        status: status.to_owned(),
        error,
        budget_secs: share,
        duration_secs,
        execs: totals.execs,
        execs_per_sec: totals.execs_per_sec,
        coverage: totals.cov,
        features: totals.ft,
        peak_rss_mb: totals.peak_rss_mb,
        corpus_size_before,
        corpus_size_after,
        working_corpus_size,
        regression_seeds,
        crashes: candidates.len(),
        candidates,
        log: project.display(&log),
    })
}

fn error_report(
    project: &Project,
    opts: &Options,
    target: &str,
    share: u64,
    error: &anyhow::Error,
) -> TargetReport {
    let corpus_size = files_in(&project.corpus(target)).map_or(0, |f| f.len());
    TargetReport {
        target: target.to_owned(),
        status: "error".to_owned(),
        error: Some(format!("{error:#}")),
        budget_secs: share,
        duration_secs: 0.0,
        execs: 0,
        execs_per_sec: 0,
        coverage: None,
        features: None,
        peak_rss_mb: None,
        corpus_size_before: corpus_size,
        corpus_size_after: corpus_size,
        working_corpus_size: files_in(&project.working_corpus(target)).map_or(0, |f| f.len()),
        regression_seeds: 0,
        crashes: 0,
        candidates: Vec::new(),
        log: project.display(&opts.out.join("logs").join(target).join("fuzz.log")),
    }
}

/// `-merge=1` of the working corpus into the checked-in one: inputs that add
/// coverage are copied in under their SHA-1, existing files stay.
fn merge_corpus(
    limits: Limits,
    bin: &Path,
    corpus: &Path,
    work: &Path,
    log_dir: &Path,
    merge_log: &Path,
) -> Result<Option<u64>> {
    let mut cmd = Command::new(bin);
    cmd.current_dir(log_dir)
        .env("ASAN_OPTIONS", asan_options())
        .arg("-merge=1")
        .arg(format!(
            "-merge_control_file={}",
            log_dir.join("merge.control").display()
        ))
        .arg(format!("-artifact_prefix={}/", log_dir.display()))
        .arg(format!("-max_len={}", limits.max_len))
        .args(limits.flags())
        .arg(corpus)
        .arg(work);
    let output = RefCell::new(String::new());
    let streamed = run_streaming(
        &mut cmd,
        merge_log,
        Duration::from_secs(30 * 60),
        Kill::Child,
        |line| {
            if line.starts_with("MERGE-OUTER: ") {
                let mut out = output.borrow_mut();
                out.push_str(line);
                out.push('\n');
            }
        },
        |_| {},
    )?;
    if streamed.timed_out || !streamed.status.success() {
        bail!(
            "merging into {} failed ({}); see {}",
            corpus.display(),
            if streamed.timed_out {
                "timed out".to_owned()
            } else {
                streamed.status.to_string()
            },
            merge_log.display()
        );
    }
    Ok(libfuzzer::parse_merge_added(&output.into_inner()))
}

/// Minimizes an artifact with `cargo fuzz tmin`, re-runs it for a summary and
/// writes `candidates/<target>/<name>.{bin,toml,log}`.
fn make_candidate(
    project: &Project,
    opts: &Options,
    host: &str,
    target: &str,
    bin: &Path,
    artifact: &Path,
    fuzz_log: &str,
) -> Result<Candidate> {
    let name = artifact
        .file_name()
        .context("artifact file name")?
        .to_string_lossy()
        .into_owned();
    let kind = artifact_kind(&name).map_or("crash", |k| k.as_str());
    let dir = opts.out.join("candidates").join(target);
    fs::create_dir_all(&dir)?;
    let input = dir.join(format!("{name}.bin"));
    let _ = fs::remove_file(&input);

    println!(
        "      {target}: minimizing {kind} {name} ({} bytes) with cargo fuzz tmin (at most {}s)",
        fs::metadata(artifact)?.len(),
        opts.tmin_secs
    );
    let mut cmd = cargo(Some(&opts.toolchain));
    cmd.current_dir(&project.root)
        .args(["fuzz", "tmin"])
        .args(build_flags(project, opts.sanitizer, host))
        .arg("--runs")
        .arg(opts.tmin_runs.to_string())
        .arg(target)
        .arg(artifact)
        .arg("--")
        .arg(format!("-exact_artifact_path={}", input.display()))
        .args(opts.limits.flags());
    let tmin = run_streaming(
        &mut cmd,
        &dir.join(format!("{name}.tmin.log")),
        Duration::from_secs(opts.tmin_secs),
        Kill::Group,
        |_| {},
        |_| {},
    );
    let mut minimized = matches!(tmin, Ok(ref t) if !t.timed_out) && input.is_file();

    let repro_log = dir.join(format!("{name}.log"));
    let mut reproduced = None;
    if minimized {
        let (crashed, output) = reproduce(bin, &input, opts.limits, &repro_log)?;
        if crashed {
            reproduced = Some(output);
        } else {
            minimized = false; // a smaller input that no longer crashes is no use
        }
    }
    if !minimized {
        fs::copy(artifact, &input)
            .with_context(|| format!("copying {} to {}", artifact.display(), input.display()))?;
        let (crashed, output) = reproduce(bin, &input, opts.limits, &repro_log)?;
        reproduced = crashed.then_some(output);
    }

    let summary = reproduced
        .as_deref()
        .and_then(crash_summary)
        .or_else(|| crash_summary(fuzz_log))
        .map(|s| relative_paths(&s, &project.root))
        .unwrap_or_else(|| {
            format!("libFuzzer reported a {kind}; it did not reproduce when re-run alone")
        });
    let sidecar_path = dir.join(format!("{name}.toml"));
    Sidecar {
        summary: summary.clone(),
        found: sidecar::today(),
        source: SOURCE.to_owned(),
        target: Some(target.to_owned()),
    }
    .write(&sidecar_path)?;

    let size_bytes = fs::metadata(&input)?.len();
    println!(
        "      {target}: {kind} -> {} ({size_bytes} bytes{}): {summary}",
        project.display(&input),
        if minimized { ", minimized" } else { "" }
    );
    Ok(Candidate {
        kind: kind.to_owned(),
        path: project.display(&input),
        sidecar: project.display(&sidecar_path),
        artifact: project.display(artifact),
        summary,
        size_bytes,
        minimized,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_interval_scales_with_the_share() {
        assert_eq!(status_interval(12), Duration::from_secs(5));
        assert_eq!(status_interval(60), Duration::from_secs(10));
        assert_eq!(status_interval(3600), Duration::from_secs(30));
    }

    #[test]
    fn crash_lines_are_notable_and_progress_is_not() {
        assert!(is_notable("==1== ERROR: libFuzzer: deadly signal"));
        assert!(is_notable("thread '<unnamed>' panicked at src/lib.rs:1:1:"));
        assert!(is_notable(
            "artifact_prefix='a/'; Test unit written to a/crash-1"
        ));
        assert!(!is_notable(
            "#3\tNEW    cov: 5 ft: 6 corp: 2/3b exec/s: 0 rss: 27Mb"
        ));
        assert!(!is_notable("INFO: Seed: 1"));
    }

    #[test]
    fn workspace_paths_in_summaries_become_relative() {
        assert_eq!(
            relative_paths(
                "boom (panicked at /work/main/crates/testkit/src/harness.rs:1:2)",
                Path::new("/work/main")
            ),
            "boom (panicked at crates/testkit/src/harness.rs:1:2)"
        );
    }

    #[test]
    fn build_flags_pin_profile_triple_and_target_dir() {
        let project = Project {
            root: PathBuf::from("/repo"),
        };
        let flags = build_flags(&project, Sanitizer::Address, "x86_64-unknown-linux-gnu");
        assert_eq!(
            flags,
            [
                "-O",
                "--debug-assertions",
                "--sanitizer",
                "address",
                "--target",
                "x86_64-unknown-linux-gnu",
                "--target-dir",
                "/repo/fuzz/target"
            ]
            .map(OsString::from)
        );
    }
}
