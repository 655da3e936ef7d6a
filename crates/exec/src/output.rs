//! Bounded reads and the text a client sees for a byte stream.
//!
//! Both executors read remote output through [`read_capped`]: it keeps at
//! most `cap` bytes (the buffer's capacity never exceeds `cap + 1`), and
//! either stops at the first byte past the cap (HTTP: the connection is
//! dropped) or drains and discards the rest (SSH: the child must not block
//! on a full pipe).
//!
//! Text policy: bytes that are valid UTF-8 pass as-is. Bytes that are not
//! are never decoded lossily (the same rule the inbound side follows);
//! the client is told `<N bytes of binary content>` instead. A cut at the
//! cap that splits one multi-byte character is not "binary": the partial
//! character is dropped.

use std::io::{self, Read};

/// What a bounded read kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Capped {
    /// At most `cap` bytes.
    pub bytes: Vec<u8>,
    /// More than `cap` bytes were available.
    pub truncated: bool,
    /// Bytes read past the cap and thrown away (only counted when draining;
    /// at least 1 whenever `truncated`).
    pub discarded: u64,
}

/// What to do once the cap is exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// Stop reading after the first byte past the cap.
    Stop,
    /// Keep reading to end of stream, discarding (and counting) the bytes.
    Drain,
}

const CHUNK: usize = 16 * 1024;

/// Read `reader` keeping at most `cap` bytes.
///
/// On an error, returns the error together with what was kept so far.
pub(crate) fn read_capped<R: Read>(
    mut reader: R,
    cap: usize,
    overflow: Overflow,
) -> Result<Capped, (io::Error, Capped)> {
    let limit = cap.saturating_add(1);
    let mut out = Capped::default();
    let mut chunk = [0u8; CHUNK];
    // Phase 1: fill up to cap + 1 bytes, growing the buffer without ever
    // reserving past the limit.
    while out.bytes.len() < limit {
        let want = (limit - out.bytes.len()).min(CHUNK);
        let n = match reader.read(&mut chunk[..want]) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((e, out)),
        };
        let needed = out.bytes.len() + n;
        if needed > out.bytes.capacity() {
            let grown = (out.bytes.capacity() * 2).max(CHUNK).max(needed).min(limit);
            out.bytes.reserve_exact(grown - out.bytes.len());
        }
        out.bytes.extend_from_slice(&chunk[..n]);
    }
    // One byte past the cap: the stream is longer than allowed.
    out.bytes.truncate(cap);
    out.truncated = true;
    out.discarded = 1;
    if overflow == Overflow::Stop {
        return Ok(out);
    }
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => out.discarded += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((e, out)),
        }
    }
}

/// The client-facing text for `bytes`: the text itself when it is UTF-8,
/// else `<N bytes of binary content>`. When `truncated`, an incomplete
/// character at the very end (cut by the cap) is dropped rather than
/// making the whole output "binary".
pub(crate) fn text_of(bytes: &[u8], truncated: bool) -> String {
    match shown_text(bytes, truncated) {
        Some(text) => text.to_owned(),
        None => format!("<{} bytes of binary content>", bytes.len()),
    }
}

