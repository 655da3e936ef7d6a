//! The streaming replay driver is the slice driver: reading a capture from
//! a stream, in any size of read the stream hands out, gives the session
//! the same bytes give in one read (`Reads::Whole`) or in reads of N bytes
//! (`Reads::Exactly(N)`): the same stdout, actions, journal, rejections
//! and close.

use std::io::Read;
use std::path::Path;

use portcullis_gateway::replay::{
    Chunking, Reads, Recorder, SessionReport, run_session_reader, run_session_unchecked,
};
use portcullis_gateway::{BoundPolicy, OnInvalid, Policy, SecretStore};

const POLICY: &str = include_str!("../../../examples/policy-20-tools.toml");
const MAX_FRAME_BYTES: usize = 4096;

fn policy(on_invalid: OnInvalid) -> BoundPolicy {
    let mut policy = Policy::from_toml(POLICY, Path::new("examples/policy-20-tools.toml"))
        .expect("the example policy is valid");
    policy.server.on_invalid = on_invalid;
    policy.server.max_frame_bytes = MAX_FRAME_BYTES;
    let secrets = SecretStore::stand_ins(&policy);
    policy.bind_secrets(secrets)
}

/// A stream that hands out at most `sizes[i]` bytes per read, cycling.
struct Trickle<'a> {
    bytes: &'a [u8],
    sizes: &'a [usize],
    next: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let size = self.sizes[self.next % self.sizes.len()];
        self.next += 1;
        let n = size.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

fn capture() -> Vec<u8> {
    let mut out = Vec::new();
    let line = |out: &mut Vec<u8>, s: &str| {
        out.extend_from_slice(s.as_bytes());
        out.push(b'\n');
    };
    line(
        &mut out,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    line(
        &mut out,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    for id in 2..40 {
        line(
            &mut out,
            &format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"service_status","arguments":{{"service":"api-{id}"}}}}}}"#
            ),
        );
        // A ping between calls: its answer is ordered against the calls'
        // results by when outcomes are reported, which is what the read
        // size decides.
        line(
            &mut out,
            &format!(r#"{{"jsonrpc":"2.0","id":"p{id}","method":"ping"}}"#),
        );
        if id % 7 == 0 {
            line(
                &mut out,
                r#"{"jsonrpc":"2.0","id":"bad","method":"tools/call","params":{"name":"service_status","arguments":{"service":"Not Valid"}}}"#,
            );
            line(&mut out, "not json");
        }
    }
    out.extend(std::iter::repeat_n(b'x', 3 * MAX_FRAME_BYTES));
    out.push(b'\n');
    line(
        &mut out,
        r#"{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"region_probe","arguments":{"host":"127.0.0.1"}}}"#,
    );
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":100,"method":"ping"}"#);
    out
}

fn same(a: &SessionReport, b: &SessionReport, what: &str) {
    assert_eq!(
        String::from_utf8_lossy(&a.stdout),
        String::from_utf8_lossy(&b.stdout),
        "stdout: {what}"
    );
    assert_eq!(a.actions, b.actions, "actions: {what}");
    assert_eq!(a.journal, b.journal, "journal: {what}");
    assert_eq!(a.rejections, b.rejections, "rejections: {what}");
    assert_eq!(a.closed, b.closed, "close: {what}");
    assert_eq!(a.counters, b.counters, "counters: {what}");
}

