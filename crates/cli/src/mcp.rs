//! `portcullis mcp`: serve one MCP session on stdio, in front of the real
//! HTTP and SSH executors.
//!
//! A thin driver around the sans-IO [`Gateway`]: this file is startup
//! (arguments, policy, credentials, logging, threads); [`threads`] has the
//! stdin reader and the workers, [`driver`] the core loop. Threads:
//!
//! - **stdin reader**: reads chunks and sends them to the core. It holds at
//!   most [`INPUT_CREDITS`] chunks ahead of the core (the core hands a
//!   credit back per chunk processed), so a client that floods stdin while
//!   ignoring stdout cannot grow memory. The core hands a chunk to the
//!   gateway one line at a time and carries out each line's effects before
//!   the next, so a chunk of small requests with large replies is never
//!   answered all at once in memory.
//! - **workers** (`--workers`, default 4): run actions from a bounded queue
//!   ([`QUEUE_PER_WORKER`] per worker). A full queue refuses the action
//!   (a tool error saying so) rather than queueing without bound; so does
//!   a queue whose actions (queued or running) already hold
//!   [`ACTION_BYTES_PER_FRAME`] × `max_frame_bytes` of targets. A panic
//!   in a worker is caught and becomes `Outcome::failure("internal error")`.
//! - **core** (the calling thread): the only owner of the `Gateway`, the
//!   [`FrameWriter`] and the audit journal. It receives events (stdin chunk,
//!   stdin end, action done) from one channel and carries out every
//!   [`Effect`] in order: refusals and actions arrive as effects and go to
//!   the audit journal and the log (the gateway keeps only counters), so
//!   nothing it keeps grows with the length of the session.
//!
//! Time: each action has its tool's timeout, which the executors enforce;
//! the core also stops waiting [`TIMEOUT_MARGIN`] after it (counted from
//! dispatch) and answers `timed out`. `notifications/cancelled` makes the
//! core stop waiting (the gateway writes nothing more for that request);
//! an action still queued is then skipped.
//!
//! Ending: stdin EOF → `end_of_input`, then the core waits for actions in
//! flight for at most `--grace-ms` (default 10 s), answering each, and
//! exits 0 (actions still running at the deadline are answered
//! `interrupted` and stay open in the audit journal). A frame that ends
//! the session (invalid under `on_invalid = "close"`, or refused under
//! `on_denied = "close"`) stops reading at once; when actions are in
//! flight the gateway drains ([`Gateway::is_draining`]) and the core
//! answers them just as at end of input, within the same grace period;
//! then the gateway writes that frame's answer and `Effect::Close` → exit
//! 3. A stdout write failure → exit 4. After `Close` or a write failure
//! nothing more is written; the core waits at most what is left of the
//! grace period for running actions, so the audit journal records their
//! outcomes. SIGINT and SIGTERM end the session at once (exit 128 + the
//! signal number). On every way out, `ssh` clients still running are
//! killed and their identity material removed (see [`crate::shutdown`]).

mod driver;
mod threads;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use portcullis_exec::RealExecutor;
use portcullis_gateway::{Config, Executor, Gateway, Policy, SecretStore};

use crate::audit::Journal;
use crate::serve::{self, LogArgs};
use crate::stdio::PrivateStdout;
use driver::{Driver, State};
use threads::{Event, Job, StrayPrintTest, read_stdin, stray_print, worker};

/// stdin reached end of file and every action was answered (or the grace
/// period ran out).
pub const EXIT_EOF: u8 = 0;
pub use crate::serve::{EXIT_CLOSED, EXIT_STDOUT};

/// How long after an action's timeout the driver stops waiting for it.
pub const TIMEOUT_MARGIN: Duration = Duration::from_secs(1);
/// Queue slots per worker.
pub const QUEUE_PER_WORKER: usize = 16;
/// stdin chunks the reader may hold ahead of the core.
const INPUT_CREDITS: usize = 4;
/// Bytes per stdin read.
const CHUNK_BYTES: usize = 64 * 1024;
/// Queued and running actions may hold targets (URLs, argv) of at most this
/// many times `max_frame_bytes` in all (one action is always admitted): a
/// target is built from one frame, so this bounds the queue by bytes as
/// [`QUEUE_PER_WORKER`] bounds it by count.
pub const ACTION_BYTES_PER_FRAME: usize = 2;

