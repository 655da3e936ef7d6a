//! Which source counts: the code of the measured crates, without their
//! unit-test modules (a test module always runs under `cargo test` and never
//! under corpus replay, so it would flatter one figure and drag down the
//! other), and the named parts of them reported on their own rows.
//!
//! `crates/testkit` is not measured: it is the test machinery itself
//! (oracles, harnesses, fakes), so its figure would say how much of the
//! machinery ran, not how much of the product the tests prove.

use std::collections::BTreeMap;
use std::fs;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The crates whose coverage is reported, as `crates/<name>/src/`: the
/// libraries and the binary (`cli`, whose own lines count when the process
/// tests run it).
pub const CRATES: [&str; 5] = ["wire", "gateway", "exec", "wrap", "cli"];

/// A named part of a crate, reported on its own row beside the crates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// The row's name, and its key in `coverage.json`'s `parts`.
    pub name: &'static str,
    /// What it is, for the report.
    pub what: &'static str,
    /// Repository-relative paths: a file, or a directory ending in `/`.
    pub paths: &'static [&'static str],
}

/// The parts with their own rows: the credential scrubber, the CLI's audit
/// code (the journal writer, `audit verify`, the wrap journal) and the CLI's
/// wrap driver (the process around the `crates/wrap` core).
pub const PARTS: [Part; 3] = [
    Part {
        name: "scrubber",
        what: "the credential scrubber",
        paths: &["crates/exec/src/scrub/"],
    },
    Part {
        name: "audit",
        what: "the CLI's audit journal, `audit verify` and the wrap journal",
        paths: &["crates/cli/src/audit/", "crates/cli/src/wrap/journal.rs"],
    },
    Part {
        name: "wrap-driver",
        what: "the CLI's `portcullis wrap` driver",
        paths: &["crates/cli/src/wrap.rs", "crates/cli/src/wrap/"],
    },
];

impl Part {
    /// Whether a repository-relative path belongs to this part.
    pub fn contains(&self, relative: &str) -> bool {
        self.paths.iter().any(|p| {
            if p.ends_with('/') {
                relative.starts_with(p)
            } else {
                relative == *p
            }
        })
    }
}

/// The measured crate a repository-relative path belongs to.
pub fn crate_of(relative: &str) -> Option<&'static str> {
    CRATES.into_iter().find(|name| {
        relative
            .strip_prefix("crates/")
            .and_then(|rest| rest.strip_prefix(name))
            .is_some_and(|rest| rest.starts_with("/src/"))
    })
}

/// The line ranges of inline `#[cfg(test)] mod name { ... }` modules in
/// rustfmt-formatted source: from the attribute to the first later line that
/// closes the module at the same indentation.
pub fn test_module_lines(source: &str) -> Vec<RangeInclusive<u32>> {
    let lines: Vec<&str> = source.lines().collect();
    let mut ranges = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let attribute = lines[at];
        let indent = &attribute[..attribute.len() - attribute.trim_start().len()];
        let opens = attribute.trim() == "#[cfg(test)]"
            && lines
                .get(at + 1)
                .is_some_and(|next| is_inline_mod(next.trim()));
        if !opens {
            at += 1;
            continue;
        }
        let close = format!("{indent}}}");
        let end = (at + 2..lines.len())
            .find(|&i| lines[i] == close)
            .unwrap_or(lines.len() - 1);
        ranges.push(line_no(at)..=line_no(end));
        at = end + 1;
    }
    ranges
}

/// The files of out-of-line `#[cfg(test)] mod name;` modules declared by
/// `file`.
pub fn test_module_files(file: &Path, source: &str) -> Vec<PathBuf> {
    let dir = match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib" | "main") | None => file.parent().map(Path::to_path_buf),
        Some(stem) => file.parent().map(|p| p.join(stem)),
    }
    .unwrap_or_default();
    let lines: Vec<&str> = source.lines().collect();
    lines
        .windows(2)
        .filter(|pair| pair[0].trim() == "#[cfg(test)]")
        .filter_map(|pair| {
            let declaration = pair[1].trim();
            let name = declaration
                .strip_prefix("pub(crate) ")
                .unwrap_or(declaration)
                .strip_prefix("mod ")?
                .strip_suffix(';')?;
            Some(dir.join(format!("{name}.rs")))
        })
        .collect()
}

