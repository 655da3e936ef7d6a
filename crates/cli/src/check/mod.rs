//! `portcullis check [OPTIONS] -- COMMAND [ARGS...]`: the stdio release gate
//! for any MCP server.
//!
//! Launches the command the way a client does, with stdin, stdout and
//! stderr as separate pipes, sends a script, captures raw stdout with
//! arrival times and judges it: every stdout byte belongs to a complete,
//! newline-terminated JSON-RPC message, each response answers exactly one
//! sent request, nothing answers a notification, no `"id": null`,
//! optionally every frame validates against the official schema, and the
//! process exits within a bound once stdin closes. Exit status: 0 when
//! every check holds, 1 when one fails, 2 when the command cannot be
//! launched (or on a usage error).
//!
//! Modules, in the order a run uses them: [`script`] builds what is sent,
//! [`matrix`] the hostile conditions, [`launch`] runs and captures one
//! process, [`judge`] (with [`schema`]) decides, [`fuzz`] drives mutated
//! batches and minimizes failures, [`report`] writes human, JSON or JUnit.

mod fuzz;
mod judge;
mod launch;
mod matrix;
mod report;
mod schema;
mod script;

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, anyhow};
use clap::Args;

use self::judge::{Bounds, Mode};
use self::launch::{Ended, Launch};
use self::matrix::Condition;
use self::report::{CaseReport, Format, StderrCut};
use self::schema::Schemas;
use self::script::Era;

/// Arguments of `portcullis check`.
#[derive(Debug, Args)]
#[command(after_help = concat!(
    "Example:\n",
    "  # A CI step: JUnit XML for the test report, exit 1 when any check fails.\n",
    "  portcullis check --format junit -- python3 my_server.py > report.xml",
))]
pub struct CheckArgs {
    /// Handshake of the default script: legacy `initialize` (2025-11-25) or
    /// modern `server/discover` with per-request `_meta` (2026-07-28).
    #[arg(long, value_enum, default_value_t = Era::Legacy)]
    era: Era,

    /// Send this NDJSON script instead of the default one; a line that is
    /// exactly `{"delay_ms":N}` waits N milliseconds.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,

    /// Judge the `--script` as hostile input (as the fuzzer does, and as
    /// its saved failures replay): only the handshake and a final `ping`
    /// with id 900001 must be answered; the server may instead close, but
    /// never hang or crash.
    #[arg(long, requires = "script")]
    hostile: bool,

    /// Add a `tools/call` of TOOL to the default script.
    #[arg(long, value_name = "TOOL")]
    call: Option<String>,

    /// Arguments of the `--call` (a JSON object).
    #[arg(long, value_name = "JSON", requires = "call", default_value = "{}")]
    args: String,

    /// Validate every stdout message against DIR/<revision>/schema.json,
    /// the official schema of the negotiated revision.
    #[arg(long, value_name = "DIR")]
    schema_dir: Option<PathBuf>,

    /// Also run the script under each hostile condition.
    #[arg(long)]
    matrix: bool,

    /// Also fuzz for DURATION (`30s`, `500ms`, `2m`) with mutated frames.
    #[arg(long, value_name = "DURATION", value_parser = fuzz::parse_duration)]
    fuzz: Option<Duration>,

    /// Fuzz seeds: a directory of stdin streams (default:
    /// `corpus/stdin_bytes` when present, else built-in hard cases).
    #[arg(long, value_name = "DIR")]
    corpus: Option<PathBuf>,

    /// Seed of the fuzzer's mutations (default: from the clock).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,

    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,

    /// Where transcripts and minimized fuzz scripts are saved (default: a
    /// fresh directory under the system temp directory).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// How long to wait for each response.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    timeout_ms: u64,

    /// How long the server may take to exit after stdin closes.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    exit_timeout_ms: u64,

    /// The idle delay of the matrix's idle-start condition.
    #[arg(long, value_name = "MS", default_value_t = 1500)]
    idle_ms: u64,

