//! `run_session`: the stdin entry point, driven exactly as the binary does.

use std::sync::Arc;

use portcullis_gateway::mcp::Revision;
use portcullis_gateway::{
    AuthorizedAction, CloseReason, Config, Counters, Effect, Executor, Gateway, JournalEntry,
    Outcome, Policy, RejectionRecord, Ticket,
};
use portcullis_wire::transcript::check_transcript;

use crate::recorder::Recorder;

/// How input bytes are split into reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunking {
    /// One read with everything.
    Whole,
    /// One read per byte.
    ByteByByte,
    /// Reads of these sizes, cycling; a zero counts as one.
    Sizes(Vec<usize>),
}

impl Chunking {
    /// Split `bytes` into reads.
    pub fn split<'a>(&self, bytes: &'a [u8]) -> Vec<&'a [u8]> {
        match self {
            Chunking::Whole => vec![bytes],
            Chunking::ByteByByte => bytes.chunks(1).collect(),
            Chunking::Sizes(sizes) if sizes.is_empty() => vec![bytes],
            Chunking::Sizes(sizes) => {
                let mut out = Vec::new();
                let mut rest = bytes;
                let mut i = 0;
                while !rest.is_empty() {
                    let n = sizes[i % sizes.len()].clamp(1, rest.len());
                    let (head, tail) = rest.split_at(n);
                    out.push(head);
                    rest = tail;
                    i += 1;
                }
                out
            }
        }
    }
}

/// When the harness reports executor outcomes back to the gateway. The
/// binary completes actions asynchronously, so both are real schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Completion {
    /// Each action completes as soon as it is handed out, before the next
    /// effect is carried out.
    #[default]
    Immediate,
    /// Actions run when handed out, but their outcomes are reported only at
    /// end of input: a schedule that does not depend on how the input was
    /// split into reads, for chunking properties.
    AtEndOfInput,
}

/// What one session did.
#[derive(Debug, Clone)]
pub struct SessionReport {
    /// Every byte written to stdout.
    pub stdout: Vec<u8>,
    /// Every action the executor received, in order.
    pub actions: Vec<AuthorizedAction>,
    /// The rejection ledger.
    pub rejections: Vec<RejectionRecord>,
    /// The execution journal.
    pub journal: Vec<JournalEntry>,
    /// The counters.
    pub counters: Counters,
    /// Why the session closed, if it did.
    pub closed: Option<CloseReason>,
    /// The negotiated revision, if any.
    pub revision: Option<Revision>,
}

/// Feed `bytes` through a fresh gateway under `policy` with a [`Recorder`],
/// split into reads by `chunking`, then end of input. Panics (with the
/// first offending line's raw bytes) if stdout is not a clean transcript.
pub fn run_session(policy: &Arc<Policy>, bytes: &[u8], chunking: &Chunking) -> SessionReport {
    run_session_with(policy, bytes, chunking, &Recorder::default())
}

/// [`run_session`] with a given recorder (for custom canned outcomes).
pub fn run_session_with(
    policy: &Arc<Policy>,
    bytes: &[u8],
    chunking: &Chunking,
    recorder: &Recorder,
) -> SessionReport {
    let report = run_session_unchecked(policy, bytes, chunking, recorder);
    checked(policy, report, bytes, recorder)
}

/// Checks every harness call makes: stdout is a clean transcript, and no
/// credential value bound in `policy` appears in stdout or in the report
/// (ledgers, journal, close reason, actions) in any spelling the input or
/// the executor's canned outcome did not itself supply.
fn checked(
    policy: &Policy,
    report: SessionReport,
    input: &[u8],
    recorder: &Recorder,
) -> SessionReport {
    if let Err(violation) = check_transcript(&report.stdout) {
        panic!("{violation}\n(session input: {} bytes)", input.len());
    }
    // Every recorded action is a faithful expansion of its tool's template.
    if let Err(why) = crate::faithful::check_report(policy, input, &report) {
        panic!("{why}");
    }
    let secrets: Vec<&str> = policy
        .credentials
        .keys()
        .filter_map(|name| policy.secrets.get(name))
        .map(|s| s.expose())
        .collect();
    let ledger = format!("{report:?}");
    crate::canary::assert_no_leak(
        secrets,
        &[
            ("stdout", &report.stdout),
            ("the session report", ledger.as_bytes()),
        ],
        &[input, recorder.outcome().text.as_bytes()],
    );
    report
}