/// Every counted source file (repository-relative) with the lines of its
/// inline test modules; out-of-line test module files are left out.
pub fn counted_files(root: &Path) -> Result<BTreeMap<String, Vec<RangeInclusive<u32>>>> {
    let mut sources = Vec::new();
    for name in CRATES {
        collect_rs(&root.join("crates").join(name).join("src"), &mut sources)?;
    }
    let mut texts = BTreeMap::new();
    for path in sources {
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        texts.insert(path, text);
    }
    let test_files: Vec<PathBuf> = texts
        .iter()
        .flat_map(|(path, text)| test_module_files(path, text))
        .collect();
    Ok(texts
        .iter()
        .filter(|(path, _)| !test_files.contains(path))
        .filter_map(|(path, text)| {
            let relative = path.strip_prefix(root).ok()?.to_str()?.to_owned();
            Some((relative, test_module_lines(text)))
        })
        .collect())
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect_rs(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn is_inline_mod(line: &str) -> bool {
    let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
    line.starts_with("mod ") && line.ends_with('{')
}

fn line_no(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_sources_of_the_measured_crates_count() {
        assert_eq!(crate_of("crates/wire/src/frame.rs"), Some("wire"));
        assert_eq!(crate_of("crates/gateway/src/authz/mod.rs"), Some("gateway"));
        assert_eq!(crate_of("crates/exec/src/ssh/argv.rs"), Some("exec"));
        assert_eq!(crate_of("crates/wrap/src/session.rs"), Some("wrap"));
        assert_eq!(crate_of("crates/cli/src/main.rs"), Some("cli"));
        assert_eq!(crate_of("crates/wire/tests/properties.rs"), None);
        assert_eq!(crate_of("crates/testkit/src/harness.rs"), None);
        assert_eq!(crate_of("crates/wirex/src/lib.rs"), None);
        assert_eq!(crate_of("/abs/crates/wire/src/lib.rs"), None);
    }

    #[test]
    fn parts_hold_their_directories_and_files_only() {
        let part = |name: &str| PARTS.iter().find(|p| p.name == name).unwrap();
        assert!(part("scrubber").contains("crates/exec/src/scrub/mod.rs"));
        assert!(!part("scrubber").contains("crates/exec/src/http.rs"));
        assert!(!part("scrubber").contains("crates/exec/src/scrubber.rs"));
        assert!(part("audit").contains("crates/cli/src/audit/verify/chain.rs"));
        assert!(part("audit").contains("crates/cli/src/wrap/journal.rs"));
        assert!(!part("audit").contains("crates/cli/src/wrap/driver.rs"));
        assert!(!part("audit").contains("crates/cli/src/wrap/journal.rs.orig"));
        assert!(part("wrap-driver").contains("crates/cli/src/wrap.rs"));
        assert!(part("wrap-driver").contains("crates/cli/src/wrap/driver.rs"));
        assert!(!part("wrap-driver").contains("crates/cli/src/wrapper.rs"));
        assert!(!part("wrap-driver").contains("crates/wrap/src/session.rs"));
        for p in PARTS {
            for path in p.paths {
                assert!(crate_of(path).is_some(), "{path} is in no measured crate");
            }
        }
    }

    #[test]
    fn an_inline_test_module_spans_attribute_to_closing_brace() {
        let source = include_str!("../../testdata/coverage/sample.rs");
        let ranges = test_module_lines(source);
        let lines: Vec<&str> = source.lines().collect();
        assert_eq!(ranges.len(), 1);
        let range = &ranges[0];
        assert_eq!(lines[*range.start() as usize - 1], "#[cfg(test)]");
        assert_eq!(lines[*range.end() as usize - 1], "}");
        assert!(lines[*range.start() as usize].starts_with("mod tests"));
        assert_eq!(*range.end() as usize, lines.len());
    }

    #[test]
    fn a_nested_test_module_ends_at_its_own_indentation() {
        let source = "fn a() {}\nmod inner {\n    #[cfg(test)]\n    mod tests {\n        fn t() {\n        }\n    }\n    fn b() {}\n}\n";
        assert_eq!(test_module_lines(source), [3..=7]);
        assert_eq!(test_module_lines("#[cfg(test)]\nfn helper() {}\n"), []);
    }

    #[test]
    fn the_workspace_counts_library_files_but_not_test_module_files() {
        let root = crate::project::Project::locate().root;
        let files = counted_files(&root).unwrap();
        assert!(files.contains_key("crates/wire/src/frame.rs"));
        assert!(files.contains_key("crates/exec/src/scrub/mod.rs"));
        assert!(!files.contains_key("crates/exec/src/scrub/tests.rs"));
        assert!(files.contains_key("crates/wrap/src/session.rs"));
        assert!(files.contains_key("crates/cli/src/audit/journal.rs"));
        assert!(!files.contains_key("crates/cli/src/audit/tests.rs"));
        assert!(files.keys().all(|f| crate_of(f).is_some()), "{files:?}");
        assert!(
            !files["crates/exec/src/http.rs"].is_empty(),
            "http.rs has an inline test module"
        );
    }

    #[test]
    fn an_out_of_line_test_module_names_its_file() {
        let decl = "mod matching;\n#[cfg(test)]\nmod tests;\n";
        assert_eq!(
            test_module_files(Path::new("crates/exec/src/scrub/mod.rs"), decl),
            [PathBuf::from("crates/exec/src/scrub/tests.rs")]
        );
        assert_eq!(
            test_module_files(Path::new("crates/exec/src/output.rs"), decl),
            [PathBuf::from("crates/exec/src/output/tests.rs")]
        );
        assert_eq!(
            test_module_files(Path::new("src/lib.rs"), "mod tests;\n"),
            Vec::<PathBuf>::new()
        );
    }
}
