//! `portcullis replay`: feed a captured stdin stream through the gateway
//! with the Recorder (no real side effects) and report what happened.
//!
//! Credentials are bound to stand-in values by default, so authorization
//! decides as it would in production with every credential present, on a
//! maintainer's machine that has none of them. `--env-credentials` resolves
//! them from the environment and files instead.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use portcullis_gateway::replay::{Reads, Recorder, run_session_reader};
use portcullis_gateway::{Policy, SecretStore};
use portcullis_wire::transcript::check_transcript;
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
    // The capture is streamed, as `mcp` streams stdin: memory is bounded
    // by the frame cap and the report, never by the capture's size.
    let reads = match args.chunk {
        Some(n) => Reads::Exactly(usize::try_from(n).unwrap_or(usize::MAX)),
        None => Reads::Whole,
    };
    let recorder = Recorder::default();
    let report = if args.input == "-" {
        run_session_reader(&policy, &mut std::io::stdin().lock(), reads, &recorder)
            .context("reading stdin")?
    } else {
        let mut file =
            std::fs::File::open(&args.input).with_context(|| format!("reading {}", args.input))?;
        run_session_reader(&policy, &mut file, reads, &recorder)
            .with_context(|| format!("reading {}", args.input))?
    };
    let transcript = check_transcript(&report.stdout);

    let mut out = std::io::BufWriter::new(out);
    if args.json {
        let actions: Vec<_> = report
            .actions
            .iter()
            .map(|a| json!({"tool": a.tool(), "kind": a.kind(), "target": a.describe_target()}))
            .collect();
        let rejections: Vec<_> = report
            .rejections
            .iter()
            .map(|r| json!({"stage": r.stage.as_str(), "code": r.code, "fingerprint": r.fingerprint.to_hex(), "line": r.line}))
            .collect();
        let value = json!({
            "stdout": String::from_utf8_lossy(&report.stdout),
            "actions": actions,
            "rejections": rejections,
            "closed": report.closed.is_some(),
            "close_reason": report.closed.as_ref().map(|c| json!({"line": c.line, "stage": c.stage.as_str(), "code": c.code, "reason": c.reason})),
            "revision": report.revision.map(|r| r.as_str()),
            "transcript_ok": transcript.is_ok(),
        });
        writeln!(out, "{value}")?;
    } else {
        writeln!(out, "stdout ({} bytes):", report.stdout.len())?;
        for line in String::from_utf8_lossy(&report.stdout).lines() {
            writeln!(out, "  {line}")?;
        }
        writeln!(out, "actions: {}", report.actions.len())?;
        for a in &report.actions {
            writeln!(out, "  {} [{}] {}", a.tool(), a.kind(), a.describe_target())?;
        }
        writeln!(out, "rejections: {}", report.rejections.len())?;
        for r in &report.rejections {
            writeln!(
                out,
                "  line {}: {} {} {}",
                r.line, r.stage, r.code, r.fingerprint
            )?;
        }
        match &report.closed {
            Some(c) => writeln!(
                out,
                "closed: line {} [{} {}] {}",
                c.line, c.stage, c.code, c.reason
            )?,
            None => writeln!(out, "closed: no")?,
        }
        match transcript {
            Ok(n) => writeln!(out, "transcript: {n} frames, clean")?,
            Err(v) => writeln!(out, "transcript: {v}")?,
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
