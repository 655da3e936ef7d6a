//! The core loop: the only owner of the [`Wrap`] core, the client's frame
//! writer, the upstream's stdin channel, the journal and the pins file.
//! It carries out every effect in order, keeps the clock (milliseconds
//! since start) and the end-of-session steps.
//!
//! A `tools/call` reaches the upstream's queue only after its intent is in
//! the journal and synced. When a record cannot be written the journal is
//! broken for good and the core is told ([`Wrap::journal_unavailable`]):
//! the call whose intent failed is answered with a denial instead of
//! forwarded, and so is every later call.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use portcullis_wire::transcript::render_bytes;
use portcullis_wrap::{Effect, End, Wrap};
use rustix::process::Signal;

use super::journal::WrapJournal;
use super::threads::Event;
use super::upstream::{TERM_WAIT, Upstream};
use super::{EXIT_CLOSED, EXIT_FINISHED, EXIT_STDOUT, EXIT_UPSTREAM};
use crate::stdio::FrameWriter;

/// Bytes of lines for the upstream that its own output may add to the
/// backlog (error answers to the requests the wrapper refuses): past it, an
/// upstream that writes requests without reading its input loses those
/// answers rather than growing our memory.
const UPSTREAM_CAUSED_BACKLOG_BYTES: usize = 1 << 20;

pub struct Driver {
    pub wrap: Wrap,
    pub writer: FrameWriter,
    pub journal: Option<WrapJournal>,
    pub pins_write: Option<PathBuf>,
    pub to_upstream: Option<SyncSender<Vec<u8>>>,
    /// Lines for the upstream that did not fit its queue. The core never
    /// blocks on the upstream (which may be blocked writing to us): while
    /// this holds anything, no client chunk is taken (its credit is
    /// withheld), so it holds at most what the chunks read ahead produced,
    /// what a hung-up client left in its pipe, the cancellations of
    /// requests that timed out meanwhile and
    /// [`UPSTREAM_CAUSED_BACKLOG_BYTES`] of answers to the upstream.
    pub backlog: VecDeque<Vec<u8>>,
    /// Bytes in `backlog`.
    pub backlog_bytes: usize,
    /// Effects being carried out come from the upstream's output.
    pub upstream_caused: bool,
    /// Answers to refused upstream requests dropped for want of room.
    pub upstream_answers_dropped: u64,
    pub withheld_credits: usize,
    /// The client's input ended: close the upstream's stdin once the
    /// backlog is written.
    pub close_upstream_input: bool,
    pub client_credits: SyncSender<()>,
    pub upstream_credits: SyncSender<()>,
    pub upstream: Upstream,
    pub grace: Duration,
    pub started: Instant,
    /// When the client's input ended (the upstream's stdin was closed then).
    pub input_ended: Option<Instant>,
    /// Steps taken to end an upstream that outlives its stdin.
    pub term_sent: bool,
    pub kill_sent: bool,
    pub exit: Option<u8>,
}

impl Driver {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub fn serve(mut self, events: &Receiver<Event>) -> u8 {
        let code = loop {
            if let Some(code) = self.exit {
                break code;
            }
            self.escalate();
            let wake = self.next_wakeup();
            let event = match wake {
                Some(at) => match events.recv_timeout(at.saturating_duration_since(Instant::now()))
                {
                    Ok(event) => Some(event),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => break EXIT_UPSTREAM,
                },
                None => match events.recv() {
                    Ok(event) => Some(event),
                    Err(_) => break EXIT_UPSTREAM,
                },
            };
            if let Some(event) = event {
                self.handle(event);
            }
            let effects = self.wrap.tick(self.now_ms());
            self.carry_out(effects);
        };
        // What is queued for the upstream still reaches it, then nothing
        // more does; within its grace period it gets that and the time to
        // exit, then SIGTERM, then SIGKILL (at once after a signal).
        let grace = if code > 128 {
            Duration::ZERO
        } else {
            self.grace
        };
        let until = Instant::now() + grace;
        self.deliver_backlog(events, until);
        self.to_upstream = None;
        self.upstream
            .end(until.saturating_duration_since(Instant::now()));
        let effects = self.wrap.finish(self.now_ms());
        self.carry_out(effects);
        let forwarded = self.wrap.counters().forwarded.clone();
        if let Some(journal) = &mut self.journal
            && !journal.is_broken()
            && let Err(err) = journal.close(&forwarded)
        {
            tracing::error!(error = %err, "cannot write the end of the audit journal's session");
        }
        let c = self.wrap.counters();
        tracing::info!(
            exit = code,
            client_frames = c.client_frames,
            rejected = c.client_rejected,
            denied = c.calls_denied,
            upstream_lines = c.upstream_lines,
            quarantined = c.quarantined,
            dropped = c.dropped,
            rug_pulls = c.rug_pulls,
            timeouts = c.timeouts,
            late_answers = c.late_answers,
            journal_denials = c.journal_denials,
            upstream_answers_dropped = self.upstream_answers_dropped,
            "wrap session over"
        );
        code
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let deadline = self
            .wrap
            .next_deadline()
            .map(|ms| self.started + Duration::from_millis(ms));
        let step = self.input_ended.map(|at| {
            if !self.term_sent {
                at + self.grace
            } else if !self.kill_sent {
                at + self.grace + TERM_WAIT
            } else {
                at + self.grace + TERM_WAIT * 2
            }
        });
        [deadline, step].into_iter().flatten().min()
    }

