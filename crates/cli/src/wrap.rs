//! `portcullis wrap`: the strict boundary of `portcullis mcp` in front of
//! any existing stdio MCP server, in both directions.
//!
//! An MCP client launches `portcullis wrap [--policy FILE] [--pins FILE]
//! [--pins-write FILE] [--audit FILE] -- COMMAND [ARGS...]`, which launches
//! the upstream server with stdin, stdout and stderr as three pipes. This
//! file is startup (arguments, policy, pins, journal, the upstream, the
//! threads); the sans-IO core is [`portcullis_wrap::Wrap`], carried out by
//! [`driver`]. Threads ([`threads`]): the client reader (our stdin), the
//! upstream's stdout reader (each at most [`CREDITS`] chunks ahead of the
//! core), its stdin writer (at most [`UPSTREAM_QUEUE`] lines queued; the
//! core never blocks on it: what does not fit waits in the driver, and no
//! client chunk is taken meanwhile), its
//! stderr passthrough (to our stderr, as it comes) and the signal watcher.
//!
//! Ending: stdin EOF closes the upstream's stdin; the session ends when
//! the upstream ends its stdout (exit 0 if it answered everything). An
//! upstream that keeps its stdout open past `--grace-ms` gets SIGTERM, then
//! SIGKILL 2 s later (to its process group). The upstream ending its output
//! while the client's session is open, or with requests unanswered, answers
//! each of them with an error and exits 5. An invalid client frame (under
//! `on_invalid = "close"`) exits 3, a stdout write failure 4, SIGINT and
//! SIGTERM 130 and 143; in every case the upstream is then ended the same
//! way (at once after a signal).

mod driver;
mod journal;
mod pins_file;
mod threads;
mod upstream;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Args;
use portcullis_gateway::Policy;
use portcullis_wrap::{Config, Wrap};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::stdio::PrivateStdout;
use driver::Driver;
use journal::WrapJournal;
use threads::{Event, pass_stderr, read_client, read_upstream, write_upstream};
use upstream::Upstream;

/// The client ended its input and the upstream answered everything.
pub const EXIT_FINISHED: u8 = 0;
/// The session was closed because of an invalid client frame.
pub const EXIT_CLOSED: u8 = 3;
/// Writing to stdout failed (the client went away).
pub const EXIT_STDOUT: u8 = 4;
/// The upstream ended its output while the session was open or with
/// requests unanswered (each was answered with an error).
pub const EXIT_UPSTREAM: u8 = 5;

/// Chunks each reader may hold ahead of the core.
const CREDITS: usize = 4;
/// Lines queued for the upstream's stdin.
const UPSTREAM_QUEUE: usize = 2;

/// Arguments of `portcullis wrap`.
#[derive(Debug, Args)]
pub struct WrapArgs {
    /// A policy file: `[server]` limits (`max_frame_bytes`, `on_invalid`,
    /// ids) and `[wrap]` (`tools` allowlist, extra `methods`,
    /// `request_timeout_ms`).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,

    /// Tool pins to hold the upstream to (a file written by
    /// `--pins-write`). Without it, the tools of the first complete
    /// `tools/list` are pinned (trust on first use).
    #[arg(long, value_name = "FILE")]
    pins: Option<PathBuf>,

    /// Write the pins to FILE whenever they change (review it, then pass
    /// it as `--pins`).
    #[arg(long, value_name = "FILE")]
    pins_write: Option<PathBuf>,

    /// Append an audit journal (JSON Lines) to FILE.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,

    /// Log filter for stderr; default: `RUST_LOG`, else `info`.
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,

    /// After stdin ends, how long the upstream has to end its output
    /// before SIGTERM (at most one hour).
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 5_000,
        value_parser = clap::value_parser!(u64).range(0..=3_600_000),
    )]
    grace_ms: u64,

    /// The upstream server and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Run `portcullis wrap`. Startup failures are returned (exit 2).
