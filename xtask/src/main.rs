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
//! - `coverage` measures line and region coverage of every product crate
//!   (wire, gateway, exec, wrap, the cli binary; the scrubber, the audit code
//!   and the wrap driver apart) by `cargo test` and by replaying each fuzz
//!   target's corpus, and writes `target/nightly/coverage.{md,json}` with
//!   the uncovered lines.
//! - `mutants` runs cargo-mutants over wire, gateway, wrap, exec and the
//!   CLI's audit code, each against the tests that judge it (whole, one
//!   shard, or only a pull request's diff), and writes
//!   `target/nightly/mutants.{md,json}` with figures per crate; it exits
//!   nonzero on any survivor.
//! - `bugbench` applies each planted bug of `bugbench/` in a scratch
//!   worktree and measures whether `cargo test` and how fast each fuzz
//!   target catches it (`target/nightly/bugbench.{md,json}`).
//! - `bench` runs the pipeline benchmark and the startup check and prints
//!   their table, ending with `pipeline_vs_serde_value=<ratio>`.
//! - `evidence` appends the key figures of those commands' JSON to
//!   `docs/evidence/history.jsonl` and renders `docs/evidence.md` from it.
//! - `fuzz-flags` prints the libFuzzer flags for the justfile's `fuzz`, `cmin`
//!   and `tmin` recipes, so the limits live in one place ([`libfuzzer`]).
//!
//! Modules: [`budget`] and [`libfuzzer`] are the pure, unit-tested parsing;
//! [`process`] runs and bounds child processes; [`nightly`] (build, fuzz,
//! triage), [`mutants`], [`promote`] and [`cflite`] are the commands; [`report`] and
//! [`sidecar`] are their outputs.

#![expect(
    clippy::print_stdout,
    reason = "xtask is a human-facing report tool: progress lines and summaries on stdout \
              are its output, unlike the boundary crates where stdout is the protocol"
)]

mod bench;
mod budget;
mod bugbench;
mod cflite;
mod coverage;
mod evidence;
mod libfuzzer;
mod mutants;
mod nightly;
mod process;
mod project;
mod promote;
mod report;
mod sidecar;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::project::Project;

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
    Nightly(nightly::Options),
    /// Apply each planted bug in bugbench/ in a scratch worktree: does
    /// `cargo test` catch it, and how fast does each fuzz target?
    Bugbench(bugbench::Options),
    /// Copy a crash artifact into regressions/<target>/<name>.bin with a
    /// <name>.toml sidecar (summary, found, source).
    Promote(promote::Options),
    /// Run .clusterfuzzlite/build.sh locally (OUT/SRC/WORK in a temp dir) and
    /// check that every fuzz target, its dictionary and seed corpus land in OUT.
    ClusterfuzzliteCheck {
        /// Toolchain the script's `cargo` runs on (via RUSTUP_TOOLCHAIN).
        #[arg(long, default_value = "nightly")]
        toolchain: String,
    },
    /// Line and region coverage of crates/{wire,gateway,exec,wrap,cli} by
    /// `cargo test` and by replaying each fuzz target's corpus
    /// (cargo-llvm-cov), with the uncovered lines:
    /// target/nightly/coverage.{md,json}.
    Coverage(coverage::Options),
    /// Mutation-test wire, gateway, wrap, exec and the CLI's audit code with
    /// cargo-mutants (installed if missing); write
    /// target/nightly/mutants.{md,json}; fail on survivors.
    Mutants(mutants::Options),
    /// Benchmark the inbound boundary against serde_json (three mixes),
    /// its latency and the release binary's startup; the last line is
    /// `pipeline_vs_serde_value=<ratio>`.
    Bench(bench::Options),
    /// Record the figures of target/nightly/*.json in
    /// docs/evidence/history.jsonl (each file once) and render
    /// docs/evidence.md from that history; `--check` only compares.
    Evidence(evidence::Options),
    /// Print the libFuzzer flags the justfile's recipes pass (the nightly's
    /// defaults), space-separated, for `cargo fuzz <COMMAND>`.
    FuzzFlags {
        /// The `cargo fuzz` command the flags follow.
        #[arg(value_enum)]
        command: libfuzzer::FlagsFor,
    },
}

fn run(cli: Cli) -> Result<()> {
    let project = Project::locate();
    match cli.command {
        Cmd::Nightly(opts) => nightly::run(&project, &opts),
        Cmd::Promote(opts) => promote::run(&project, &opts),
        Cmd::Coverage(opts) => coverage::run(&project, &opts),
        Cmd::Mutants(opts) => mutants::run(&project, &opts),
        Cmd::Bugbench(opts) => bugbench::run(&project, &opts),
        Cmd::ClusterfuzzliteCheck { toolchain } => cflite::run(&project, &toolchain),
        Cmd::Bench(opts) => bench::run(&project, &opts),
        Cmd::Evidence(opts) => evidence::run(&project, &opts),
        Cmd::FuzzFlags { command } => {
            let dict = project.display(&project.dict());
            println!("{}", libfuzzer::flags_for(command, &dict).join(" "));
            Ok(())
        }
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
    use std::path::PathBuf;
    use std::time::Duration;

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
        let Cmd::Nightly(opts) = cli.command else {
            panic!("not nightly");
        };
        assert_eq!(opts.budget, Duration::from_secs(300));
        assert_eq!(opts.jobs, 2);
        assert_eq!(opts.targets, ["chunking", "strict_json"]);
        assert_eq!(opts.out, PathBuf::from("target/nightly"));
        assert_eq!(opts.limits, libfuzzer::Limits::DEFAULT);
        assert!(!opts.no_merge);
        assert_eq!(
            opts.plan(),
            nightly::SanitizerPlan::Split { asan_percent: 20 }
        );
        for (sanitizer, plan) in [
            ("address", project::Sanitizer::Address),
            ("none", project::Sanitizer::None),
        ] {
            let cli = Cli::try_parse_from(["xtask", "nightly", "--sanitizer", sanitizer]).unwrap();
            let Cmd::Nightly(opts) = cli.command else {
                panic!("not nightly");
            };
            assert_eq!(opts.plan(), nightly::SanitizerPlan::Only(plan));
        }
        assert!(
            Cli::try_parse_from([
                "xtask",
                "nightly",
                "--sanitizer",
                "none",
                "--asan-share",
                "5"
            ])
            .is_err()
        );
        assert!(Cli::try_parse_from(["xtask", "nightly", "--asan-share", "101"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "nightly", "--budget", "5 days"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "nightly", "--jobs", "0"]).is_err());
    }

    #[test]
    fn mutants_flags_parse() {
        let cli = Cli::try_parse_from([
            "xtask",
            "mutants",
            "--in-diff",
            "main",
            "--shard",
            "1/4",
            "--max-mutants",
            "15",
            "--",
            "--sharding",
            "round-robin",
        ])
        .unwrap();
        let Cmd::Mutants(opts) = cli.command else {
            panic!("not mutants");
        };
        assert_eq!(opts.diff.as_deref(), Some("main"));
        assert_eq!(opts.shard.as_deref(), Some("1/4"));
        assert_eq!(opts.max_mutants, Some(15));
        assert_eq!(opts.extra, ["--sharding", "round-robin"]);
        assert_eq!((opts.jobs, opts.in_place), (1, false));
        assert_eq!(opts.out, PathBuf::from("target/nightly"));
        assert!(Cli::try_parse_from(["xtask", "mutants", "--shard", "4/4"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "mutants", "--in-place", "--jobs", "2"]).is_err());
    }
}