    /// After the client's input ended, an upstream that keeps its stdout
    /// open past the grace period gets SIGTERM, then SIGKILL; if its stdout
    /// still does not end, the session ends as if it had.
    fn escalate(&mut self) {
        let Some(at) = self.input_ended else { return };
        let waited = at.elapsed();
        if !self.term_sent && waited >= self.grace {
            self.term_sent = true;
            tracing::warn!(
                "the upstream did not end its output within the grace period; sending SIGTERM"
            );
            self.upstream.signal(Signal::TERM);
        } else if self.term_sent && !self.kill_sent && waited >= self.grace + TERM_WAIT {
            self.kill_sent = true;
            self.upstream.signal(Signal::KILL);
        } else if self.kill_sent && waited >= self.grace + TERM_WAIT * 2 {
            let effects = self.wrap.upstream_eof(self.now_ms());
            self.carry_out(effects);
        }
    }

    fn handle(&mut self, event: Event) {
        let now = self.now_ms();
        match event {
            Event::Client(bytes) => {
                let effects = self.wrap.from_client(&bytes, now);
                self.carry_out(effects);
                if self.backlog.is_empty() {
                    let _ = self.client_credits.try_send(());
                } else {
                    self.withheld_credits += 1;
                }
            }
            Event::UpstreamWrote => self.flush_backlog(),
            Event::ClientEof => {
                let effects = self.wrap.client_eof(now);
                self.carry_out(effects);
            }
            Event::Upstream(bytes) => {
                let effects = self.wrap.from_upstream(&bytes, now);
                self.upstream_caused = true;
                self.carry_out(effects);
                self.upstream_caused = false;
                let _ = self.upstream_credits.try_send(());
            }
            Event::UpstreamEof => {
                let effects = self.wrap.upstream_eof(now);
                self.carry_out(effects);
            }
            Event::UpstreamStdinClosed => {
                tracing::warn!("the upstream closed its stdin");
                self.to_upstream = None;
                self.flush_backlog();
            }
            Event::Signal(code) => {
                self.upstream.signal(Signal::TERM);
                self.exit = Some(code);
            }
        }
    }

