//! `cargo xtask bugbench`: how fast do our oracles catch realistic defects?
//!
//! Each planted bug in `bugbench/` ([`patch`]) is applied in a scratch git
//! worktree made from HEAD (`target/bugbench/worktree`, removed at the
//! end). With the bug in, `cargo test` runs the tests of its stage
//! ([`test_runs`]), then the fuzz targets that reach the patched code (if
//! any) are built and run from the checked-in corpus, each until it first
//! fails or the cap passes. The table ([`table`]) goes to
//! `target/nightly/bugbench.{md,json}`, which the nightly report includes.
//!
//! Speed: one worktree serves every bug (the patch is reverted between
//! bugs), so file times and paths stay put and cargo rebuilds only the
//! patched crate and its dependents; `cargo test` shares
//! `target/bugbench/target` and the fuzz builds share
//! `target/bugbench/fuzz-target` across bugs and runs. Fuzzing calls the
//! nightly's own build and run code ([`crate::nightly`]) with its defaults
//! (sanitizer, libFuzzer limits, dictionary, regression seeds).

mod patch;
mod table;

use std::cell::RefCell;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail};

use crate::nightly;
use crate::process::{self, Kill, capture, cargo, describe, run_streaming};
use crate::project::{Project, Sanitizer, select_targets};
use crate::sidecar;

pub use table::BenchReport;
use table::{BugResult, FuzzResult, TestResult};

/// One `cargo test` invocation: `-p` each package, then a target selection
/// (none: every target of those packages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestRun {
    pub packages: &'static [&'static str],
    pub targets: &'static [&'static str],
}

impl TestRun {
    /// The arguments after `cargo test --no-fail-fast`.
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for p in self.packages {
            args.extend(["-p".to_owned(), (*p).to_owned()]);
        }
        args.extend(self.targets.iter().map(|t| (*t).to_owned()));
        args
    }
}

/// The boundary's sans-IO core and its properties, fuzz harnesses and
/// regression replay: what judges the boundary's stages.
const BOUNDARY_TESTS: TestRun = TestRun {
    packages: &[
        "portcullis-wire",
        "portcullis-gateway",
        "portcullis-testkit",
    ],
    targets: &[],
};
/// The wrap core's own tests and testkit's `wrap_session` harness, model
/// oracle and regression replay.
const WRAP_TESTS: TestRun = TestRun {
    packages: &["portcullis-wrap", "portcullis-testkit"],
    targets: &[],
};
/// The executors' unit and integration tests (their tests against a real
/// sshd skip when `/usr/sbin/sshd` is missing).
const EXEC_TESTS: TestRun = TestRun {
    packages: &["portcullis-exec"],
    targets: &[],
};
/// The binary's unit tests, which hold the audit journal's and `audit
/// verify`'s: not the process tests, which take minutes more.
const CLI_UNIT_TESTS: TestRun = TestRun {
    packages: &["portcullis-cli"],
    targets: &["--bin", "portcullis"],
};

/// The `cargo test` runs that judge a bug of `stage`, cheapest that can
/// catch it: the process tests (`portcullis-cli --tests`) are never run.
/// An audit bug may sit in the CLI's journal or in the wrap core's records.
pub fn test_runs(stage: &str) -> &'static [TestRun] {
    match stage {
        "wrap" => &[WRAP_TESTS],
        "scrubber" => &[EXEC_TESTS],
        "audit" => &[CLI_UNIT_TESTS, WRAP_TESTS],
        _ => &[BOUNDARY_TESTS],
    }
}

/// Apply every planted bug in a scratch worktree; report whether `cargo test`
/// catches it and how fast each fuzz target does.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Seconds each fuzz target may run per bug before the bug counts as
    /// not found by that target.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    pub cap: u64,
    /// Only these bugs: file stems in bugbench/, comma-separated or the
    /// flag repeated (`--bug a --bug b`); default: all.
    #[arg(
        long,
        visible_alias = "bug",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub bugs: Vec<String>,
    /// Comma-separated fuzz targets to run for every bug (default: each
    /// bug's own `Targets:`, the targets that reach its code).
    #[arg(long, value_delimiter = ',')]
    pub targets: Vec<String>,
    /// Packages for one `cargo test -p` run for every bug (repeatable;
    /// default: the runs of each bug's stage, see `test_runs`).
    #[arg(long = "package")]
    pub packages: Vec<String>,
    /// Only `cargo test`, no fuzzing (no nightly toolchain needed).
    #[arg(long)]
    pub no_fuzz: bool,
    /// Sanitizer for the fuzz builds (default: the nightly's).
    #[arg(long, value_enum)]
    pub sanitizer: Option<Sanitizer>,
    /// Toolchain used as `cargo +<toolchain> fuzz`.
    #[arg(long, default_value = "nightly")]
    pub toolchain: String,
    /// Where bugbench.md and bugbench.json go (the nightly's report folder).
    #[arg(long, default_value = "target/nightly")]
    pub out: PathBuf,
}

