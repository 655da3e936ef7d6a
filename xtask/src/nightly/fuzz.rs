//! Fuzzing one target: run libFuzzer for the target's share of the budget
//! with its corpus and regression seeds, show progress, collect what it
//! found, and fold new coverage into `corpus/<target>/`.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::Options;
use super::triage::make_candidate;
use crate::budget::format_secs;
use crate::libfuzzer::{self, Limits, LogStats, Totals, artifact_kind, asan_options};
use crate::process::{Kill, children_cpu_secs, run_streaming};
use crate::project::{Project, Sanitizer, copy_missing, files_in};
use crate::report::{RunReport, TargetReport};

/// How often to print a status line: about six times per target, within 5–30s.
fn status_interval(share_secs: u64) -> Duration {
    Duration::from_secs((share_secs / 6).clamp(5, 30))
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

/// One libFuzzer process over a target's working corpus.
struct Run<'a> {
    target: &'a str,
    position: &'a str,
    bin: PathBuf,
    sanitizer: Sanitizer,
    secs: u64,
    /// Its working directory: libFuzzer's `-jobs` logs land here.
    log_dir: PathBuf,
}

/// What one run did.
struct RunOutcome {
    totals: Totals,
    duration_secs: f64,
    cpu_secs: Option<f64>,
    timed_out: bool,
    status: std::process::ExitStatus,
    log: PathBuf,
}

/// Fuzz `work` (plus `seeds`) with `run.bin` for `run.secs`, crashes into
/// `artifacts`, showing progress; the figures are read from its output.
fn run_libfuzzer(
    project: &Project,
    opts: &Options,
    run: &Run<'_>,
    work: &Path,
    seeds: Option<&Path>,
    artifacts: &Path,
) -> Result<RunOutcome> {
    let Run {
        target,
        position,
        secs,
        ..
    } = *run;
    let log_dir = &run.log_dir;
    fs::create_dir_all(log_dir)?;
    let log = log_dir.join("fuzz.log");
    let mut cmd = Command::new(&run.bin);
    // In -jobs mode libFuzzer writes fuzz-<job>.log into its working directory.
    cmd.current_dir(log_dir)
        .env("ASAN_OPTIONS", asan_options())
        .arg(work);
    cmd.args(seeds);
    cmd.arg(format!("-dict={}", project.dict().display()))
        .arg(format!("-max_total_time={secs}"))
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg(format!("-max_len={}", opts.limits.max_len))
        .args(opts.limits.flags());
    if opts.jobs > 1 {
        cmd.arg(format!("-jobs={}", opts.jobs))
            .arg(format!("-workers={}", opts.jobs));
    }

    let stats = RefCell::new(LogStats::default());
    let interval = status_interval(secs);
    let mut last_print = Instant::now();
    let mut panic_message_next = false;
    let started = Instant::now();
    let cpu_before = children_cpu_secs();
    let label = run.sanitizer.as_str();
    let streamed = run_streaming(
        &mut cmd,
        &log,
        Duration::from_secs(secs + opts.limits.unit_timeout + 60),
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
                job_logs(log_dir)
                    .ok()
                    .filter(|jobs| !jobs.is_empty())
                    .map(|jobs| condensed_totals(&libfuzzer::combine(&jobs), jobs.len()))
            } else {
                stats.borrow().last_status.as_ref().map(|s| s.condensed())
            };
            println!(
                "  {position} {target} ({label}) {}/{} {}",
                format_secs(elapsed.as_secs().min(secs)),
                format_secs(secs),
                status.as_deref().unwrap_or("starting…"),
            );
        },
    )?;
    let duration_secs = started.elapsed().as_secs_f64();
    let cpu_secs = children_cpu_secs()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let totals = if opts.jobs > 1 {
        libfuzzer::combine(&job_logs(log_dir)?)
    } else {
        libfuzzer::combine(&[stats.into_inner()])
    };
    Ok(RunOutcome {
        totals,
        duration_secs,
        cpu_secs,
        timed_out: streamed.timed_out,
        status: streamed.status,
        log,
    })
}

/// The target's throughput over all its runs: their executions over their
/// wall time (one run's figure is libFuzzer's own average).
fn overall_execs_per_sec(runs: &[RunReport]) -> u64 {
    match runs {
        [one] => one.execs_per_sec,
        _ => {
            let secs: f64 = runs.iter().map(|r| r.duration_secs).sum();
            let execs: u64 = runs.iter().map(|r| r.execs).sum();
            if secs > 0.0 {
                (execs as f64 / secs).round() as u64
            } else {
                0
            }
        }
    }
}

/// Executions per CPU-second, when the CPU time is known and not zero.
fn per_cpu_sec(execs: u64, cpu_secs: Option<f64>) -> Option<u64> {
    cpu_secs
        .filter(|&secs| secs > 0.0)
        .map(|secs| (execs as f64 / secs).round() as u64)
}

/// Where a working corpus is fuzzed when the machine has a shared-memory
/// file system.
const MEMORY_FS: &str = "/dev/shm";