#[test]
fn a_streamed_capture_replays_as_the_same_bytes_in_the_same_reads() {
    let bytes = capture();
    for on_invalid in [OnInvalid::KeepOpen, OnInvalid::Close] {
        let policy = policy(on_invalid);
        let whole = run_session_unchecked(&policy, &bytes, &Chunking::Whole, &Recorder::default());
        assert!(!whole.actions.is_empty() || on_invalid == OnInvalid::Close);
        for sizes in [&[1usize, 7, 300][..], &[65_536], &[3]] {
            let mut stream = Trickle {
                bytes: &bytes,
                sizes,
                next: 0,
            };
            let streamed =
                run_session_reader(&policy, &mut stream, Reads::Whole, &Recorder::default())
                    .expect("reads");
            same(&whole, &streamed, &format!("whole, stream reads {sizes:?}"));
        }
        for n in [1usize, 100, 4096, 70_000, 200_000] {
            let chunked = run_session_unchecked(
                &policy,
                &bytes,
                &Chunking::Sizes(vec![n]),
                &Recorder::default(),
            );
            let mut stream = Trickle {
                bytes: &bytes,
                sizes: &[5, 9000],
                next: 0,
            };
            let streamed = run_session_reader(
                &policy,
                &mut stream,
                Reads::Exactly(n),
                &Recorder::default(),
            )
            .expect("reads");
            same(&chunked, &streamed, &format!("reads of {n}"));
        }
    }
}

#[test]
fn reads_of_one_frame_answer_in_another_order_than_one_read() {
    // The comparison above can fail: the read size does change the session
    // (a ping's answer overtakes a call's result in one read).
    let bytes = capture();
    let policy = policy(OnInvalid::KeepOpen);
    let whole = run_session_unchecked(&policy, &bytes, &Chunking::Whole, &Recorder::default());
    let mut stream = Trickle {
        bytes: &bytes,
        sizes: &[64],
        next: 0,
    };
    let small = run_session_reader(
        &policy,
        &mut stream,
        Reads::Exactly(1),
        &Recorder::default(),
    )
    .expect("reads");
    assert_ne!(whole.stdout, small.stdout);
    assert_eq!(whole.actions, small.actions);
}

/// A stream that hands out its bytes in reads of `size`, failing once with
/// `kind` before the read that would start at `fail_at`.
struct FailsOnce<'a> {
    bytes: &'a [u8],
    size: usize,
    fail_at: usize,
    kind: Option<std::io::ErrorKind>,
    read: usize,
}

impl Read for FailsOnce<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.read >= self.fail_at
            && let Some(kind) = self.kind.take()
        {
            return Err(std::io::Error::from(kind));
        }
        let n = self.size.min(buf.len()).min(self.bytes.len() - self.read);
        buf[..n].copy_from_slice(&self.bytes[self.read..self.read + n]);
        self.read += n;
        Ok(n)
    }
}

fn fails_once(bytes: &[u8], kind: std::io::ErrorKind) -> FailsOnce<'_> {
    FailsOnce {
        bytes,
        size: 100,
        fail_at: 300,
        kind: Some(kind),
        read: 0,
    }
}

#[test]
fn an_interrupted_read_is_retried_and_the_replay_goes_on() {
    let bytes = capture();
    let policy = policy(OnInvalid::KeepOpen);
    let whole = run_session_unchecked(&policy, &bytes, &Chunking::Whole, &Recorder::default());
    let mut stream = fails_once(&bytes, std::io::ErrorKind::Interrupted);
    let streamed = run_session_reader(&policy, &mut stream, Reads::Whole, &Recorder::default())
        .expect("an interrupted read is not an error");
    same(&whole, &streamed, "a read interrupted once");
}

#[test]
fn a_failed_read_ends_the_replay_with_its_error() {
    let bytes = capture();
    let policy = policy(OnInvalid::KeepOpen);
    for reads in [Reads::Whole, Reads::Exactly(64)] {
        let mut stream = fails_once(&bytes, std::io::ErrorKind::ConnectionReset);
        let error = run_session_reader(&policy, &mut stream, reads, &Recorder::default())
            .expect_err("a read that fails is not skipped");
        assert_eq!(
            error.kind(),
            std::io::ErrorKind::ConnectionReset,
            "{reads:?}"
        );
    }
}

#[test]
fn sized_chunking_cycles_through_its_sizes_and_counts_a_zero_as_one() {
    let split = |sizes: Vec<usize>| Chunking::Sizes(sizes).split(b"abcdefgh");
    assert_eq!(
        split(vec![1, 2]),
        [&b"a"[..], b"bc", b"d", b"ef", b"g", b"h"]
    );
    assert_eq!(split(vec![3, 0]), [&b"abc"[..], b"d", b"efg", b"h"]);
    assert_eq!(split(vec![5]), [&b"abcde"[..], b"fgh"]);
}