/// The scratch worktree; removed when dropped, however the run ends.
struct Scratch {
    repo: PathBuf,
    path: PathBuf,
}

impl Scratch {
    fn create(repo: &Path, path: &Path) -> Result<Self> {
        remove_worktree(repo, path);
        let mut cmd = git(repo);
        cmd.args(["worktree", "add", "--detach", "--quiet"])
            .arg(path)
            .arg("HEAD");
        let (status, text) = capture(&mut cmd)?;
        if !status.success() {
            bail!("`{}` failed: {}", describe(&cmd), text.trim());
        }
        Ok(Self {
            repo: repo.to_owned(),
            path: path.to_owned(),
        })
    }

    /// Back to HEAD: tracked files restored, untracked and fuzzing leftovers removed.
    fn reset(&self) -> Result<()> {
        for args in [&["checkout", "--quiet", "--", "."][..], &["clean", "-fdq"]] {
            let mut cmd = git(&self.path);
            cmd.args(args);
            let (status, text) = capture(&mut cmd)?;
            if !status.success() {
                bail!("`{}` failed: {}", describe(&cmd), text.trim());
            }
        }
        for dir in ["fuzz/corpus", "fuzz/artifacts"] {
            let _ = fs::remove_dir_all(self.path.join(dir));
        }
        Ok(())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        remove_worktree(&self.repo, &self.path);
    }
}

fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir);
    cmd
}

fn remove_worktree(repo: &Path, path: &Path) {
    if path.exists() {
        let _ = capture(git(repo).args(["worktree", "remove", "--force"]).arg(path));
        let _ = fs::remove_dir_all(path);
    }
    let _ = capture(git(repo).args(["worktree", "prune"]));
}

/// `git apply --check` of `patch` in `dir`; the error names the bug and
/// says to refresh the patch.
pub fn check_applies(dir: &Path, name: &str, patch: &Path) -> Result<()> {
    let mut cmd = git(dir);
    cmd.args(["apply", "--check"]).arg(patch);
    let (status, text) = capture(&mut cmd)?;
    if !status.success() {
        bail!(
            "planted bug {name:?} no longer applies to the current code ({}):\n{}\n\
             refresh the patch: make the same one-line slip by hand in the code as it is now, \
             then `git diff > {}` (keeping its header)",
            patch.display(),
            text.trim(),
            patch.display()
        );
    }
    Ok(())
}

fn apply(dir: &Path, name: &str, patch: &Path) -> Result<()> {
    check_applies(dir, name, patch)?;
    let mut cmd = git(dir);
    cmd.arg("apply").arg(patch);
    let (status, text) = capture(&mut cmd)?;
    if !status.success() {
        bail!("`{}` failed: {}", describe(&cmd), text.trim());
    }
    Ok(())
}

/// What `cargo test` printed: the failed tests as `<binary>::<test>`, the
/// test binaries that failed without naming a test, and whether the tests
/// did not build at all.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TestOutput {
    pub failed: Vec<String>,
    pub build_failed: bool,
}

