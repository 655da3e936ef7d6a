//! The journal's lines, one at a time, each held only up to
//! [`MAX_LINE_BYTES`]: a longer line is read through in buffer-sized
//! chunks and dropped, so what a file holds never decides what is kept.

use std::io::{self, BufRead, BufReader, Read};

/// Bytes of a line (without its newline) that is read as a record. A
/// record is a few hundred bytes; its longest members (a text cut at 4096
/// bytes, JSON-escaped at up to six bytes a character) stay far below.
pub(in crate::audit) const MAX_LINE_BYTES: usize = 64 * 1024;

/// One line of the file.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::audit) enum Line<'a> {
    /// A line ended by a newline (the newline not included).
    Whole(&'a [u8]),
    /// The file's last bytes, without a newline after them.
    Unterminated(&'a [u8]),
    /// A line longer than [`MAX_LINE_BYTES`]: only its length is known.
    TooLong { bytes: u64 },
}

/// Reads `source` line by line.
pub(in crate::audit) struct Lines<R> {
    source: BufReader<R>,
    line: Vec<u8>,
    number: u64,
}

impl<R: Read> Lines<R> {
    pub(in crate::audit) fn new(source: R) -> Self {
        Self {
            source: BufReader::with_capacity(MAX_LINE_BYTES, source),
            line: Vec::new(),
            number: 0,
        }
    }

    /// The next line and its 1-based number, `None` at the end of the file.
    pub(in crate::audit) fn next_line(&mut self) -> io::Result<Option<(u64, Line<'_>)>> {
        self.line.clear();
        let mut bytes: u64 = 0;
        let mut too_long = false;
        loop {
            let chunk = match self.source.fill_buf() {
                Ok(chunk) => chunk,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            if chunk.is_empty() {
                if bytes == 0 {
                    return Ok(None);
                }
                self.number += 1;
                let line = if too_long {
                    Line::TooLong { bytes }
                } else {
                    Line::Unterminated(&self.line)
                };
                return Ok(Some((self.number, line)));
            }
            let (taken, ended) = match memchr::memchr(b'\n', chunk) {
                Some(end) => (end, true),
                None => (chunk.len(), false),
            };
            if !too_long {
                if self.line.len() + taken > MAX_LINE_BYTES {
                    too_long = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(&chunk[..taken]);
                }
            }
            bytes += taken as u64;
            self.source.consume(taken + usize::from(ended));
            if ended {
                self.number += 1;
                let line = if too_long {
                    Line::TooLong { bytes }
                } else {
                    Line::Whole(&self.line)
                };
                return Ok(Some((self.number, line)));
            }
        }
    }
}
