//! `cargo xtask mutants`: mutation testing with cargo-mutants of the
//! boundary crates (`portcullis-wire`, `portcullis-gateway`), the wrap core
//! (`portcullis-wrap`), the executors and their credential scrubber
//! (`portcullis-exec`) and the CLI's audit code, each against the tests that
//! judge it, and a report of the score per crate and every survivor.
//!
//! [`scope`] says what is mutated and by which tests, one cargo-mutants run
//! per group; [`outcomes`] reads each run's `mutants.out/outcomes.json`,
//! [`exclusions`] the committed `exclude_re` entries and their reasons,
//! [`report`] writes `mutants.md` and `mutants.json`. This file installs
//! cargo-mutants, narrows a pull request's run to its diff, and runs it.

mod exclusions;
mod outcomes;
mod report;
mod scope;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, bail};

use crate::process::{capture, cargo, describe, run_visible};
use crate::project::Project;
use crate::sidecar;
use exclusions::{Exclusion, reason_for};
use outcomes::{Outcomes, Verdict};
use report::{Excluded, Report, RunInfo};
use scope::{GROUPS, Group};

/// Where the SSH executor's tests find a real sshd; without it they skip.
const SSHD: &str = "/usr/sbin/sshd";

/// Mutation-test the boundary, wrap, exec and the CLI's audit code; write
/// mutants.md/json.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Only mutants in code in scope changed since the merge base of BASE
    /// and the working tree (`git diff --merge-base BASE`), for pull
    /// requests.
    #[arg(long, visible_alias = "in-diff", value_name = "BASE")]
    pub diff: Option<String>,
    /// Run one shard of each group's mutants, `k/n` with k counted from 0.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<String>,
    /// Parallel builds, each in its own copy of the tree (a full build and
    /// its disk each).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    /// Mutate this checkout instead of a copy: no first full build, but the
    /// sources are rewritten while it runs, and a property test that fails
    /// against a mutant records its seed in `proptest-regressions/` here.
    #[arg(long, conflicts_with = "jobs")]
    pub in_place: bool,
    /// Only mutate files matching this glob (repeatable), e.g.
    /// `crates/gateway/src/authz/*.rs`; they must lie in the scope.
    #[arg(long = "file", value_name = "GLOB")]
    pub files: Vec<String>,
    /// In diff mode, run nothing when the diff holds more mutants than this
    /// (the nightly's full run covers them); say so and succeed.
    #[arg(long, value_name = "N")]
    pub max_mutants: Option<usize>,
    /// Output directory for mutants.md, mutants.json, and cargo-mutants'
    /// own records in mutants/<group>/mutants.out/.
    #[arg(long, default_value = "target/nightly")]
    pub out: PathBuf,
    /// Further arguments for every `cargo mutants` run, after `--`.
    #[arg(last = true)]
    pub extra: Vec<String>,
}

fn parse_shard(text: &str) -> Result<String, String> {
    let (k, n) = text
        .split_once('/')
        .ok_or_else(|| format!("a shard is K/N, like 0/4 (got {text:?})"))?;
    let (k, n): (u32, u32) = match (k.parse(), n.parse()) {
        (Ok(k), Ok(n)) => (k, n),
        _ => return Err(format!("a shard is K/N with two numbers (got {text:?})")),
    };
    if n == 0 || k >= n {
        return Err(format!("shard {text}: K counts from 0 and must be below N"));
    }
    Ok(format!("{k}/{n}"))
}

/// One group's part of this run: its arguments and what listing found.
struct Planned {
    group: Group,
    args: Vec<String>,
    listed: usize,
    excluded: Vec<Excluded>,
}

impl Planned {
    fn to_test(&self) -> usize {
        self.listed - self.excluded.len()
    }
}

fn empty(version: &str) -> Outcomes {
    Outcomes {
        cargo_mutants_version: version_number(version),
        baseline: None,
        mutants: Vec::new(),
    }
}

/// What the report should say beside the figures of the groups that run.
fn notes(planned: &[Planned], sshd_installed: bool) -> Vec<String> {
    let mut notes = Vec::new();
    let tests_exec = planned
        .iter()
        .any(|p| p.to_test() > 0 && p.group.test_packages.contains(&"portcullis-exec"));
    if tests_exec && !sshd_installed {
        notes.push(format!(
            "{SSHD} is not installed: the SSH executor's tests against a real sshd \
             (`crates/exec/tests/ssh_sshd.rs`) skip, so a mutant only they notice survives; \
             install openssh-server before a full run"
        ));
    }
    notes
}