impl TestOutput {
    pub fn parse(text: &str) -> Self {
        let mut out = Self::default();
        let mut binary = String::from("?");
        let mut in_failed_targets = false;
        for line in text.lines() {
            let trimmed = line.trim();
            if let Some(rest) = trimmed.strip_prefix("Running ") {
                // `Running tests/frame.rs (target/debug/deps/frame-0123abcd)`
                binary = rest
                    .rsplit_once('(')
                    .map(|(_, p)| p.trim_end_matches(')'))
                    .and_then(|p| p.rsplit('/').next())
                    .map(|f| f.rsplit_once('-').map_or(f, |(stem, _)| stem))
                    .unwrap_or(rest)
                    .to_owned();
            } else if let Some(test) = trimmed
                .strip_prefix("test ")
                .and_then(|t| t.strip_suffix(" ... FAILED"))
            {
                out.failed.push(format!("{binary}::{test}"));
            } else if trimmed.starts_with("error: could not compile") {
                out.build_failed = true;
            } else if trimmed.starts_with("error: ")
                && trimmed.contains("target")
                && trimmed.ends_with("failed:")
            {
                in_failed_targets = true;
                continue;
            } else if in_failed_targets && trimmed.starts_with('`') {
                let target = trimmed.trim_matches('`');
                let prefix = format!("{}::", failed_target_binary(target));
                if !out.failed.iter().any(|f| f.starts_with(&prefix)) {
                    out.failed.push(format!("{target} (no test named)"));
                }
                continue;
            }
            in_failed_targets = false;
        }
        out
    }
}

/// The test binary's name for a cargo target spec such as
/// `-p portcullis-wire --lib` or `-p portcullis-testkit --test boundary`.
fn failed_target_binary(spec: &str) -> String {
    let words: Vec<&str> = spec.split_whitespace().collect();
    let after = |flag: &str| {
        words
            .iter()
            .position(|w| *w == flag)
            .and_then(|i| words.get(i + 1))
    };
    match (after("--test").or(after("--bin")), after("-p")) {
        (Some(name), _) => (*name).to_owned(),
        (None, Some(package)) => package.replace('-', "_"),
        (None, None) => spec.to_owned(),
    }
}

/// Runs `cargo test --no-fail-fast ARGS` in the worktree, its output to `log`.
fn run_cargo_test(
    worktree: &Path,
    target_dir: &Path,
    args: &[String],
    log: &Path,
) -> Result<TestResult> {
    let mut cmd = cargo(None);
    cmd.current_dir(worktree)
        .env("CARGO_TARGET_DIR", target_dir)
        .arg("test")
        .arg("--no-fail-fast")
        .args(args);
    let command = describe(&cmd);
    println!("    $ {command}");
    let text = RefCell::new(String::new());
    let started = Instant::now();
    let streamed = run_streaming(
        &mut cmd,
        log,
        Duration::from_secs(60 * 60),
        Kill::Group,
        |line| {
            let mut t = text.borrow_mut();
            t.push_str(line);
            t.push('\n');
        },
        |_| {},
    )?;
    let secs = started.elapsed().as_secs_f64();
    let parsed = TestOutput::parse(&text.into_inner());
    let status = if streamed.status.success() {
        "passed"
    } else if parsed.build_failed {
        "build-failed"
    } else {
        "failed"
    };
    Ok(TestResult {
        caught: !streamed.status.success(),
        status: status.to_owned(),
        failed_tests: parsed.failed,
        secs,
        log: String::new(),
        commands: vec![command.trim_start_matches("cargo ").to_owned()],
    })
}

/// The runs together: caught when any run failed, `failed` when a test
/// failed in any, `build-failed` when one did not build and none failed.
pub fn combine(runs: Vec<TestResult>) -> TestResult {
    let caught = runs.iter().any(|r| r.caught);
    let status = if runs.iter().any(|r| r.status == "failed") {
        "failed"
    } else if runs.iter().any(|r| r.status == "build-failed") {
        "build-failed"
    } else {
        "passed"
    };
    TestResult {
        caught,
        status: status.to_owned(),
        failed_tests: runs.iter().flat_map(|r| r.failed_tests.clone()).collect(),
        secs: runs.iter().map(|r| r.secs).sum(),
        log: String::new(),
        commands: runs.into_iter().flat_map(|r| r.commands).collect(),
    }
}

