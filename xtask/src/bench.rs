//! `cargo xtask bench`: what the inbound boundary costs, as one table.
//!
//! Runs the pipeline benchmark (`crates/gateway/benches/pipeline.rs`:
//! criterion, then the contenders interleaved on the same inputs), reads
//! its `bench-row` and `latency` lines, measures how long the release
//! binary takes from launch to answering `initialize` with the 20-tool
//! example policy, and prints a table. The last line is
//! `pipeline_vs_serde_value=<ratio for the legacy mix>`. The same figures,
//! with the run's date, commit and machine, go to `<out>/bench.json` for
//! `cargo xtask evidence`.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;

use crate::evidence;
use crate::process::{cargo, describe};
use crate::project::Project;
use crate::sidecar;

/// Options of `cargo xtask bench`.
#[derive(Debug, Args)]
pub struct Options {
    /// Skip criterion's own measurements; print only the interleaved table,
    /// latency and startup (about a minute instead of several).
    #[arg(long)]
    pub quick: bool,
    /// Launches of the release binary for the startup figure.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub startup_runs: u32,
    /// Directory for bench.json.
    #[arg(long, default_value = "target/nightly")]
    pub out: PathBuf,
}

/// The policy the benchmark and the startup figure use.
const POLICY: &str = "examples/policy-20-tools.toml";
/// The startup goal: `initialize` answered within this of launch.
const STARTUP_GOAL: Duration = Duration::from_millis(10);

/// One `bench-row` line of the benchmark.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub mix: String,
    pub contender: String,
    pub mb_per_s: f64,
    pub frames_per_s: f64,
    pub ratio: f64,
}

/// Parse `bench-row key=value ...`; `None` for any other line.
pub fn parse_row(line: &str) -> Option<Row> {
    let rest = line.strip_prefix("bench-row ")?;
    let field = |key: &str| {
        rest.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    };
    Some(Row {
        mix: field("mix")?.to_owned(),
        contender: field("contender")?.to_owned(),
        mb_per_s: field("mb_per_s")?.parse().ok()?,
        frames_per_s: field("frames_per_s")?.parse().ok()?,
        ratio: field("ratio_to_serde_value")?.parse().ok()?,
    })
}

