//! `cargo xtask promote`: turn a crash artifact into a committed regression,
//! `regressions/<target>/<name>.bin` plus its `<name>.toml` sidecar.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use portcullis_testkit::regressions::Sidecar;

use crate::libfuzzer::{Limits, crash_summary};
use crate::nightly::{relative_paths, reproduce};
use crate::process::host_triple;
use crate::project::{Project, Sanitizer};
use crate::sidecar;

/// Copy a crash artifact into regressions/<target>/<name>.bin with a
/// <name>.toml sidecar (summary, found, source).
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// The crashing input (a libFuzzer artifact or a nightly candidate).
    pub artifact: PathBuf,
    /// Fuzz target; defaults to the folder holding the artifact.
    #[arg(long)]
    pub target: Option<String>,
    /// Regression name; defaults to the artifact's file name.
    #[arg(long)]
    pub name: Option<String>,
    /// One line: what goes wrong. Defaults to the candidate's sidecar, or
    /// to the first panic line of running the input.
    #[arg(long)]
    pub summary: Option<String>,
    /// Where the defect comes from, e.g. the public issue it mirrors.
    #[arg(long)]
    pub source: Option<String>,
    /// Overwrite an existing regression of the same name.
    #[arg(long)]
    pub force: bool,
    /// Toolchain whose fuzz build is used to summarize the crash.
    #[arg(long, default_value = "nightly")]
    pub toolchain: String,
}

/// The fuzz target named by the folder that holds `artifact`, as in
/// `fuzz/artifacts/<target>/crash-…` or `target/nightly/candidates/<target>/….bin`.
pub fn infer_target(artifact: &Path, targets: &[String]) -> Option<String> {
    let folder = artifact.parent()?.file_name()?.to_str()?;
    targets.iter().find(|t| *t == folder).cloned()
}

/// The default regression name: the file name without a `.bin` extension.
pub fn default_name(artifact: &Path) -> Option<String> {
    let file = artifact.file_name()?.to_str()?;
    Some(file.strip_suffix(".bin").unwrap_or(file).to_owned())
}

/// Regression names become file names: keep them portable and unsurprising.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 120
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        bail!(
            "regression name {name:?} must be 1-120 characters of A-Z a-z 0-9 - _ . and not start with '.'"
        );
    }
    Ok(())
}

pub fn run(project: &Project, opts: &Options) -> Result<()> {
    let targets = project.fuzz_targets()?;
    let artifact = &opts.artifact;
    if !artifact.is_file() {
        bail!("{} is not a file", artifact.display());
    }
    let target = match &opts.target {
        Some(t) if targets.contains(t) => t.clone(),
        Some(t) => bail!(
            "unknown fuzz target {t:?}; known targets: {}",
            targets.join(", ")
        ),
        None => infer_target(artifact, &targets).with_context(|| {
            format!(
                "cannot tell the fuzz target from {}; pass --target (one of: {})",
                artifact.display(),
                targets.join(", ")
            )
        })?,
    };
    let name = match &opts.name {
        Some(n) => n.clone(),
        None => default_name(artifact).context("artifact file name is not UTF-8; pass --name")?,
    };
    check_name(&name)?;

    // A nightly candidate carries a sidecar: start from it.
    let candidate_sidecar = artifact.with_extension("toml");
    let existing = if candidate_sidecar != *artifact && candidate_sidecar.is_file() {
        Some(sidecar::read(&candidate_sidecar)?)
    } else {
        None
    };

    let summary = match (&opts.summary, &existing) {
        (Some(s), _) => s.clone(),
        (None, Some(e)) => e.summary.clone(),
        (None, None) => summarize_by_running(project, &opts.toolchain, &target, artifact)?,
    };
    if summary.trim().is_empty() || summary.contains('\n') {
        bail!("the summary must be one non-empty line");
    }
    let sidecar = Sidecar {
        summary,
        found: existing
            .as_ref()
            .map_or_else(sidecar::today, |e| e.found.clone()),
        source: opts
            .source
            .clone()
            .or_else(|| existing.as_ref().map(|e| e.source.clone()))
            .unwrap_or_else(|| "cargo xtask promote".to_owned()),
        target: Some(target.clone()),
    };

    let dir = project.regressions(&target);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let input = dir.join(format!("{name}.bin"));
    let sidecar_path = dir.join(format!("{name}.toml"));
    if let Some(taken) = [&input, &sidecar_path].into_iter().find(|p| p.exists())
        && !opts.force
    {
        bail!(
            "{} already exists; choose another --name or pass --force",
            project.display(taken)
        );
    }
    fs::copy(artifact, &input)
        .with_context(|| format!("copying {} to {}", artifact.display(), input.display()))?;
    sidecar::write(&sidecar, &sidecar_path)?;

    println!(
        "promoted {} ({} bytes)",
        artifact.display(),
        fs::metadata(&input)?.len()
    );
    println!("  input:   {}", project.display(&input));
    println!("  sidecar: {}", project.display(&sidecar_path));
    println!("  summary: {}", sidecar.summary);
    println!("  found:   {}", sidecar.found);
    println!("  source:  {}", sidecar.source);
    println!("`cargo test` now replays it with the other regressions.");
    Ok(())
}