pub fn run(project: &Project, opts: &Options) -> Result<()> {
    let started = Instant::now();
    let started_at = sidecar::iso_datetime(SystemTime::now());
    let version = ensure_cargo_mutants()?;
    println!("==> {version}");
    let out = project.root.join(&opts.out);
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let config_path = project.root.join(".cargo").join("mutants.toml");
    let config = fs::read_to_string(&config_path)
        .with_context(|| format!("reading {}", config_path.display()))?;
    let exclusions = exclusions::parse(&config)
        .with_context(|| format!("in {}", project.display(&config_path)))?;

    let packages = scope::packages();
    let mut info = RunInfo {
        started: started_at,
        mode: if opts.diff.is_some() { "diff" } else { "full" }.into(),
        base: opts.diff.clone(),
        shard: opts.shard.clone(),
        packages: packages.iter().map(|p| (*p).to_owned()).collect(),
        scopes: packages.iter().map(|p| scope::describe(p)).collect(),
        files: opts.files.clone(),
        notes: Vec::new(),
        total_secs: 0.0,
    };

    let mut in_diff: Option<PathBuf> = None;
    if let Some(base) = &opts.diff {
        let diff = git_diff(project, base)?;
        if diff.trim().is_empty() {
            println!(
                "==> no change in {} since {base}: no mutant to test",
                scope::sources().join(", ")
            );
            return write(
                project,
                &out,
                &report::build(info, &empty(&version), Vec::new()),
            );
        }
        let diff_path = out.join("mutants.diff");
        fs::write(&diff_path, diff).with_context(|| format!("writing {}", diff_path.display()))?;
        in_diff = Some(diff_path);
    }

    let mut planned = Vec::new();
    for group in GROUPS {
        let mut args = group.args(&opts.files);
        if let Some(diff) = &in_diff {
            args.extend(["--in-diff".to_owned(), diff.display().to_string()]);
        }
        let (listed, excluded) = list(project, &group, &args, &exclusions)?;
        println!(
            "==> {}: {} mutants to test ({listed} generated, {} excluded by .cargo/mutants.toml)",
            group.name,
            listed - excluded.len(),
            excluded.len()
        );
        planned.push(Planned {
            group,
            args,
            listed,
            excluded,
        });
    }
    let to_test: usize = planned.iter().map(Planned::to_test).sum();
    let excluded: Vec<Excluded> = planned.iter().flat_map(|p| p.excluded.clone()).collect();
    println!(
        "==> {to_test} mutants to test in all ({} excluded)",
        excluded.len()
    );
    if to_test == 0 {
        println!("==> nothing to test");
        return write(
            project,
            &out,
            &report::build(info, &empty(&version), excluded),
        );
    }
    if let (Some(_), Some(max)) = (&opts.diff, opts.max_mutants)
        && to_test > max
    {
        println!(
            "==> {to_test} mutants exceed --max-mutants {max}: skipped here, the nightly's \
             `cargo xtask mutants` tests them all"
        );
        return Ok(());
    }
    info.notes = notes(&planned, Path::new(SSHD).exists());
    for note in &info.notes {
        println!("==> note: {note}");
    }

    let mut all = empty(&version);
    for plan in planned.iter().filter(|p| p.to_test() > 0) {
        let outcomes = run_group(project, opts, &out, plan)?;
        all.cargo_mutants_version = outcomes.cargo_mutants_version;
        all.mutants.extend(outcomes.mutants);
    }
    let info = RunInfo {
        total_secs: started.elapsed().as_secs_f64(),
        ..info
    };
    let report = report::build(info, &all, excluded);
    write(project, &out, &report)?;
    if !report.ok {
        bail!(
            "{} survivors: add a test that kills each, or an exclusion with its reason \
             (see {})",
            report.missed,
            project.display(&out.join("mutants.md"))
        );
    }
    if all.count(Verdict::Other) > 0 {
        bail!("cargo-mutants reported outcomes it could not attribute; see mutants/*/mutants.out/");
    }
    Ok(())
}

