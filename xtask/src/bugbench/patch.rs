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
//! (what `cargo xtask bugbench` fuzzes unless `--targets` says otherwise),
//! or `none` when no fuzz target does (the CLI's audit journal, the
//! executors' scrubber): such a bug is judged by `cargo test` alone. The
//! stage picks the tests that run (see `bugbench::test_runs`).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The stages a planted bug may sit in: the boundary's, then the wrap core
/// (`crates/wrap`), the credential scrubber (`crates/exec/src/scrub`) and
/// the audit code (the CLI's journal and `audit verify`, the core's audit
/// records).
pub const STAGES: [&str; 11] = [
    "framing",
    "strict-json",
    "json-rpc",
    "lifecycle",
    "schema",
    "authorization",
    "encoder",
    "driver",
    "wrap",
    "scrubber",
    "audit",
];

/// The `Targets:` value of a bug no fuzz target reaches.
pub const NO_TARGET: &str = "none";

/// One planted bug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bug {
    /// The file stem, e.g. `frame-cap-ignores-pending-chunk`.
    pub name: String,
    /// One of [`STAGES`].
    pub stage: String,
    /// The real-world defect class it models.
    pub class: String,
    /// Fuzz targets that exercise the patched code (none: `Targets: none`).
    pub targets: Vec<String>,
    /// One line: what goes wrong.
    pub summary: String,
    /// The crates the patch changes (`wire` for `crates/wire/...`), sorted.
    pub crates: Vec<String>,
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
    let crates = crates_patched(text);
    let missing = |what: &str| anyhow::anyhow!("the header lacks `{what}:`");
    let stage = stage.ok_or_else(|| missing("Stage"))?;
    if !STAGES.contains(&stage.as_str()) {
        bail!("Stage {stage:?} is not one of {}", STAGES.join(", "));
    }
    let targets = targets.ok_or_else(|| missing("Targets"))?;
    let targets: Vec<String> = if targets == NO_TARGET {
        Vec::new()
    } else {
        let named: Vec<String> = targets
            .split(',')
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect();
        if named.is_empty() {
            bail!(
                "Targets names no fuzz target (`Targets: {NO_TARGET}` when none reaches the code)"
            );
        }
        if named.iter().any(|t| t == NO_TARGET) {
            bail!("Targets is `{NO_TARGET}` alone or a list of fuzz targets");
        }
        named
    };
    Ok(Bug {
        name: name.to_owned(),
        stage,
        class: class.ok_or_else(|| missing("Class"))?,
        targets,
        summary: summary.ok_or_else(|| missing("Summary"))?,
        crates,
        path: path.to_owned(),
    })
}

/// The crates whose files the patch's `diff --git a/crates/<name>/...`
/// headers name, sorted and once each.
fn crates_patched(text: &str) -> Vec<String> {
    let mut crates: Vec<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix("diff --git a/crates/"))
        .filter_map(|rest| rest.split_once('/').map(|(name, _)| name.to_owned()))
        .collect();
    crates.sort();
    crates.dedup();
    crates
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
        assert!(bug.crates.is_empty(), "the sample patches no crate");
    }

    #[test]
    fn the_new_stages_are_accepted_and_a_bug_may_have_no_fuzz_target() {
        for stage in ["wrap", "scrubber", "audit"] {
            let text = PATCH.replace("Stage: framing", &format!("Stage: {stage}"));
            assert_eq!(
                parse("b", &text, Path::new("b.patch")).unwrap().stage,
                stage
            );
        }
        let text = PATCH
            .replace("Stage: framing", "Stage: audit")
            .replace("chunking, stdin_bytes", "none");
        let bug = parse("b", &text, Path::new("b.patch")).unwrap();
        assert!(bug.targets.is_empty());
        let err = format!(
            "{:#}",
            parse(
                "b",
                &PATCH.replace("chunking, stdin_bytes", "chunking, none"),
                Path::new("b.patch")
            )
            .unwrap_err()
        );
        assert!(err.contains("alone"), "{err}");
    }

    #[test]
    fn the_crates_a_patch_changes_come_from_its_diff_headers() {
        let text = "Stage: audit\nClass: c\nTargets: none\nSummary: s\n\n\
            diff --git a/crates/cli/src/audit/journal.rs b/crates/cli/src/audit/journal.rs\n\
            --- a/crates/cli/src/audit/journal.rs\n+++ b/crates/cli/src/audit/journal.rs\n\
            diff --git a/crates/wrap/src/session.rs b/crates/wrap/src/session.rs\n\
            diff --git a/crates/cli/src/audit/verify.rs b/crates/cli/src/audit/verify.rs\n\
            diff --git a/fuzz/fuzz_targets/x.rs b/fuzz/fuzz_targets/x.rs\n";
        let bug = parse("b", text, Path::new("b.patch")).unwrap();
        assert_eq!(bug.crates, ["cli", "wrap"]);
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
        assert!(err(&PATCH.replace("Stage: framing", "Stage: cli")).contains("not one of"));
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
