//! The audit journal (`portcullis mcp --audit FILE`, `portcullis wrap
//! --audit FILE`) and `portcullis audit verify FILE`.
//!
//! The journal is JSON Lines, appended; several runs (sessions) may share
//! a file, each a hash chain of its own (see `journal_file` for the
//! format, `journal` for `mcp`'s records, `crate::wrap::journal` for
//! `wrap`'s, and docs/audit.md). Records never hold raw frame bytes,
//! argument values or credentials.
//!
//! `audit verify` reads the file as a stream: one line at a time, a line
//! over 64 KiB (`MAX_LINE_BYTES`) read through and dropped, so its memory
//! grows with the sessions and open intents of the file, never with its
//! lines or their length. It checks, naming the line of every problem
//! (never a string the line holds: a forged journal may hold anything):
//!
//! - each line: ended by a newline (a final line without one was cut in
//!   its write, a problem even with `--allow-cut-short`), UTF-8, one
//!   strict JSON object, a known kind of `mcp` or
//!   `wrap` with exactly its members, their types and ranges and the
//!   relations between them (`shape`), laid out exactly as the writers
//!   lay it out (`verify::layout`);
//! - each session, by its id: `seq` 0 is its `session_start` and the first
//!   line it has, `seq` counts up by one, `prev` is the SHA-256 of the
//!   session's previous line, times never go backwards, `session_end`
//!   holds its own `seq` and `prev` as `records` and `last` and is last
//!   (nothing after it, no `seq` 0 again: a journal appended twice or a
//!   replayed session), its kinds are its command's, `mac` is on every
//!   record exactly when `session_start` says `keyed`;
//! - with `--key-env NAME`: every session keyed and every `mac` the
//!   HMAC-SHA-256 under the key of its line without the `mac` member.
//!   Without a key, macs are counted as present but not checked;
//! - intents and outcomes, by `ticket` (`mcp`) or `call` (`wrap`): each
//!   intent's id above the session's earlier ones (the writers number
//!   actions in order), an outcome only for an open intent.
//!
//! After a break the chain goes on from the line found, so a deleted line
//! is one problem, not one per line after it. The verifier shares no code
//! with the writers: it computes the hashes and macs itself.
//!
//! A session without `session_end` was *cut short* (killed, or its tail
//! deleted: the two look alike): a problem naming its last line, unless
//! `--allow-cut-short` (for a journal a running session still writes),
//! when it is only reported. An intent without an outcome is an
//! *interrupted* action, listed, never a problem: `mcp` closes its
//! session while actions that outlived the grace period still run (their
//! outcome is unknown, so none is written), and a session cut short ends
//! with its running actions open. `wrap` writes an outcome for every call
//! before `session_end`; an outcome removed from a closed session breaks
//! the chain, which is where it is reported.
//!
//! Exit 0 when every line is a well-formed record and every chain holds,
//! 1 when anything fails (a session cut short included, unless allowed),
//! 2 when the file cannot be read or the key variable is unset or shorter
//! than [`verify::MIN_KEY_BYTES`] bytes (nothing on stdout then).
//!
//! The report on stdout: the line, record and session counts, records by
//! kind, each session (id, command, keyed, first and last line, records,
//! closed or cut short), the macs, the interrupted actions, then the
//! problems (the first 20, then how many more); the same problems on
//! stderr as `portcullis: FILE: line N: why`. With `--json`, one JSON
//! object on one line instead, a stable contract:
//!
//! ```text
//! {"file": FILE, "lines": N, "records": N,
//!  "kinds": {KIND: N, ...every kind of both commands...},
//!  "sessions": [{"session": ID, "command": "mcp"|"wrap"|null,
//!                "keyed": bool|null, "first_line": N, "last_line": N,
//!                "records": N, "closed": bool,
//!                "interrupted": [{"line": N, "ticket"|"call": N, "tool": T}]}],
//!  "macs_checked": bool,
//!  "problems": [{"line": N, "problem": WHY}],
//!  "problems_total": N, "ok": bool}
//! ```
//!
//! `records` counts the well-formed records (`kinds` by kind), a session's
//! `records` the lines that name it with a readable `seq` and `prev`.
//! `sessions` are in order of their first line; `problems` in order of
//! their line as read, then the sessions cut short; at most
//! [`verify::MAX_KEPT_PROBLEMS`] are listed, `problems_total` counts them
//! all. `command` and `keyed` are `null` for a session without
//! `session_start`; an interrupted action is named by `ticket` in `mcp`,
//! `call` in `wrap`.