pub fn run(project: &Project, opts: &Options) -> Result<()> {
    let started_at = SystemTime::now();
    let started = Instant::now();
    let out = std::path::absolute(&opts.out)
        .with_context(|| format!("resolving --out {}", opts.out.display()))?;
    let all_targets = project.fuzz_targets()?;
    let forced_targets = if opts.targets.is_empty() {
        None
    } else {
        Some(select_targets(&all_targets, &opts.targets)?)
    };
    let bugs = patch::load_all(&project.root.join("bugbench"), &all_targets)?;
    let bugs = patch::select(&bugs, &opts.bugs)?;
    if bugs.is_empty() {
        bail!("no planted bugs in bugbench/");
    }
    // `--package`: one run of those packages for every bug, instead of the
    // runs of its stage.
    let forced_packages: Option<Vec<String>> = (!opts.packages.is_empty()).then(|| {
        opts.packages
            .iter()
            .flat_map(|p| ["-p".to_owned(), p.clone()])
            .collect()
    });
    let plan_of = |stage: &str| -> Vec<Vec<String>> {
        match &forced_packages {
            Some(args) => vec![args.clone()],
            None => test_runs(stage).iter().map(TestRun::args).collect(),
        }
    };
    let mut packages: Vec<String> = Vec::new();
    let mut test_plan = std::collections::BTreeMap::new();
    for bug in &bugs {
        let runs = plan_of(&bug.stage);
        for run in &runs {
            for pair in run.windows(2).filter(|w| w[0] == "-p") {
                if !packages.contains(&pair[1]) {
                    packages.push(pair[1].clone());
                }
            }
        }
        test_plan.insert(
            bug.stage.clone(),
            runs.iter()
                .map(|r| format!("test --no-fail-fast {}", r.join(" ")))
                .collect(),
        );
    }

    let mut fuzz_opts = nightly::default_options();
    fuzz_opts.toolchain = opts.toolchain.clone();
    if let Some(s) = opts.sanitizer {
        fuzz_opts.sanitizer = Some(s);
    }
    fuzz_opts.no_merge = true;
    fuzz_opts.jobs = 1;
    // A finding's summary is what the table needs; a long minimization is not.
    fuzz_opts.tmin_secs = 30;
    let host = if opts.no_fuzz {
        String::new()
    } else {
        let toolchain = nightly::ensure_toolchain(&opts.toolchain)?;
        let cargo_fuzz = nightly::ensure_cargo_fuzz()?;
        println!("==> bugbench: {toolchain}, {cargo_fuzz}");
        process::host_triple(&opts.toolchain)?
    };

    let scratch_root = project.root.join("target").join("bugbench");
    fs::create_dir_all(&scratch_root)?;
    let commit = {
        let (status, text) = capture(git(&project.root).args(["rev-parse", "--short", "HEAD"]))?;
        if !status.success() {
            bail!("`git rev-parse HEAD` failed: {}", text.trim());
        }
        text.trim().to_owned()
    };
    let scratch = Scratch::create(&project.root, &scratch_root.join("worktree"))?;
    // Refuse stale patches before spending minutes on the others.
    for bug in &bugs {
        check_applies(&scratch.path, &bug.name, &bug.path)?;
    }
    let fuzz_target_dir = scratch_root.join("fuzz-target");
    fs::create_dir_all(&fuzz_target_dir)?;
    let wt = Project {
        root: scratch.path.clone(),
    };
    // The nightly builds into <root>/fuzz/target; point it at the shared dir.
    std::os::unix::fs::symlink(&fuzz_target_dir, wt.fuzz_dir().join("target"))
        .context("linking the shared fuzz build directory into the scratch worktree")?;
    let test_target_dir = scratch_root.join("target");
    let logs = scratch_root.join("logs");

    println!(
        "==> bugbench: {} planted bug(s) at {commit}; cargo test of each bug's stage ({}); fuzz cap {}s per target",
        bugs.len(),
        packages.join(", "),
        opts.cap
    );
    let mut results = Vec::new();
    for (i, bug) in bugs.iter().enumerate() {
        println!(
            "==> [{}/{}] {} ({}): {}",
            i + 1,
            bugs.len(),
            bug.name,
            bug.stage,
            bug.summary
        );
        scratch.reset()?;
        apply(&scratch.path, &bug.name, &bug.path)?;
        let bug_logs = logs.join(&bug.name);
        let _ = fs::remove_dir_all(&bug_logs);
        fs::create_dir_all(&bug_logs)?;

        let runs = plan_of(&bug.stage);
        let mut done = Vec::new();
        for (n, args) in runs.iter().enumerate() {
            let name = if n == 0 {
                "cargo-test.log".to_owned()
            } else {
                format!("cargo-test-{}.log", n + 1)
            };
            let test_log = bug_logs.join(name);
            let mut run = run_cargo_test(&scratch.path, &test_target_dir, args, &test_log)?;
            run.log = project.display(&test_log);
            done.push(run);
        }
        let first_log = done.first().map(|r| r.log.clone()).unwrap_or_default();
        let mut cargo_test = combine(done);
        cargo_test.log = first_log;
        println!(
            "    cargo test: {} in {:.0}s{}",
            cargo_test.status,
            cargo_test.secs,
            if cargo_test.failed_tests.is_empty() {
                String::new()
            } else {
                format!(" ({})", cargo_test.failed_tests.join(", "))
            }
        );

        let mut result = BugResult {
            name: bug.name.clone(),
            stage: bug.stage.clone(),
            class: bug.class.clone(),
            summary: bug.summary.clone(),
            crates: bug.crates.clone(),
            targets: bug.targets.clone(),
            cargo_test,
            fuzz_build_secs: 0.0,
            fuzz: Vec::new(),
            error: None,
        };
        if bug.targets.is_empty() {
            println!("    no fuzz target reaches this code: judged by cargo test alone");
        } else if !opts.no_fuzz {
            let targets = match &forced_targets {
                Some(t) => t.clone(),
                None => select_targets(&all_targets, &bug.targets)?,
            };
            if let Err(e) = fuzz_bug(
                project,
                &wt,
                &fuzz_opts,
                &host,
                &targets,
                opts.cap,
                &bug_logs,
                &mut result,
            ) {
                println!("    error: {e:#}");
                result.error = Some(format!("{e:#}"));
            }
        }
        results.push(result);
    }
    scratch.reset()?;
    drop(scratch);

    let report = BenchReport {
        started: sidecar::iso_datetime(started_at),
        commit,
        cap_secs: opts.cap,
        sanitizer: if opts.no_fuzz {
            "(no fuzzing)".to_owned()
        } else {
            fuzz_opts.plan().describe()
        },
        test_packages: packages,
        test_plan,
        targets: all_targets,
        ok: results.iter().all(|b| !b.escaped()),
        bugs: results,
        total_secs: started.elapsed().as_secs_f64(),
    };
    fs::create_dir_all(&out)?;
    let json_path = out.join("bugbench.json");
    let md_path = out.join("bugbench.md");
    fs::write(&json_path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    let md = table::render_markdown(&report);
    fs::write(&md_path, &md).with_context(|| format!("writing {}", md_path.display()))?;
    println!("\n{md}");
    println!("    report: {}", project.display(&md_path));
    println!("            {}", project.display(&json_path));
    let escaped: Vec<&str> = report
        .bugs
        .iter()
        .filter(|b| b.escaped())
        .map(|b| b.name.as_str())
        .collect();
    if !escaped.is_empty() {
        bail!(
            "{} planted bug(s) escaped `cargo test` or every fuzz target: {}",
            escaped.len(),
            escaped.join(", ")
        );
    }
    Ok(())
}

#[expect(
    clippy::too_many_arguments,
    reason = "one bug's fuzzing needs every piece of the run's setup"
)]
fn fuzz_bug(
    project: &Project,
    wt: &Project,
    fuzz_opts: &nightly::Options,
    host: &str,
    targets: &[String],
    cap: u64,
    bug_logs: &Path,
    result: &mut BugResult,
) -> Result<()> {
    let build_started = Instant::now();
    for sanitizer in fuzz_opts.plan().sanitizers() {
        nightly::build_targets(wt, &fuzz_opts.toolchain, sanitizer, host, targets, false)?;
    }
    result.fuzz_build_secs = build_started.elapsed().as_secs_f64();
    println!(
        "    built {} fuzz target(s) in {:.0}s",
        targets.len(),
        result.fuzz_build_secs
    );
    let opts = nightly::Options {
        out: bug_logs.join("fuzz"),
        ..fuzz_opts.clone()
    };
    for (i, target) in targets.iter().enumerate() {
        let _ = fs::remove_dir_all(wt.working_corpus(target));
        let position = format!("[{}/{}]", i + 1, targets.len());
        let fuzz_result = match nightly::fuzz_target(wt, &opts, host, target, cap, &position) {
            Ok(r) => {
                let caught = r.crashes > 0;
                FuzzResult {
                    target: target.clone(),
                    caught,
                    secs: r.duration_secs,
                    status: r.status.clone(),
                    finding: r.candidates.first().map(|c| c.summary.clone()),
                    log: project.display(&opts.out.join("logs").join(target).join("fuzz.log")),
                }
            }
            Err(e) => FuzzResult {
                target: target.clone(),
                caught: false,
                secs: 0.0,
                status: "error".to_owned(),
                finding: Some(format!("{e:#}")),
                log: String::new(),
            },
        };
        println!(
            "    {target}: {}",
            if fuzz_result.caught {
                format!("caught after {:.1}s", fuzz_result.secs)
            } else {
                format!(
                    "{} after {:.0}s (not within the cap)",
                    fuzz_result.status, fuzz_result.secs
                )
            }
        );
        result.fuzz.push(fuzz_result);
    }
    Ok(())
}

