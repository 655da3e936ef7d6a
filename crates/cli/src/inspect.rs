//! `portcullis inspect`: report, line by line, whether the wire layer
//! accepts a file of newline-delimited frames.
//!
//! Two directions:
//!
//! - `client` treats each line as an inbound frame from the MCP client and
//!   runs it through the gateway's own stages: framing ([`FrameReader`]),
//!   UTF-8, strict JSON and JSON-RPC ([`parse_message`]). A client may only
//!   send requests and notifications, so a response is refused at the rpc
//!   stage. Rejected lines are reported by stage, code, reason, id (when
//!   one was read) and fingerprint; their bytes are never echoed.
//! - `server` treats the input as captured server stdout and checks each
//!   line with the transcript checker ([`check_line`]). Server output is
//!   what a maintainer is debugging, so a violation shows the raw bytes.
//!
//! Both directions stream: the input is read in 64 KiB chunks and never
//! more than one capped line is held, so memory is constant in the size of
//! the input. Output is one report line (or, with `--json`, one JSON object)
//! per input line, then, in the human report, a summary line.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, anyhow};
use clap::{Args, ValueEnum};
use portcullis_wire::codes::{INVALID_REQUEST, PARSE_ERROR};
use portcullis_wire::limits::DEFAULT_MAX_FRAME_BYTES;
use portcullis_wire::transcript::render_bytes;
use portcullis_wire::{
    FrameEvent, FrameReader, Id, Limits, Rejection, RpcMessage, Stage, TranscriptViolation,
    Violation, check_line, parse_message, utf8,
};
use serde::Serialize;

/// Bytes read from the input at a time.
const CHUNK_BYTES: usize = 64 * 1024;

/// Leading bytes of an over-long server line kept for display; the same
/// amount [`render_bytes`] shows before cutting a line short.
const SHOWN_BYTES: usize = 512;

/// Hex digits of a fingerprint shown in the human report (the JSON report
/// carries all 64).
const SHORT_FINGERPRINT: usize = 16;

/// Arguments of `portcullis inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Which side of the boundary the lines come from: `client` checks them
    /// as inbound frames, `server` as a captured stdout transcript.
    #[arg(long, value_enum, default_value_t = Direction::Client)]
    pub direction: Direction,

    /// Print exactly one JSON object per input line instead of the human
    /// report.
    #[arg(long)]
    pub json: bool,

    /// Largest accepted line in bytes, excluding its newline (and one `\r`
    /// before it).
    #[arg(
        long,
        value_name = "N",
        default_value_t = DEFAULT_MAX_FRAME_BYTES,
        value_parser = parse_max_frame_bytes,
    )]
    pub max_frame_bytes: usize,

    /// File of newline-delimited frames; `-` reads standard input.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
}

/// Which peer produced the lines being inspected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Direction {
    /// Inbound frames a client sends to the gateway.
    Client,
    /// A server's stdout, as a transcript.
    Server,
}

fn parse_max_frame_bytes(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(err) => Err(err.to_string()),
    }
}

/// Run the subcommand, writing the report to `out` (the process's stdout):
/// exit 0 when every line is accepted, 1 when any is rejected. I/O errors
/// are returned (the caller exits 2), except a closed stdout, which ends
/// the run quietly with status 2.
pub fn run(args: &InspectArgs, out: impl Write) -> anyhow::Result<ExitCode> {
    let (mut input, name): (Box<dyn Read>, String) = if args.input.as_os_str() == "-" {
        (Box::new(io::stdin().lock()), "standard input".to_owned())
    } else {
        let file = File::open(&args.input)
            .with_context(|| format!("cannot open {}", args.input.display()))?;
        (Box::new(file), args.input.display().to_string())
    };
    let mut report = Report::new(BufWriter::new(out), args.json);
    let outcome = match args.direction {
        Direction::Client => inspect_client(&mut input, args.max_frame_bytes, &mut report),
        Direction::Server => inspect_server(&mut input, args.max_frame_bytes, &mut report),
    }
    .and_then(|()| report.finish());
    match outcome {
        Ok(()) if report.rejected == 0 => Ok(ExitCode::SUCCESS),
        Ok(()) => Ok(ExitCode::from(1)),
        Err(Failure::Read(err)) => Err(anyhow!(err).context(format!("cannot read {name}"))),
        // The reader of the report went away (`portcullis inspect | head`):
        // nobody is left to tell, and the run did not complete.
        Err(Failure::Write(err)) if err.kind() == io::ErrorKind::BrokenPipe => {
            Ok(ExitCode::from(2))
        }
        Err(Failure::Write(err)) => Err(anyhow!(err).context("cannot write the report to stdout")),
    }
}