/// A stream that records the size of each buffer it is handed.
struct Sizes<'a> {
    bytes: &'a [u8],
    asked: Vec<usize>,
}

impl Read for Sizes<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.asked.push(buf.len());
        let n = buf.len().min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
fn a_whole_capture_is_read_in_64_kib_pieces() {
    // A capture of 2.5 reads: two full 64 KiB reads, the rest, the read
    // that finds the end while filling the third, and the one that finds
    // it again (a capture is read in reads large enough that a long one
    // costs few system calls, and no larger).
    let mut bytes = capture();
    let line = bytes.clone();
    while bytes.len() < 160 * 1024 {
        bytes.extend_from_slice(&line);
    }
    let mut stream = Sizes {
        bytes: &bytes,
        asked: Vec::new(),
    };
    let recorder = Recorder::default();
    run_session_reader(
        &policy(OnInvalid::Close),
        &mut stream,
        Reads::Whole,
        &recorder,
    )
    .expect("reads never fail");
    let full = 64 * 1024;
    let rest = bytes.len() - 2 * full;
    assert_eq!(stream.asked, [full, full, full, full - rest, full]);
}

#[test]
fn chunkings_split_as_documented() {
    let bytes = b"abcdefg";
    let split = |chunking: Chunking| chunking.split(bytes);
    assert_eq!(split(Chunking::Whole), [&bytes[..]]);
    assert_eq!(split(Chunking::ByteByByte).len(), bytes.len());
    // No sizes: one read with everything, as `Whole`.
    assert_eq!(split(Chunking::Sizes(vec![])), [&bytes[..]]);
    // Sizes cycle, a zero counts as one, the last read is what is left.
    assert_eq!(
        split(Chunking::Sizes(vec![2, 0])),
        [&b"ab"[..], b"c", b"de", b"f", b"g"]
    );
    assert_eq!(split(Chunking::Sizes(vec![5])), [&b"abcde"[..], b"fg"]);
}

/// A call the client cancels while it runs: with outcomes reported at end
/// of input the cancel comes first and the outcome is never reported (the
/// gateway forgot the ticket); when outcomes are reported at the end of each
/// read, the one read holding the call and its cancel has already run the
/// call, and its outcome is reported as it happened.
#[test]
fn a_call_cancelled_while_it_runs_is_reported_per_the_completion_schedule() {
    use portcullis_gateway::replay::{Completion, run_session_scheduled};
    let mut bytes = capture_prefix();
    bytes.extend_from_slice(
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"service_status","arguments":{"service":"api"}}}
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}
"#,
    );
    let policy = policy(OnInvalid::Close);

    let recorder = Recorder::default();
    let at_end = run_session_scheduled(
        &policy,
        &bytes,
        &Chunking::Whole,
        &recorder,
        Completion::AtEndOfInput,
    );
    assert_eq!(at_end.journal.len(), 1, "{:?}", at_end.journal);
    assert_eq!(
        at_end.journal[0].outcome, None,
        "cancelled before its outcome came back"
    );

    let recorder = Recorder::default();
    let per_read = run_session_reader(&policy, &mut bytes.as_slice(), Reads::Whole, &recorder)
        .expect("an in-memory read cannot fail");
    assert_eq!(per_read.journal.len(), 1, "{:?}", per_read.journal);
    assert_eq!(
        per_read.journal[0].outcome,
        Some(false),
        "ran within its read: reported"
    );
}

/// `initialize` and `notifications/initialized`.
fn capture_prefix() -> Vec<u8> {
    let whole = capture();
    let second_newline = whole
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(1)
        .map(|(i, _)| i)
        .expect("the capture starts with the handshake");
    whole[..=second_newline].to_vec()
}