/// Arguments of `portcullis mcp`.
#[derive(Debug, Args)]
#[command(after_help = concat!(
    "Example:\n",
    "  # A client normally launches this; here a captured session stands in for one. Its\n",
    "  # call has an argument the tool's schema does not name: refused before anything\n",
    "  # runs, answered with a tool error, and journaled.\n",
    "  portcullis mcp --policy examples/policy.toml --audit audit.jsonl < examples/sessions/unknown-argument.jsonl",
))]
pub struct McpArgs {
    /// The policy file (TOML).
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,

    /// Append an audit journal (JSON Lines) to FILE. Every action's intent
    /// is written and synced before it runs; an action whose intent cannot
    /// be written is denied.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,

    /// Key the audit journal with the bytes of the environment variable
    /// NAME (at least 16): every record then carries an HMAC-SHA-256, so a
    /// writer without the key cannot rebuild the chain after an edit.
    #[arg(long, value_name = "NAME", requires = "audit")]
    audit_key_env: Option<String>,

    #[command(flatten)]
    log: LogArgs,

    /// Actions run at the same time.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 4,
        value_parser = clap::value_parser!(u16).range(1..=64),
    )]
    workers: u16,

    /// After stdin ends (or the session closes), wait at most this long for
    /// actions in flight (at most one hour).
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 10_000,
        value_parser = serve::grace_ms(),
    )]
    grace_ms: u64,

    /// Test hook: print to stdout on purpose at startup and before every
    /// action, panic in tools named `panic*`, hang in tools named `hang*`.
    #[arg(long, hide = true)]
    stray_print_test: bool,
}

/// Run `portcullis mcp`. Startup failures are returned (exit 2).
pub fn run(args: &McpArgs, stdout: PrivateStdout) -> anyhow::Result<ExitCode> {
    if args.stray_print_test {
        stray_print("startup");
    }
    serve::start(&args.log, &stdout)?;
    let policy = Policy::load(&args.policy)?;
    let secrets = SecretStore::from_environment(&policy);
    for (name, problem) in secrets.problems() {
        tracing::warn!(
            credential = %name,
            problem = %problem,
            "credential not available; tools that use it will be denied"
        );
    }
    let policy = Arc::new(policy);
    let key = crate::audit::key_for(args.audit.as_deref(), args.audit_key_env.as_deref())?;
    let journal = serve::open_journal(args.audit.as_deref(), |path| Journal::open(path, key))?;
    let real = RealExecutor::new();
    let lifetime = crate::shutdown::Lifetime::start(real.ssh().clone());
    let _cleanup = lifetime.exit_guard();
    let executor: Arc<dyn Executor> = if args.stray_print_test {
        Arc::new(StrayPrintTest(real))
    } else {
        Arc::new(real)
    };

    let (events_tx, events) = mpsc::channel::<Event>();
    let signalled = events_tx.clone();
    lifetime.watch_signals(move |code| {
        let _ = signalled.send(Event::Signal(code));
    })?;
    let workers = usize::from(args.workers);
    let (jobs_tx, jobs_rx) = mpsc::sync_channel::<Job>(workers * QUEUE_PER_WORKER);
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    for n in 0..workers {
        let jobs = Arc::clone(&jobs_rx);
        let done = events_tx.clone();
        let executor = Arc::clone(&executor);
        serve::spawn(format!("worker-{n}"), "a worker thread", move || {
            worker(&jobs, &done, executor.as_ref());
        })?;
    }
    let (credits_tx, credits_rx) = serve::credits(INPUT_CREDITS);
    let input = events_tx.clone();
    serve::spawn("stdin".into(), "the stdin reader", move || {
        read_stdin(&input, &credits_rx);
    })?;

    tracing::info!(
        policy = %args.policy.display(),
        tools = policy.tools.len(),
        workers,
        audit = args.audit.is_some(),
        "serving MCP on stdio"
    );
    let driver = Driver {
        gateway: Gateway::new(Arc::clone(&policy), secrets, Config::from_policy(&policy)),
        writer: stdout.into_frame_writer(),
        journal,
        jobs: jobs_tx,
        credits: credits_tx,
        _keepalive: events_tx,
        running: HashMap::new(),
        action_bytes: 0,
        max_action_bytes: policy
            .server
            .max_frame_bytes
            .saturating_mul(ACTION_BYTES_PER_FRAME),
        state: State::Serving,
        grace: Duration::from_millis(args.grace_ms),
    };
    Ok(ExitCode::from(driver.serve(&events)))
}
