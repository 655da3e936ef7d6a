//! The `portcullis` binary.
//!
//! This file holds only the command line surface and the dispatch; each
//! subcommand lives in its own module. Exit codes follow one convention
//! across subcommands: 0 for success, 1 when the subject of the command was
//! found wanting (a rejected line, a failed check), 2 for usage and I/O
//! errors. clap reports usage errors itself, on stderr, with status 2.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod inspect;
mod replay;

/// A strict stdio boundary in front of an MCP server.
#[derive(Debug, Parser)]
#[command(name = "portcullis", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Report, line by line, whether the wire layer accepts a file of
    /// newline-delimited frames.
    Inspect(inspect::InspectArgs),
    /// Feed a captured stdin stream through the gateway with the Recorder
    /// (no real side effects) and print what happened.
    Replay(replay::ReplayArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect(args) => inspect::run(&args),
        Command::Replay(args) => replay::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("portcullis: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
