//! The sans-IO replay driver: feed bytes through a [`Gateway`] with a
//! [`Recorder`] standing in for the executor, exactly as the binary's
//! driver carries out effects, and collect what the session did, or hand
//! it to a [`SessionSink`] as it happens ([`stream_session_reader`]). It
//! takes a [`BoundPolicy`]: the policy and the credential values for the
//! run. It is the engine of `portcullis replay` and of every test harness.

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

/// Where a streamed session's records go, in the order the session
/// produces them: what [`stream_session_reader`] hands out instead of
/// collecting a [`SessionReport`], so that replaying a capture holds none
/// of them. An error ends the replay with that error.
pub trait SessionSink {
    /// A complete frame written to stdout.
    fn write(&mut self, frame: &[u8]) -> io::Result<()>;
    /// An action handed to the executor; `line` is the input line of the
    /// call that asked for it.
    fn execute(&mut self, ticket: Ticket, line: u64, action: &AuthorizedAction) -> io::Result<()>;
    /// The outcome of an action, as it is reported back to the gateway.
    fn complete(&mut self, ticket: Ticket, outcome: &Outcome) -> io::Result<()>;
    /// A refusal (an [`Effect::Rejected`]).
    fn reject(&mut self, record: &RejectionRecord) -> io::Result<()>;
}

/// How a streamed session ended: the part of a [`SessionReport`] that is
/// known only at the end.
#[derive(Debug, Clone)]
pub struct SessionEnd {
    /// The counters.
    pub counters: Counters,
    /// Why the session closed, if it did.
    pub closed: Option<CloseReason>,
    /// The negotiated revision, if any.
    pub revision: Option<Revision>,
}

/// The sink behind [`SessionReport`]: everything, in memory.
#[derive(Debug, Default)]
struct Collect {
    stdout: Vec<u8>,
    rejections: Vec<RejectionRecord>,
    journal: Vec<JournalEntry>,
}

impl Collect {
    fn report(self, end: SessionEnd, recorder: &Recorder) -> SessionReport {
        SessionReport {
            stdout: self.stdout,
            actions: recorder.calls(),
            rejections: self.rejections,
            journal: self.journal,
            counters: end.counters,
            closed: end.closed,
            revision: end.revision,
        }
    }
}

impl SessionSink for Collect {
    fn write(&mut self, frame: &[u8]) -> io::Result<()> {
        self.stdout.extend_from_slice(frame);
        Ok(())
    }

    fn execute(&mut self, ticket: Ticket, line: u64, action: &AuthorizedAction) -> io::Result<()> {
        self.journal.push(JournalEntry::of(ticket.0, line, action));
        Ok(())
    }

    fn complete(&mut self, ticket: Ticket, outcome: &Outcome) -> io::Result<()> {
        if let Some(entry) = self.journal.iter_mut().rev().find(|e| e.ticket == ticket.0) {
            entry.outcome = Some(outcome.is_error);
        }
        Ok(())
    }

    fn reject(&mut self, record: &RejectionRecord) -> io::Result<()> {
        self.rejections.push(record.clone());
        Ok(())
    }
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
    let mut collect = Collect::default();
    let schedule = match completion {
        Completion::Immediate => Schedule::Immediate,
        Completion::AtEndOfInput => Schedule::AtEndOfInput,
    };
    let mut session = Session::new(policy, recorder, schedule, &mut collect);
    // Reads and end of input go on after a Close (the binary stops
    // reading there): the gateway must stay silent whatever its driver
    // does, and the driver asserts it.
    for read in chunking.split(bytes) {
        session.read(read);
    }
    let end = session
        .finish()
        .unwrap_or_else(|e| unreachable!("{e}: collecting cannot fail"));
    collect.report(end, recorder)
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

/// How much [`stream_session_reader`] reads at a time.
const READ_BYTES: usize = 64 * 1024;
/// How much of a read it hands the gateway at a time: one receive's
/// effects are held together, and a piece of empty lines gives one
/// rejection per byte.
const RECEIVE_BYTES: usize = 4096;

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
    let mut collect = Collect::default();
    let end = stream_session_reader(policy, input, reads, recorder, &mut collect)?;
    Ok(collect.report(end, recorder))
}

