//! `portcullis mcp`: serve one MCP session on stdio, in front of the real
//! HTTP and SSH executors.
//!
//! A thin driver around the sans-IO [`Gateway`]. Threads:
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
//! `interrupted` and stay open in the audit journal). `Effect::Close` →
//! exit 3 and a stdout write failure → exit 4, each after waiting (without
//! writing) at most the grace period for running actions, so the audit
//! journal records their outcomes. SIGINT and SIGTERM end the session at
//! once (exit 128 + the signal number). On every way out, `ssh` clients
//! still running are killed and their identity material removed (see
//! [`crate::shutdown`]).

use std::collections::HashMap;
use std::io::{self, IsTerminal as _, Read};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Args;
use portcullis_exec::RealExecutor;
use portcullis_gateway::{
    ActionTarget, AuthorizedAction, Config, Effect, Executor, Gateway, Outcome, Policy,
    RejectionRecord, SecretStore, Ticket,
};

use crate::audit::{Journal, OutcomeRecord};
use crate::stdio::{FrameWriter, PrivateStdout};

/// stdin reached end of file and every action was answered (or the grace
/// period ran out).
pub const EXIT_EOF: u8 = 0;
/// Usage, policy or I/O error at startup (also clap's usage errors).
pub const EXIT_STARTUP: u8 = 2;
/// The session was closed because of an invalid inbound frame.
pub const EXIT_CLOSED: u8 = 3;
/// Writing to stdout failed (the client went away).
pub const EXIT_STDOUT: u8 = 4;

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
pub struct McpArgs {
    /// The policy file (TOML).
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,

    /// Append an audit journal (JSON Lines) to FILE. Every action's intent
    /// is written and synced before it runs; an action whose intent cannot
    /// be written is denied.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,