/// Without a summary or a sidecar, run the input through the built fuzz
/// target and take the first panic line.
fn summarize_by_running(
    project: &Project,
    toolchain: &str,
    target: &str,
    artifact: &Path,
) -> Result<String> {
    let hint = "pass --summary \"<one line: what goes wrong>\"";
    let host = host_triple(toolchain)?;
    // Either build reproduces a panic; ASan's also reports memory errors.
    let bin = [Sanitizer::Address, Sanitizer::None]
        .map(|s| project.fuzz_binary(s, &host, target))
        .into_iter()
        .find(|b| b.is_file())
        .unwrap_or_else(|| project.fuzz_binary(Sanitizer::Address, &host, target));
    if !bin.is_file() {
        bail!(
            "no sidecar next to the artifact and {} is not built, so there is no summary; {hint}",
            project.display(&bin)
        );
    }
    let log = tempfile::NamedTempFile::new()?;
    let limits = Limits {
        max_len: 1 << 20,
        unit_timeout: 10,
        rss_limit_mb: 2048,
    };
    let (crashed, output) = reproduce(&bin, artifact, limits, log.path())?;
    match (
        crashed,
        crash_summary(&output).map(|s| relative_paths(&s, &project.root)),
    ) {
        (true, Some(summary)) => Ok(summary),
        (true, None) => {
            bail!("the input crashes {target} but printed no recognisable reason; {hint}")
        }
        (false, _) => bail!("the input does not crash the current {target} build; {hint}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets() -> Vec<String> {
        ["chunking", "strict_json"].map(String::from).to_vec()
    }

    #[test]
    fn target_is_taken_from_the_artifact_folder() {
        let t = targets();
        assert_eq!(
            infer_target(Path::new("fuzz/artifacts/chunking/crash-0a1b"), &t).as_deref(),
            Some("chunking")
        );
        assert_eq!(
            infer_target(
                Path::new("target/nightly/candidates/strict_json/crash-0a.bin"),
                &t
            )
            .as_deref(),
            Some("strict_json")
        );
        assert_eq!(infer_target(Path::new("/tmp/crash-0a1b"), &t), None);
        assert_eq!(infer_target(Path::new("crash-0a1b"), &t), None);
    }

    #[test]
    fn default_name_drops_only_a_bin_extension() {
        assert_eq!(
            default_name(Path::new("a/crash-0a1b.bin")).unwrap(),
            "crash-0a1b"
        );
        assert_eq!(
            default_name(Path::new("a/crash-0a1b")).unwrap(),
            "crash-0a1b"
        );
    }

    #[test]
    fn names_must_be_portable_file_names() {
        for good in ["crash-0a1b", "issue_42", "cr-lf.split.v2"] {
            check_name(good).unwrap();
        }
        for bad in ["", ".hidden", "a/b", "a b", "ünï", &"x".repeat(121)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
