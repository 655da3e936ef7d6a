//! What `portcullis mcp` and `portcullis wrap` share as stdio servers:
//! the exit statuses both use, logging to stderr, the refusal to serve
//! while fd 1 still reaches the original stdout, opening the audit journal,
//! and starting their threads.

use std::io::{self, IsTerminal as _};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread;

use anyhow::{Context as _, bail};
use clap::Args;

use crate::stdio::PrivateStdout;

/// Usage, policy or I/O error at startup (also clap's usage errors).
pub const EXIT_STARTUP: u8 = 2;
/// The session was closed because of an invalid inbound frame.
pub const EXIT_CLOSED: u8 = 3;
/// Writing to stdout failed (the client went away).
pub const EXIT_STDOUT: u8 = 4;

/// The logging argument of a serving subcommand.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Log filter for stderr (e.g. `info`, `debug`, `portcullis=trace`);
    /// default: `RUST_LOG`, else `info`.
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
}

/// The values `--grace-ms` takes: up to one hour.
pub fn grace_ms() -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(0..=3_600_000)
}

/// Install the log subscriber, then refuse to serve unless fd 1 no longer
/// reaches the original stdout.
pub fn start(log: &LogArgs, stdout: &PrivateStdout) -> anyhow::Result<()> {
    init_logging(log.log_level.as_deref())?;
    if !stdout.redirected() {
        bail!(
            "cannot point fd 1 away from stdout; refusing to serve (stray output could corrupt the protocol stream)"
        );
    }
    Ok(())
}

fn init_logging(level: Option<&str>) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let mut bad_env = None;
    let filter = match level {
        Some(level) => {
            EnvFilter::try_new(level).with_context(|| format!("invalid --log-level {level:?}"))?
        }
        None => match std::env::var("RUST_LOG") {
            Ok(value) if !value.trim().is_empty() => {
                EnvFilter::try_new(&value).unwrap_or_else(|err| {
                    bad_env = Some(err.to_string());
                    EnvFilter::new("info")
                })
            }
            _ => EnvFilter::new("info"),
        },
    };
    // `log` records (ureq, rustls) are deliberately not bridged: at trace
    // level they can include request details. Only this workspace's
    // `tracing` events are shown, and those never carry URLs, argv or
    // credential values.
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(io::stderr().is_terminal())
        .finish();
    tracing::subscriber::set_global_default(subscriber)
        .context("cannot install the log subscriber")?;
    if let Some(err) = bad_env {
        tracing::warn!(error = %err, "ignoring invalid RUST_LOG; logging at info");
    }
    Ok(())
}

/// Open the `--audit` journal at `path`, if one was asked for.
pub fn open_journal<J>(
    path: Option<&Path>,
    open: impl FnOnce(&Path) -> io::Result<J>,
) -> anyhow::Result<Option<J>> {
    path.map(|path| {
        open(path).with_context(|| format!("cannot open the audit journal {}", path.display()))
    })
    .transpose()
}

/// Start the thread `name` running `run`; `what` names it in the error.
pub fn spawn<T: Send + 'static>(
    name: String,
    what: &str,
    run: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<()> {
    thread::Builder::new()
        .name(name)
        .spawn(run)
        .with_context(|| format!("cannot start {what}"))?;
    Ok(())
}

/// A channel holding `n` credits, all of them available: a reader takes
/// one per chunk it hands to the core, which gives it back once the chunk
/// is processed, so a reader is never more than `n` chunks ahead.
pub fn credits(n: usize) -> (SyncSender<()>, Receiver<()>) {
    let (give, take) = mpsc::sync_channel::<()>(n);
    for _ in 0..n {
        let _ = give.try_send(());
    }
    (give, take)
}
