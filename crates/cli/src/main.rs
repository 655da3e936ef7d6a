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
//! subcommands, and `completions` (here) prints shell completion scripts.
//!
//! stdout ownership: the very first thing `main` does, for every
//! subcommand, is move stdout to a private descriptor and point fd 1 at
//! stderr ([`stdio::take_stdout`]). The MCP driver writes protocol frames
//! to the private descriptor; the report subcommands and clap's `--help`
//! and `--version` get it as a plain writer. Nothing else can reach it.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, CommandFactory as _, Parser, Subcommand};

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
#[command(
    name = "portcullis",
    version,
    about,
    after_help = concat!(
        "Exit status:\n",
        "  0  success\n",
        "  1  the subject was found wanting (a rejected line, a failed check, a malformed journal)\n",
        "  2  usage or I/O error\n",
        "  mcp and wrap add statuses of their own (3, 4, 5, 130, 143): see their --help\n",
        "\n",
        "Documentation: the docs/ folder of the source repository.\n",
        "Every subcommand's --help ends with an example.",
    ),
)]
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
    /// Check an audit journal written by `portcullis mcp --audit` or
    /// `portcullis wrap --audit`: its records, chains and pairings.
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
    /// Print a completion script for SHELL to stdout.
    Completions(CompletionsArgs),
}

/// Arguments of `portcullis completions`.
#[derive(Debug, Args)]
#[command(after_help = concat!(
    "Examples:\n",
    "  mkdir -p ~/.local/share/bash-completion/completions ~/.zfunc ~/.config/fish/completions\n",
    "  portcullis completions bash > ~/.local/share/bash-completion/completions/portcullis\n",
    "  portcullis completions zsh > ~/.zfunc/_portcullis    # and fpath+=(~/.zfunc) before compinit in ~/.zshrc\n",
    "  portcullis completions fish > ~/.config/fish/completions/portcullis.fish",
))]
struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
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
        Command::Completions(args) => completions(&args, stdout.into_writer()),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "portcullis: error: {err:#}");
            ExitCode::from(serve::EXIT_STARTUP)
        }
    }
}

/// Write the completion script for `args.shell` to `out`.
fn completions(args: &CompletionsArgs, mut out: impl Write) -> anyhow::Result<ExitCode> {
    // clap_complete panics when its writer fails (a closed pipe, say), so
    // the script is built in memory and written here, where a failure is
    // an ordinary error.
    let mut script = Vec::new();
    let mut command = visible(&Cli::command());
    clap_complete::generate(args.shell, &mut command, "portcullis", &mut script);
    out.write_all(&script)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `command` rebuilt from what its help shows: clap_complete offers every
/// argument and subcommand it is given, hidden or not, and a hidden flag
/// here is a test hook that must not be suggested to anyone. clap has no
/// way to remove an argument, hence the rebuild; completion scripts read
/// only names, descriptions, values and the tree, which are all kept.
fn visible(command: &clap::Command) -> clap::Command {
    let mut rebuilt = clap::Command::new(command.get_name().to_owned())
        .args(
            command
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .cloned(),
        )
        .subcommands(
            command
                .get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(visible),
        );
    if let Some(about) = command.get_about() {
        rebuilt = rebuilt.about(about.clone());
    }
    if let Some(version) = command.get_version() {
        rebuilt = rebuilt.version(version.to_owned());
    }
    rebuilt
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
