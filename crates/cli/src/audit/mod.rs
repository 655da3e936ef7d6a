//! The audit journal (`portcullis mcp --audit FILE`) and
//! `portcullis audit verify FILE`.
//!
//! The journal is JSON Lines, appended, one record per line. Every record
//! has `kind`, `time` (RFC 3339, UTC, from the system clock of the driver;
//! the gateway core has no clock) and `session` (an id unique to one run of
//! `portcullis mcp`, so several runs may append to one file). Records never
//! hold raw frame bytes, argument values or credentials:
//!
//! - `{"kind":"rejection","line":N,"stage":..,"code":..,"fingerprint":..}`
//!   for every refused frame (the fingerprint is the SHA-256 of the frame);
//! - `{"kind":"intent","ticket":T,"line":N,"tool":..,"target_kind":"http"|"ssh",
//!   "host":..,"port":..,"target_fingerprint":..,"timeout_ms":..}`, written
//!   and synced to disk *before* the action is handed to a worker; if it
//!   cannot be written the action is denied;
//! - `{"kind":"outcome","ticket":T,"is_error":..,"executed":..,"cancelled":..,
//!   "late":..,"elapsed_ms":..}` when the worker is done with it
//!   (`executed: false` when it never ran; `late` when the driver had
//!   already stopped waiting for it).
//!
//! An intent without an outcome is an *interrupted* action: the process
//! ended while it ran, and whether it took effect is unknown.
//!
//! `audit verify` holds every line to exactly that shape, since a journal
//! that merely parses proves nothing: per kind, the member set (an unknown
//! or a missing member is an error), each member's type and range
//! (`line` ≥ 1, `port` 1..=65535, `code` in JSON-RPC's reserved
//! −32768..=−32000, `timeout_ms` in the policy's 1..=600000, tickets and
//! milliseconds within ±(2^53−1)), `time` as RFC 3339 in UTC, `stage` one
//! of the wire's [`Stage`] names, fingerprints as 64 lowercase hex digits,
//! `session` as `<pid>-<hex>`, `tool` as the policy's tool names; then
//! that no ticket has two intents and every outcome follows its intent.
//!
//! Modules: `journal` writes the records to a `journal_file` (the
//! append-only file `portcullis wrap --audit` writes too), `verify` reads
//! a journal back and pairs intents with outcomes, `shape` holds every
//! record to the member set, types and ranges above.

mod journal;
mod journal_file;
mod shape;
#[cfg(test)]
mod tests;
mod verify;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

pub use self::journal::{Journal, OutcomeRecord, rfc3339};
pub use self::journal_file::JournalFile;

/// Arguments of `portcullis audit`.
#[derive(Debug, Args)]
#[command(after_help = concat!(
    "Example:\n",
    "  # Journal one session, then check the journal.\n",
    "  portcullis mcp --policy examples/policy.toml --audit audit.jsonl < examples/sessions/unknown-argument.jsonl\n",
    "  portcullis audit verify audit.jsonl",
))]
pub struct AuditArgs {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Check that every line of a journal is a record exactly as
    /// `portcullis mcp --audit` writes it (per kind: the member set, no
    /// unknown members, types and ranges, RFC 3339 UTC times, stage names,
    /// 64-hex fingerprints), that outcomes follow their intents, and list
    /// intents that have no outcome (interrupted actions). Exit 0 when
    /// well-formed (interrupted actions are reported, not errors), 1 when
    /// any line is malformed (each named on stderr with its line number
    /// and field), 2 when the file cannot be read.
    #[command(after_help = concat!(
        "Example:\n",
        "  # Journal one session, then check the journal.\n",
        "  portcullis mcp --policy examples/policy.toml --audit audit.jsonl < examples/sessions/unknown-argument.jsonl\n",
        "  portcullis audit verify audit.jsonl",
    ))]
    Verify {
        /// The journal file.
        file: PathBuf,
    },
}

/// Run `portcullis audit`.
pub fn run(args: &AuditArgs, out: impl Write) -> anyhow::Result<ExitCode> {
    match &args.command {
        AuditCommand::Verify { file } => verify::verify(file, out),
    }
}
