//! Splitting server output into lines.
//!
//! The wire's [`FrameReader`](portcullis_wire::FrameReader) applies the
//! same cap, but it is the client direction's splitter: it strips a `\r`
//! and refuses an empty line itself, where the transcript checker must see
//! the raw line, and it drops the bytes of an over-long line, where the
//! server report shows their beginning (server output is what a maintainer
//! is debugging). So this splitter keeps both.

/// Leading bytes of an over-long server line kept for display; the same
/// amount [`render_bytes`](portcullis_wire::transcript::render_bytes)
/// shows before cutting a line short.
const SHOWN_BYTES: usize = 512;

/// One line of server output, as the splitter saw it.
#[derive(Debug)]
pub(super) enum ServerLine<'a> {
    /// A line within the cap, including its `\n`.
    Complete(&'a [u8]),
    /// Bytes after the last newline at end of input (within the cap).
    Unterminated(&'a [u8]),
    /// A line past the cap: its first bytes and its length in all
    /// (including the `\n` when it had one).
    OverLong {
        prefix: &'a [u8],
        total: u64,
        terminated: bool,
    },
}

/// Splits server output into lines under the same cap the frame reader
/// applies (content up to `max_frame_bytes`, plus one `\r` before the
/// `\n`), but keeps what the transcript checker and its report need: the
/// raw line with its newline, and the first bytes of an over-long line.
#[derive(Debug)]
pub(super) struct LineSplitter {
    max_frame_bytes: usize,
    /// The current line while it is within the cap.
    buf: Vec<u8>,
    /// Set while discarding the rest of an over-long line.
    over_long: Option<OverLong>,
    line: u64,
}

#[derive(Debug)]
struct OverLong {
    prefix: Vec<u8>,
    total: u64,
}

impl LineSplitter {
    pub(super) fn new(max_frame_bytes: usize) -> Self {
        Self {
            max_frame_bytes,
            buf: Vec::new(),
            over_long: None,
            line: 1,
        }
    }

    pub(super) fn feed(&mut self, mut chunk: &[u8], mut sink: impl FnMut(u64, ServerLine<'_>)) {
        let limit = self.max_frame_bytes.saturating_add(1);
        while !chunk.is_empty() {
            let (piece, terminated) = match memchr::memchr(b'\n', chunk) {
                Some(pos) => (&chunk[..=pos], true),
                None => (chunk, false),
            };
            chunk = &chunk[piece.len()..];
            let line = self.line;
            if terminated {
                self.line += 1;
            }

            if let Some(over) = &mut self.over_long {
                over.absorb(piece);
                if terminated {
                    sink(line, over.event(true));
                    self.over_long = None;
                }
                continue;
            }

            let content = self.buf.len() + piece.len() - usize::from(terminated);
            if content > limit {
                let mut over = OverLong {
                    prefix: Vec::with_capacity(SHOWN_BYTES),
                    total: 0,
                };
                over.absorb(&self.buf);
                over.absorb(piece);
                self.buf.clear();
                if terminated {
                    sink(line, over.event(true));
                } else {
                    self.over_long = Some(over);
                }
                continue;
            }

            self.buf.extend_from_slice(piece);
            if terminated {
                let content = &self.buf[..self.buf.len() - 1];
                let content = content.strip_suffix(b"\r").unwrap_or(content);
                if content.len() > self.max_frame_bytes {
                    let shown = self.buf.len().min(SHOWN_BYTES);
                    sink(
                        line,
                        ServerLine::OverLong {
                            prefix: &self.buf[..shown],
                            total: self.buf.len() as u64,
                            terminated: true,
                        },
                    );
                } else {
                    sink(line, ServerLine::Complete(&self.buf));
                }
                self.buf.clear();
            }
        }
    }

    /// End of input: a line still open had no final newline.
    pub(super) fn finish(&mut self, mut sink: impl FnMut(u64, ServerLine<'_>)) {
        if let Some(over) = self.over_long.take() {
            sink(self.line, over.event(false));
        } else if !self.buf.is_empty() {
            sink(self.line, ServerLine::Unterminated(&self.buf));
            self.buf.clear();
        }
    }
}

impl OverLong {
    /// Count the next part of the line, keeping it while the shown prefix
    /// has room.
    fn absorb(&mut self, part: &[u8]) {
        let room = SHOWN_BYTES.saturating_sub(self.prefix.len());
        self.prefix.extend_from_slice(&part[..room.min(part.len())]);
        self.total += part.len() as u64;
    }

    fn event(&self, terminated: bool) -> ServerLine<'_> {
        ServerLine::OverLong {
            prefix: &self.prefix,
            total: self.total,
            terminated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Split `input` fed in chunks of `size` and describe every event.
    fn split(input: &[u8], max: usize, size: usize) -> Vec<String> {
        let mut splitter = LineSplitter::new(max);
        let mut events = Vec::new();
        let mut record = |line: u64, event: ServerLine<'_>| {
            events.push(match event {
                ServerLine::Complete(raw) => format!("{line} complete {raw:?}"),
                ServerLine::Unterminated(raw) => format!("{line} unterminated {raw:?}"),
                ServerLine::OverLong {
                    prefix,
                    total,
                    terminated,
                } => format!("{line} over {} {total} {terminated}", prefix.len()),
            });
        };
        for chunk in input.chunks(size) {
            splitter.feed(chunk, &mut record);
        }
        splitter.finish(&mut record);
        events
    }

    #[test]
    fn splitter_is_independent_of_chunking() {
        let mut input = b"{}\n\nabcdefghijkl\nabc\r\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 2000));
        input.extend_from_slice(b"\nabcdefghij\r\nabcdefghijk\ntail");
        let whole = split(&input, 10, input.len());
        assert_eq!(
            whole,
            [
                "1 complete [123, 125, 10]",
                "2 complete [10]",
                "3 over 13 13 true",
                "4 complete [97, 98, 99, 13, 10]",
                "5 over 512 2001 true",
                "6 complete [97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 13, 10]",
                "7 over 12 12 true",
                "8 unterminated [116, 97, 105, 108]",
            ]
        );
        for size in [1, 2, 3, 7, 64] {
            assert_eq!(split(&input, 10, size), whole, "chunk size {size}");
        }
    }

    #[test]
    fn splitter_reports_an_unterminated_over_long_line_once() {
        let input = vec![b'y'; 100];
        for size in [1, 5, 100] {
            assert_eq!(split(&input, 10, size), ["1 over 100 100 false"]);
        }
        assert!(split(b"", 10, 1).is_empty());
    }
}
