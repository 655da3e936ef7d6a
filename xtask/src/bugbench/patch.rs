//! The planted bugs: `bugbench/<name>.patch`, each a `git diff` against the
//! current tree behind a short header that says what the bug is.
//!
//! ```text
//! Stage: framing
//! Class: length check before append (CWE-770): the buffer outgrows its cap
//! Targets: chunking, stdin_bytes
//! Summary: a line split across reads is capped one read too late
//!
//! diff --git a/crates/wire/src/frame.rs b/crates/wire/src/frame.rs
//! ...
//! ```
//!
//! `git apply` skips the header the way it skips a mail's prose. The name is
//! the file stem; `Targets` are the fuzz targets that reach the patched code
//! (what `cargo xtask bugbench` fuzzes unless `--targets` says otherwise).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The stages of the boundary a planted bug may sit in.
pub const STAGES: [&str; 8] = [
    "framing",
    "strict-json",
    "json-rpc",
    "lifecycle",
    "schema",
    "authorization",
    "encoder",
    "driver",
];

/// One planted bug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bug {
    /// The file stem, e.g. `frame-cap-ignores-pending-chunk`.
    pub name: String,
    /// One of [`STAGES`].
    pub stage: String,
    /// The real-world defect class it models.
    pub class: String,
    /// Fuzz targets that exercise the patched code.
    pub targets: Vec<String>,
    /// One line: what goes wrong.
    pub summary: String,
    pub path: PathBuf,
}

/// Reads the header of one patch file's text.
pub fn parse(name: &str, text: &str, path: &Path) -> Result<Bug> {
    let (mut stage, mut class, mut targets, mut summary) = (None, None, None, None);
    let mut has_diff = false;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("diff --git ") {
            has_diff = true;
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            bail!(
                "line {}: expected `Key: value` before the diff, got {line:?}",
                n + 1
            );
        };
        let value = value.trim().to_owned();
        if value.is_empty() {
            bail!("line {}: {key} is empty", n + 1);
        }
        let slot = match key.trim() {
            "Stage" => &mut stage,
            "Class" => &mut class,
            "Targets" => &mut targets,
            "Summary" => &mut summary,
            other => bail!(
                "line {}: unknown header key {other:?} (Stage, Class, Targets, Summary)",
                n + 1
            ),
        };
        if slot.replace(value).is_some() {
            bail!("line {}: {key} given twice", n + 1);
        }
    }
    if !has_diff {
        bail!("no `diff --git` section: a planted bug is a patch");
    }
    let missing = |what: &str| anyhow::anyhow!("the header lacks `{what}:`");
    let stage = stage.ok_or_else(|| missing("Stage"))?;
    if !STAGES.contains(&stage.as_str()) {
        bail!("Stage {stage:?} is not one of {}", STAGES.join(", "));
    }
    let targets: Vec<String> = targets
        .ok_or_else(|| missing("Targets"))?
        .split(',')
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    if targets.is_empty() {
        bail!("Targets names no fuzz target");
    }
    Ok(Bug {
        name: name.to_owned(),
        stage,
        class: class.ok_or_else(|| missing("Class"))?,
        targets,
        summary: summary.ok_or_else(|| missing("Summary"))?,
        path: path.to_owned(),
    })
}

/// Every `*.patch` in `dir`, sorted by name, with fuzz targets checked
/// against `known`.
pub fn load_all(dir: &Path, known: &[String]) -> Result<Vec<Bug>> {
    let mut bugs = Vec::new();
    let entries = fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "patch") {
            continue;
        }
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .context("patch file name")?
            .to_owned();
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let bug = parse(&name, &text, &path).with_context(|| format!("in {}", path.display()))?;
        if let Some(unknown) = bug.targets.iter().find(|t| !known.contains(t)) {
            bail!(
                "{}: Targets names {unknown:?}, not a fuzz target ({})",
                path.display(),
                known.join(", ")
            );
        }
        bugs.push(bug);
    }
    bugs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(bugs)
}

/// Picks the requested bugs (all when none are named), refusing unknown names.
pub fn select<'a>(all: &'a [Bug], requested: &[String]) -> Result<Vec<&'a Bug>> {
    if let Some(unknown) = requested
        .iter()
        .find(|r| !all.iter().any(|b| &b.name == *r))
    {
        let names: Vec<&str> = all.iter().map(|b| b.name.as_str()).collect();
        bail!(
            "unknown bug {unknown:?}; planted bugs: {}",
            names.join(", ")
        );
    }
    Ok(all
        .iter()
        .filter(|b| requested.is_empty() || requested.contains(&b.name))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "Stage: framing\nClass: off-by-one (CWE-193)\nTargets: chunking, stdin_bytes\nSummary: one byte too many\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n";

    #[test]
    fn header_names_stage_class_targets_and_summary() {
        let bug = parse("cap", PATCH, Path::new("bugbench/cap.patch")).unwrap();
        assert_eq!(bug.name, "cap");
        assert_eq!(bug.stage, "framing");
        assert_eq!(bug.class, "off-by-one (CWE-193)");
        assert_eq!(bug.targets, ["chunking", "stdin_bytes"]);
        assert_eq!(bug.summary, "one byte too many");
    }

    #[test]
    fn header_errors_say_what_is_wrong() {
        let err = |text: &str| format!("{:#}", parse("b", text, Path::new("b.patch")).unwrap_err());
        assert!(err(&PATCH.replace("Stage: framing", "Stage: parsing")).contains("not one of"));
        assert!(
            err(&PATCH.replace("Class: off-by-one (CWE-193)\n", "")).contains("lacks `Class:`")
        );
        assert!(err(&PATCH.replace("Summary", "Summery")).contains("unknown header key"));
        assert!(err(&PATCH.replace("diff --git", "dif --git")).contains("expected `Key: value`"));
        assert!(err("Stage: framing\n").contains("no `diff --git`"));
        assert!(err(&PATCH.replace("chunking, stdin_bytes", ",")).contains("names no fuzz target"));
        assert!(err(&format!("Stage: driver\n{PATCH}")).contains("Stage given twice"));
    }

    #[test]
    fn selection_refuses_unknown_bugs() {
        let bug = |name: &str| Bug {
            name: name.to_owned(),
            ..parse(name, PATCH, Path::new("x.patch")).unwrap()
        };
        let all = [bug("a"), bug("b")];
        assert_eq!(select(&all, &[]).unwrap().len(), 2);
        assert_eq!(select(&all, &["b".into()]).unwrap()[0].name, "b");
        let err = select(&all, &["zz".into()]).unwrap_err().to_string();
        assert!(
            err.contains("unknown bug \"zz\"") && err.contains("a, b"),
            "{err}"
        );
    }
}
