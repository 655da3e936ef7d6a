//! The sans-IO replay driver: feed bytes through a [`Gateway`] with a
//! [`Recorder`] standing in for the executor, exactly as the binary's
//! driver carries out effects, and collect what the session did. It takes
//! a [`BoundPolicy`]: the policy and the credential values for the run. It is the
//! engine of `portcullis replay` and of every test harness.

mod recorder;

use std::collections::VecDeque;
use std::io::{self, Read};
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
    let mut session = Session::new(policy, recorder, completion);
    // Reads and end of input go on after a Close (the binary stops
    // reading there): the gateway must stay silent whatever its driver
    // does, and the driver asserts it.
    for read in chunking.split(bytes) {
        session.read(read);
    }
    session.finish(recorder)
}

/// How [`run_session_reader`] reads its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// The session [`Chunking::Whole`] gives: the input is read in pieces,
    /// but effects are carried out only once all of it is in, exactly as
    /// after one read holding everything.
    Whole,
    /// Reads of exactly this many bytes (the last may be shorter), each
    /// carried out before the next: the session [`Chunking::Sizes`] gives.
    Exactly(usize),
}

/// How much [`run_session_reader`] reads at a time in [`Reads::Whole`].
const READ_BYTES: usize = 64 * 1024;

/// [`run_session_unchecked`] over a stream: the input is never held whole,
/// only one read and what the frame reader buffers of an incomplete frame
/// (at most `max_frame_bytes + 1`), so a capture of any size replays in
/// memory bounded by the frame cap plus what the report holds.
pub fn run_session_reader(
    policy: &BoundPolicy,
    input: &mut dyn Read,
    reads: Reads,
    recorder: &Recorder,
) -> io::Result<SessionReport> {
    let mut session = Session::new(policy, recorder, Completion::Immediate);
    // A read of the session is fed in pieces of at most READ_BYTES, its
    // effects held until the whole read is in: the gateway gives the same
    // effects for any split of its input, so this is the session one
    // receive of the whole read gives.
    let read_size = match reads {
        Reads::Whole => usize::MAX,
        Reads::Exactly(n) => n.max(1),
    };
    let mut buf = vec![0u8; read_size.min(READ_BYTES)];
    let mut held = Vec::new();
    let mut left = read_size;
    loop {
        let want = left.min(buf.len());
        let n = fill(input, &mut buf[..want])?;
        if n == 0 {
            break;
        }
        held.extend(session.gateway.receive(&buf[..n]));
        left -= n;
        if left == 0 {
            session.drive(std::mem::take(&mut held));
            left = read_size;
        }
    }
    session.drive(held);
    Ok(session.finish(recorder))
}

/// Read until `buf` is full or the input ends; the number of bytes read.
fn fill(input: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// A gateway and the driver carrying out its effects.
struct Session<'a> {
    gateway: Gateway,
    driver: Driver<'a>,
}

impl<'a> Session<'a> {
    fn new(policy: &BoundPolicy, recorder: &'a Recorder, completion: Completion) -> Self {
        Self {
            gateway: Gateway::new(
                Arc::clone(policy.policy()),
                Arc::clone(policy.secrets()),
                Config::from_policy(policy),
            ),
            driver: Driver {
                executor: recorder,
                completion,
                stdout: Vec::new(),
                rejections: Vec::new(),
                journal: Vec::new(),
                closed: None,
                pending: Vec::new(),
            },
        }
    }

    fn read(&mut self, bytes: &[u8]) {
        let effects = self.gateway.receive(bytes);
        self.drive(effects);
    }

    fn drive(&mut self, effects: Vec<Effect>) {
        self.driver.drive(&mut self.gateway, effects);
    }

    fn finish(mut self, recorder: &Recorder) -> SessionReport {
        let effects = self.gateway.end_of_input();
        self.drive(effects);
        for (ticket, outcome) in std::mem::take(&mut self.driver.pending) {
            self.driver.completed(ticket, &outcome);
            let effects = self.gateway.complete(ticket, outcome);
            self.drive(effects);
        }
        SessionReport {
            stdout: self.driver.stdout,
            actions: recorder.calls(),
            rejections: self.driver.rejections,
            journal: self.driver.journal,
            counters: self.gateway.counters().clone(),
            closed: self.driver.closed,
            revision: self.gateway.revision(),
        }
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
