//! `portcullis inspect`: report, line by line, whether the wire layer
//! accepts a file of newline-delimited frames.
//!
//! Two directions:
//!
//! - `client` treats each line as an inbound frame from the MCP client and
//!   runs it through the gateway's own stages: framing ([`FrameReader`](portcullis_wire::FrameReader)),
//!   UTF-8, strict JSON and JSON-RPC ([`parse_message`](portcullis_wire::parse_message)), then the rules
//!   of the MCP stage that need no session: a client may only send
//!   requests and notifications, and a request method sent as a
//!   notification is never executed, so both are refused at the mcp stage,
//!   as the gateway refuses them. Rejected lines are reported by stage, code, reason, id (when
//!   one was read) and fingerprint; their bytes are never echoed.
//! - `server` treats the input as captured server stdout and checks each
//!   line with the transcript checker ([`check_line`](portcullis_wire::check_line)). Server output is
//!   what a maintainer is debugging, so a violation shows the raw bytes.
//!
//! Both directions stream: the input is read in 64 KiB chunks and never
//! more than one capped line is held, so memory is constant in the size of
//! the input. Output is one report line (or, with `--json`, one JSON object)
//! per input line, then, in the human report, a summary line.
//!
//! Modules: `client` and `server` judge the lines of each direction,
//! `server_lines` splits server output, `report` writes the verdicts.

mod client;
mod report;
mod server;
mod server_lines;

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, anyhow};
use clap::{Args, ValueEnum};
use portcullis_wire::Limits;
use portcullis_wire::limits::{DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_VALUES};

use self::client::inspect_client;
use self::report::Report;
use self::server::inspect_server;

/// Bytes read from the input at a time.
pub(super) const CHUNK_BYTES: usize = 64 * 1024;

/// Arguments of `portcullis inspect`.
#[derive(Debug, Args)]
#[command(after_help = concat!(
    "Examples:\n",
    "  portcullis inspect examples/hard-cases.jsonl    # exit 1: each line rejected, with its stage\n",
    "  portcullis inspect --direction server examples/transcript-banner.txt    # exit 1: a banner on stdout",
))]
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
        value_parser = parse_at_least_one,
    )]
    pub max_frame_bytes: usize,

    /// Most JSON values one client frame may hold (scalars, arrays and
    /// objects, at any depth), as the policy's `max_frame_values` sets it.
    #[arg(
        long,
        value_name = "N",
        default_value_t = DEFAULT_MAX_VALUES,
        value_parser = parse_at_least_one,
    )]
    pub max_frame_values: usize,

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

fn parse_at_least_one(s: &str) -> Result<usize, String> {
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
        Direction::Client => {
            let limits = Limits {
                max_frame_bytes: args.max_frame_bytes,
                max_values: args.max_frame_values,
                ..Limits::default()
            };
            inspect_client(&mut input, &limits, &mut report)
        }
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
pub(super) enum Failure {
    Read(io::Error),
    Write(io::Error),
}

/// Read the next chunk; 0 at end of input.
pub(super) fn read_chunk(input: &mut dyn Read, buf: &mut [u8]) -> Result<usize, Failure> {
    loop {
        match input.read(buf) {
            Ok(n) => return Ok(n),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(Failure::Read(err)),
        }
    }
}