/// Why a run stopped early.
#[derive(Debug)]
enum Failure {
    Read(io::Error),
    Write(io::Error),
}

/// Read the next chunk; 0 at end of input.
fn read_chunk(input: &mut dyn Read, buf: &mut [u8]) -> Result<usize, Failure> {
    loop {
        match input.read(buf) {
            Ok(n) => return Ok(n),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(Failure::Read(err)),
        }
    }
}

// ---------------------------------------------------------------------------
// Client direction

/// Check inbound frames exactly as the gateway's wire stages would.
fn inspect_client<W: Write>(
    input: &mut dyn Read,
    max_frame_bytes: usize,
    report: &mut Report<W>,
) -> Result<(), Failure> {
    let limits = Limits {
        max_frame_bytes,
        ..Limits::default()
    };
    let mut reader = FrameReader::new(max_frame_bytes);
    let mut buf = vec![0; CHUNK_BYTES];
    loop {
        let n = read_chunk(input, &mut buf)?;
        if n == 0 {
            break;
        }
        reader.feed(&buf[..n], |line, event| {
            client_event(line, event, &limits, report);
        });
        report.check()?;
    }
    reader.finish(|line, event| client_event(line, event, &limits, report));
    report.check()
}

fn client_event<W: Write>(
    line: u64,
    event: FrameEvent<'_>,
    limits: &Limits,
    report: &mut Report<W>,
) {
    match event {
        FrameEvent::Frame(frame) => match judge_client_frame(frame, limits) {
            Ok(message) => report.record(line, &Verdict::accepted(&message)),
            Err(rejection) => report.record(line, &Verdict::Rejected(&rejection)),
        },
        FrameEvent::Rejected(rejection) => report.record(line, &Verdict::Rejected(&rejection)),
    }
}

/// UTF-8, strict JSON and JSON-RPC stages for one frame from the client.
fn judge_client_frame<'a>(frame: &'a [u8], limits: &Limits) -> Result<RpcMessage<'a>, Rejection> {
    let text = utf8::decode(frame)?;
    let message = parse_message(text, limits)?;
    let what = match message {
        RpcMessage::Request { .. } | RpcMessage::Notification { .. } => return Ok(message),
        RpcMessage::Response { .. } => "a response",
        RpcMessage::Error { .. } => "an error response",
    };
    Err(Rejection::new(
        Stage::Rpc,
        INVALID_REQUEST,
        format!("{what} from the client: the gateway sends no requests"),
        frame,
    )
    .with_id(message.id().cloned()))
}

// ---------------------------------------------------------------------------
// Server direction

/// Check a server's stdout line by line with the transcript checker.
fn inspect_server<W: Write>(
    input: &mut dyn Read,
    max_frame_bytes: usize,
    report: &mut Report<W>,
) -> Result<(), Failure> {
    let mut splitter = LineSplitter::new(max_frame_bytes);
    let mut buf = vec![0; CHUNK_BYTES];
    loop {
        let n = read_chunk(input, &mut buf)?;
        if n == 0 {
            break;
        }
        splitter.feed(&buf[..n], |line, event| {
            server_event(line, event, max_frame_bytes, report);
        });
        report.check()?;
    }
    splitter.finish(|line, event| server_event(line, event, max_frame_bytes, report));
    report.check()
}

