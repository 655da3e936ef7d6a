//! The core: the only owner of the `Gateway`, the frame writer and the
//! audit journal. It carries out every effect in order and keeps the
//! deadlines of running actions.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use portcullis_gateway::{
    ActionTarget, AuthorizedAction, Effect, Gateway, Outcome, RejectionRecord, Ticket,
};

use super::threads::{Done, Event, Job};
use super::{EXIT_CLOSED, EXIT_EOF, EXIT_STDOUT, TIMEOUT_MARGIN};
use crate::audit::{Journal, OutcomeRecord};
use crate::stdio::FrameWriter;

#[derive(Debug, Clone, Copy)]
pub(super) enum State {
    Serving,
    /// stdin ended; answering actions in flight until `until`.
    Draining {
        until: Instant,
    },
    /// A frame ended the session while actions were in flight (the
    /// gateway is draining): reading has stopped; answering those actions
    /// until `until`, after which the gateway writes its last frame and
    /// closes.
    Closing {
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
pub(super) struct Running {
    pub(super) deadline: Instant,
    pub(super) cancelled: Arc<AtomicBool>,
    /// The gateway still expects `complete` for it (not cancelled by the
    /// client, not given up on by the driver).
    pub(super) awaited: bool,
    /// The client cancelled it.
    pub(super) client_cancelled: bool,
    /// Its share of `Driver::action_bytes`.
    pub(super) bytes: usize,
}

pub(super) struct Driver {
    pub(super) gateway: Gateway,
    pub(super) writer: FrameWriter,
    pub(super) journal: Option<Journal>,
    pub(super) jobs: SyncSender<Job>,
    pub(super) credits: SyncSender<()>,
    /// Keeps the event channel connected, so waiting never fails.
    pub(super) _keepalive: Sender<Event>,
    pub(super) running: HashMap<Ticket, Running>,
    /// Target bytes of the actions in `running`.
    pub(super) action_bytes: usize,
    pub(super) max_action_bytes: usize,
    pub(super) state: State,
    pub(super) grace: Duration,
}

impl Driver {
    pub(super) fn serve(mut self, events: &Receiver<Event>) -> u8 {
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
            journal.close();
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
            State::Closing { .. } => EXIT_CLOSED,
            State::Serving | State::Draining { .. } => EXIT_EOF,
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
                self.interrupt_awaited();
                Some(self.exit_code())
            }
            // The gateway's `Close` (after the last awaited action is
            // answered) moves the driver to `Stopping`; until then it waits
            // like `Draining`.
            State::Closing { until } => {
                if now < until {
                    return None;
                }
                self.interrupt_awaited();
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

    /// The grace period is over: answer every awaited action
    /// `interrupted` (its outcome stays open in the audit journal).
    fn interrupt_awaited(&mut self) {
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
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let deadline = match self.state {
            State::Serving | State::Draining { .. } | State::Closing { .. } => self
                .running
                .values()
                .filter(|r| r.awaited)
                .map(|r| r.deadline)
                .min(),
            State::Stopping { .. } => None,
        };
        let until = match self.state {
            State::Serving => None,
            State::Draining { until }
            | State::Closing { until }
            | State::Stopping { until, .. } => Some(until),
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
        if matches!(self.state, State::Serving) && self.gateway.is_draining() {
            tracing::warn!(
                in_flight = self.gateway.in_flight(),
                "the session ends: no more input is read; answering the actions in flight first"
            );
            self.state = State::Closing {
                until: Instant::now() + self.grace,
            };
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

    /// Stop writing; wait for running actions (so the journal records
    /// their outcomes) until the grace period already under way ends, else
    /// for a grace period from now.
    fn stop(&mut self, code: u8) {
        let until = match self.state {
            State::Stopping { .. } => return,
            State::Draining { until } | State::Closing { until } => until,
            State::Serving => Instant::now() + self.grace,
        };
        self.state = State::Stopping { code, until };
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
pub(super) fn target_bytes(action: &AuthorizedAction) -> usize {
    match action.target() {
        // The whole URI text, as before it became an `http::Uri`.
        ActionTarget::Http(h) => h.url().len(),
        ActionTarget::Ssh(s) => s.argv().iter().map(String::len).sum::<usize>() + s.host().len(),
    }
}
