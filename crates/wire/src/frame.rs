//! Frame reader: a bounded line splitter over a byte stream.
//!
//! A frame is the bytes before a `\n`. One `\r` directly before the `\n` is
//! accepted and stripped, so CRLF peers work; any other `\r` stays in the
//! frame (where JSON treats it as whitespace or rejects it inside a string).
//! An empty line (after that stripping) is rejected: it is not a JSON-RPC
//! message, and a peer that sends one has lost track of the framing.
//!
//! The reader never holds more than `max_frame_bytes + 1` bytes (the `+ 1`
//! is room for a trailing `\r`). A line that grows past the cap is rejected
//! at the moment it does, its remainder is discarded up to the next newline,
//! and its fingerprint covers the first `max_frame_bytes + 1` bytes, the same
//! for every chunking of the input. Bytes left after the last newline at end
//! of input are a truncated frame: rejected, never parsed.

use memchr::memchr;
use sha2::{Digest, Sha256};

use crate::codes::PARSE_ERROR;
use crate::rejection::{Fingerprint, Rejection, Stage};

/// What the reader produces, in input order.
#[derive(Debug)]
pub enum FrameEvent<'a> {
    /// One complete frame, newline (and a trailing `\r`) stripped.
    Frame(&'a [u8]),
    /// A framing-stage rejection: over-long, empty or truncated.
    Rejected(Rejection),
}

/// Splits bytes into frames across any chunking of the input.
#[derive(Debug)]
pub struct FrameReader {
    max_frame_bytes: usize,
    buf: Vec<u8>,
    discarding: bool,
    line: u64,
}

impl FrameReader {
    /// A reader that refuses frames longer than `max_frame_bytes`.
    pub fn new(max_frame_bytes: usize) -> Self {
        Self {
            max_frame_bytes,
            buf: Vec::new(),
            discarding: false,
            line: 1,
        }
    }

    /// Bytes currently buffered for an incomplete frame.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Feed the next chunk. `sink` receives each event with the 1-based line
    /// number it belongs to.
    pub fn feed(&mut self, mut chunk: &[u8], mut sink: impl FnMut(u64, FrameEvent<'_>)) {
        let limit = self.max_frame_bytes.saturating_add(1);
        while !chunk.is_empty() {
            let newline = memchr(b'\n', chunk);
            if self.discarding {
                match newline {
                    None => return,
                    Some(pos) => {
                        self.discarding = false;
                        self.line += 1;
                        chunk = &chunk[pos + 1..];
                        continue;
                    }
                }
            }
            let line = self.line;
            let Some(pos) = newline else {
                if self.buf.len() + chunk.len() > limit {
                    let rejection = self.over_long(chunk);
                    self.discarding = true;
                    sink(line, FrameEvent::Rejected(rejection));
                } else {
                    self.buf.extend_from_slice(chunk);
                }
                return;
            };
            let (head, rest) = (&chunk[..pos], &chunk[pos + 1..]);
            chunk = rest;
            self.line += 1;
            if self.buf.len() + head.len() > limit {
                let rejection = self.over_long(head);
                sink(line, FrameEvent::Rejected(rejection));
                continue;
            }
            let whole: &[u8] = if self.buf.is_empty() {
                head
            } else {
                self.buf.extend_from_slice(head);
                &self.buf
            };
            let frame = whole.strip_suffix(b"\r").unwrap_or(whole);
            if frame.len() > self.max_frame_bytes {
                let rejection = Rejection::new(
                    Stage::Framing,
                    PARSE_ERROR,
                    format!("frame exceeds max_frame_bytes ({})", self.max_frame_bytes),
                    whole,
                );
                sink(line, FrameEvent::Rejected(rejection));
            } else if frame.is_empty() {
                sink(
                    line,
                    FrameEvent::Rejected(Rejection::new(
                        Stage::Framing,
                        PARSE_ERROR,
                        "empty line",
                        whole,
                    )),
                );
            } else {
                sink(line, FrameEvent::Frame(frame));
            }
            self.buf.clear();
        }
    }

    /// End of input: bytes after the last newline are a truncated frame.
    pub fn finish(&mut self, mut sink: impl FnMut(u64, FrameEvent<'_>)) {
        if self.discarding {
            self.discarding = false;
            return;
        }
        if !self.buf.is_empty() {
            let rejection = Rejection::new(
                Stage::Framing,
                PARSE_ERROR,
                format!(
                    "truncated frame: {} bytes after the last newline at end of input",
                    self.buf.len()
                ),
                &self.buf,
            );
            self.buf.clear();
            sink(self.line, FrameEvent::Rejected(rejection));
        }
    }

    /// Rejection for a line that outgrew the cap; `more` is the part of the
    /// line beyond what is buffered. Clears the buffer.
    fn over_long(&mut self, more: &[u8]) -> Rejection {
        let limit = self.max_frame_bytes.saturating_add(1);
        let mut hasher = Sha256::new();
        hasher.update(&self.buf);
        hasher.update(&more[..limit.saturating_sub(self.buf.len()).min(more.len())]);
        self.buf.clear();
        Rejection {
            stage: Stage::Framing,
            code: PARSE_ERROR,
            reason: format!("frame exceeds max_frame_bytes ({})", self.max_frame_bytes),
            id: None,
            fingerprint: Fingerprint::from_hasher(hasher),
        }
    }
}
