//! `portcullis replay`: feed a captured stdin stream through the gateway
//! with the Recorder (no real side effects) and report what happened.
//!
//! Credentials are bound to stand-in values by default, so authorization
//! decides as it would in production with every credential present, on a
//! maintainer's machine that has none of them. `--env-credentials` resolves
//! them from the environment and files instead.
//!
//! Nothing the session does is held in memory: the report's parts (stdout,
//! actions, rejections) arrive interleaved but are printed one after the
//! other, so each is written, already rendered, to an unnamed temporary
//! file as the session produces it, and the files are copied out in order
//! once the session ends. Memory stays bounded by the frame cap and the
//! calls still in flight, whatever the capture's length, and nothing is
//! printed when the replay fails.

use std::fs::File;
use std::io::{self, BufWriter, Seek as _, SeekFrom, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::Context as _;
use clap::Args;
use portcullis_gateway::replay::{Reads, Recorder, SessionEnd, SessionSink, stream_session_reader};
use portcullis_gateway::{AuthorizedAction, Outcome, Policy, RejectionRecord, SecretStore, Ticket};
use portcullis_wire::{TranscriptViolation, Violation, check_line};
use serde_json::json;

/// Arguments of `portcullis replay`.
#[derive(Debug, Args)]
#[command(after_help = concat!(
    "Example:\n",
    "  # A dry run of a captured session: what would run, with no side effects.\n",
    "  portcullis replay --policy examples/policy.toml --json examples/sessions/legacy-valid.jsonl",
))]
pub struct ReplayArgs {
    /// The policy file.
    #[arg(long)]
    policy: PathBuf,
    /// Feed the input in reads of N bytes (default: one read).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    chunk: Option<u64>,
    /// Print one JSON object instead of a human report.
    #[arg(long)]
    json: bool,
    /// Resolve credentials from the environment and files instead of
    /// binding stand-ins.
    #[arg(long)]
    env_credentials: bool,
    /// The captured stdin stream (`-` for stdin).
    #[arg(default_value = "-")]
    input: String,
}