    /// The server command and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Run the checks and write the report to `out`.
pub fn run(args: &CheckArgs, mut out: impl Write) -> anyhow::Result<ExitCode> {
    let launch = launch_of(&args.command)?;
    let command = launch.describe();
    let dir = output_dir(args.out.as_deref())?;
    let call_args = match &args.call {
        Some(_) => Some(
            serde_json::from_str::<serde_json::Value>(&args.args).context("--args is not JSON")?,
        ),
        None => None,
    };
    let steps = match &args.script {
        Some(path) => script::parse_script(
            &std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?,
        )?,
        None => script::default_script(args.era, args.call.as_deref().zip(call_args.as_ref())),
    };
    let schemas = args.schema_dir.clone().map(Schemas::new).transpose()?;
    let bounds = Bounds {
        response: Duration::from_millis(args.timeout_ms),
        exit: Duration::from_millis(args.exit_timeout_ms),
    };
    let mut conditions = vec![Condition {
        name: "script".into(),
        description: match &args.script {
            Some(path) => format!("script {}", path.display()),
            None => format!(
                "default {:?} script (handshake, ping, tools/list)",
                args.era
            )
            .to_lowercase(),
        },
        launch: launch.clone(),
        steps: steps.clone(),
        mode: if args.hostile {
            Mode::Hostile
        } else {
            Mode::Script
        },
    }];
    if args.matrix {
        let idle = Duration::from_millis(args.idle_ms);
        conditions.extend(matrix::conditions(&launch, &steps, args.era, idle, &dir)?);
    }
    let mut cases = Vec::new();
    for condition in &conditions {
        let started = Instant::now();
        let outcome = judge::run(
            &condition.launch,
            &condition.steps,
            condition.mode,
            &bounds,
            schemas.as_ref(),
        )
        .map_err(|e| anyhow!("cannot launch `{command}`: {e}"))?;
        let (stdout, stderr) = save(&dir, &condition.name, &outcome.ended)?;
        let mut notes = Vec::new();
        if let (Some(rev), true) = (&outcome.revision, cases.is_empty()) {
            notes.push(format!("negotiated revision {rev}"));
        }
        cases.push(CaseReport {
            name: condition.name.clone(),
            description: condition.description.clone(),
            failures: outcome.failures,
            status: status_text(&outcome.ended),
            millis: started.elapsed().as_millis(),
            stdout: Some(stdout),
            stderr: Some(stderr),
            stderr_cut: stderr_cut(&outcome.ended),
            notes,
        });
    }
    if let Some(duration) = args.fuzz {
        cases.push(run_fuzz(args, &launch, &bounds, duration, &dir)?);
    }
    report::write(args.format, &command, &cases, &mut out)?;
    Ok(if cases.iter().all(CaseReport::passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn run_fuzz(
    args: &CheckArgs,
    launch: &Launch,
    bounds: &Bounds,
    duration: Duration,
    dir: &Path,
) -> anyhow::Result<CaseReport> {
    let corpus = args.corpus.clone().or_else(|| {
        let default = PathBuf::from("corpus/stdin_bytes");
        default.is_dir().then_some(default)
    });
    let seed = args.seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let started = Instant::now();
    // Minimizing gets a bounded share of the time so a pass stays near its duration.
    let budget = (duration / 2).max(Duration::from_secs(5));
    let summary = fuzz::fuzz(
        launch,
        args.era,
        bounds,
        duration,
        corpus.as_deref(),
        seed,
        dir,
        budget,
    )
    .map_err(|e| anyhow!("cannot launch `{}`: {e}", launch.describe()))?;
    let mut notes = vec![format!(
        "{} batches, {} mutated frames, seed {seed}, seeds: {}",
        summary.batches, summary.frames, summary.seeds
    )];
    let mut failures = Vec::new();
    for found in summary.found {
        notes.push(format!(
            "minimized to {} frame(s), replay: portcullis check --hostile --script {} -- {}",
            found.frames,
            found.script.display(),
            launch.describe()
        ));
        failures.push(found.failure);
    }
    if summary.more_failures > 0 {
        notes.push(format!(
            "{} more failing batches not minimized",
            summary.more_failures
        ));
    }
    Ok(CaseReport {
        name: "fuzz".into(),
        description: format!(
            "{} ms of mutated frames after a valid handshake, a liveness ping after each batch",
            duration.as_millis()
        ),
        failures,
        status: "-".into(),
        millis: started.elapsed().as_millis(),
        stdout: None,
        stderr: None,
        stderr_cut: None,
        notes,
    })
}

/// The command with relative paths made absolute (program and arguments
/// that name existing files), so the working-directory condition tests
/// the server's own reliance on its cwd, not the command line's.
fn launch_of(command: &[OsString]) -> anyhow::Result<Launch> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| anyhow!("no command given"))?;
    let absolute = |arg: &OsString| -> OsString {
        let path = Path::new(arg);
        if path.is_relative() && !arg.to_string_lossy().starts_with('-') && path.exists() {
            std::path::absolute(path).map_or_else(|_| arg.clone(), PathBuf::into_os_string)
        } else {
            arg.clone()
        }
    };
    Ok(Launch {
        program: if Path::new(program).is_relative() && program.to_string_lossy().contains('/') {
            absolute(program)
        } else {
            program.clone()
        },
        args: args.iter().map(absolute).collect(),
        env: Vec::new(),
        cwd: None,
    })
}

fn output_dir(chosen: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = match chosen {
        Some(dir) => dir.to_path_buf(),
        None => {
            let stamp = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            std::env::temp_dir().join(format!("portcullis-check-{}-{stamp}", std::process::id()))
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::path::absolute(&dir).context("output directory")
}

/// Save a case's stdout, stderr and stdout arrival times. A cut stderr is
/// saved as its head, one line saying what was dropped, and its tail.
fn save(dir: &Path, name: &str, ended: &Ended) -> anyhow::Result<(PathBuf, PathBuf)> {
    let stdout = dir.join(format!("{name}.stdout"));
    let stderr = dir.join(format!("{name}.stderr"));
    let timeline = dir.join(format!("{name}.stdout.times"));
    std::fs::write(&stdout, &ended.stdout.bytes)?;
    let mut file = std::io::BufWriter::new(std::fs::File::create(&stderr)?);
    let log = &ended.stderr;
    file.write_all(log.head())?;
    if log.dropped() > 0 {
        if !log.head().ends_with(b"\n") {
            file.write_all(b"\n")?;
        }
        writeln!(
            file,
            "[portcullis check: stderr cut here: {} of {} bytes dropped; the first {} and the last {} are kept]",
            log.dropped(),
            log.total(),
            log.head().len(),
            log.tail().len()
        )?;
    }
    file.write_all(log.tail())?;
    file.flush()?;
    let mut times = String::new();
    for (ms, offset) in &ended.stdout.chunks {
        times.push_str(&format!("{{\"ms\":{ms},\"offset\":{offset}}}\n"));
    }
    std::fs::write(&timeline, times)?;
    Ok((stdout, stderr))
}

/// How much of stderr was dropped, when any was.
fn stderr_cut(ended: &Ended) -> Option<StderrCut> {
    let log = &ended.stderr;
    (log.dropped() > 0).then(|| StderrCut {
        total: log.total(),
        dropped: log.dropped(),
        head: log.head().len(),
        tail: log.tail().len(),
    })
}

fn status_text(ended: &Ended) -> String {
    match ended.status {
        None => "killed (no exit)".into(),
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => code.to_string(),
            (None, Some(sig)) => format!("signal {sig}"),
            _ => "unknown".into(),
        },
    }
}