fn server_event<W: Write>(
    line: u64,
    event: ServerLine<'_>,
    max_frame_bytes: usize,
    report: &mut Report<W>,
) {
    let as_violation = |raw: &[u8], violation: Violation| TranscriptViolation {
        line: usize::try_from(line).unwrap_or(usize::MAX),
        raw: raw.to_vec(),
        violation,
    };
    let violation = match event {
        ServerLine::Complete(raw) => match check_line(&raw[..raw.len() - 1]) {
            Ok(()) => return report.record(line, &Verdict::Clean),
            Err(violation) => as_violation(raw, violation),
        },
        ServerLine::Unterminated(raw) => as_violation(raw, Violation::MissingFinalNewline),
        ServerLine::OverLong {
            prefix,
            total,
            terminated,
        } => {
            let mut raw = render_bytes(prefix);
            if total > prefix.len() as u64 {
                raw.push_str(&format!("... ({total} bytes in all)"));
            }
            let mut reason = format!("line exceeds max_frame_bytes ({max_frame_bytes})");
            if !terminated {
                reason.push_str(" and has no final newline");
            }
            let human = format!("non-protocol stdout on line {line}: {raw}: {reason}");
            return report.record(
                line,
                &Verdict::NonProtocol {
                    code: PARSE_ERROR,
                    reason,
                    raw,
                    human,
                },
            );
        }
    };
    let code = match violation.violation {
        Violation::NotUtf8
        | Violation::NotJson(_)
        | Violation::EmptyLine
        | Violation::MissingFinalNewline => PARSE_ERROR,
        _ => INVALID_REQUEST,
    };
    report.record(
        line,
        &Verdict::NonProtocol {
            code,
            reason: violation.violation.to_string(),
            raw: render_bytes(&violation.raw),
            human: violation.to_string(),
        },
    );
}

/// One line of server output, as the splitter saw it.
#[derive(Debug)]
enum ServerLine<'a> {
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
struct LineSplitter {
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
    fn new(max_frame_bytes: usize) -> Self {
        Self {
            max_frame_bytes,
            buf: Vec::new(),
            over_long: None,
            line: 1,
        }
    }

