//! The threads around the wrap core: the client reader (our stdin), the
//! upstream's stdout reader, its stdin writer and its stderr passthrough.
//! Each reader holds at most a few chunks ahead of the core (the core hands
//! a credit back per chunk), so neither peer can grow our memory by writing
//! faster than the core judges.

use std::io::{self, Read, Write};
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::mpsc::{Receiver, Sender};

/// Bytes per read, both sides.
pub const CHUNK_BYTES: usize = 64 * 1024;

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

/// Read `input` in chunks, one credit per chunk; `wrap` tags each chunk,
/// `end` is sent at end of input (a read error counts as the end).
pub fn read_chunks(
    mut input: impl Read,
    events: &Sender<Event>,
    credits: &Receiver<()>,
    wrap: fn(Vec<u8>) -> Event,
    end: fn() -> Event,
) {
    let mut buf = vec![0; CHUNK_BYTES];
    loop {
        if credits.recv().is_err() {
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

pub fn read_client(events: &Sender<Event>, credits: &Receiver<()>) {
    crate::stdio::make_blocking(io::stdin());
    read_chunks(io::stdin().lock(), events, credits, Event::Client, || {
        Event::ClientEof
    });
}

pub fn read_upstream(stdout: ChildStdout, events: &Sender<Event>, credits: &Receiver<()>) {
    read_chunks(stdout, events, credits, Event::Upstream, || {
        Event::UpstreamEof
    });
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