/// The folder of a group's `mutants.out`, relative to the output directory.
fn group_dir(group: &Group) -> PathBuf {
    Path::new("mutants").join(group.name)
}

/// Runs cargo-mutants over one group and reads its outcomes, with each
/// diff path made relative to the output directory.
fn run_group(project: &Project, opts: &Options, out: &Path, plan: &Planned) -> Result<Outcomes> {
    let dir = out.join(group_dir(&plan.group));
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // cargo-mutants keeps one previous mutants.out as mutants.out.old; the
    // report is ours, so no second copy of its logs is needed.
    let old = dir.join("mutants.out.old");
    if old.exists() {
        fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))?;
    }
    let mut cmd = cargo(None);
    cmd.current_dir(&project.root)
        .arg("mutants")
        .args(&plan.args)
        .arg("--output")
        .arg(&dir);
    if opts.in_place {
        cmd.arg("--in-place");
    } else {
        cmd.args(["--jobs", &opts.jobs.to_string()]);
    }
    if let Some(shard) = &opts.shard {
        cmd.args(["--shard", shard]);
    }
    cmd.args(&opts.extra);
    println!("==> {}: {}", plan.group.name, describe(&cmd));
    // Exit codes 2 (survivors) and 3 (timeouts) still leave a full record;
    // the report judges from it.
    let status = cmd
        .status()
        .with_context(|| format!("could not run `{}`", describe(&cmd)))?;
    let outcomes_path = dir.join("mutants.out").join("outcomes.json");
    let text = fs::read_to_string(&outcomes_path).with_context(|| {
        format!(
            "`cargo mutants` exited with {status} and wrote no {}",
            outcomes_path.display()
        )
    })?;
    let mut outcomes = outcomes::parse(&text)?;
    outcomes::check_baseline(&outcomes).with_context(|| {
        format!(
            "group {} (see {})",
            plan.group.name,
            project.display(&dir.join("mutants.out"))
        )
    })?;
    let prefix = group_dir(&plan.group).join("mutants.out");
    for m in &mut outcomes.mutants {
        if let Some(diff) = &m.mutant.diff_path {
            m.mutant.diff_path = Some(prefix.join(diff).display().to_string());
        }
    }
    Ok(outcomes)
}

/// Installs cargo-mutants when `cargo mutants --version` fails; returns its version.
fn ensure_cargo_mutants() -> Result<String> {
    let version = || -> Option<String> {
        let (status, text) = capture(cargo(None).args(["mutants", "--version"])).ok()?;
        status.success().then(|| text.trim().to_owned())
    };
    if let Some(v) = version() {
        return Ok(v);
    }
    println!(
        "==> cargo-mutants not found; installing it with `cargo install --locked cargo-mutants`"
    );
    run_visible(cargo(None).args(["install", "--locked", "cargo-mutants"]))?;
    version().context("`cargo mutants --version` still fails after installing cargo-mutants")
}

/// `cargo-mutants 27.1.0` → `27.1.0`.
fn version_number(version: &str) -> String {
    version.rsplit(' ').next().unwrap_or(version).to_owned()
}

