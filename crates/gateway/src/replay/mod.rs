//! The sans-IO replay driver: feed bytes through a [`Gateway`] with a
//! [`Recorder`] standing in for the executor, exactly as the binary's
//! driver carries out effects, and collect what the session did. It takes
//! a [`BoundPolicy`]: the policy and the credential values for the run. It is the
//! engine of `portcullis replay` and of every test harness.

mod recorder;

use std::collections::VecDeque;
use std::sync::Arc;

use crate::AuthorizedAction;
use crate::effect::{CloseReason, Effect, Ticket};
use crate::executor::{Executor, Outcome};
use crate::ledger::{Counters, JournalEntry, RejectionRecord};
use crate::mcp::Revision;
use crate::policy::BoundPolicy;
use crate::session::{Config, Gateway};

pub use recorder::Recorder;

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

/// When the driver reports executor outcomes back to the gateway. The
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
    /// The rejection ledger (every [`Effect::Rejected`], in order).
    pub rejections: Vec<RejectionRecord>,
    /// The execution journal (every [`Effect::Execute`], with its outcome
    /// once completed).
    pub journal: Vec<JournalEntry>,
    /// The counters.
    pub counters: Counters,
    /// Why the session closed, if it did.
    pub closed: Option<CloseReason>,
    /// The negotiated revision, if any.
    pub revision: Option<Revision>,
}

/// Drive a session with outcomes reported at once; stdout is not checked
/// (`portcullis replay` reports a bad transcript instead of panicking).
pub fn run_session_unchecked(
    policy: &BoundPolicy,
    bytes: &[u8],
    chunking: &Chunking,
    recorder: &Recorder,
) -> SessionReport {
    run_session_scheduled(policy, bytes, chunking, recorder, Completion::Immediate)
}

/// Drive a session with a chosen completion schedule (stdout unchecked).
pub fn run_session_scheduled(
    policy: &BoundPolicy,
    bytes: &[u8],
    chunking: &Chunking,
    recorder: &Recorder,
    completion: Completion,
) -> SessionReport {
    let mut driver = Driver {
        executor: recorder,
        completion,
        stdout: Vec::new(),
        rejections: Vec::new(),
        journal: Vec::new(),
        closed: None,
        pending: Vec::new(),
    };
    let mut gateway = Gateway::new(
        Arc::clone(policy.policy()),
        Arc::clone(policy.secrets()),
        Config::from_policy(policy),
    );
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
        driver.completed(ticket, &outcome);
        let effects = gateway.complete(ticket, outcome);
        driver.drive(&mut gateway, effects);
    }
    SessionReport {
        stdout: driver.stdout,
        actions: recorder.calls(),
        rejections: driver.rejections,
        journal: driver.journal,
        counters: gateway.counters().clone(),
        closed: driver.closed,
        revision: gateway.revision(),
    }
}

struct Driver<'a> {
    executor: &'a dyn Executor,
    completion: Completion,
    stdout: Vec<u8>,
    rejections: Vec<RejectionRecord>,
    journal: Vec<JournalEntry>,
    closed: Option<CloseReason>,
    pending: Vec<(Ticket, Outcome)>,
}

impl Driver<'_> {
    /// Carry out effects in order, as the binary's driver does: frames are
    /// written, actions handed to the executor, outcomes reported back per
    /// the completion schedule, records kept. After `Close` nothing more
    /// may be written or run, whichever entry point (receive, complete, end
    /// of input) produced the effect: every harness asserts it here.
    fn drive(&mut self, gateway: &mut Gateway, effects: Vec<Effect>) {
        let mut queue = VecDeque::from(effects);
        while let Some(effect) = queue.pop_front() {
            if let Some(reason) = &self.closed {
                match &effect {
                    Effect::Write(frame) => panic!(
                        "wrote {:?} after Close({reason:?}): nothing is written after Close",
                        String::from_utf8_lossy(frame)
                    ),
                    Effect::Execute { action, .. } => panic!(
                        "ran {} after Close({reason:?}): nothing is run after Close",
                        action.tool()
                    ),
                    _ => {}
                }
            }
            match effect {
                Effect::Write(frame) => self.stdout.extend_from_slice(&frame),
                Effect::Execute {
                    ticket,
                    line,
                    action,
                } => {
                    self.journal.push(JournalEntry::of(ticket.0, line, &action));
                    let outcome = self.executor.execute(&action);
                    match self.completion {
                        Completion::Immediate => {
                            self.completed(ticket, &outcome);
                            queue.extend(gateway.complete(ticket, outcome));
                        }
                        Completion::AtEndOfInput => self.pending.push((ticket, outcome)),
                    }
                }
                Effect::Rejected(record) => self.rejections.push(record),
                Effect::Cancel(ticket) => self.pending.retain(|(t, _)| *t != ticket),
                Effect::Close(reason) => self.closed = Some(reason),
            }
        }
    }

    fn completed(&mut self, ticket: Ticket, outcome: &Outcome) {
        if let Some(entry) = self.journal.iter_mut().rev().find(|e| e.ticket == ticket.0) {
            entry.outcome = Some(outcome.is_error);
        }
    }
}