/// The numbers of the `latency` line (`frames=100000 p50_us=0.97 ...`),
/// by key; a value that is not a number is left out.
pub fn parse_latency(rest: &str) -> BTreeMap<String, f64> {
    rest.split_whitespace()
        .filter_map(|kv| {
            let (key, value) = kv.split_once('=')?;
            Some((key.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// `bench.json`: what the table prints, as data.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// When the run started (UTC).
    pub started: String,
    /// The commit checked out (`git rev-parse --short HEAD`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Cores, CPU and memory of this machine.
    pub machine: String,
    /// Criterion's own measurements were skipped.
    pub quick: bool,
    pub policy: String,
    pub rows: Vec<Row>,
    /// `frames`, `p50_us`, `p99_us`, `max_us` of the latency line.
    pub latency: BTreeMap<String, f64>,
    pub startup: StartupReport,
    /// The legacy mix's ratio of the pipeline to `serde_json::Value`.
    pub pipeline_vs_serde_value: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StartupReport {
    pub runs: u32,
    pub median_ms: f64,
    pub p90_ms: f64,
    pub max_ms: f64,
    /// Launches slower than the goal.
    pub over_goal: usize,
    pub goal_ms: f64,
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 1e2
}

pub fn run(project: &Project, opts: &Options) -> Result<()> {
    let started_at = SystemTime::now();
    let mut cmd = cargo(None);
    cmd.current_dir(&project.root).args([
        "bench",
        "-p",
        "portcullis-gateway",
        "--bench",
        "pipeline",
    ]);
    if opts.quick {
        // A filter no criterion benchmark matches: only the table runs.
        cmd.args(["--", "no-criterion-benchmark"]);
    }
    eprintln!("$ {}", describe(&cmd));
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| describe(&cmd))?;
    let stdout = child.stdout.take().context("bench stdout")?;
    let mut rows = Vec::new();
    let mut latency = None;
    let mut ratio = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading the benchmark's output")?;
        if let Some(row) = parse_row(&line) {
            rows.push(row);
        } else if let Some(rest) = line.strip_prefix("latency ") {
            latency = Some(rest.to_owned());
        } else if let Some(value) = line.strip_prefix("pipeline_vs_serde_value=") {
            ratio = Some(value.to_owned());
        } else {
            // Criterion's report: progress for whoever watches.
            eprintln!("{line}");
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("{} failed: {status}", describe(&cmd));
    }
    let ratio = ratio.context("the benchmark printed no pipeline_vs_serde_value")?;
    let ratio_value: f64 = ratio
        .parse()
        .with_context(|| format!("pipeline_vs_serde_value={ratio} is not a number"))?;

    let binary = build_release(project)?;
    let startup = startup(project, &binary, opts.startup_runs)?;

    let report = Report {
        started: sidecar::iso_datetime(started_at),
        commit: evidence::short_head(&project.root).ok(),
        machine: evidence::this_machine(),
        quick: opts.quick,
        policy: POLICY.to_owned(),
        rows,
        latency: latency.as_deref().map(parse_latency).unwrap_or_default(),
        startup: StartupReport {
            runs: opts.startup_runs,
            median_ms: millis(startup.median),
            p90_ms: millis(startup.p90),
            max_ms: millis(startup.max),
            over_goal: startup.over_goal,
            goal_ms: millis(STARTUP_GOAL),
        },
        pipeline_vs_serde_value: ratio_value,
    };
    let out = project.root.join(&opts.out);
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let json = out.join("bench.json");
    fs::write(&json, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", json.display()))?;
    eprintln!("wrote {}", project.display(&json));

    println!();
    println!("| mix | contender | MB/s | frames/s | × serde_json::Value |");
    println!("| --- | --- | ---: | ---: | ---: |");
    for row in &report.rows {
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.2} |",
            row.mix, row.contender, row.mb_per_s, row.frames_per_s, row.ratio
        );
    }
    println!();
    if let Some(latency) = latency {
        println!("latency (tools/call frame in → its Execute effect): {latency}");
    }
    let goal = if startup.max <= STARTUP_GOAL {
        "within"
    } else if startup.median <= STARTUP_GOAL {
        "median within, slowest beyond"
    } else {
        "beyond"
    };
    println!(
        "startup (launch → initialize answered, {POLICY}, {} runs): median {:.2} ms, slowest {:.2} ms ({goal} the {} ms goal)",
        opts.startup_runs,
        startup.median.as_secs_f64() * 1e3,
        startup.max.as_secs_f64() * 1e3,
        STARTUP_GOAL.as_millis()
    );
    println!("pipeline_vs_serde_value={ratio}");
    Ok(())
}

fn build_release(project: &Project) -> Result<PathBuf> {
    let mut cmd = cargo(None);
    cmd.current_dir(&project.root)
        .args(["build", "--release", "-p", "portcullis-cli"]);
    eprintln!("$ {}", describe(&cmd));
    let status = cmd.status().with_context(|| describe(&cmd))?;
    if !status.success() {
        bail!("{} failed: {status}", describe(&cmd));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| project.root.join("target"));
    Ok(target.join("release").join("portcullis"))
}

struct Startup {
    median: Duration,
    p90: Duration,
    max: Duration,
    over_goal: usize,
}

/// Launch → the `initialize` answer on stdout, `runs` times.
fn startup(project: &Project, binary: &Path, runs: u32) -> Result<Startup> {
    let initialize = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"xtask-bench","version":"1"}}}
"#;
    let mut times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let mut child = Command::new(binary)
            .current_dir(&project.root)
            .args(["mcp", "--log-level", "error", "--policy", POLICY])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("launching {}", binary.display()))?;
        let mut stdin = child.stdin.take().context("stdin")?;
        stdin.write_all(initialize)?;
        let mut answer = String::new();
        BufReader::new(child.stdout.take().context("stdout")?).read_line(&mut answer)?;
        let elapsed = started.elapsed();
        drop(stdin);
        child.wait()?;
        if !answer.contains(r#""id":1"#) || !answer.contains("protocolVersion") {
            bail!("portcullis mcp did not answer initialize: {answer:?}");
        }
        times.push(elapsed);
    }
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    Ok(Startup {
        median: times[times.len() / 2],
        p90: at(0.9),
        max: times[times.len() - 1],
        over_goal: times.iter().filter(|t| **t > STARTUP_GOAL).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_rows_parse_and_other_lines_do_not() {
        let row = parse_row(
            "bench-row mix=legacy contender=pipeline mb_per_s=51.9 frames_per_s=170697 ratio_to_serde_value=0.71 frames=10002 bytes=3038163",
        )
        .expect("a row");
        assert_eq!(
            row,
            Row {
                mix: "legacy".into(),
                contender: "pipeline".into(),
                mb_per_s: 51.9,
                frames_per_s: 170_697.0,
                ratio: 0.71,
            }
        );
        assert_eq!(parse_row("legacy/pipeline time: [1 ms 2 ms 3 ms]"), None);
        assert_eq!(parse_row("bench-row mix=legacy contender=memchr"), None);
    }

    #[test]
    fn latency_keeps_the_numbers_of_its_line() {
        let latency = parse_latency("frames=100000 p50_us=0.97 p99_us=3.02 max_us=41.50 note=x");
        assert_eq!(
            latency.into_iter().collect::<Vec<_>>(),
            [
                ("frames".to_owned(), 100_000.0),
                ("max_us".to_owned(), 41.5),
                ("p50_us".to_owned(), 0.97),
                ("p99_us".to_owned(), 3.02),
            ]
        );
    }

    #[test]
    fn durations_are_milliseconds_to_two_places() {
        assert_eq!(millis(Duration::from_micros(7_604)), 7.6);
        assert_eq!(millis(Duration::from_micros(11_326)), 11.33);
    }
}