/// [`run_session`] with outcomes reported at end of input
/// ([`Completion::AtEndOfInput`]), the schedule under which any two
/// chunkings of the same bytes must give the same session.
pub fn run_session_deferred(
    policy: &Arc<Policy>,
    bytes: &[u8],
    chunking: &Chunking,
) -> SessionReport {
    let recorder = Recorder::default();
    let report =
        run_session_scheduled(policy, bytes, chunking, &recorder, Completion::AtEndOfInput);
    checked(policy, report, bytes, &recorder)
}

/// Drive a session without asserting on stdout; for tools (such as
/// `portcullis replay`) that report a bad transcript instead of panicking.
pub fn run_session_unchecked(
    policy: &Arc<Policy>,
    bytes: &[u8],
    chunking: &Chunking,
    recorder: &Recorder,
) -> SessionReport {
    run_session_scheduled(policy, bytes, chunking, recorder, Completion::Immediate)
}

/// Drive a session with a chosen completion schedule (stdout unchecked).
pub fn run_session_scheduled(
    policy: &Arc<Policy>,
    bytes: &[u8],
    chunking: &Chunking,
    recorder: &Recorder,
    completion: Completion,
) -> SessionReport {
    let mut driver = Driver {
        executor: recorder,
        completion,
        stdout: Vec::new(),
        closed: None,
        pending: Vec::new(),
    };
    let mut gateway = Gateway::new(Arc::clone(policy), Config::from_policy(policy));
    // Reads and end of input go on after a Close (the binary stops
    // reading there): the gateway must stay silent whatever its driver
    // does, and the driver asserts it.
    for read in chunking.split(bytes) {
        let effects = gateway.receive(read);
        driver.drive(&mut gateway, effects);
    }
    let effects = gateway.end_of_input();
    driver.drive(&mut gateway, effects);
    for (ticket, outcome) in std::mem::take(&mut driver.pending) {
        let effects = gateway.complete(ticket, outcome);
        driver.drive(&mut gateway, effects);
    }
    let Driver { stdout, closed, .. } = driver;
    let ledger = gateway.ledger();
    SessionReport {
        stdout,
        actions: recorder.calls(),
        rejections: ledger.rejections.clone(),
        journal: ledger.journal.clone(),
        counters: ledger.counters.clone(),
        closed,
        revision: gateway.revision(),
    }
}

struct Driver<'a> {
    executor: &'a dyn Executor,
    completion: Completion,
    stdout: Vec<u8>,
    closed: Option<CloseReason>,
    pending: Vec<(Ticket, Outcome)>,
}

impl Driver<'_> {
    /// Carry out effects in order, as the binary's driver does: frames are
    /// written, actions handed to the executor, outcomes reported back per
    /// the completion schedule. After `Close` nothing more may be written
    /// or run, whichever entry point (receive, complete, end of input)
    /// produced the effect: every harness asserts it here.
    fn drive(&mut self, gateway: &mut Gateway, effects: Vec<Effect>) {
        let mut queue = std::collections::VecDeque::from(effects);
        while let Some(effect) = queue.pop_front() {
            if let Some(reason) = &self.closed {
                match &effect {
                    Effect::Write(frame) => panic!(
                        "wrote {:?} after Close({reason:?}): nothing is written after Close",
                        String::from_utf8_lossy(frame)
                    ),
                    Effect::Execute(_, action) => panic!(
                        "ran {} after Close({reason:?}): nothing is run after Close",
                        action.tool()
                    ),
                    _ => {}
                }
            }
            match effect {
                Effect::Write(frame) => self.stdout.extend_from_slice(&frame),
                Effect::Execute(ticket, action) => {
                    let outcome = self.executor.execute(&action);
                    match self.completion {
                        Completion::Immediate => queue.extend(gateway.complete(ticket, outcome)),
                        Completion::AtEndOfInput => self.pending.push((ticket, outcome)),
                    }
                }
                Effect::Cancel(ticket) => self.pending.retain(|(t, _)| *t != ticket),
                Effect::Close(reason) => self.closed = Some(reason),
            }
        }
    }
}