    /// Log filter for stderr (e.g. `info`, `debug`, `portcullis=trace`);
    /// default: `RUST_LOG`, else `info`.
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,

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
        value_parser = clap::value_parser!(u64).range(0..=3_600_000),
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
    init_logging(args.log_level.as_deref())?;
    if !stdout.redirected() {
        bail!(
            "cannot point fd 1 away from stdout; refusing to serve (stray output could corrupt the protocol stream)"
        );
    }
    let policy = Policy::load(&args.policy)?;
    let secrets = SecretStore::from_environment(&policy);
    for (name, problem) in secrets.problems() {
        tracing::warn!(
            credential = %name,
            problem = %problem,
            "credential not available; tools that use it will be denied"
        );
    }
    let policy = Arc::new(policy.bind_secrets(secrets));
    let journal = match &args.audit {
        Some(path) => Some(
            Journal::open(path)
                .with_context(|| format!("cannot open the audit journal {}", path.display()))?,
        ),
        None => None,
    };
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
        thread::Builder::new()
            .name(format!("worker-{n}"))
            .spawn(move || worker(&jobs, &done, executor.as_ref()))
            .context("cannot start a worker thread")?;
    }
    let (credits_tx, credits_rx) = mpsc::sync_channel::<()>(INPUT_CREDITS);
    for _ in 0..INPUT_CREDITS {
        let _ = credits_tx.try_send(());
    }
    let input = events_tx.clone();
    thread::Builder::new()
        .name("stdin".into())
        .spawn(move || read_stdin(&input, &credits_rx))
        .context("cannot start the stdin reader")?;

    tracing::info!(
        policy = %args.policy.display(),
        tools = policy.tools.len(),
        workers,
        audit = args.audit.is_some(),
        "serving MCP on stdio"
    );
    let driver = Driver {
        gateway: Gateway::new(Arc::clone(&policy), Config::from_policy(&policy)),
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

fn init_logging(level: Option<&str>) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let mut bad_env = None;
    let filter = match level {
        Some(level) => {
            EnvFilter::try_new(level).with_context(|| format!("invalid --log-level {level:?}"))?
        }
        None => match std::env::var("RUST_LOG") {
            Ok(value) if !value.trim().is_empty() => {
                EnvFilter::try_new(&value).unwrap_or_else(|err| {
                    bad_env = Some(err.to_string());
                    EnvFilter::new("info")
                })
            }
            _ => EnvFilter::new("info"),
        },
    };
    // `log` records (ureq, rustls) are deliberately not bridged: at trace
    // level they can include request details. Only this workspace's
    // `tracing` events are shown, and those never carry URLs, argv or
    // credential values.
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(io::stderr().is_terminal())
        .finish();
    tracing::subscriber::set_global_default(subscriber)
        .context("cannot install the log subscriber")?;
    if let Some(err) = bad_env {
        tracing::warn!(error = %err, "ignoring invalid RUST_LOG; logging at info");
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Threads

#[derive(Debug)]
enum Event {
    Input(Vec<u8>),
    Eof,
    ReadError(io::Error),
    Done(Done),
    /// SIGINT or SIGTERM: end now with this exit status.
    Signal(u8),
}

#[derive(Debug)]
struct Job {
    ticket: Ticket,
    action: AuthorizedAction,
    cancelled: Arc<AtomicBool>,
}

#[derive(Debug)]
struct Done {
    ticket: Ticket,
    outcome: Outcome,
    executed: bool,
    elapsed: Duration,
}

fn read_stdin(events: &Sender<Event>, credits: &Receiver<()>) {
    crate::stdio::make_blocking(io::stdin());
    let mut stdin = io::stdin().lock();
    let mut buf = vec![0; CHUNK_BYTES];
    loop {
        if credits.recv().is_err() {
            return;
        }
        let event = loop {
            match stdin.read(&mut buf) {
                Ok(0) => break Event::Eof,
                Ok(n) => break Event::Input(buf[..n].to_vec()),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => break Event::ReadError(err),
            }
        };
        let last = !matches!(event, Event::Input(_));
        if events.send(event).is_err() || last {
            return;
        }
    }
}

fn worker(jobs: &Mutex<Receiver<Job>>, done: &Sender<Event>, executor: &dyn Executor) {
    loop {
        let job = {
            let jobs = jobs.lock().unwrap_or_else(PoisonError::into_inner);
            jobs.recv()
        };
        let Ok(job) = job else { return };
        let started = Instant::now();
        let (outcome, executed) = if job.cancelled.load(Ordering::SeqCst) {
            (Outcome::failure("cancelled before it started"), false)
        } else {
            let outcome = catch_unwind(AssertUnwindSafe(|| executor.execute(&job.action)))
                .unwrap_or_else(|_| {
                    tracing::error!(
                        ticket = job.ticket.0,
                        tool = job.action.tool(),
                        "the executor panicked; answering with an internal error"
                    );
                    Outcome::failure("internal error")
                });
            (outcome, true)
        };
        let event = Event::Done(Done {
            ticket: job.ticket,
            outcome,
            executed,
            elapsed: started.elapsed(),
        });
        if done.send(event).is_err() {
            return;
        }
    }
}

/// The `--stray-print-test` executor: misbehaves on purpose around the real
/// one, to prove stray output and panics never reach the protocol stream.
struct StrayPrintTest(RealExecutor);

impl Executor for StrayPrintTest {
    fn execute(&self, action: &AuthorizedAction) -> Outcome {
        stray_print("tool path");
        let tool = action.tool();
        if tool.starts_with("panic") {
            panic!("stray-print-test: deliberate panic in the tool path");
        }
        if tool.starts_with("hang") {
            thread::sleep(action.timeout() * 4 + TIMEOUT_MARGIN * 4);
            return Outcome::success("stray-print-test: woke up");
        }
        self.0.execute(action)
    }
}

// Deliberate: this text must land on stderr (fd 1 points there), never on
// the protocol stream. It is the one `println!` in the binary.
#[allow(clippy::print_stdout)]
fn stray_print(place: &str) {
    println!("stray-print-test: println! at {place}; this line must not reach the client");
}

// ---------------------------------------------------------------------------
// Core

#[derive(Debug, Clone, Copy)]
enum State {
    Serving,
    /// stdin ended; answering actions in flight until `until`.
    Draining {
        until: Instant,
    },
    /// Closing with `code`; waiting (without writing) for running actions
    /// until `until`.
    Stopping {
        code: u8,
        until: Instant,
    },
}

#[derive(Debug)]
struct Running {
    deadline: Instant,
    cancelled: Arc<AtomicBool>,
    /// The gateway still expects `complete` for it (not cancelled by the
    /// client, not given up on by the driver).
    awaited: bool,
    /// The client cancelled it.
    client_cancelled: bool,
    /// Its share of `Driver::action_bytes`.
    bytes: usize,
}

struct Driver {
    gateway: Gateway,
    writer: FrameWriter,
    journal: Option<Journal>,
    jobs: SyncSender<Job>,
    credits: SyncSender<()>,
    /// Keeps the event channel connected, so waiting never fails.
    _keepalive: Sender<Event>,
    running: HashMap<Ticket, Running>,
    /// Target bytes of the actions in `running`.
    action_bytes: usize,
    max_action_bytes: usize,
    state: State,
    grace: Duration,
}

impl Driver {
    fn serve(mut self, events: &Receiver<Event>) -> u8 {
        let code = loop {
            let now = Instant::now();
            self.expire(now);
            if let Some(code) = self.finished(now) {
                break code;
            }
            let event = match self.next_wakeup() {
                Some(at) => match events.recv_timeout(at.saturating_duration_since(now)) {
                    Ok(event) => Some(event),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => break self.exit_code(),
                },
                None => match events.recv() {
                    Ok(event) => Some(event),
                    Err(_) => break self.exit_code(),
                },
            };
            if let Some(event) = event {
                self.handle(event);
            }
        };
        if let Some(journal) = &mut self.journal {
            journal.sync();
        }
        let counters = self.gateway.counters();
        tracing::info!(
            exit = code,
            frames = counters.frames_received,
            rejected = counters.rejected_total(),
            actions = counters.executor_calls,
            "session over"
        );
        code
    }

    fn exit_code(&self) -> u8 {
        match self.state {
            State::Stopping { code, .. } => code,
            _ => EXIT_EOF,
        }
    }

    /// The exit code, once there is nothing left to wait for.
    fn finished(&mut self, now: Instant) -> Option<u8> {
        match self.state {
            State::Serving => None,
            State::Draining { until } => {
                if self.running.is_empty() {
                    return Some(EXIT_EOF);
                }
                if now < until {
                    return None;
                }
                let mut awaited: Vec<Ticket> = self
                    .running
                    .iter()
                    .filter(|(_, r)| r.awaited)
                    .map(|(t, _)| *t)
                    .collect();
                awaited.sort();
                tracing::warn!(
                    running = self.running.len(),
                    "grace period over with actions still running; their outcome is unknown"
                );
                for ticket in awaited {
                    if let Some(r) = self.running.get_mut(&ticket) {
                        r.awaited = false;
                        r.cancelled.store(true, Ordering::SeqCst);
                    }
                    self.gate(|g| {
                        g.complete(
                            ticket,
                            Outcome::failure(
                                "interrupted: the gateway is shutting down; the outcome is unknown",
                            ),
                        )
                    });
                }
                Some(self.exit_code())
            }
            State::Stopping { code, until } => {
                if self.running.is_empty() {
                    return Some(code);
                }
                if now >= until {
                    tracing::warn!(
                        running = self.running.len(),
                        "grace period over with actions still running; their outcome is unknown"
                    );
                    return Some(code);
                }
                None
            }
        }
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let deadline = match self.state {
            State::Serving | State::Draining { .. } => self
                .running
                .values()
                .filter(|r| r.awaited)
                .map(|r| r.deadline)
                .min(),
            State::Stopping { .. } => None,
        };
        let until = match self.state {
            State::Serving => None,
            State::Draining { until } | State::Stopping { until, .. } => Some(until),
        };
        match (deadline, until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Give up on awaited actions past their deadline.
    fn expire(&mut self, now: Instant) {
        if matches!(self.state, State::Stopping { .. }) {
            return;
        }
        let mut late: Vec<Ticket> = self
            .running
            .iter()
            .filter(|(_, r)| r.awaited && r.deadline <= now)
            .map(|(t, _)| *t)
            .collect();
        late.sort();
        for ticket in late {
            if let Some(r) = self.running.get_mut(&ticket) {
                r.awaited = false;
                r.cancelled.store(true, Ordering::SeqCst);
            }
            tracing::warn!(
                ticket = ticket.0,
                "action timed out; no longer waiting for it"
            );
            self.gate(|g| g.complete(ticket, Outcome::failure("timed out")));
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Input(bytes) => {
                if matches!(self.state, State::Serving) {
                    // Line by line: the replies to one chunk of small
                    // requests (each `tools/list` answer can be large) are
                    // written as they come, never held together.
                    for piece in bytes.split_inclusive(|&b| b == b'\n') {
                        if !matches!(self.state, State::Serving) {
                            break;
                        }
                        self.gate(|g| g.receive(piece));
                    }
                    // Only a serving core reads on; otherwise the reader
                    // stays parked.
                    if matches!(self.state, State::Serving) {
                        let _ = self.credits.try_send(());
                    }
                }
            }
            Event::Eof => self.end_of_input(),
            Event::ReadError(err) => {
                tracing::warn!(error = %err, "cannot read stdin; treating it as end of input");
                self.end_of_input();
            }
            Event::Done(done) => self.done(done),
            Event::Signal(code) => {
                // No grace period: the clients still running are killed on
                // the way out (crate::shutdown).
                self.state = State::Stopping {
                    code,
                    until: Instant::now(),
                };
            }
        }
    }

    fn end_of_input(&mut self) {
        if !matches!(self.state, State::Serving) {
            return;
        }
        self.gate(Gateway::end_of_input);
        if matches!(self.state, State::Serving) {
            tracing::info!(in_flight = self.running.len(), "stdin closed");
            self.state = State::Draining {
                until: Instant::now() + self.grace,
            };
        }
    }

    fn done(&mut self, done: Done) {
        let Some(running) = self.running.remove(&done.ticket) else {
            return;
        };
        self.action_bytes -= running.bytes;
        if let Some(journal) = &mut self.journal {
            let record = OutcomeRecord {
                outcome: &done.outcome,
                executed: done.executed,
                cancelled: running.client_cancelled,
                late: !running.awaited && !running.client_cancelled,
                elapsed: done.elapsed,
            };
            if let Err(err) = journal.outcome(done.ticket, &record) {
                tracing::error!(error = %err, ticket = done.ticket.0, "cannot write an outcome to the audit journal");
            }
        }
        let writable = !matches!(self.state, State::Stopping { .. }) && self.writer.is_open();
        if running.awaited && writable {
            self.gate(|g| g.complete(done.ticket, done.outcome));
        }
    }

    /// Call the gateway and carry out its effects in order: refusals are
    /// logged and journaled as they arrive, in input order with the
    /// actions, so the gateway keeps nothing for the driver to collect.
    fn gate(&mut self, call: impl FnOnce(&mut Gateway) -> Vec<Effect>) {
        for effect in call(&mut self.gateway) {
            self.apply(effect);
        }
    }

    /// Log and journal one refused frame.
    fn rejected(&mut self, r: &RejectionRecord) {
        tracing::debug!(
            line = r.line,
            stage = r.stage.as_str(),
            code = r.code,
            fingerprint = %r.fingerprint,
            "frame rejected"
        );
        if let Some(journal) = &mut self.journal
            && let Err(err) = journal.rejection(r)
        {
            tracing::error!(error = %err, "cannot write a rejection to the audit journal");
        }
    }

    /// Carry out one effect.
    fn apply(&mut self, effect: Effect) {
        match effect {
            Effect::Write(frame) => {
                if !self.writer.is_open() {
                    return;
                }
                if let Err(err) = self.writer.write_frame(&frame) {
                    tracing::error!(error = %err, "cannot write to stdout; ending the session");
                    self.stop(EXIT_STDOUT);
                }
            }
            Effect::Execute {
                ticket,
                line,
                action,
            } => self.execute(ticket, action, line),
            Effect::Rejected(record) => self.rejected(&record),
            Effect::Cancel(ticket) => {
                if let Some(r) = self.running.get_mut(&ticket) {
                    r.awaited = false;
                    r.client_cancelled = true;
                    r.cancelled.store(true, Ordering::SeqCst);
                    tracing::info!(ticket = ticket.0, "action cancelled by the client");
                }
            }
            Effect::Close(reason) => {
                tracing::warn!(
                    line = reason.line,
                    stage = reason.stage.as_str(),
                    code = reason.code,
                    reason = %reason.reason,
                    "invalid input; closing the session"
                );
                self.stop(EXIT_CLOSED);
            }
        }
    }

    fn stop(&mut self, code: u8) {
        if matches!(self.state, State::Stopping { .. }) {
            return;
        }
        self.state = State::Stopping {
            code,
            until: Instant::now() + self.grace,
        };
    }

    fn execute(&mut self, ticket: Ticket, action: AuthorizedAction, line: u64) {
        if matches!(self.state, State::Stopping { .. }) || !self.writer.is_open() {
            tracing::info!(
                ticket = ticket.0,
                "not running an action: the session is ending"
            );
            return;
        }
        if let Some(journal) = &mut self.journal
            && let Err(err) = journal.intent(ticket, Some(line), &action)
        {
            tracing::error!(
                error = %err,
                ticket = ticket.0,
                tool = action.tool(),
                "cannot write the intent to the audit journal; denying the action"
            );
            self.gate(|g| {
                g.complete(
                    ticket,
                    Outcome::failure("denied: audit journal unavailable"),
                )
            });
            return;
        }
        let timeout = action.timeout();
        tracing::info!(
            ticket = ticket.0,
            tool = action.tool(),
            kind = action.kind(),
            "running action"
        );
        let cancelled = Arc::new(AtomicBool::new(false));
        let bytes = target_bytes(&action);
        let job = Job {
            ticket,
            action,
            cancelled: Arc::clone(&cancelled),
        };
        let room = self.running.is_empty()
            || self.action_bytes.saturating_add(bytes) <= self.max_action_bytes;
        let sent = if room {
            self.jobs.try_send(job)
        } else {
            Err(TrySendError::Full(job))
        };
        match sent {
            Ok(()) => {
                self.action_bytes += bytes;
                self.running.insert(
                    ticket,
                    Running {
                        deadline: Instant::now() + timeout + TIMEOUT_MARGIN,
                        cancelled,
                        awaited: true,
                        client_cancelled: false,
                        bytes,
                    },
                );
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                tracing::warn!(
                    ticket = ticket.0,
                    "the action queue is full; refusing the action"
                );
                let outcome =
                    Outcome::failure("busy: too many tool calls in progress; try again later");
                if let Some(journal) = &mut self.journal {
                    let record = OutcomeRecord {
                        outcome: &outcome,
                        executed: false,
                        cancelled: false,
                        late: false,
                        elapsed: Duration::ZERO,
                    };
                    if let Err(err) = journal.outcome(ticket, &record) {
                        tracing::error!(error = %err, "cannot write an outcome to the audit journal");
                    }
                }
                self.gate(|g| g.complete(ticket, outcome));
            }
        }
    }
}

/// The bytes an action's target holds (what a queued action costs beyond
/// its fixed size).
fn target_bytes(action: &AuthorizedAction) -> usize {
    match action.target() {
        ActionTarget::Http(h) => h.url().as_str().len(),
        ActionTarget::Ssh(s) => s.argv().iter().map(String::len).sum::<usize>() + s.host().len(),
    }
}