pub fn run(args: &WrapArgs, stdout: PrivateStdout) -> anyhow::Result<ExitCode> {
    crate::mcp::init_logging(args.log_level.as_deref())?;
    if !stdout.redirected() {
        bail!(
            "cannot point fd 1 away from stdout; refusing to serve (stray output could corrupt the protocol stream)"
        );
    }
    let pins = args.pins.as_deref().map(pins_file::read).transpose()?;
    let config = match &args.policy {
        Some(path) => Config::from_policy(&Policy::load(path)?, pins),
        None => Config::with_pins(pins),
    };
    let journal = match &args.audit {
        Some(path) => Some(
            WrapJournal::open(path)
                .with_context(|| format!("cannot open the audit journal {}", path.display()))?,
        ),
        None => None,
    };
    let mut upstream = Upstream::spawn(&args.command)?;
    let child_stdin = upstream.child.stdin.take().context("upstream stdin")?;
    let child_stdout = upstream.child.stdout.take().context("upstream stdout")?;
    let child_stderr = upstream.child.stderr.take().context("upstream stderr")?;

    let (events_tx, events) = mpsc::channel::<Event>();
    watch_signals(events_tx.clone())?;
    let (client_credits, client_credits_rx) = mpsc::sync_channel::<()>(CREDITS);
    let (upstream_credits, upstream_credits_rx) = mpsc::sync_channel::<()>(CREDITS);
    for _ in 0..CREDITS {
        let _ = client_credits.try_send(());
        let _ = upstream_credits.try_send(());
    }
    let tx = events_tx.clone();
    thread::Builder::new()
        .name("stdin".into())
        .spawn(move || read_client(&tx, &client_credits_rx))
        .context("cannot start the stdin reader")?;
    let tx = events_tx.clone();
    thread::Builder::new()
        .name("upstream-stdout".into())
        .spawn(move || read_upstream(child_stdout, &tx, &upstream_credits_rx))
        .context("cannot start the upstream reader")?;
    let (lines_tx, lines_rx) = mpsc::sync_channel::<Vec<u8>>(UPSTREAM_QUEUE);
    let tx = events_tx.clone();
    thread::Builder::new()
        .name("upstream-stdin".into())
        .spawn(move || write_upstream(child_stdin, &lines_rx, &tx))
        .context("cannot start the upstream writer")?;
    thread::Builder::new()
        .name("upstream-stderr".into())
        .spawn(move || pass_stderr(child_stderr))
        .context("cannot start the upstream stderr passthrough")?;
    drop(events_tx);

    tracing::info!(
        upstream = %args.command[0],
        pins = args.pins.is_some(),
        policy = args.policy.is_some(),
        "wrapping an MCP server on stdio"
    );
    let driver = Driver {
        wrap: Wrap::new(config),
        writer: stdout.into_frame_writer(),
        journal,
        pins_write: args.pins_write.clone(),
        to_upstream: Some(lines_tx),
        backlog: std::collections::VecDeque::new(),
        withheld_credits: 0,
        close_upstream_input: false,
        client_credits,
        upstream_credits,
        upstream,
        grace: Duration::from_millis(args.grace_ms),
        started: Instant::now(),
        input_ended: None,
        term_sent: false,
        kill_sent: false,
        exit: None,
    };
    Ok(ExitCode::from(driver.serve(&events)))
}

/// SIGINT and SIGTERM end the session (128 + the signal number); a second
/// one exits at once.
fn watch_signals(events: mpsc::Sender<Event>) -> anyhow::Result<()> {
    let mut signals =
        Signals::new([SIGINT, SIGTERM]).context("cannot install the signal handlers")?;
    thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut first = None;
            for signal in signals.forever() {
                let code = crate::shutdown::exit_code(signal);
                if let Some(first) = first {
                    std::process::exit(i32::from(first));
                }
                first = Some(code);
                let _ = events.send(Event::Signal(code));
            }
        })
        .context("cannot start the signal thread")?;
    Ok(())
}