/// A copy of `work` on tmpfs, if there is one to make it on.
fn memory_mirror(target: &str, work: &Path) -> Result<Option<tempfile::TempDir>> {
    let Ok(mirror) = tempfile::Builder::new()
        .prefix(&format!("portcullis-{target}-work-"))
        .tempdir_in(MEMORY_FS)
    else {
        return Ok(None);
    };
    copy_missing(work, mirror.path())?;
    Ok(Some(mirror))
}

/// Make `work` hold exactly the inputs of `mirror`: libFuzzer names each
/// input by its content's SHA-1, so the same name is the same input; the
/// ones it removed (reduced to a smaller one) go.
fn mirror_back(mirror: &Path, work: &Path) -> Result<()> {
    let kept: HashSet<std::ffi::OsString> = files_in(mirror)?
        .iter()
        .filter_map(|f| f.file_name().map(ToOwned::to_owned))
        .collect();
    for file in files_in(work)? {
        if file.file_name().is_some_and(|n| !kept.contains(n)) {
            fs::remove_file(&file).with_context(|| format!("removing {}", file.display()))?;
        }
    }
    copy_missing(mirror, work)?;
    Ok(())
}

/// Fuzz `target` for `share` seconds: one libFuzzer run per sanitizer of
/// the plan over the same working corpus, then triage of what they found
/// and the corpus merge.
pub(crate) fn fuzz_target(
    project: &Project,
    opts: &Options,
    host: &str,
    target: &str,
    share: u64,
    position: &str,
) -> Result<TargetReport> {
    let plan = opts.plan();
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
    let log_dir = opts.out.join("logs").join(target);
    if log_dir.exists() {
        fs::remove_dir_all(&log_dir).with_context(|| format!("clearing {}", log_dir.display()))?;
    }
    fs::create_dir_all(&log_dir)?;

    // libFuzzer writes every new or reduced input as a file, thousands in
    // a short run; on tmpfs that costs a fraction of what a disk file
    // system's inode handling does (a perf profile of stdin_bytes put ext4
    // at 7% of the run). The directory is synced back after the runs.
    let in_memory = memory_mirror(target, &work)?;
    let fuzzed = in_memory.as_ref().map_or(work.as_path(), |m| m.path());

    let planned = plan.runs(share);
    let split = planned.len() > 1;
    println!(
        "  {position} {target}: fuzzing for {} ({}; {} corpus inputs, {regression_seeds} regression seeds)",
        format_secs(share),
        planned
            .iter()
            .map(|(s, secs)| format!("{} {}", s.as_str(), format_secs(*secs)))
            .collect::<Vec<_>>()
            .join(" then "),
        files_in(&work)?.len(),
    );

    let mut runs = Vec::new();
    let mut last_totals = Totals::default();
    let mut peak_rss_mb = None;
    let mut error = None;
    // Each artifact with the sanitizer whose run wrote it.
    let mut found: Vec<(PathBuf, Sanitizer)> = Vec::new();
    let mut fuzz_logs = Vec::new();
    for (sanitizer, secs) in planned {
        let earlier: HashSet<PathBuf> = files_in(&artifacts)?.into_iter().collect();
        let run = Run {
            target,
            position,
            bin: project.fuzz_binary(sanitizer, host, target),
            sanitizer,
            secs,
            // A split keeps each run's logs apart; a single run keeps the
            // layout of earlier reports.
            log_dir: if split {
                log_dir.join(sanitizer.as_str())
            } else {
                log_dir.clone()
            },
        };
        let outcome = run_libfuzzer(
            project,
            opts,
            &run,
            fuzzed,
            (regression_seeds > 0).then(|| seeds.path()),
            &artifacts,
        )?;
        let new: Vec<PathBuf> = files_in(&artifacts)?
            .into_iter()
            .filter(|a| !earlier.contains(a))
            .filter(|a| {
                a.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(artifact_kind)
                    .is_some()
            })
            .collect();
        if outcome.timed_out {
            error = Some(format!(
                "libFuzzer ({}) was still running {}s past its {secs}s budget and was killed",
                sanitizer.as_str(),
                opts.limits.unit_timeout + 60
            ));
        } else if new.is_empty() && !outcome.status.success() && error.is_none() {
            error = Some(format!(
                "libFuzzer ({}) exited with {} without writing an artifact",
                sanitizer.as_str(),
                outcome.status
            ));
        }
        let execs_per_cpu_sec = per_cpu_sec(outcome.totals.execs, outcome.cpu_secs);
        println!(
            "  {position} {target} ({}): {:.0}s, {} execs ({} exec/s, {} per CPU-second)",
            sanitizer.as_str(),
            outcome.duration_secs,
            outcome.totals.execs,
            outcome.totals.execs_per_sec,
            execs_per_cpu_sec.map_or_else(|| "-".to_owned(), |e| e.to_string()),
        );
        runs.push(RunReport {
            sanitizer: sanitizer.as_str().to_owned(),
            budget_secs: secs,
            duration_secs: outcome.duration_secs,
            cpu_secs: outcome.cpu_secs,
            execs: outcome.totals.execs,
            execs_per_sec: outcome.totals.execs_per_sec,
            execs_per_cpu_sec,
            log: project.display(&outcome.log),
        });
        peak_rss_mb = peak_rss_mb.max(outcome.totals.peak_rss_mb);
        let stop = !new.is_empty() || error.is_some();
        fuzz_logs.push(outcome.log);
        found.extend(new.into_iter().map(|a| (a, sanitizer)));
        // Coverage and features come from the last run (the builds count
        // edges differently, so they do not add up).
        last_totals = outcome.totals;
        // libFuzzer stops at its first finding; so does the target.
        if stop {
            break;
        }
    }
    if let Some(mirror) = &in_memory {
        mirror_back(mirror.path(), &work)?;
    }
    drop(in_memory);
    let execs: u64 = runs.iter().map(|r| r.execs).sum();
    let duration_secs: f64 = runs.iter().map(|r| r.duration_secs).sum();
    let execs_per_sec = overall_execs_per_sec(&runs);
    let cpu_secs: Option<f64> = runs.iter().map(|r| r.cpu_secs).sum();
    let execs_per_cpu_sec = per_cpu_sec(execs, cpu_secs);

    // Findings: artifacts that these runs wrote.
    let mut candidates = Vec::new();
    if !found.is_empty() {
        let mut fuzz_log = String::new();
        for log in &fuzz_logs {
            fuzz_log.push_str(&String::from_utf8_lossy(&fs::read(log)?));
        }
        let mut seen: Vec<Vec<u8>> = Vec::new();
        for (artifact, sanitizer) in &found {
            let candidate =
                make_candidate(project, opts, *sanitizer, host, target, artifact, &fuzz_log)?;
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
    }

    // Fold new coverage into the checked-in corpus, with the first run's
    // build (the fastest in a split).
    let merge_log = log_dir.join("merge.log");
    let added = if opts.no_merge {
        None
    } else {
        let bin = project.fuzz_binary(plan.sanitizers()[0], host, target);
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
        "  {position} {target}: {status} after {duration_secs:.0}s: {execs} execs ({execs_per_sec} exec/s), cov {} ft {}, corpus/{target} {corpus_size_before} -> {corpus_size_after}{}, {} crash(es)",
        last_totals
            .cov
            .map_or_else(|| "-".to_owned(), |c| c.to_string()),
        last_totals
            .ft
            .map_or_else(|| "-".to_owned(), |f| f.to_string()),
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
        execs,
        execs_per_sec,
        execs_per_cpu_sec,
        previous: None,
        floor: None,
        log: runs.first().map(|r| r.log.clone()).unwrap_or_default(),
        runs,
        coverage: last_totals.cov,
        features: last_totals.ft,
        peak_rss_mb,
        corpus_size_before,
        corpus_size_after,
        working_corpus_size,
        regression_seeds,
        crashes: candidates.len(),
        candidates,
    })
}