/// [`run_session_reader`] handing what the session does to `sink` as it
/// happens, in the order the report would list it, instead of collecting
/// it: memory is bounded by the frame cap and the actions still in flight
/// (in [`Reads::Whole`], every action stays in flight until the input
/// ends, as after one read holding everything), never by the capture's
/// length. `executor` stands in for the executors (a [`Recorder`]; one
/// [`Recorder::without_history`] keeps nothing either).
pub fn stream_session_reader(
    policy: &BoundPolicy,
    input: &mut dyn Read,
    reads: Reads,
    executor: &dyn Executor,
    sink: &mut dyn SessionSink,
) -> io::Result<SessionEnd> {
    // Completion::Immediate over the reads the session is given: each
    // read's effects are carried out as its pieces arrive (the gateway
    // gives the same effects for any split of its input), but the
    // outcomes of its actions are reported only once the whole read is
    // in, exactly where one receive of the whole read would report them.
    let mut session = Session::new(policy, executor, Schedule::AtEndOfRead, sink);
    let read_size = match reads {
        Reads::Whole => usize::MAX,
        Reads::Exactly(n) => n.max(1),
    };
    let mut buf = vec![0u8; read_size.min(READ_BYTES)];
    let mut left = read_size;
    loop {
        let want = left.min(buf.len());
        let n = fill(input, &mut buf[..want])?;
        if n == 0 {
            break;
        }
        for piece in buf[..n].chunks(RECEIVE_BYTES) {
            session.read(piece);
        }
        left -= n;
        if left == 0 {
            session.end_of_read();
            left = read_size;
        }
        session.failed()?;
    }
    session.end_of_read();
    session.finish()
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

/// When the driver reports outcomes: a [`Completion`], or at the end of
/// each read of the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Schedule {
    Immediate,
    AtEndOfInput,
    /// [`Completion::Immediate`] for a read that arrives in pieces: the
    /// outcomes are reported where the effects of one receive of the whole
    /// read would have reported them, after all of its effects.
    AtEndOfRead,
}

/// A gateway and the driver carrying out its effects.
struct Session<'a> {
    gateway: Gateway,
    driver: Driver<'a>,
}

