//! The threads around the core: the stdin reader, the workers and the
//! `--stray-print-test` executor.

use std::io::{self, Read};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use portcullis_exec::RealExecutor;
use portcullis_gateway::{AuthorizedAction, Executor, Outcome, Ticket};

use super::{CHUNK_BYTES, TIMEOUT_MARGIN};

#[derive(Debug)]
pub(super) enum Event {
    Input(Vec<u8>),
    Eof,
    ReadError(io::Error),
    Done(Done),
    /// SIGINT or SIGTERM: end now with this exit status.
    Signal(u8),
}

#[derive(Debug)]
pub(super) struct Job {
    pub(super) ticket: Ticket,
    pub(super) action: AuthorizedAction,
    pub(super) cancelled: Arc<AtomicBool>,
}

#[derive(Debug)]
pub(super) struct Done {
    pub(super) ticket: Ticket,
    pub(super) outcome: Outcome,
    pub(super) executed: bool,
    pub(super) elapsed: Duration,
}

pub(super) fn read_stdin(events: &Sender<Event>, credits: &Receiver<()>) {
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

pub(super) fn worker(jobs: &Mutex<Receiver<Job>>, done: &Sender<Event>, executor: &dyn Executor) {
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
pub(super) struct StrayPrintTest(pub(super) RealExecutor);

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
#[expect(
    clippy::print_stdout,
    reason = "the stray-print test proves a stray println! lands on stderr, never on the protocol stream"
)]
pub(super) fn stray_print(place: &str) {
    println!("stray-print-test: println! at {place}; this line must not reach the client");
}
