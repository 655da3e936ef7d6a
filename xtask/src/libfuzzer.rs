//! libFuzzer: the flags every run shares, and reading what it prints.
//!
//! [`Limits`] and [`TMIN_RUNS`] are the single source of the libFuzzer
//! limits: `cargo xtask nightly` takes them as defaults of its flags, and
//! the justfile's `fuzz`, `cmin` and `tmin` recipes ask
//! `cargo xtask fuzz-flags <use>` for them (see [`flags_for`]).
//!
//! Reading the output is pure text processing, pinned by unit tests against
//! real libFuzzer output: [`stats`] has the figures of a run, [`findings`]
//! what it found.

mod findings;
mod stats;

pub use findings::{artifact_kind, crash_summary, parse_merge_added};
pub use stats::{LogStats, Totals, combine};

/// libFuzzer limits shared by fuzzing, merging, minimizing and reproducing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Args)]
pub struct Limits {
    /// libFuzzer -max_len: the largest input it generates.
    #[arg(long, default_value_t = Limits::DEFAULT.max_len)]
    pub max_len: u64,
    /// libFuzzer -timeout: seconds one input may take before it is a finding.
    #[arg(long, default_value_t = Limits::DEFAULT.unit_timeout)]
    pub unit_timeout: u64,
    /// libFuzzer -rss_limit_mb.
    #[arg(long, default_value_t = Limits::DEFAULT.rss_limit_mb)]
    pub rss_limit_mb: u64,
}

impl Limits {
    /// The limits of every fuzzing run, the nightly's and the justfile's.
    ///
    /// `max_len` fits a line protocol: twice the test policy's
    /// `max_frame_bytes` (4 KiB), so a generated input can still hold a
    /// line that crosses the frame cap and the frames after it, while
    /// executions stay short (a harness's cost grows with its input:
    /// `stdin_bytes` ran 33% more executions a CPU-second at 8 KiB than at
    /// 16 KiB, with the same coverage after 20 s).
    /// Longer corpus files are truncated to it when libFuzzer loads them;
    /// `cargo test` replays them whole.
    pub const DEFAULT: Self = Self {
        max_len: 8192,
        unit_timeout: 10,
        rss_limit_mb: 2048,
    };

    /// `-timeout` and `-rss_limit_mb`, which every libFuzzer mode takes.
    pub fn flags(self) -> [String; 2] {
        [
            format!("-timeout={}", self.unit_timeout),
            format!("-rss_limit_mb={}", self.rss_limit_mb),
        ]
    }

    /// `-max_len`, for the modes that generate or keep inputs.
    pub fn max_len_flag(self) -> String {
        format!("-max_len={}", self.max_len)
    }
}

/// Mutations per minimization step (`cargo fuzz tmin --runs`).
pub const TMIN_RUNS: u64 = 10_000;

/// Which `cargo fuzz` command the flags of [`flags_for`] follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FlagsFor {
    /// `cargo fuzz run <target> <corpora> --` then these.
    Run,
    /// `cargo fuzz cmin <target> <corpus> --` then these.
    Cmin,
    /// `cargo fuzz tmin <target> <artifact>` then these (they include `--`).
    Tmin,
}

/// The arguments the justfile's recipes pass after the target and inputs:
/// the dictionary for fuzzing, and the default [`Limits`] everywhere.
pub fn flags_for(command: FlagsFor, dict: &str) -> Vec<String> {
    let limits = Limits::DEFAULT;
    let mut out = Vec::new();
    match command {
        FlagsFor::Run => {
            out.push(format!("-dict={dict}"));
            out.push(limits.max_len_flag());
        }
        FlagsFor::Cmin => out.push(limits.max_len_flag()),
        FlagsFor::Tmin => {
            out.extend(["--runs".to_owned(), TMIN_RUNS.to_string(), "--".to_owned()]);
        }
    }
    out.extend(limits.flags());
    out
}

/// `ASAN_OPTIONS` as `cargo fuzz run` sets them (Rust binaries trip ODR
/// violation false positives), on top of the caller's.
pub fn asan_options() -> String {
    match std::env::var("ASAN_OPTIONS") {
        Ok(opts) if !opts.is_empty() => format!("{opts}:detect_odr_violation=0"),
        _ => "detect_odr_violation=0".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_len_leaves_room_for_a_line_over_the_test_policys_frame_cap() {
        let policy: toml::Table =
            toml::from_str(portcullis_testkit::fixtures::TEST_POLICY).unwrap();
        let cap = policy["server"]["max_frame_bytes"]
            .as_integer()
            .and_then(|c| u64::try_from(c).ok())
            .expect("the test policy sets max_frame_bytes");
        assert!(
            Limits::DEFAULT.max_len >= 2 * cap,
            "max_len {} cannot hold a line over the {cap}-byte frame cap and a frame after it",
            Limits::DEFAULT.max_len
        );
    }

    #[test]
    fn recipes_get_the_nightly_limits() {
        let dict = "fuzz/dict/mcp.dict";
        assert_eq!(
            flags_for(FlagsFor::Run, dict).join(" "),
            "-dict=fuzz/dict/mcp.dict -max_len=8192 -timeout=10 -rss_limit_mb=2048"
        );
        assert_eq!(
            flags_for(FlagsFor::Cmin, dict).join(" "),
            "-max_len=8192 -timeout=10 -rss_limit_mb=2048"
        );
        assert_eq!(
            flags_for(FlagsFor::Tmin, dict).join(" "),
            "--runs 10000 -- -timeout=10 -rss_limit_mb=2048"
        );
    }
}