    fn feed(&mut self, mut chunk: &[u8], mut sink: impl FnMut(u64, ServerLine<'_>)) {
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
    fn finish(&mut self, mut sink: impl FnMut(u64, ServerLine<'_>)) {
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

// ---------------------------------------------------------------------------
// Reporting

/// The judgement on one input line.
#[derive(Debug)]
enum Verdict<'a> {
    /// A client line the wire layer accepts.
    Accepted {
        kind: &'static str,
        method: &'a str,
        id: Option<&'a Id>,
    },
    /// A client line the wire layer refuses.
    Rejected(&'a Rejection),
    /// A server line that is a permitted protocol frame.
    Clean,
    /// A server line that is not; `raw` is the rendered bytes and `human`
    /// the full report line.
    NonProtocol {
        code: i64,
        reason: String,
        raw: String,
        human: String,
    },
}

impl<'a> Verdict<'a> {
    fn accepted(message: &'a RpcMessage<'_>) -> Self {
        let method = match message {
            RpcMessage::Request { method, .. } | RpcMessage::Notification { method, .. } => method,
            // judge_client_frame lets only requests and notifications through.
            RpcMessage::Response { .. } | RpcMessage::Error { .. } => "",
        };
        Verdict::Accepted {
            kind: message.kind(),
            method,
            id: message.id(),
        }
    }

    fn is_ok(&self) -> bool {
        matches!(self, Verdict::Accepted { .. } | Verdict::Clean)
    }
}

/// One `--json` output object. `stage`, `code` and `reason` are present on
/// every object (null on accepted lines); the rest only when they apply.
#[derive(Debug, Serialize)]
struct JsonLine<'a> {
    line: u64,
    ok: bool,
    stage: Option<&'a str>,
    code: Option<i64>,
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Id>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fingerprint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a str>,
}

impl<'a> JsonLine<'a> {
    fn new(line: u64, verdict: &'a Verdict<'a>) -> Self {
        let mut out = JsonLine {
            line,
            ok: verdict.is_ok(),
            stage: None,
            code: None,
            reason: None,
            kind: None,
            method: None,
            id: None,
            fingerprint: None,
            raw: None,
        };
        match verdict {
            Verdict::Accepted { kind, method, id } => {
                out.kind = Some(kind);
                out.method = Some(method);
                out.id = *id;
            }
            Verdict::Rejected(rejection) => {
                out.stage = Some(rejection.stage.as_str());
                out.code = Some(rejection.code);
                out.reason = Some(&rejection.reason);
                out.id = rejection.id.as_ref();
                out.fingerprint = Some(rejection.fingerprint.to_hex());
            }
            Verdict::Clean => {}
            Verdict::NonProtocol {
                code, reason, raw, ..
            } => {
                out.stage = Some("transcript");
                out.code = Some(*code);
                out.reason = Some(reason);
                out.raw = Some(raw);
            }
        }
        out
    }
}

/// Writes the per-line report and counts verdicts. The frame reader's
/// callback cannot return an error, so the first write error is kept and
/// surfaced by [`Report::check`] after each chunk.
#[derive(Debug)]
struct Report<W: Write> {
    out: W,
    json: bool,
    accepted: u64,
    rejected: u64,
    error: Option<io::Error>,
}

impl<W: Write> Report<W> {
    fn new(out: W, json: bool) -> Self {
        Self {
            out,
            json,
            accepted: 0,
            rejected: 0,
            error: None,
        }
    }

    fn record(&mut self, line: u64, verdict: &Verdict<'_>) {
        if verdict.is_ok() {
            self.accepted += 1;
        } else {
            self.rejected += 1;
        }
        if self.error.is_some() {
            return;
        }
        let written = if self.json {
            self.write_json(line, verdict)
        } else {
            self.write_human(line, verdict)
        };
        if let Err(err) = written {
            self.error = Some(err);
        }
    }

    fn write_json(&mut self, line: u64, verdict: &Verdict<'_>) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, &JsonLine::new(line, verdict))?;
        self.out.write_all(b"\n")
    }

    fn write_human(&mut self, line: u64, verdict: &Verdict<'_>) -> io::Result<()> {
        let out = &mut self.out;
        match verdict {
            Verdict::Accepted { kind, method, id } => {
                // Debug formatting quotes the method and escapes control
                // characters, so no input can drive the terminal.
                write!(out, "line {line}: ok {kind} {method:?}")?;
                if let Some(id) = id {
                    write!(out, " id={id}")?;
                }
                writeln!(out)
            }
            Verdict::Rejected(rejection) => {
                write!(
                    out,
                    "line {line}: rejected [{} {}] {} (",
                    rejection.stage, rejection.code, rejection.reason
                )?;
                if let Some(id) = &rejection.id {
                    write!(out, "id={id}, ")?;
                }
                let hex = rejection.fingerprint.to_hex();
                writeln!(out, "fingerprint {})", &hex[..SHORT_FINGERPRINT])
            }
            Verdict::Clean => writeln!(out, "line {line}: ok"),
            Verdict::NonProtocol { human, .. } => writeln!(out, "{human}"),
        }
    }

    /// The first write error, if any.
    fn check(&mut self) -> Result<(), Failure> {
        self.error
            .take()
            .map_or(Ok(()), |err| Err(Failure::Write(err)))
    }

    /// The summary line (human report only) and the final flush.
    fn finish(&mut self) -> Result<(), Failure> {
        if !self.json {
            let total = self.accepted + self.rejected;
            writeln!(
                self.out,
                "{total} lines: {} accepted, {} rejected",
                self.accepted, self.rejected
            )
            .map_err(Failure::Write)?;
        }
        self.out.flush().map_err(Failure::Write)
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