mod journal;
mod journal_file;
mod shape;
#[cfg(test)]
pub mod test_sink;
#[cfg(test)]
mod tests;
mod verify;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

pub use self::journal::{Journal, OutcomeRecord, rfc3339};
pub use self::journal_file::{AuditKey, JournalFile, key_for};
#[cfg(test)]
pub use self::journal_file::{Clock, Sink};

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
    /// Check a journal written by `portcullis mcp --audit` or `portcullis
    /// wrap --audit`, read as a stream: every line a record of a known kind
    /// with exactly its members, types and ranges; per session, `seq` from
    /// 0 (`session_start`) up by one, `prev` the SHA-256 of the session's
    /// previous line, times never going back, `session_end` last with its
    /// count and hash; with --key-env, every record's HMAC; every outcome
    /// after its intent, one intent per ticket or call. Each problem is
    /// named by line number, on stdout and on stderr (`portcullis: FILE:
    /// line N: why`). Intents without an outcome are listed as interrupted
    /// actions (not errors); a session without `session_end` was cut short
    /// (an error unless --allow-cut-short). Exit 0 when every line is
    /// well-formed and every chain holds, 1 when anything fails, 2 when the
    /// file cannot be read or the key variable is unset or shorter than 16
    /// bytes.
    #[command(after_help = concat!(
        "--json prints one object (a stable contract):\n",
        "  {\"file\", \"lines\", \"records\", \"kinds\": {kind: count, every kind},\n",
        "   \"sessions\": [{\"session\", \"command\": \"mcp\"|\"wrap\"|null, \"keyed\": bool|null,\n",
        "     \"first_line\", \"last_line\", \"records\", \"closed\": bool,\n",
        "     \"interrupted\": [{\"line\", \"ticket\" (mcp) | \"call\" (wrap), \"tool\"}]}],\n",
        "   \"macs_checked\": bool, \"problems\": [{\"line\", \"problem\"}] (at most 10000),\n",
        "   \"problems_total\", \"ok\": bool}\n",
        "\n",
        "Example:\n",
        "  # Journal one session, then check the journal.\n",
        "  portcullis mcp --policy examples/policy.toml --audit audit.jsonl < examples/sessions/unknown-argument.jsonl\n",
        "  portcullis audit verify audit.jsonl",
    ))]
    Verify {
        /// The journal file.
        file: PathBuf,
        /// Check every record's mac under the key in this environment
        /// variable (at least 16 bytes); every session must then be keyed.
        #[arg(long, value_name = "NAME")]
        key_env: Option<String>,
        /// Print one JSON object instead of the text report.
        #[arg(long)]
        json: bool,
        /// Report sessions without `session_end` without failing (for a
        /// journal a running session is still writing).
        #[arg(long)]
        allow_cut_short: bool,
    },
}

/// Run `portcullis audit`.
pub fn run(args: &AuditArgs, out: impl Write) -> anyhow::Result<ExitCode> {
    match &args.command {
        AuditCommand::Verify {
            file,
            key_env,
            json,
            allow_cut_short,
        } => {
            let options = verify::Options {
                key_env: key_env.clone(),
                json: *json,
                allow_cut_short: *allow_cut_short,
            };
            verify::verify(file, &options, out, std::io::stderr().lock())
        }
    }
}