pub(super) fn error_report(
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
        execs_per_cpu_sec: None,
        previous: None,
        floor: None,
        runs: Vec::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_working_corpus_ends_as_the_memory_copy_left_it() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        fs::create_dir_all(&work).unwrap();
        for name in ["kept", "reduced-away"] {
            fs::write(work.join(name), name).unwrap();
        }
        let Some(mirror) = memory_mirror("t", &work).unwrap() else {
            eprintln!("no {MEMORY_FS} here: the working corpus is fuzzed in place");
            return;
        };
        assert!(mirror.path().starts_with(MEMORY_FS));
        assert_eq!(files_in(mirror.path()).unwrap().len(), 2);
        // What libFuzzer does to it: a new input, one reduced away.
        fs::write(mirror.path().join("new"), "new").unwrap();
        fs::remove_file(mirror.path().join("reduced-away")).unwrap();
        mirror_back(mirror.path(), &work).unwrap();
        let names: Vec<String> = files_in(&work)
            .unwrap()
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["kept", "new"]);
        assert_eq!(fs::read_to_string(work.join("new")).unwrap(), "new");
    }

    fn run(sanitizer: &str, duration_secs: f64, execs: u64, execs_per_sec: u64) -> RunReport {
        RunReport {
            sanitizer: sanitizer.to_owned(),
            budget_secs: duration_secs as u64,
            duration_secs,
            cpu_secs: None,
            execs,
            execs_per_sec,
            execs_per_cpu_sec: None,
            log: String::new(),
        }
    }

    #[test]
    fn a_split_target_reports_its_executions_over_its_whole_time() {
        // libFuzzer's own average for a single run (it counts from start-up).
        assert_eq!(
            overall_execs_per_sec(&[run("address", 60.4, 60_000, 1000)]),
            1000
        );
        let split = [
            run("none", 48.0, 480_000, 10_000),
            run("address", 12.0, 12_000, 1000),
        ];
        assert_eq!(overall_execs_per_sec(&split), 8200);
        assert_eq!(overall_execs_per_sec(&[]), 0);
    }

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
}
