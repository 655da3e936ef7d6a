//! Triage: minimize a crash with libFuzzer's `-minimize_crash` (what
//! `cargo fuzz tmin` runs), re-run it alone for a
//! one-line summary, and write it as a regression candidate with a sidecar.

use std::cell::RefCell;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use portcullis_testkit::regressions::Sidecar;

use super::Options;
use crate::libfuzzer::{Limits, artifact_kind, asan_options, crash_summary};
use crate::process::{Kill, run_streaming};
use crate::project::{Project, Sanitizer};
use crate::report::Candidate;
use crate::sidecar;

/// What a nightly candidate's sidecar names as its source.
const SOURCE: &str = "cargo xtask nightly";

/// Runs one input through a fuzz target binary; returns whether it crashed
/// and what it printed.
pub fn reproduce(bin: &Path, input: &Path, limits: Limits, log: &Path) -> Result<(bool, String)> {
    let mut cmd = Command::new(bin);
    cmd.args(limits.flags())
        .arg(input)
        .env("ASAN_OPTIONS", asan_options())
        .env("RUST_BACKTRACE", "1");
    let output = RefCell::new(String::new());
    let streamed = run_streaming(
        &mut cmd,
        log,
        Duration::from_secs(limits.unit_timeout + 30),
        Kill::Child,
        |line| {
            let mut out = output.borrow_mut();
            out.push_str(line);
            out.push('\n');
        },
        |_| {},
    )?;
    Ok((!streamed.status.success(), output.into_inner()))
}

/// Panic locations of workspace crates are absolute (they are path
/// dependencies of the fuzz crate); show them relative to the repository.
pub fn relative_paths(text: &str, root: &Path) -> String {
    text.replace(&format!("{}/", root.display()), "")
}

/// Minimizes an artifact with `cargo fuzz tmin`, re-runs it for a summary and
/// writes `candidates/<target>/<name>.{bin,toml,log}`.
pub(super) fn make_candidate(
    project: &Project,
    opts: &Options,
    sanitizer: Sanitizer,
    host: &str,
    target: &str,
    artifact: &Path,
    fuzz_log: &str,
) -> Result<Candidate> {
    // The build of the run that found it reproduces it.
    let bin = &project.fuzz_binary(sanitizer, host, target);
    let name = artifact
        .file_name()
        .context("artifact file name")?
        .to_string_lossy()
        .into_owned();
    let kind = artifact_kind(&name).map_or("crash", |k| k.as_str());
    let dir = opts.out.join("candidates").join(target);
    fs::create_dir_all(&dir)?;
    let input = dir.join(format!("{name}.bin"));
    let _ = fs::remove_file(&input);

    println!(
        "      {target}: minimizing {kind} {name} ({} bytes) with libFuzzer -minimize_crash (at most {}s)",
        fs::metadata(artifact)?.len(),
        opts.tmin_secs
    );
    // What `cargo fuzz tmin` runs, on the binary that found it: `cargo fuzz`
    // would rebuild the fast build with its own flags.
    let mut cmd = Command::new(bin);
    cmd.current_dir(&project.root)
        .env("ASAN_OPTIONS", asan_options())
        .arg("-minimize_crash=1")
        .arg(format!("-runs={}", opts.tmin_runs))
        .arg(format!("-exact_artifact_path={}", input.display()))
        .args(opts.limits.flags())
        .arg(artifact);
    let tmin = run_streaming(
        &mut cmd,
        &dir.join(format!("{name}.tmin.log")),
        Duration::from_secs(opts.tmin_secs),
        Kill::Group,
        |_| {},
        |_| {},
    );
    let mut minimized = matches!(tmin, Ok(ref t) if !t.timed_out) && input.is_file();

    let repro_log = dir.join(format!("{name}.log"));
    let mut reproduced = None;
    if minimized {
        let (crashed, output) = reproduce(bin, &input, opts.limits, &repro_log)?;
        if crashed {
            reproduced = Some(output);
        } else {
            minimized = false; // a smaller input that no longer crashes is no use
        }
    }
    if !minimized {
        fs::copy(artifact, &input)
            .with_context(|| format!("copying {} to {}", artifact.display(), input.display()))?;
        let (crashed, output) = reproduce(bin, &input, opts.limits, &repro_log)?;
        reproduced = crashed.then_some(output);
    }

    let summary = reproduced
        .as_deref()
        .and_then(crash_summary)
        .or_else(|| crash_summary(fuzz_log))
        .map(|s| relative_paths(&s, &project.root))
        .unwrap_or_else(|| {
            format!("libFuzzer reported a {kind}; it did not reproduce when re-run alone")
        });
    let sidecar_path = dir.join(format!("{name}.toml"));
    let candidate = Sidecar {
        summary: summary.clone(),
        found: sidecar::today(),
        source: SOURCE.to_owned(),
        target: Some(target.to_owned()),
    };
    sidecar::write(&candidate, &sidecar_path)?;

    let size_bytes = fs::metadata(&input)?.len();
    println!(
        "      {target}: {kind} -> {} ({size_bytes} bytes{}): {summary}",
        project.display(&input),
        if minimized { ", minimized" } else { "" }
    );
    Ok(Candidate {
        kind: kind.to_owned(),
        path: project.display(&input),
        sidecar: project.display(&sidecar_path),
        artifact: project.display(artifact),
        summary,
        size_bytes,
        minimized,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_paths_in_summaries_become_relative() {
        assert_eq!(
            relative_paths(
                "boom (panicked at /work/main/crates/testkit/src/harness.rs:1:2)",
                Path::new("/work/main")
            ),
            "boom (panicked at crates/testkit/src/harness.rs:1:2)"
        );
    }
}
