//! The `portcullis` binary.
//!
//! This file holds only the command line surface and the dispatch; each
//! subcommand lives in its own module. Exit codes follow one convention
//! across subcommands: 0 for success, 1 when the subject of the command was
//! found wanting (a rejected line, a failed check, a malformed journal), 2
//! for usage and I/O errors. clap reports usage errors itself, on stderr,
//! with status 2. `portcullis mcp` adds 3 (session closed on invalid input),
//! 4 (stdout write failure), and 130 / 143 (ended by SIGINT / SIGTERM:
//! 128 + the signal number); see [`mcp`] and [`shutdown`].
//!
//! Modules: [`mcp`] serves a session (startup; [`mcp`]'s `threads` and
//! `driver` carry out the gateway's effects), with [`stdio`] owning stdout
//! and [`shutdown`] cleaning up on every way out; [`wrap`] puts the same
//! boundary in front of another server, and [`serve`] holds the startup
//! both share (logging, exit statuses, the journal, threads); [`replay`]
//! runs a captured stream through `portcullis_gateway::replay` with the
//! Recorder; [`inspect`], [`policy_cmd`] and [`audit`] are the report
//! subcommands.
//!
//! stdout ownership: the very first thing `main` does, for every
//! subcommand, is move stdout to a private descriptor and point fd 1 at
//! stderr ([`stdio::take_stdout`]). The MCP driver writes protocol frames
//! to the private descriptor; the report subcommands and clap's `--help`
//! and `--version` get it as a plain writer. Nothing else can reach it.

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod audit;
mod check;
mod inspect;
mod mcp;
mod policy_cmd;
mod replay;
mod serve;
mod shutdown;
mod stdio;
mod wrap;

/// A strict stdio boundary in front of an MCP server.
#[derive(Debug, Parser)]
#[command(name = "portcullis", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve one MCP session on stdin/stdout, running authorized actions
    /// with the real HTTP and SSH executors. Exit status: 0 at end of
    /// input, 2 on a startup error, 3 when the session closed on invalid
    /// input, 4 when stdout could not be written, 130 on SIGINT, 143 on
    /// SIGTERM.
    Mcp(mcp::McpArgs),
    /// Validate a policy file, or show the tools it exposes.
    Policy(policy_cmd::PolicyArgs),
    /// Check an audit journal written by `portcullis mcp --audit`.
    Audit(audit::AuditArgs),
    /// Report, line by line, whether the wire layer accepts a file of
    /// newline-delimited frames.
    Inspect(inspect::InspectArgs),
    /// Feed a captured stdin stream through the gateway with the Recorder
    /// (no real side effects) and print what happened.
    Replay(replay::ReplayArgs),
    /// Launch any stdio MCP server and prove its stdout carries only
    /// complete protocol messages (a release gate: exit 0 pass, 1 fail,
    /// 2 cannot launch).
    Check(check::CheckArgs),
    /// Put the strict boundary in front of an existing stdio MCP server,
    /// in both directions: `portcullis wrap [--policy FILE] [--pins FILE]
    /// [--pins-write FILE] [--audit FILE] -- COMMAND [ARGS...]`. Exit
    /// status: 0 when the client ended and everything was answered, 2 on
    /// a startup error, 3 on an invalid client frame, 4 when stdout could
    /// not be written, 5 when the upstream ended its output with the
    /// session open, 130 / 143 on SIGINT / SIGTERM.
    Wrap(wrap::WrapArgs),
}

fn main() -> ExitCode {
    // Before anything else can print: stdout becomes private, fd 1 → stderr.
    let stdout = stdio::take_stdout();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return clap_exit(&err, stdout),
    };
    let result = match cli.command {
        Command::Mcp(args) => mcp::run(&args, stdout),
        Command::Policy(args) => policy_cmd::run(&args, stdout.into_writer()),
        Command::Audit(args) => audit::run(&args, stdout.into_writer()),
        Command::Inspect(args) => inspect::run(&args, stdout.into_writer()),
        Command::Replay(args) => replay::run(&args, stdout.into_writer()),
        Command::Check(args) => check::run(&args, stdout.into_writer()),
        Command::Wrap(args) => wrap::run(&args, stdout),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "portcullis: error: {err:#}");
            ExitCode::from(serve::EXIT_STARTUP)
        }
    }
}

/// Report a parse outcome the way clap would: `--help` and `--version` on
/// (the private) stdout with status 0, usage errors on stderr with 2.
fn clap_exit(err: &clap::Error, stdout: stdio::PrivateStdout) -> ExitCode {
    if err.use_stderr() {
        let _ = err.print();
    } else {
        let mut out = stdout.into_writer();
        let _ = write!(out, "{}", err.render());
        let _ = out.flush();
    }
    ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(serve::EXIT_STARTUP))
}
