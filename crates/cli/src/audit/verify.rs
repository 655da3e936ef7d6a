//! `portcullis audit verify`: the journal read as a stream, each line
//! judged as it comes ([`chain`]), then a report ([`report`]).

mod chain;
mod layout;
mod lines;
mod report;

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};

pub(super) use self::chain::{Interrupted, Problem, Session, Verifier};
#[cfg(test)]
pub(super) use self::lines::MAX_LINE_BYTES;
pub(super) use self::lines::{Line, Lines};
#[cfg(test)]
pub(super) use self::report::text as report_text;

/// Bytes a key must have at least.
pub(super) const MIN_KEY_BYTES: usize = 16;
/// Problems kept for the report; past them only their number is.
pub(super) const MAX_KEPT_PROBLEMS: usize = 10_000;

/// How to verify.
#[derive(Debug, Clone, Default)]
pub(super) struct Options {
    /// The environment variable holding the key (`--key-env`).
    pub(super) key_env: Option<String>,
    /// One JSON object instead of the text report (`--json`).
    pub(super) json: bool,
    /// Sessions without `session_end` are reported, not problems
    /// (`--allow-cut-short`).
    pub(super) allow_cut_short: bool,
}

/// The problems found, the first [`MAX_KEPT_PROBLEMS`] of them kept.
#[derive(Debug, Default)]
pub(super) struct Problems {
    pub(super) kept: Vec<Problem>,
    pub(super) total: u64,
}

impl Problems {
    fn push(&mut self, problem: Problem) {
        self.total += 1;
        if self.kept.len() < MAX_KEPT_PROBLEMS {
            self.kept.push(problem);
        }
    }
}

/// What reading a whole journal found.
#[derive(Debug)]
pub(super) struct Verdict {
    pub(super) verifier: Verifier,
    pub(super) problems: Problems,
}

impl Verdict {
    pub(super) fn ok(&self) -> bool {
        self.problems.total == 0
    }
}

pub(super) fn verify(
    path: &Path,
    options: &Options,
    out: impl Write,
    err: impl Write,
) -> anyhow::Result<ExitCode> {
    let key = options
        .key_env
        .as_deref()
        .map(|name| key_from_variable(name, std::env::var_os(name)))
        .transpose()?;
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let verdict = verify_stream(file, key, options.allow_cut_short)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if options.json {
        report::json(out, path, &verdict)?;
    } else {
        report::text(out, path, &verdict)?;
    }
    report::stderr(err, path, &verdict)?;
    Ok(if verdict.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Read and judge every line of `source`.
pub(super) fn verify_stream(
    source: impl Read,
    key: Option<Vec<u8>>,
    allow_cut_short: bool,
) -> io::Result<Verdict> {
    let mut verifier = Verifier::new(key);
    let mut problems = Problems::default();
    let mut lines = Lines::new(source);
    while let Some((number, line)) = lines.next_line()? {
        if let Some(problem) = verifier.line(number, line) {
            problems.push(Problem {
                line: number,
                problem,
            });
        }
    }
    for problem in verifier.finish(allow_cut_short) {
        problems.push(problem);
    }
    Ok(Verdict { verifier, problems })
}

/// The key `value` of the environment variable `name` (`None`: not set):
/// set, and at least [`MIN_KEY_BYTES`] long. The error names the variable,
/// never its value.
pub(super) fn key_from_variable(
    name: &str,
    value: Option<std::ffi::OsString>,
) -> anyhow::Result<Vec<u8>> {
    let Some(value) = value else {
        bail!("the key variable {name} is not set");
    };
    let key = std::os::unix::ffi::OsStringExt::into_vec(value);
    if key.len() < MIN_KEY_BYTES {
        bail!(
            "the key in {name} has {} bytes; at least {MIN_KEY_BYTES} are needed",
            key.len()
        );
    }
    Ok(key)
}