/// Run `portcullis replay`, writing the report to `out` (the process's
/// stdout).
pub fn run(args: &ReplayArgs, out: impl Write) -> anyhow::Result<ExitCode> {
    let policy = Policy::load(&args.policy)?;
    let secrets = if args.env_credentials {
        SecretStore::from_environment(&policy)
    } else {
        SecretStore::stand_ins(&policy)
    };
    let policy = policy.bind_secrets(secrets);
    // The capture is streamed, as `mcp` streams stdin, and so is the
    // report: memory does not grow with the capture's length.
    let reads = match args.chunk {
        Some(n) => Reads::Exactly(usize::try_from(n).unwrap_or(usize::MAX)),
        None => Reads::Whole,
    };
    // The report sees every action as it runs; the recorder only answers.
    let recorder = Recorder::without_history();
    let format = if args.json {
        Format::Json
    } else {
        Format::Human
    };
    let mut report = Report::new(format).context("creating a temporary file for the report")?;
    let end = if args.input == "-" {
        stream_session_reader(
            &policy,
            &mut std::io::stdin().lock(),
            reads,
            &recorder,
            &mut report,
        )
        .context("replaying stdin")?
    } else {
        let mut file =
            std::fs::File::open(&args.input).with_context(|| format!("reading {}", args.input))?;
        stream_session_reader(&policy, &mut file, reads, &recorder, &mut report)
            .with_context(|| format!("replaying {}", args.input))?
    };
    let mut out = BufWriter::new(out);
    report.print(&end, &mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// One JSON object: `{"actions":[..],"close_reason":..,"closed":..,
    /// "rejections":[..],"revision":..,"stdout":"..","transcript_ok":..}`,
    /// members in this order.
    Json,
    Human,
}

/// The report, rendered part by part as the session runs.
#[derive(Debug)]
struct Report {
    format: Format,
    /// JSON: the content of the `stdout` string (escaped, unquoted);
    /// human: stdout's lines, indented.
    stdout: Spool,
    actions: Spool,
    rejections: Spool,
    stdout_bytes: u64,
    /// The end of stdout not yet rendered: an incomplete UTF-8 sequence
    /// (JSON) or an unterminated line (human). The session writes whole
    /// frames, so it is empty between frames.
    unrendered: Vec<u8>,
    transcript: Transcript,
}

impl Report {
    fn new(format: Format) -> io::Result<Self> {
        Ok(Self {
            format,
            stdout: Spool::new()?,
            actions: Spool::new()?,
            rejections: Spool::new()?,
            stdout_bytes: 0,
            unrendered: Vec::new(),
            transcript: Transcript::default(),
        })
    }

    /// Render what of `unrendered` can be rendered; at the end, all of it.
    fn render_stdout(&mut self, at_end: bool) -> io::Result<()> {
        let ready = match self.format {
            Format::Json if at_end => self.unrendered.len(),
            Format::Json => self.unrendered.len() - incomplete_utf8_suffix(&self.unrendered),
            Format::Human if at_end => self.unrendered.len(),
            Format::Human => memchr::memrchr(b'\n', &self.unrendered).map_or(0, |i| i + 1),
        };
        if ready == 0 {
            return Ok(());
        }
        let bytes = &self.unrendered[..ready];
        let out = &mut self.stdout.file;
        match self.format {
            // A piece of the string ends on a character boundary, and JSON
            // escapes character by character: the pieces' escapes put
            // together are the escape of the whole.
            Format::Json => {
                let quoted = serde_json::to_string(&String::from_utf8_lossy(bytes))?;
                out.write_all(&quoted.as_bytes()[1..quoted.len() - 1])?;
            }
            // As `str::lines` splits the whole of stdout: at `\n`, with a
            // `\r` before it dropped, the last line with or without `\n`.
            Format::Human => {
                for line in bytes.split_inclusive(|&b| b == b'\n') {
                    let line = match line.strip_suffix(b"\n") {
                        Some(line) => line.strip_suffix(b"\r").unwrap_or(line),
                        None => line,
                    };
                    writeln!(out, "  {}", String::from_utf8_lossy(line))?;
                }
            }
        }
        self.unrendered.drain(..ready);
        Ok(())
    }

    /// Write the whole report to `out`.
    fn print(mut self, end: &SessionEnd, out: &mut dyn Write) -> io::Result<()> {
        self.render_stdout(true)?;
        let transcript = std::mem::take(&mut self.transcript).finish();
        match self.format {
            Format::Json => {
                let close_reason = end.closed.as_ref().map(|c| {
                    json!({"line": c.line, "stage": c.stage.as_str(), "code": c.code, "reason": c.reason})
                });
                let revision = json!(end.revision.map(|r| r.as_str()));
                out.write_all(b"{\"actions\":[")?;
                self.actions.copy_to(out)?;
                write!(
                    out,
                    "],\"close_reason\":{},\"closed\":{},\"rejections\":[",
                    json!(close_reason),
                    end.closed.is_some()
                )?;
                self.rejections.copy_to(out)?;
                write!(out, "],\"revision\":{revision},\"stdout\":\"")?;
                self.stdout.copy_to(out)?;
                writeln!(out, "\",\"transcript_ok\":{}}}", transcript.is_ok())
            }
            Format::Human => {
                writeln!(out, "stdout ({} bytes):", self.stdout_bytes)?;
                self.stdout.copy_to(out)?;
                writeln!(out, "actions: {}", self.actions.items)?;
                self.actions.copy_to(out)?;
                writeln!(out, "rejections: {}", self.rejections.items)?;
                self.rejections.copy_to(out)?;
                match &end.closed {
                    Some(c) => writeln!(
                        out,
                        "closed: line {} [{} {}] {}",
                        c.line, c.stage, c.code, c.reason
                    )?,
                    None => writeln!(out, "closed: no")?,
                }
                match transcript {
                    Ok(n) => writeln!(out, "transcript: {n} frames, clean"),
                    Err(v) => writeln!(out, "transcript: {v}"),
                }
            }
        }
    }
}

impl SessionSink for Report {
    fn write(&mut self, frame: &[u8]) -> io::Result<()> {
        self.stdout_bytes += frame.len() as u64;
        self.transcript.feed(frame);
        self.unrendered.extend_from_slice(frame);
        self.render_stdout(false)
    }

    fn execute(&mut self, _: Ticket, _: u64, action: &AuthorizedAction) -> io::Result<()> {
        let format = self.format;
        let spool = &mut self.actions;
        match format {
            Format::Json => spool.json_item(
                &json!({"tool": action.tool(), "kind": action.kind(), "target": action.describe_target()}),
            ),
            Format::Human => spool.line(format_args!(
                "  {} [{}] {}",
                action.tool(),
                action.kind(),
                action.describe_target()
            )),
        }
    }

    fn complete(&mut self, _: Ticket, _: &Outcome) -> io::Result<()> {
        Ok(())
    }

    fn reject(&mut self, r: &RejectionRecord) -> io::Result<()> {
        let format = self.format;
        let spool = &mut self.rejections;
        match format {
            Format::Json => spool.json_item(
                &json!({"stage": r.stage.as_str(), "code": r.code, "fingerprint": r.fingerprint.to_hex(), "line": r.line}),
            ),
            Format::Human => spool.line(format_args!(
                "  line {}: {} {} {}",
                r.line, r.stage, r.code, r.fingerprint
            )),
        }
    }
}

/// The length of the incomplete UTF-8 sequence `bytes` end with (0 to 3):
/// the bytes a later piece may complete.
fn incomplete_utf8_suffix(bytes: &[u8]) -> usize {
    (1..=bytes.len().min(3))
        .find(|&k| {
            std::str::from_utf8(&bytes[bytes.len() - k..])
                .is_err_and(|e| e.valid_up_to() == 0 && e.error_len().is_none())
        })
        .unwrap_or(0)
}

/// One part of the report, held in an unnamed temporary file (readable by
/// its owner only; its name is removed as soon as it is open) until the
/// parts before it are printed.
#[derive(Debug)]
struct Spool {
    file: BufWriter<File>,
    /// Items written (actions, rejections).
    items: u64,
}

impl Spool {
    fn new() -> io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt as _;
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir();
        loop {
            let path = dir.join(format!(
                ".portcullis-replay-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            match File::options()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => {
                    std::fs::remove_file(&path)?;
                    return Ok(Self {
                        file: BufWriter::new(file),
                        items: 0,
                    });
                }
                // Left behind by an earlier process with this pid.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Append one element of a JSON array.
    fn json_item(&mut self, value: &serde_json::Value) -> io::Result<()> {
        if self.items > 0 {
            self.file.write_all(b",")?;
        }
        serde_json::to_writer(&mut self.file, value)?;
        self.items += 1;
        Ok(())
    }

    /// Append one line of the human report.
    fn line(&mut self, text: std::fmt::Arguments<'_>) -> io::Result<()> {
        writeln!(self.file, "{text}")?;
        self.items += 1;
        Ok(())
    }

    /// Copy everything written to `out`.
    fn copy_to(self, out: &mut dyn Write) -> io::Result<()> {
        let mut file = self
            .file
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?;
        file.seek(SeekFrom::Start(0))?;
        io::copy(&mut file, out)?;
        Ok(())
    }
}

/// The transcript checker over stdout as it is written: each line is held
/// to [`check_line`] as it completes, and only an unterminated line is kept.
#[derive(Debug, Default)]
struct Transcript {
    lines: usize,
    unterminated: Vec<u8>,
    first_violation: Option<TranscriptViolation>,
}

impl Transcript {
    fn feed(&mut self, mut bytes: &[u8]) {
        while self.first_violation.is_none() {
            let Some(end) = memchr::memchr(b'\n', bytes) else {
                self.unterminated.extend_from_slice(bytes);
                return;
            };
            self.unterminated.extend_from_slice(&bytes[..=end]);
            bytes = &bytes[end + 1..];
            self.lines += 1;
            let raw = std::mem::take(&mut self.unterminated);
            if let Err(violation) = check_line(&raw[..raw.len() - 1]) {
                self.first_violation = Some(TranscriptViolation {
                    line: self.lines,
                    raw,
                    violation,
                });
            }
        }
    }

    /// What [`portcullis_wire::check_transcript`] says of everything fed.
    fn finish(self) -> Result<usize, TranscriptViolation> {
        if let Some(violation) = self.first_violation {
            return Err(violation);
        }
        if !self.unterminated.is_empty() {
            return Err(TranscriptViolation {
                line: self.lines + 1,
                raw: self.unterminated,
                violation: Violation::MissingFinalNewline,
            });
        }
        Ok(self.lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte streams a session's stdout could hold if the encoder slipped:
    /// clean frames, then each way a transcript goes wrong, and text that
    /// a split can cut mid-character (`é`, `€`, `😀`, a lone `\xe2\x82`).
    const STREAMS: [&[u8]; 8] = [
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n",
        b"loading..\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}}\r\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xe2\x82\"}}\nx\xff\xfey\r\nlast\r",
        b"",
        b"\"quoted\\\" \t tab \x01 control\"\n\xe2\x82",
    ];

    fn pieces(bytes: &[u8], size: usize) -> Vec<&[u8]> {
        bytes.chunks(size).collect()
    }

    #[test]
    fn the_transcript_checked_as_it_is_written_is_check_transcript_of_the_whole() {
        for bytes in STREAMS {
            for size in [1, 2, 3, 5, 64, 4096] {
                let mut transcript = Transcript::default();
                for piece in pieces(bytes, size) {
                    transcript.feed(piece);
                }
                assert_eq!(
                    transcript.finish(),
                    portcullis_wire::check_transcript(bytes),
                    "{} in pieces of {size}",
                    String::from_utf8_lossy(bytes)
                );
            }
        }
    }

    fn rendered(format: Format, bytes: &[u8], size: usize) -> String {
        let mut report = Report::new(format).expect("temporary files");
        for piece in pieces(bytes, size) {
            report.write(piece).expect("spool");
        }
        report.render_stdout(true).expect("spool");
        let mut out = Vec::new();
        report.stdout.copy_to(&mut out).expect("read back");
        String::from_utf8(out).expect("rendered text is UTF-8")
    }

    #[test]
    fn stdout_rendered_in_pieces_is_the_rendering_of_the_whole() {
        for bytes in STREAMS {
            let text = String::from_utf8_lossy(bytes);
            let json = serde_json::to_string(&text).expect("a string");
            let human: String = text.lines().map(|line| format!("  {line}\n")).collect();
            for size in [1, 2, 3, 5, 64, 4096] {
                assert_eq!(
                    format!("\"{}\"", rendered(Format::Json, bytes, size)),
                    json,
                    "JSON, pieces of {size}"
                );
                assert_eq!(
                    rendered(Format::Human, bytes, size),
                    human,
                    "human, pieces of {size}"
                );
            }
        }
    }
}
