//! The threads around the wrap core: the client reader (our stdin), the
//! upstream's stdout reader, its stdin writer and its stderr passthrough.
//! Each reader holds at most a few chunks ahead of the core (the core hands
//! a credit back per chunk), so neither peer can grow our memory by writing
//! faster than the core judges. The one exception is a client that has hung
//! up: what is left in its pipe is bounded, and is read without waiting, so
//! its end of input is seen even while the core takes no input.

use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// Bytes per read, both sides.
pub const CHUNK_BYTES: usize = 64 * 1024;
/// How often the stdin reader, while it waits for a credit, checks whether
/// the client hung up.
const HANGUP_CHECK: Duration = Duration::from_millis(50);

#[derive(Debug)]
pub enum Event {
    Client(Vec<u8>),
    ClientEof,
    Upstream(Vec<u8>),
    UpstreamEof,
    /// One line was written to the upstream's stdin (room in its queue).
    UpstreamWrote,
    /// Writing to the upstream's stdin failed (it closed it or exited).
    UpstreamStdinClosed,
    /// SIGINT or SIGTERM: end now with this exit status.
    Signal(u8),
}

/// Read `input` in chunks, each once `may_read` allows it (`false`: stop);
/// `wrap` tags each chunk, `end` is sent at end of input (a read error
/// counts as the end).
pub fn read_chunks(
    mut input: impl Read,
    events: &Sender<Event>,
    mut may_read: impl FnMut() -> bool,
    wrap: fn(Vec<u8>) -> Event,
    end: fn() -> Event,
) {
    let mut buf = vec![0; CHUNK_BYTES];
    loop {
        if !may_read() {
            return;
        }
        let event = loop {
            match input.read(&mut buf) {
                Ok(0) => break end(),
                Ok(n) => break wrap(buf[..n].to_vec()),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => {
                    tracing::warn!(error = %err, "read failed; treating it as end of input");
                    break end();
                }
            }
        };
        let last = !matches!(event, Event::Client(_) | Event::Upstream(_));
        if events.send(event).is_err() || last {
            return;
        }
    }
}

/// The client's input, one credit per chunk until the client hangs up;
/// from then on without waiting, to its end.
pub fn read_client(events: &Sender<Event>, credits: &Receiver<()>) {
    crate::stdio::make_blocking(io::stdin());
    let mut hung_up = false;
    let may_read = || {
        if hung_up {
            return true;
        }
        loop {
            match credits.recv_timeout(HANGUP_CHECK) {
                Ok(()) => return true,
                Err(RecvTimeoutError::Disconnected) => return false,
                Err(RecvTimeoutError::Timeout) if client_hung_up(io::stdin()) => {
                    tracing::info!(
                        "the client hung up while its input was not taken; reading what is left"
                    );
                    hung_up = true;
                    return true;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    };
    read_chunks(io::stdin().lock(), events, may_read, Event::Client, || {
        Event::ClientEof
    });
}

/// Whether the writer of `input` is gone (a pipe with no writer left, a
/// socket shut down for writing), whatever is still unread in it.
fn client_hung_up(input: impl AsFd) -> bool {
    let mut fds = [PollFd::new(&input, PollFlags::RDHUP)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&now)), Ok(n) if n > 0)
        && fds[0]
            .revents()
            .intersects(PollFlags::HUP | PollFlags::RDHUP | PollFlags::ERR)
}

pub fn read_upstream(stdout: ChildStdout, events: &Sender<Event>, credits: &Receiver<()>) {
    read_chunks(
        stdout,
        events,
        || credits.recv().is_ok(),
        Event::Upstream,
        || Event::UpstreamEof,
    );
}

/// Write each line to the upstream's stdin; when the channel closes, so
/// does the upstream's stdin.
pub fn write_upstream(mut stdin: ChildStdin, lines: &Receiver<Vec<u8>>, events: &Sender<Event>) {
    for line in lines {
        if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
            let _ = events.send(Event::UpstreamStdinClosed);
            return;
        }
        if events.send(Event::UpstreamWrote).is_err() {
            return;
        }
    }
}

/// The upstream's stderr goes to ours as it comes.
pub fn pass_stderr(mut stderr: ChildStderr) {
    let mut buf = vec![0; 8 * 1024];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let mut out = io::stderr().lock();
                let _ = out.write_all(&buf[..n]);
                let _ = out.flush();
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