impl<'a> Session<'a> {
    fn new(
        policy: &BoundPolicy,
        executor: &'a dyn Executor,
        schedule: Schedule,
        sink: &'a mut dyn SessionSink,
    ) -> Self {
        Self {
            gateway: Gateway::new(
                Arc::clone(policy.policy()),
                Arc::clone(policy.secrets()),
                Config::from_policy(policy),
            ),
            driver: Driver {
                executor,
                schedule,
                sink,
                closed: None,
                pending: Vec::new(),
                failed: None,
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

    /// Report the outcomes held for this read, in the order the actions
    /// ran, then carry out what they caused.
    fn end_of_read(&mut self) {
        if self.driver.schedule != Schedule::AtEndOfRead {
            return;
        }
        let mut effects = Vec::new();
        for (ticket, outcome) in std::mem::take(&mut self.driver.pending) {
            self.driver.completed(ticket, &outcome);
            effects.extend(self.gateway.complete(ticket, outcome));
        }
        self.drive(effects);
    }

    /// The sink's first error, if it failed.
    fn failed(&mut self) -> io::Result<()> {
        self.driver.failed.take().map_or(Ok(()), Err)
    }

    fn finish(mut self) -> io::Result<SessionEnd> {
        let effects = self.gateway.end_of_input();
        self.drive(effects);
        for (ticket, outcome) in std::mem::take(&mut self.driver.pending) {
            self.driver.completed(ticket, &outcome);
            let effects = self.gateway.complete(ticket, outcome);
            self.drive(effects);
        }
        self.failed()?;
        Ok(SessionEnd {
            counters: self.gateway.counters().clone(),
            closed: self.driver.closed,
            revision: self.gateway.revision(),
        })
    }
}

struct Driver<'a> {
    executor: &'a dyn Executor,
    schedule: Schedule,
    sink: &'a mut dyn SessionSink,
    closed: Option<CloseReason>,
    pending: Vec<(Ticket, Outcome)>,
    /// The sink's first error: nothing more is carried out after it.
    failed: Option<io::Error>,
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
            if self.failed.is_some() {
                return;
            }
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
                Effect::Write(frame) => {
                    let written = self.sink.write(&frame);
                    self.check(written);
                }
                Effect::Execute {
                    ticket,
                    line,
                    action,
                } => {
                    let recorded = self.sink.execute(ticket, line, &action);
                    self.check(recorded);
                    let outcome = self.executor.execute(&action);
                    match self.schedule {
                        Schedule::Immediate => {
                            self.completed(ticket, &outcome);
                            queue.extend(gateway.complete(ticket, outcome));
                        }
                        Schedule::AtEndOfInput | Schedule::AtEndOfRead => {
                            self.pending.push((ticket, outcome));
                        }
                    }
                }
                Effect::Rejected(record) => {
                    let recorded = self.sink.reject(&record);
                    self.check(recorded);
                }
                // Within a read, an action cancelled after it ran is still
                // reported, as Immediate reports it before the cancel.
                Effect::Cancel(ticket) => {
                    if self.schedule == Schedule::AtEndOfInput {
                        self.pending.retain(|(t, _)| *t != ticket);
                    }
                }
                Effect::Close(reason) => self.closed = Some(reason),
            }
        }
    }

    fn completed(&mut self, ticket: Ticket, outcome: &Outcome) {
        let recorded = self.sink.complete(ticket, outcome);
        self.check(recorded);
    }

    fn check(&mut self, result: io::Result<()>) {
        if let Err(e) = result
            && self.failed.is_none()
        {
            self.failed = Some(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::{OnInvalid, Policy, SecretStore};

    fn keep_open() -> BoundPolicy {
        let mut policy = Policy::from_toml(
            include_str!("../../../../examples/policy.toml"),
            Path::new("examples/policy.toml"),
        )
        .expect("the example policy is valid");
        policy.server.on_invalid = OnInvalid::KeepOpen;
        let secrets = SecretStore::stand_ins(&policy);
        policy.bind_secrets(secrets)
    }

    /// Fails on its first rejection, and counts what it was handed.
    #[derive(Default)]
    struct FullDisk {
        calls: usize,
    }

    impl SessionSink for FullDisk {
        fn write(&mut self, _: &[u8]) -> io::Result<()> {
            self.calls += 1;
            Ok(())
        }
        fn execute(&mut self, _: Ticket, _: u64, _: &AuthorizedAction) -> io::Result<()> {
            self.calls += 1;
            Ok(())
        }
        fn complete(&mut self, _: Ticket, _: &Outcome) -> io::Result<()> {
            self.calls += 1;
            Ok(())
        }
        fn reject(&mut self, _: &RejectionRecord) -> io::Result<()> {
            self.calls += 1;
            Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
        }
    }

    /// A sink that cannot keep what it is handed ends the replay with its
    /// error at once: nothing more is handed to it, and the rest of the
    /// capture is not replayed into the void.
    #[test]
    fn a_failing_sink_ends_the_replay_with_its_error() {
        for reads in [Reads::Whole, Reads::Exactly(1)] {
            let mut sink = FullDisk::default();
            let mut capture = &b"\n\n\n\n"[..];
            let error = stream_session_reader(
                &keep_open(),
                &mut capture,
                reads,
                &Recorder::without_history(),
                &mut sink,
            )
            .expect_err("the sink failed");
            assert_eq!(error.kind(), io::ErrorKind::StorageFull, "{reads:?}");
            assert_eq!(sink.calls, 1, "{reads:?}: handed on after its error");
        }
    }

    /// A recorder without history answers as the default one does and
    /// keeps nothing.
    #[test]
    fn a_replay_recorder_without_history_answers_and_keeps_nothing() {
        let capture = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"service_status","arguments":{"service":"api"}}}"#,
            "\n",
        )
        .as_bytes();
        let policy = keep_open();
        let kept = Recorder::default();
        let with = run_session_unchecked(&policy, capture, &Chunking::Whole, &kept);
        let forgetful = Recorder::without_history();
        let without = run_session_unchecked(&policy, capture, &Chunking::Whole, &forgetful);
        assert_eq!(with.actions.len(), 1, "the call ran");
        assert_eq!(with.stdout, without.stdout, "the same answers");
        assert_eq!(with.journal, without.journal);
        assert!(without.actions.is_empty(), "nothing kept");
    }
}