    /// After the session's end, hand the lines still in the backlog to the
    /// upstream's writer as it takes them, until `until`.
    fn deliver_backlog(&mut self, events: &Receiver<Event>, until: Instant) {
        while !self.backlog.is_empty() && self.to_upstream.is_some() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            match events.recv_timeout(left) {
                Ok(Event::UpstreamWrote) => self.flush_backlog(),
                Ok(Event::Upstream(_)) => {
                    let _ = self.upstream_credits.try_send(());
                }
                Ok(Event::Client(_) | Event::ClientEof) => {}
                Ok(Event::UpstreamStdinClosed | Event::UpstreamEof | Event::Signal(_)) | Err(_) => {
                    return;
                }
            }
        }
    }

    /// Move backlog lines into the upstream's queue while there is room;
    /// once empty, hand back the withheld client credits (and close the
    /// upstream's stdin if the client's input ended).
    fn flush_backlog(&mut self) {
        while let Some(line) = self.backlog.pop_front() {
            self.backlog_bytes -= line.len();
            let Some(tx) = &self.to_upstream else {
                self.backlog.clear();
                self.backlog_bytes = 0;
                break;
            };
            match tx.try_send(line) {
                Ok(()) => {}
                Err(TrySendError::Full(line)) => {
                    self.backlog_bytes += line.len();
                    self.backlog.push_front(line);
                    return;
                }
                Err(TrySendError::Disconnected(_)) => {
                    self.to_upstream = None;
                    self.backlog.clear();
                    self.backlog_bytes = 0;
                }
            }
        }
        for _ in 0..std::mem::take(&mut self.withheld_credits) {
            let _ = self.client_credits.try_send(());
        }
        if self.close_upstream_input {
            self.to_upstream = None;
        }
    }

    /// A journal write failed while carrying out a batch: noted in
    /// `failed` (`call`: the call whose intent failed), for the core to be
    /// told once the batch is carried out.
    fn journal_failed(
        &mut self,
        failed: &mut Vec<Option<i64>>,
        call: Option<i64>,
        err: &std::io::Error,
    ) {
        let told = self.wrap.is_journal_down() || !failed.is_empty();
        if !told {
            tracing::error!(error = %err, "cannot write the audit journal; every tools/call is denied from now on");
        }
        // A failed intent is always reported (its call is owed the denial);
        // any other failure once.
        if call.is_some() || !told {
            failed.push(call);
        }
    }

    /// Queue a line for the upstream's stdin.
    fn queue_for_upstream(&mut self, line: Vec<u8>) {
        if self.upstream_caused && self.backlog_bytes + line.len() > UPSTREAM_CAUSED_BACKLOG_BYTES {
            self.upstream_answers_dropped += 1;
            if self.upstream_answers_dropped == 1 {
                tracing::warn!(
                    "the upstream writes requests without reading its input; the answers to those the wrapper refuses are dropped from now on"
                );
            }
            return;
        }
        self.backlog_bytes += line.len();
        self.backlog.push_back(line);
        self.flush_backlog();
    }

    /// Carry out `effects` in order. The core learns of a journal failure
    /// only after the whole batch (it made the batch before the failure):
    /// then it answers each call whose intent failed with a denial, and
    /// forwards no call from then on.
    fn carry_out(&mut self, effects: Vec<Effect>) {
        let mut failed = Vec::new();
        for effect in effects {
            match effect {
                Effect::ToClient(line) => {
                    if self.writer.write_frame(line.as_bytes()).is_err() && self.exit.is_none() {
                        tracing::error!("cannot write to stdout (the client went away); ending");
                        self.exit = Some(EXIT_STDOUT);
                    }
                }
                Effect::ToUpstream(line) => self.queue_for_upstream(line.into_bytes()),
                Effect::ForwardCall { intent, line } => {
                    let recorded = match &mut self.journal {
                        Some(journal) => journal.intent(&intent),
                        None => Ok(()),
                    };
                    match recorded {
                        Ok(()) => self.queue_for_upstream(line.into_bytes()),
                        Err(err) => self.journal_failed(&mut failed, Some(intent.call), &err),
                    }
                }
                Effect::Quarantine(q) => tracing::warn!(
                    line = q.line,
                    reason = %q.reason,
                    bytes = %render_bytes(&q.bytes),
                    "quarantined upstream stdout line (not forwarded)"
                ),
                Effect::Audit(record) => {
                    tracing::debug!(record = %super::journal::bounded(&record), "audit");
                    if let Some(journal) = &mut self.journal
                        && let Err(err) = journal.record(&record)
                    {
                        self.journal_failed(&mut failed, None, &err);
                    }
                }
                Effect::Notice(text) => tracing::warn!("{text}"),
                Effect::PinsChanged(pins) => {
                    if let Some(path) = &self.pins_write {
                        match super::pins_file::write(path, &pins) {
                            Ok(()) => {
                                tracing::info!(pins = pins.len(), file = %path.display(), "pins written")
                            }
                            Err(err) => {
                                tracing::error!(error = %err, file = %path.display(), "cannot write the pins file")
                            }
                        }
                    }
                }
                Effect::EndUpstreamInput => {
                    self.close_upstream_input = true;
                    self.flush_backlog();
                    self.input_ended = Some(Instant::now());
                }
                Effect::Close(end) => {
                    let code = match &end {
                        End::Finished => EXIT_FINISHED,
                        End::ClientInvalid {
                            line,
                            stage,
                            reason,
                            ..
                        } => {
                            tracing::warn!(line, %stage, %reason, "closing the session on an invalid client frame");
                            EXIT_CLOSED
                        }
                        End::UpstreamExited { unanswered } => {
                            tracing::warn!(
                                unanswered,
                                "the upstream ended its output while the session was open"
                            );
                            EXIT_UPSTREAM
                        }
                    };
                    self.exit.get_or_insert(code);
                }
            }
        }
        for call in failed {
            let effects = self.wrap.journal_unavailable(call, self.now_ms());
            self.carry_out(effects);
        }
    }
}
