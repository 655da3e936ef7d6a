//! Where things live in the repository.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The sanitizer fuzz targets are built with (`cargo fuzz build --sanitizer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Sanitizer {
    /// AddressSanitizer on every crate, with compare tracing on the
    /// boundary crates (see `nightly::build`): needs a nightly toolchain.
    Address,
    /// No sanitizer, and no compare tracing: several times faster, but
    /// slower to guess bytes the code compares with; the nightly's
    /// AddressSanitizer share keeps compare tracing.
    None,
}

impl Sanitizer {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Address => "address",
            Self::None => "none",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Project {
    pub root: PathBuf,
}

impl Project {
    /// The repository that this xtask was built from.
    pub fn locate() -> Self {
        let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf();
        Self { root }
    }

    pub fn fuzz_dir(&self) -> PathBuf {
        self.root.join("fuzz")
    }

    pub fn dict(&self) -> PathBuf {
        self.fuzz_dir().join("dict").join("mcp.dict")
    }

    /// The cargo-fuzz build directory (passed explicitly so that a
    /// `CARGO_TARGET_DIR` in the environment cannot move the binaries).
    /// Uninstrumented builds get their own, so that switching back and forth
    /// does not rebuild everything.
    pub fn fuzz_target_dir(&self, sanitizer: Sanitizer) -> PathBuf {
        match sanitizer {
            Sanitizer::Address => self.fuzz_dir().join("target"),
            Sanitizer::None => self.fuzz_dir().join("target").join("sanitizer-none"),
        }
    }

    /// A built fuzz target.
    pub fn fuzz_binary(&self, sanitizer: Sanitizer, host: &str, target: &str) -> PathBuf {
        self.fuzz_target_dir(sanitizer)
            .join(host)
            .join("release")
            .join(target)
    }

    /// Checked-in, minimized seed corpus.
    pub fn corpus(&self, target: &str) -> PathBuf {
        self.root.join("corpus").join(target)
    }

    /// Scratch working corpus (gitignored) that libFuzzer grows.
    pub fn working_corpus(&self, target: &str) -> PathBuf {
        self.fuzz_dir().join("corpus").join(target)
    }

    pub fn regressions(&self, target: &str) -> PathBuf {
        self.root.join("regressions").join(target)
    }

    /// The fuzz targets, in the order `fuzz/Cargo.toml` declares them.
    pub fn fuzz_targets(&self) -> Result<Vec<String>> {
        let manifest = self.fuzz_dir().join("Cargo.toml");
        let text = fs::read_to_string(&manifest)
            .with_context(|| format!("reading {}", manifest.display()))?;
        parse_fuzz_targets(&text).with_context(|| format!("in {}", manifest.display()))
    }

    /// `path` relative to the repository root when it is inside it.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

/// The `[[bin]]` names of a cargo-fuzz manifest.
pub fn parse_fuzz_targets(manifest: &str) -> Result<Vec<String>> {
    let table: toml::Table = toml::from_str(manifest).context("parsing the fuzz manifest")?;
    let Some(bins) = table.get("bin").and_then(toml::Value::as_array) else {
        bail!("no [[bin]] fuzz targets declared");
    };
    let names: Vec<String> = bins
        .iter()
        .filter_map(|bin| bin.get("name")?.as_str().map(str::to_owned))
        .collect();
    if names.is_empty() {
        bail!("no [[bin]] fuzz targets declared");
    }
    Ok(names)
}

/// Picks the requested targets (all when none are named), keeping the
/// manifest's order and refusing unknown names.
pub fn select_targets(all: &[String], requested: &[String]) -> Result<Vec<String>> {
    if requested.is_empty() {
        return Ok(all.to_vec());
    }
    if let Some(unknown) = requested.iter().find(|r| !all.contains(r)) {
        bail!(
            "unknown fuzz target {unknown:?}; known targets: {}",
            all.join(", ")
        );
    }
    Ok(all
        .iter()
        .filter(|t| requested.contains(t))
        .cloned()
        .collect())
}

/// Regular files directly inside `dir` (none if it does not exist), sorted.
pub fn files_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        if entry.file_type()?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

/// Copies the files of `from` that `to` does not have yet (by name).
pub fn copy_missing(from: &Path, to: &Path) -> Result<usize> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let mut copied = 0;
    for file in files_in(from)? {
        let Some(name) = file.file_name() else {
            continue;
        };
        let dest = to.join(name);
        if !dest.exists() {
            fs::copy(&file, &dest)
                .with_context(|| format!("copying {} to {}", file.display(), dest.display()))?;
            copied += 1;
        }
    }
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
[package]
name = "portcullis-fuzz"
version = "0.0.0"

[package.metadata]
cargo-fuzz = true

[[bin]]
name = "stdin_bytes"
path = "fuzz_targets/stdin_bytes.rs"

[[bin]]
name = "strict_json"
path = "fuzz_targets/strict_json.rs"
"#;

    #[test]
    fn fuzz_targets_come_from_bin_sections_in_order() {
        assert_eq!(
            parse_fuzz_targets(MANIFEST).unwrap(),
            ["stdin_bytes", "strict_json"]
        );
        assert!(parse_fuzz_targets("[package]\nname = \"x\"\n").is_err());
    }

    #[test]
    fn the_real_fuzz_manifest_declares_its_harnesses() {
        let targets = Project::locate().fuzz_targets().unwrap();
        assert_eq!(
            targets,
            [
                "stdin_bytes",
                "session_model",
                "chunking",
                "stdout_frames",
                "strict_json",
                "authz_expansion",
                "schema_nesting",
                "policy_load",
                "wrap_session",
                "transcript_check"
            ]
        );
    }

    #[test]
    fn selection_keeps_manifest_order_and_refuses_unknown_names() {
        let all: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert_eq!(select_targets(&all, &[]).unwrap(), all);
        let picked = select_targets(&all, &["c".into(), "a".into()]).unwrap();
        assert_eq!(picked, ["a", "c"]);
        let err = select_targets(&all, &["zz".into()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown fuzz target \"zz\"") && err.contains("a, b, c"),
            "{err}"
        );
    }

    #[test]
    fn copy_missing_keeps_existing_files() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("from"), dir.path().join("to"));
        fs::create_dir_all(&from).unwrap();
        fs::create_dir_all(&to).unwrap();
        fs::write(from.join("a"), "new a").unwrap();
        fs::write(from.join("b"), "b").unwrap();
        fs::write(to.join("a"), "old a").unwrap();
        assert_eq!(copy_missing(&from, &to).unwrap(), 1);
        assert_eq!(fs::read_to_string(to.join("a")).unwrap(), "old a");
        assert_eq!(fs::read_to_string(to.join("b")).unwrap(), "b");
        assert_eq!(
            files_in(&dir.path().join("missing")).unwrap(),
            Vec::<PathBuf>::new()
        );
    }
}
