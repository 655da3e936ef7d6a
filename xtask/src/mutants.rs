//! `cargo xtask mutants`: mutation testing of the boundary crates
//! (`portcullis-wire`, `portcullis-gateway`) with cargo-mutants, against the
//! tests `.cargo/mutants.toml` selects, and a report of the score and every
//! survivor.
//!
//! [`outcomes`] reads cargo-mutants' `mutants.out/outcomes.json`,
//! [`exclusions`] the committed `exclude_re` entries and their reasons,
//! [`report`] writes `mutants.md` and `mutants.json`. This file installs
//! cargo-mutants, narrows a pull request's run to its diff, and runs it.

mod exclusions;
mod outcomes;
mod report;

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

/// The crates whose code is mutated.
pub const PACKAGES: [&str; 2] = ["portcullis-wire", "portcullis-gateway"];
/// Their sources: a diff that touches none of these has no mutant to test.
const SOURCES: [&str; 2] = ["crates/wire/src", "crates/gateway/src"];

/// Mutation-test crates/wire and crates/gateway, write mutants.md/json.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Only mutants in wire/gateway code changed since the merge base of
    /// BASE and the working tree (`git diff --merge-base BASE`), for pull
    /// requests.
    #[arg(long, visible_alias = "in-diff", value_name = "BASE")]
    pub diff: Option<String>,
    /// Run one shard of the mutants, `k/n` with k counted from 0.
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
    /// `crates/gateway/src/authz/*.rs`.
    #[arg(long = "file", value_name = "GLOB")]
    pub files: Vec<String>,
    /// In diff mode, run nothing when the diff holds more mutants than this
    /// (the nightly's full run covers them); say so and succeed.
    #[arg(long, value_name = "N")]
    pub max_mutants: Option<usize>,
    /// Output directory for mutants.md, mutants.json and cargo-mutants'
    /// own mutants.out/.
    #[arg(long, default_value = "target/nightly")]
    pub out: PathBuf,
    /// Further arguments for `cargo mutants`, after `--`.
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

    let mut scope: Vec<String> = Vec::new();
    for package in PACKAGES {
        scope.extend(["--package".into(), package.into()]);
    }
    for glob in &opts.files {
        scope.extend(["--file".into(), glob.clone()]);
    }
    let info = RunInfo {
        started: started_at,
        mode: if opts.diff.is_some() { "diff" } else { "full" }.into(),
        base: opts.diff.clone(),
        shard: opts.shard.clone(),
        packages: PACKAGES.map(str::to_owned).to_vec(),
        files: opts.files.clone(),
        total_secs: 0.0,
    };

    if let Some(base) = &opts.diff {
        let diff = git_diff(project, base)?;
        if diff.trim().is_empty() {
            println!(
                "==> no change in {} since {base}: no mutant to test",
                SOURCES.join(", ")
            );
            let empty = Outcomes {
                cargo_mutants_version: version_number(&version),
                baseline: None,
                mutants: Vec::new(),
            };
            return write(project, &out, &report::build(info, &empty, Vec::new()));
        }
        let diff_path = out.join("mutants.diff");
        fs::write(&diff_path, diff).with_context(|| format!("writing {}", diff_path.display()))?;
        scope.extend(["--in-diff".into(), diff_path.display().to_string()]);
    }

    let (listed, excluded) = list(project, &scope, &exclusions)?;
    let to_test = listed - excluded.len();
    println!(
        "==> {to_test} mutants to test ({listed} generated, {} excluded by .cargo/mutants.toml)",
        excluded.len()
    );
    if to_test == 0 {
        println!("==> nothing to test");
        let empty = Outcomes {
            cargo_mutants_version: version_number(&version),
            baseline: None,
            mutants: Vec::new(),
        };
        return write(project, &out, &report::build(info, &empty, excluded));
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

    // cargo-mutants keeps one previous mutants.out as mutants.out.old; the
    // report is ours, so no second copy of its logs is needed.
    let old = out.join("mutants.out.old");
    if old.exists() {
        fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))?;
    }
    let mut cmd = cargo(None);
    cmd.current_dir(&project.root)
        .arg("mutants")
        .args(&scope)
        .arg("--output")
        .arg(&out);
    if opts.in_place {
        cmd.arg("--in-place");
    } else {
        cmd.args(["--jobs", &opts.jobs.to_string()]);
    }
    if let Some(shard) = &opts.shard {
        cmd.args(["--shard", shard]);
    }
    cmd.args(&opts.extra);
    println!("==> {}", describe(&cmd));
    // Exit codes 2 (survivors) and 3 (timeouts) still leave a full record;
    // the report judges from it.
    let status = cmd
        .status()
        .with_context(|| format!("could not run `{}`", describe(&cmd)))?;
    let outcomes_path = out.join("mutants.out").join("outcomes.json");
    let text = fs::read_to_string(&outcomes_path).with_context(|| {
        format!(
            "`cargo mutants` exited with {status} and wrote no {}",
            outcomes_path.display()
        )
    })?;
    let outcomes = outcomes::parse(&text)?;
    outcomes::check_baseline(&outcomes)?;
    let info = RunInfo {
        total_secs: started.elapsed().as_secs_f64(),
        ..info
    };
    let report = report::build(info, &outcomes, excluded);
    write(project, &out, &report)?;
    if !report.ok {
        bail!(
            "{} survivors: add a test that kills each, or an exclusion with its reason \
             (see {})",
            report.missed,
            project.display(&out.join("mutants.md"))
        );
    }
    if outcomes.count(Verdict::Other) > 0 {
        bail!("cargo-mutants reported outcomes it could not attribute; see mutants.out/");
    }
    Ok(())
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

/// The wire/gateway part of `git diff --merge-base BASE` (committed and
/// uncommitted changes since the branch left BASE).
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
        .args(SOURCES);
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

/// How many mutants the scope generates, and which of them the committed
/// exclusions leave out (listing without the config, so that exclusions are
/// matched here, with their reasons).
fn list(
    project: &Project,
    scope: &[String],
    exclusions: &[Exclusion],
) -> Result<(usize, Vec<Excluded>)> {
    let mut cmd = cargo(None);
    cmd.current_dir(&project.root)
        .args(["mutants", "--list", "--json", "--no-config"])
        .args(scope);
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
    let excluded = listed
        .iter()
        .filter_map(|m| {
            reason_for(exclusions, &m.name).map(|reason| Excluded {
                name: m.name.clone(),
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

    #[test]
    fn the_version_number_follows_the_name() {
        assert_eq!(version_number("cargo-mutants 27.1.0"), "27.1.0");
    }
}