/// The part of `bytes` shown as text: all of it when it is UTF-8; when
/// `truncated`, up to an incomplete character at the very end; `None` when
/// it is binary.
pub(crate) fn shown_text(bytes: &[u8], truncated: bool) -> Option<&str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(text),
        // Only the tail is an incomplete sequence; the prefix is valid.
        Err(err) if truncated && err.error_len().is_none() => {
            std::str::from_utf8(&bytes[..err.valid_up_to()]).ok()
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_the_cap_is_kept_whole() {
        let got = read_capped(&b"hello"[..], 5, Overflow::Stop).unwrap();
        assert_eq!(got.bytes, b"hello");
        assert!(!got.truncated);
        assert_eq!(got.discarded, 0);
    }

    #[test]
    fn over_the_cap_stops_or_drains() {
        let data = vec![b'x'; 100_000];
        let stop = read_capped(&data[..], 10, Overflow::Stop).unwrap();
        assert_eq!(stop.bytes.len(), 10);
        assert!(stop.truncated);
        assert!(stop.bytes.capacity() <= 11);
        let drain = read_capped(&data[..], 10, Overflow::Drain).unwrap();
        assert_eq!(drain.bytes.len(), 10);
        assert!(drain.truncated);
        assert_eq!(drain.discarded, 100_000 - 10);
    }

    #[test]
    fn buffer_never_grows_past_the_cap() {
        let data = vec![b'x'; 1_000_000];
        let got = read_capped(&data[..], 200_000, Overflow::Stop).unwrap();
        assert_eq!(got.bytes.len(), 200_000);
        assert!(got.bytes.capacity() <= 200_001, "{}", got.bytes.capacity());
    }

    /// Hands out `data` in reads of the given sizes in turn, each read
    /// preceded by an interruption.
    struct Pieces<'a> {
        data: &'a [u8],
        sizes: &'a [usize],
        reads: usize,
        interrupted: bool,
    }

    impl Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.interrupted = !self.interrupted;
            if self.interrupted {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let size = self.sizes[self.reads % self.sizes.len()];
            self.reads += 1;
            let n = size.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// What is kept is the stream's first `cap` bytes however the reads
    /// split it (a credential across two reads is one text to scrub).
    #[test]
    fn what_is_kept_does_not_depend_on_how_the_stream_arrives() {
        let data: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        let splits: [&[usize]; 5] = [&[1], &[2, 3], &[7, 1, CHUNK], &[CHUNK - 1, 2], &[40_000]];
        for cap in [
            0,
            1,
            100,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            39_999,
            40_000,
            40_001,
        ] {
            for overflow in [Overflow::Stop, Overflow::Drain] {
                let whole = read_capped(&data[..], cap, overflow).unwrap();
                assert_eq!(whole.bytes, data[..cap.min(data.len())]);
                for sizes in splits {
                    let pieces = Pieces {
                        data: &data,
                        sizes,
                        reads: 0,
                        interrupted: false,
                    };
                    let got = read_capped(pieces, cap, overflow).unwrap();
                    assert_eq!(got, whole, "cap {cap}, {overflow:?}, reads of {sizes:?}");
                }
            }
        }
    }

    /// A stream of one byte less, exactly, one and two bytes more than
    /// the cap, whole or in reads that end at, before and after the cap:
    /// the first `cap` bytes are kept, the cut is reported only past the
    /// cap, draining counts every byte past it, and the buffer never
    /// holds room for more than one byte past the cap.
    #[test]
    fn a_stream_around_the_cap_is_cut_exactly_at_the_cap() {
        for cap in [1, 2, 5, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 3] {
            for len in cap - 1..=cap + 2 {
                let data: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
                let splits: [Vec<usize>; 6] = [
                    vec![len.max(1)],
                    vec![1],
                    vec![cap - 1, 1],
                    vec![cap, 1],
                    vec![cap + 1],
                    vec![3, CHUNK - 1],
                ];
                for overflow in [Overflow::Stop, Overflow::Drain] {
                    let over = len.saturating_sub(cap) as u64;
                    let expected = Capped {
                        bytes: data[..len.min(cap)].to_vec(),
                        truncated: len > cap,
                        discarded: match overflow {
                            Overflow::Stop => over.min(1),
                            Overflow::Drain => over,
                        },
                    };
                    for sizes in &splits {
                        let sizes: Vec<usize> = sizes.iter().map(|&s| s.max(1)).collect();
                        let pieces = Pieces {
                            data: &data,
                            sizes: &sizes,
                            reads: 0,
                            interrupted: false,
                        };
                        let got = read_capped(pieces, cap, overflow).unwrap();
                        let at =
                            format!("cap {cap}, {len} bytes, {overflow:?}, reads of {sizes:?}");
                        assert_eq!(got, expected, "{at}");
                        assert!(
                            got.bytes.capacity() <= cap + 1,
                            "{at}: {}",
                            got.bytes.capacity()
                        );
                    }
                }
            }
        }
    }

    /// Hands out `data` in reads of 10 bytes, failing once (not an
    /// interruption) when `fail_at` bytes have been handed out.
    struct FailsOnce<'a> {
        data: &'a [u8],
        given: usize,
        fail_at: usize,
        failed: bool,
    }

    impl<'a> FailsOnce<'a> {
        /// Failing once `fail_at` bytes have been handed out.
        fn at(data: &'a [u8], fail_at: usize) -> Self {
            Self {
                data,
                given: 0,
                fail_at,
                failed: false,
            }
        }
    }

    impl Read for FailsOnce<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if !self.failed && self.given == self.fail_at {
                self.failed = true;
                return Err(io::Error::other("connection reset"));
            }
            let n = 10.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            self.given += n;
            Ok(n)
        }
    }

    /// A read error (other than an interruption) ends the read with that
    /// error and what was kept up to it, before the cap and while
    /// draining past it; the stream is not read on after the error.
    #[test]
    fn a_read_error_ends_the_read_with_what_was_kept() {
        let data: Vec<u8> = (0..100u8).collect();
        for overflow in [Overflow::Stop, Overflow::Drain] {
            let reader = FailsOnce::at(&data, 30);
            let (err, kept) = read_capped(reader, 50, overflow).unwrap_err();
            assert_eq!(err.to_string(), "connection reset");
            assert_eq!(
                kept,
                Capped {
                    bytes: data[..30].to_vec(),
                    truncated: false,
                    discarded: 0,
                }
            );
        }
        // Past the cap: only draining reads on, so only draining sees it.
        let reader = FailsOnce::at(&data, 36);
        let (err, kept) = read_capped(reader, 15, Overflow::Drain).unwrap_err();
        assert_eq!(err.to_string(), "connection reset");
        assert_eq!(
            kept,
            Capped {
                bytes: data[..15].to_vec(),
                truncated: true,
                discarded: 36 - 15,
            }
        );
        let reader = FailsOnce::at(&data, 36);
        let stopped = read_capped(reader, 15, Overflow::Stop).unwrap();
        assert_eq!(stopped.bytes, data[..15]);
        assert_eq!((stopped.truncated, stopped.discarded), (true, 1));
    }

    #[test]
    fn text_policy() {
        assert_eq!(text_of("héllo".as_bytes(), false), "héllo");
        assert_eq!(
            text_of(&[0xff, 0x00, 0x41], false),
            "<3 bytes of binary content>"
        );
        // "é" is 0xC3 0xA9; a cap that cuts after 0xC3 drops the half.
        assert_eq!(text_of(&[b'a', 0xC3], true), "a");
        assert_eq!(text_of(&[b'a', 0xC3], false), "<2 bytes of binary content>");
    }
}