/// The bugbench section of the nightly report, when `out/bugbench.json`
/// exists (written by `cargo xtask bugbench`).
pub fn nightly_section(out: &Path) -> Option<String> {
    let text = fs::read_to_string(out.join("bugbench.json")).ok()?;
    match serde_json::from_str::<BenchReport>(&text) {
        Ok(report) => Some(format!("\n{}", table::render_markdown(&report))),
        Err(e) => Some(format!(
            "\n## Planted bugs (bugbench)\n\n{} could not be read: {e}\n",
            out.join("bugbench.json").display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_test_output_names_failed_tests_by_binary() {
        let text = "\
   Compiling portcullis-wire v0.1.0
     Running unittests src/lib.rs (target/debug/deps/portcullis_wire-0a1b2c)
test frame::tests::caps ... ok
test frame::tests::split ... FAILED
     Running tests/properties.rs (target/debug/deps/properties-99aa)
test chunking_is_invisible ... FAILED
     Running tests/boundary.rs (target/debug/deps/boundary-77)
error: test failed, to rerun pass `-p portcullis-testkit --test boundary`
error: 3 targets failed:
    `-p portcullis-wire --lib`
    `-p portcullis-testkit --test properties`
    `-p portcullis-testkit --test boundary`
";
        let out = TestOutput::parse(text);
        assert_eq!(
            out.failed,
            [
                "portcullis_wire::frame::tests::split",
                "properties::chunking_is_invisible",
                "-p portcullis-testkit --test boundary (no test named)",
            ]
        );
        assert!(!out.build_failed);
        let broken = TestOutput::parse(
            "error[E0308]: mismatched types\nerror: could not compile `portcullis-wire` (lib) due to 1 previous error\n",
        );
        assert!(broken.build_failed);
    }

    /// A refactor that moves the code a planted bug patches must fail here,
    /// naming the bug, rather than surface hours later in the nightly.
    #[test]
    fn every_planted_bug_applies_to_the_current_tree() {
        let project = Project::locate();
        let targets = project.fuzz_targets().unwrap();
        let bugs = patch::load_all(&project.root.join("bugbench"), &targets).unwrap();
        let mut stale = Vec::new();
        for bug in &bugs {
            if let Err(e) = check_applies(&project.root, &bug.name, &bug.path) {
                stale.push(format!("{e:#}"));
            }
        }
        assert!(stale.is_empty(), "{}", stale.join("\n\n"));
    }

    #[test]
    fn each_stage_runs_the_tests_that_can_catch_its_bugs_and_never_the_process_tests() {
        let args = |stage: &str| -> Vec<Vec<String>> {
            test_runs(stage).iter().map(TestRun::args).collect()
        };
        assert_eq!(
            args("framing"),
            [[
                "-p",
                "portcullis-wire",
                "-p",
                "portcullis-gateway",
                "-p",
                "portcullis-testkit"
            ]]
        );
        assert_eq!(
            args("wrap"),
            [["-p", "portcullis-wrap", "-p", "portcullis-testkit"]]
        );
        assert_eq!(args("scrubber"), [["-p", "portcullis-exec"]]);
        let audit = args("audit");
        assert_eq!(audit[0], ["-p", "portcullis-cli", "--bin", "portcullis"]);
        assert_eq!(
            audit[1],
            ["-p", "portcullis-wrap", "-p", "portcullis-testkit"]
        );
        for stage in patch::STAGES {
            for run in test_runs(stage) {
                // Whole-package runs of the CLI would start every process test.
                if run.packages.contains(&"portcullis-cli") {
                    assert_eq!(run.packages, ["portcullis-cli"], "{stage}");
                    assert_eq!(run.targets, ["--bin", "portcullis"], "{stage}");
                }
            }
        }
    }

    #[test]
    fn runs_combine_into_one_verdict() {
        let run = |status: &str, failed: &[&str]| TestResult {
            caught: status != "passed",
            status: status.to_owned(),
            failed_tests: failed.iter().map(|f| (*f).to_owned()).collect(),
            secs: 2.0,
            log: String::new(),
            commands: vec![format!("test {status}")],
        };
        let both = combine(vec![run("passed", &[]), run("failed", &["a::b"])]);
        assert!(both.caught);
        assert_eq!(both.status, "failed");
        assert_eq!(both.failed_tests, ["a::b"]);
        assert_eq!(both.secs, 4.0);
        assert_eq!(both.commands, ["test passed", "test failed"]);
        let built = combine(vec![run("build-failed", &[]), run("passed", &[])]);
        assert_eq!(
            (built.caught, built.status.as_str()),
            (true, "build-failed")
        );
        let mixed = combine(vec![run("build-failed", &[]), run("failed", &["x"])]);
        assert_eq!(mixed.status, "failed");
        let quiet = combine(vec![run("passed", &[]), run("passed", &[])]);
        assert_eq!((quiet.caught, quiet.status.as_str()), (false, "passed"));
    }

    #[test]
    fn bugs_are_picked_by_a_repeated_flag_or_a_list() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            opts: Options,
        }
        let repeated = Cli::try_parse_from(["bugbench", "--bug", "a", "--bug", "b"]).unwrap();
        assert_eq!(repeated.opts.bugs, ["a", "b"]);
        let listed = Cli::try_parse_from(["bugbench", "--bugs", "a,b", "--bug", "c"]).unwrap();
        assert_eq!(listed.opts.bugs, ["a", "b", "c"]);
    }

    #[test]
    fn the_bench_plants_at_least_twelve_bugs_across_every_stage() {
        let project = Project::locate();
        let targets = project.fuzz_targets().unwrap();
        let bugs = patch::load_all(&project.root.join("bugbench"), &targets).unwrap();
        assert!(bugs.len() >= 12, "only {} planted bugs", bugs.len());
        for stage in patch::STAGES {
            assert!(
                bugs.iter().any(|b| b.stage == stage),
                "no planted bug in stage {stage}"
            );
        }
    }

    #[test]
    fn the_nightly_report_gets_the_table_only_when_a_bench_ran() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(nightly_section(dir.path()), None);
        let report = BenchReport {
            started: "2026-12-01T00:00:00Z".to_owned(),
            commit: "abc1234".to_owned(),
            cap_secs: 120,
            sanitizer: "address".to_owned(),
            test_packages: vec!["portcullis-wire".to_owned()],
            test_plan: std::collections::BTreeMap::new(),
            targets: vec!["chunking".to_owned()],
            bugs: Vec::new(),
            total_secs: 1.0,
            ok: true,
        };
        fs::write(
            dir.path().join("bugbench.json"),
            serde_json::to_string(&report).unwrap(),
        )
        .unwrap();
        let section = nightly_section(dir.path()).unwrap();
        assert!(section.contains("## Planted bugs (bugbench)"), "{section}");
        assert!(
            section.contains("| bug | stage | cargo test | `chunking` |"),
            "{section}"
        );
        fs::write(dir.path().join("bugbench.json"), "{").unwrap();
        assert!(
            nightly_section(dir.path())
                .unwrap()
                .contains("could not be read")
        );
    }

    #[test]
    fn a_stale_patch_is_named_with_the_way_to_refresh_it() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        let patch = dir.path().join("stale.patch");
        fs::write(
            &patch,
            "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+three\n",
        )
        .unwrap();
        let err = format!(
            "{:#}",
            check_applies(dir.path(), "stale", &patch).unwrap_err()
        );
        assert!(
            err.contains("planted bug \"stale\" no longer applies"),
            "{err}"
        );
        assert!(err.contains("refresh the patch"), "{err}");
    }
}
