//! `portcullis policy check FILE` and `portcullis policy tools FILE`.
//!
//! Exit codes: 0 when the policy is valid, 1 when it is not (the
//! `PolicyError` message, naming the file, the tool and the field, goes to
//! stderr), 2 when the file cannot be read. Credentials that the current
//! environment cannot supply are warnings, not errors: the gateway starts
//! without them and denies the tools that need them.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use portcullis_gateway::mcp::Revision;
use portcullis_gateway::{Policy, PolicyError, SecretStore, reply};

/// Arguments of `portcullis policy`.
#[derive(Debug, Args)]
#[command(after_help = concat!(
    "Examples:\n",
    "  portcullis policy check examples/policy.toml\n",
    "  portcullis policy tools examples/policy.toml",
))]
pub struct PolicyArgs {
    #[command(subcommand)]
    command: PolicyCommand,
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Validate a policy file: prints `ok: N tools`, or the error naming
    /// the file, tool and field. Credentials missing from the current
    /// environment are reported as warnings.
    #[command(after_help = concat!(
        "Example:\n",
        "  portcullis policy check examples/policy.toml    # \"ok: 2 tools\", warnings for missing credentials",
    ))]
    Check {
        /// The policy file.
        file: PathBuf,
    },
    /// Print the tools/list result a client would see (pretty JSON, MCP
    /// revision 2025-11-25).
    #[command(after_help = concat!(
        "Example:\n",
        "  portcullis policy tools examples/policy-20-tools.toml",
    ))]
    Tools {
        /// The policy file.
        file: PathBuf,
    },
}

/// Run `portcullis policy`.
pub fn run(args: &PolicyArgs, out: impl Write) -> anyhow::Result<ExitCode> {
    let (file, check) = match &args.command {
        PolicyCommand::Check { file } => (file, true),
        PolicyCommand::Tools { file } => (file, false),
    };
    let policy = match load(file) {
        Ok(policy) => policy,
        Err(code) => return Ok(code),
    };
    let mut out = io::BufWriter::new(out);
    if check {
        warn_missing_credentials(&policy);
        let n = policy.tools.len();
        writeln!(out, "ok: {n} tool{}", if n == 1 { "" } else { "s" })?;
    } else {
        let list = reply::tools_list(&policy, Revision::V2025_11_25);
        serde_json::to_writer_pretty(&mut out, &list)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Load the policy, or report why not and give the exit code.
fn load(file: &Path) -> Result<Policy, ExitCode> {
    Policy::load(file).map_err(|err| {
        let code = match err {
            PolicyError::Io { .. } => 2,
            _ => 1,
        };
        let _ = writeln!(io::stderr(), "portcullis: error: {err}");
        ExitCode::from(code)
    })
}

/// Warn (stderr) about credentials this environment cannot supply, with
/// the tools that would be denied. Never prints values.
pub fn warn_missing_credentials(policy: &Policy) {
    let store = SecretStore::from_environment(policy);
    let mut stderr = io::stderr().lock();
    for (name, problem) in store.problems() {
        let tools: Vec<&str> = policy
            .tools
            .iter()
            .filter(|t| t.credential() == Some(name.as_str()))
            .map(|t| &*t.name)
            .collect();
        let _ = writeln!(
            stderr,
            "warning: credential {name} is not available here ({problem}); tools denied without it: {}",
            if tools.is_empty() {
                "none".to_owned()
            } else {
                tools.join(", ")
            }
        );
    }
}
