//! `cargo xtask`: Portcullis maintenance commands.
//!
//! - `nightly` builds every cargo-fuzz target, fuzzes each for its share of a
//!   time budget, merges new coverage into `corpus/<target>/`, minimizes every
//!   crash into a regression candidate with a sidecar, and writes
//!   `target/nightly/report.{md,json}`. It exits nonzero on any crash.
//! - `promote` turns a crash artifact into `regressions/<target>/<name>.bin`
//!   plus `<name>.toml` (`summary`, `found`, `source`), replayed by `cargo test`.
//! - `clusterfuzzlite-check` runs `.clusterfuzzlite/build.sh` locally and
//!   checks that every target lands in `$OUT`.
//!
//! Modules: [`budget`] and [`libfuzzer`] are the pure, unit-tested parsing;
//! [`process`] runs and bounds child processes; [`nightly`], [`promote`] and
//! [`cflite`] are the commands; [`report`] and [`sidecar`] are their outputs.

// xtask is a human-facing report tool: progress lines and summaries on stdout
// are its output, unlike the boundary crates where stdout is the protocol.
#![allow(clippy::print_stdout)]

mod budget;
mod cflite;
mod libfuzzer;
mod nightly;
mod process;
mod project;
mod promote;
mod report;
mod sidecar;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

use crate::project::{Project, Sanitizer};

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Portcullis maintenance commands"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Fuzz every target for a share of a time budget, merge new coverage into
    /// corpus/, minimize crashes into regression candidates, write a report.
    Nightly {
        /// Total fuzzing time, split evenly between targets: 90s, 5m, 1h30m.
        /// Building, merging and minimizing come on top.
        #[arg(long, default_value = "10m", value_parser = budget::parse_duration)]
        budget: Duration,
        /// libFuzzer jobs (and workers) per target.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
        jobs: u32,
        /// Comma-separated fuzz targets (default: all in fuzz/Cargo.toml).
        #[arg(long, value_delimiter = ',')]
        targets: Vec<String>,
        /// Output directory for the report, logs, artifacts and candidates.
        #[arg(long, default_value = "target/nightly")]
        out: PathBuf,
        /// Toolchain used as `cargo +<toolchain> fuzz`.
        #[arg(long, default_value = "nightly")]
        toolchain: String,
        /// `address` needs nightly. `none` also builds on stable and runs
        /// several times faster, but loses the memcmp interception that
        /// guides libFuzzer towards compared byte strings.
        #[arg(long, value_enum, default_value_t = Sanitizer::Address)]
        sanitizer: Sanitizer,
        /// libFuzzer -max_len: the largest input it generates.
        #[arg(long, default_value_t = 65536)]
        max_len: u64,
        /// libFuzzer -timeout: seconds one input may take before it is a finding.
        #[arg(long, default_value_t = 10)]
        unit_timeout: u64,
        /// libFuzzer -rss_limit_mb.
        #[arg(long, default_value_t = 2048)]
        rss_limit_mb: u64,
        /// Mutations per minimization step (`cargo fuzz tmin --runs`).
        #[arg(long, default_value_t = 10_000)]
        tmin_runs: u64,
        /// Wall-clock bound for minimizing one crash, in seconds.
        #[arg(long, default_value_t = 120)]
        tmin_secs: u64,
        /// Leave corpus/ untouched (no `-merge=1` of new coverage), e.g. for
        /// smoke runs in CI.
        #[arg(long)]
        no_merge: bool,
    },
    /// Copy a crash artifact into regressions/<target>/<name>.bin with a
    /// <name>.toml sidecar (summary, found, source).
    Promote {
        /// The crashing input (a libFuzzer artifact or a nightly candidate).
        artifact: PathBuf,
        /// Fuzz target; defaults to the folder holding the artifact.
        #[arg(long)]
        target: Option<String>,
        /// Regression name; defaults to the artifact's file name.
        #[arg(long)]
        name: Option<String>,
        /// One line: what goes wrong. Defaults to the candidate's sidecar, or
        /// to the first panic line of running the input.
        #[arg(long)]
        summary: Option<String>,
        /// Where the defect comes from, e.g. the public issue it mirrors.
        #[arg(long)]
        source: Option<String>,
        /// Overwrite an existing regression of the same name.
        #[arg(long)]
        force: bool,
        /// Toolchain whose fuzz build is used to summarize the crash.
        #[arg(long, default_value = "nightly")]
        toolchain: String,
    },
    /// Run .clusterfuzzlite/build.sh locally (OUT/SRC/WORK in a temp dir) and
    /// check that every fuzz target, its dictionary and seed corpus land in OUT.
    ClusterfuzzliteCheck {
        /// Toolchain the script's `cargo` runs on (via RUSTUP_TOOLCHAIN).
        #[arg(long, default_value = "nightly")]
        toolchain: String,
    },
}

fn run(cli: Cli) -> Result<()> {
    let project = Project::locate();
    match cli.command {
        Cmd::Nightly {
            budget,
            jobs,
            targets,
            out,
            toolchain,
            sanitizer,
            max_len,
            unit_timeout,
            rss_limit_mb,
            tmin_runs,
            tmin_secs,
            no_merge,
        } => {
            if budget.is_zero() {
                bail!("--budget must be more than 0s");
            }
            let out = std::path::absolute(&out)
                .with_context(|| format!("resolving --out {}", out.display()))?;
            nightly::run(
                &project,
                &nightly::Options {
                    budget,
                    jobs,
                    targets,
                    out,
                    toolchain,
                    sanitizer,
                    limits: nightly::Limits {
                        max_len,
                        unit_timeout,
                        rss_limit_mb,
                    },
                    tmin_runs,
                    tmin_secs,
                    merge: !no_merge,
                },
            )
        }
        Cmd::Promote {
            artifact,
            target,
            name,
            summary,
            source,
            force,
            toolchain,
        } => promote::run(
            &project,
            &promote::Options {
                artifact,
                target,
                name,
                summary,
                source,
                force,
                toolchain,
            },
        ),
        Cmd::ClusterfuzzliteCheck { toolchain } => cflite::run(&project, &toolchain),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn nightly_flags_parse() {
        let cli = Cli::try_parse_from([
            "xtask",
            "nightly",
            "--budget",
            "5m",
            "--jobs",
            "2",
            "--targets",
            "chunking,strict_json",
        ])
        .unwrap();
        let Cmd::Nightly {
            budget,
            jobs,
            targets,
            out,
            ..
        } = cli.command
        else {
            panic!("not nightly");
        };
        assert_eq!(budget, Duration::from_secs(300));
        assert_eq!(jobs, 2);
        assert_eq!(targets, ["chunking", "strict_json"]);
        assert_eq!(out, PathBuf::from("target/nightly"));
        assert!(Cli::try_parse_from(["xtask", "nightly", "--budget", "5 days"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "nightly", "--jobs", "0"]).is_err());
    }
}