/// The part of `git diff --merge-base BASE` in the scope's sources
/// (committed and uncommitted changes since the branch left BASE).
fn git_diff(project: &Project, base: &str) -> Result<String> {
    let mut cmd = Command::new("git");
    cmd.current_dir(&project.root)
        .args([
            "diff",
            "--no-ext-diff",
            "--no-color",
            "--merge-base",
            base,
            "--",
        ])
        .args(scope::sources());
    let output = cmd
        .output()
        .with_context(|| format!("could not run `{}`", describe(&cmd)))?;
    if !output.status.success() {
        bail!(
            "`{}` failed: {}",
            describe(&cmd),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    String::from_utf8(output.stdout).context("the diff is not UTF-8")
}

/// How many mutants a group's arguments generate, and which of them the
/// committed exclusions leave out (listing without the config, so that
/// exclusions are matched here, with their reasons). A `--file` glob that
/// reaches outside the group's scope is refused.
fn list(
    project: &Project,
    group: &Group,
    args: &[String],
    exclusions: &[Exclusion],
) -> Result<(usize, Vec<Excluded>)> {
    let mut cmd = cargo(None);
    cmd.current_dir(&project.root)
        .args(["mutants", "--list", "--json", "--no-config"])
        .args(args);
    let output = cmd
        .output()
        .with_context(|| format!("could not run `{}`", describe(&cmd)))?;
    if !output.status.success() {
        bail!(
            "`{}` failed: {}",
            describe(&cmd),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let listed = outcomes::parse_list(&String::from_utf8_lossy(&output.stdout))?;
    if let Some(outside) = listed.iter().find(|m| !group.covers(&m.file)) {
        bail!(
            "--file selects {}, outside the mutation scope of {} ({})",
            outside.file,
            outside.package,
            group.sources.join(", ")
        );
    }
    let excluded = listed
        .iter()
        .filter_map(|m| {
            reason_for(exclusions, &m.name).map(|reason| Excluded {
                name: m.name.clone(),
                package: m.package.clone(),
                reason: reason.to_owned(),
            })
        })
        .collect();
    Ok((listed.len(), excluded))
}

fn write(project: &Project, out: &Path, report: &Report) -> Result<()> {
    let json_path = out.join("mutants.json");
    fs::write(&json_path, serde_json::to_string_pretty(report)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    let md_path = out.join("mutants.md");
    fs::write(&md_path, report::render_markdown(report))
        .with_context(|| format!("writing {}", md_path.display()))?;
    let score = report
        .score
        .map_or_else(|| "n/a".to_owned(), |s| format!("{:.1}%", s * 100.0));
    println!(
        "==> mutation score {score}: {} caught, {} missed, {} timeout, {} unviable, {} excluded",
        report.caught, report.missed, report.timeout, report.unviable, report.excluded
    );
    for s in &report.survivors {
        println!(
            "    survivor {}:{}: {}",
            s.mutant.file, s.mutant.line, s.mutant.mutation
        );
    }
    println!("    report: {}", project.display(&md_path));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_count_from_zero_below_their_total() {
        assert_eq!(parse_shard("0/2").unwrap(), "0/2");
        assert_eq!(parse_shard("3/4").unwrap(), "3/4");
        assert!(parse_shard("2/2").is_err());
        assert!(parse_shard("1/0").is_err());
        assert!(parse_shard("1").is_err());
        assert!(parse_shard("a/b").is_err());
    }

    fn planned(name: &str, listed: usize) -> Planned {
        Planned {
            group: *GROUPS.iter().find(|g| g.name == name).unwrap(),
            args: Vec::new(),
            listed,
            excluded: Vec::new(),
        }
    }

    #[test]
    fn a_run_that_tests_exec_without_sshd_says_so() {
        let with_exec = [planned("boundary", 3), planned("exec", 2)];
        assert!(notes(&with_exec, true).is_empty());
        let said = notes(&with_exec, false);
        assert_eq!(said.len(), 1);
        assert!(said[0].contains("ssh_sshd.rs"), "{said:?}");
        let without_exec = [planned("boundary", 3), planned("exec", 0)];
        assert!(notes(&without_exec, false).is_empty());
    }

    #[test]
    fn the_config_tests_the_library_groups_packages_and_leaves_targets_to_each_group() {
        let root = crate::project::Project::locate().root;
        let text = fs::read_to_string(root.join(".cargo/mutants.toml")).unwrap();
        let config: toml::Table = toml::from_str(&text).unwrap();
        let mut configured: Vec<&str> = config["test_package"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        configured.sort_unstable();
        let mut libraries: Vec<&str> = GROUPS
            .iter()
            .filter(|g| g.test_targets == ["--tests"])
            .flat_map(|g| g.test_packages.iter().copied())
            .collect();
        libraries.sort_unstable();
        libraries.dedup();
        assert_eq!(configured, libraries);
        // cargo-mutants adds the config's test arguments to every run's own:
        // a target selection there would widen the CLI group's to the
        // process tests.
        let test_args: Vec<&str> = config["additional_cargo_test_args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for selection in [
            "--tests",
            "--lib",
            "--bins",
            "--bin",
            "--test",
            "--all-targets",
        ] {
            assert!(
                !test_args.contains(&selection),
                "{selection} in {test_args:?}"
            );
        }
    }

    #[test]
    fn the_version_number_follows_the_name() {
        assert_eq!(version_number("cargo-mutants 27.1.0"), "27.1.0");
    }
}
