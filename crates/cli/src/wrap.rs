//! `portcullis wrap`: the strict boundary of `portcullis mcp` in front of
//! any existing stdio MCP server, in both directions.
//!
//! An MCP client launches `portcullis wrap [--policy FILE] [--pins FILE]
//! [--pins-write FILE] [--audit FILE [--audit-key-env NAME]] -- COMMAND
//! [ARGS...]`, which launches
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
//! `on_invalid = "close"`) stops the reading of stdin; once the requests
//! accepted before it are answered (within `--grace-ms`) the session exits
//! 3. A stdout write failure exits 4, SIGINT and SIGTERM 130 and 143; in
//! every case the upstream is then ended the same way (at once after a
//! signal).
//!
//! The audit journal fails closed: a `tools/call` is forwarded only once its
//! intent is written and synced, and once any record cannot be written
//! (or the journal's first record could not be), every call is answered
//! with a denial. A journal path that cannot be opened, or an unusable
//! `--audit-key-env`, is a startup error.
//!
//! The client's end of input is seen even while its input is not taken
//! (the upstream's queue is full): the stdin reader watches for the
//! client's hangup meanwhile, and after it reads what is left without
//! waiting (a pipe or socket holds a bounded amount once its writer is
//! gone).

mod driver;
mod journal;
mod pins_file;
mod threads;
mod upstream;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use portcullis_gateway::Policy;
use portcullis_wrap::{Config, Wrap};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::serve::{self, LogArgs};
use crate::stdio::PrivateStdout;
use driver::Driver;
use journal::WrapJournal;
use threads::{Event, pass_stderr, read_client, read_upstream, write_upstream};
use upstream::Upstream;

/// The client ended its input and the upstream answered everything.
pub const EXIT_FINISHED: u8 = 0;
pub use crate::serve::{EXIT_CLOSED, EXIT_STDOUT};
/// The upstream ended its output while the session was open or with
/// requests unanswered (each was answered with an error).
pub const EXIT_UPSTREAM: u8 = 5;

/// Chunks each reader may hold ahead of the core.
const CREDITS: usize = 4;
/// Lines queued for the upstream's stdin.
const UPSTREAM_QUEUE: usize = 2;

/// Arguments of `portcullis wrap`.
#[derive(Debug, Args)]
#[command(after_help = concat!(
    "Example:\n",
    "  # In a client's server command: pin the tools the server offers today, review\n",
    "  # server.pins.json, then launch with --pins server.pins.json from then on.\n",
    "  portcullis wrap --pins-write server.pins.json -- npx -y @modelcontextprotocol/server-everything stdio",
))]
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

    /// Append an audit journal (JSON Lines, each session a hash chain) to
    /// FILE: every forwarded tools/call is journaled (and synced) before it
    /// is forwarded, with its outcome after. If a record cannot be written,
    /// every tools/call is denied from then on.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,

    /// Key the audit journal with the bytes of the environment variable
    /// NAME (at least 16): every record then carries an HMAC-SHA-256, so a
    /// writer without the key cannot rebuild the chain after an edit.
    #[arg(long, value_name = "NAME", requires = "audit")]
    audit_key_env: Option<String>,

    #[command(flatten)]
    log: LogArgs,

    /// After stdin ends, how long the upstream has to end its output
    /// before SIGTERM; after an invalid client frame, how long it has to
    /// answer the requests accepted before it (at most one hour).
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 5_000,
        value_parser = serve::grace_ms(),
    )]
    grace_ms: u64,

    /// The upstream server and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Run `portcullis wrap`. Startup failures are returned (exit 2).
pub fn run(args: &WrapArgs, stdout: PrivateStdout) -> anyhow::Result<ExitCode> {
    serve::start(&args.log, &stdout)?;
    let pins = args.pins.as_deref().map(pins_file::read).transpose()?;
    let mut config = match &args.policy {
        Some(path) => Config::from_policy(&Policy::load(path)?, pins),
        None => Config::with_pins(pins),
    };
    config.grace_ms = args.grace_ms;
    let key = crate::audit::key_for(args.audit.as_deref(), args.audit_key_env.as_deref())?;
    let journal = serve::open_journal(args.audit.as_deref(), |path| WrapJournal::open(path, key))?;
    let mut wrap = Wrap::new(config);
    if let Some(journal) = &journal {
        tracing::info!(session = journal.session(), "audit journal session");
    }
    if journal.as_ref().is_some_and(WrapJournal::is_broken) {
        tracing::error!(
            "the audit journal's first record could not be written; every tools/call is denied"
        );
        // Nothing to carry out: no call is in flight yet.
        let _ = wrap.journal_unavailable(None, 0);
    }
    let mut upstream = Upstream::spawn(&args.command)?;
    let child_stdin = upstream.child.stdin.take().context("upstream stdin")?;
    let child_stdout = upstream.child.stdout.take().context("upstream stdout")?;
    let child_stderr = upstream.child.stderr.take().context("upstream stderr")?;

    let (events_tx, events) = mpsc::channel::<Event>();
    watch_signals(events_tx.clone())?;
    let (client_credits, client_credits_rx) = serve::credits(CREDITS);
    let (upstream_credits, upstream_credits_rx) = serve::credits(CREDITS);
    let tx = events_tx.clone();
    serve::spawn("stdin".into(), "the stdin reader", move || {
        read_client(&tx, &client_credits_rx);
    })?;
    let tx = events_tx.clone();
    serve::spawn("upstream-stdout".into(), "the upstream reader", move || {
        read_upstream(child_stdout, &tx, &upstream_credits_rx);
    })?;
    let (lines_tx, lines_rx) = mpsc::sync_channel::<Vec<u8>>(UPSTREAM_QUEUE);
    let tx = events_tx.clone();
    serve::spawn("upstream-stdin".into(), "the upstream writer", move || {
        write_upstream(child_stdin, &lines_rx, &tx);
    })?;
    serve::spawn(
        "upstream-stderr".into(),
        "the upstream stderr passthrough",
        move || pass_stderr(child_stderr),
    )?;
    drop(events_tx);

    tracing::info!(
        upstream = %args.command[0],
        pins = args.pins.is_some(),
        policy = args.policy.is_some(),
        "wrapping an MCP server on stdio"
    );
    let driver = Driver {
        wrap,
        writer: stdout.into_frame_writer(),
        journal,
        pins_write: args.pins_write.clone(),
        to_upstream: Some(lines_tx),
        backlog: std::collections::VecDeque::new(),
        backlog_bytes: 0,
        upstream_caused: false,
        upstream_answers_dropped: 0,
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
    serve::spawn("signals".into(), "the signal thread", move || {
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
}
