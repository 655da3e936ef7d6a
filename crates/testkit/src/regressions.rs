//! Regression files: `regressions/<target>/<name>.bin` with a sidecar
//! `<name>.toml` (`summary`, `found`, `source`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A regression sidecar: the one format that the replay walkers read and
/// `cargo xtask promote` / `nightly` write. A key it does not know is an
/// error, so a misspelt field cannot pass unnoticed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sidecar {
    /// What the defect was.
    pub summary: String,
    /// When it was found (YYYY-MM-DD).
    pub found: String,
    /// Where it comes from (e.g. the public issue it mirrors).
    pub source: String,
    /// The fuzz target, when recorded (nightly candidates name it; in
    /// `regressions/` the folder says it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Sidecar {
    /// Parses sidecar text.
    pub fn from_toml(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }

    /// Sidecar text: `summary`, `found`, `source` and, when set, `target`.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(self)
    }
}

/// Regression folders replayed outside testkit, because their defect lives
/// in a real executor, the binary or the audit tool rather than in the
/// sans-IO core: `(folder, the test that replays it)`. The testkit walker
/// checks their sidecars and leaves the replay to that test, which walks the
/// folder with [`discover_in`].
pub const EXTERNAL_REPLAYS: &[(&str, &str)] = &[
    ("http_executor", "crates/exec/tests/regressions.rs"),
    ("mcp_process", "crates/cli/tests/process_regressions.rs"),
    ("audit_verify", "crates/cli/tests/audit_regressions.rs"),
];

/// Every regression in `regressions/<folder>/` (one folder of [`discover`]).
pub fn discover_in(root: &Path, folder: &str) -> Vec<Regression> {
    discover(root)
        .into_iter()
        .filter(|r| r.target == folder)
        .collect()
}

/// One regression input.
#[derive(Debug, Clone)]
pub struct Regression {
    /// The harness (fuzz target) it replays through.
    pub target: String,
    /// The input file.
    pub path: PathBuf,
    /// Its sidecar.
    pub sidecar: Sidecar,
}

/// Every regression under `root`, sorted by path. Panics with a clear
/// message on a `.bin` without a valid sidecar.
pub fn discover(root: &Path) -> Vec<Regression> {
    let mut out = Vec::new();
    let Ok(targets) = std::fs::read_dir(root) else {
        return out;
    };
    for target in targets.flatten() {
        let target_dir = target.path();
        if !target_dir.is_dir() {
            continue;
        }
        let name = target.file_name().to_string_lossy().into_owned();
        for entry in std::fs::read_dir(&target_dir)
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("bin") {
                continue;
            }
            let sidecar_path = path.with_extension("toml");
            let text = std::fs::read_to_string(&sidecar_path).unwrap_or_else(|e| {
                panic!(
                    "{}: missing sidecar {}: {e}",
                    path.display(),
                    sidecar_path.display()
                )
            });
            let sidecar = Sidecar::from_toml(&text)
                .unwrap_or_else(|e| panic!("{}: invalid sidecar: {e}", sidecar_path.display()));
            out.push(Regression {
                target: name.clone(),
                path,
                sidecar,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/testkit sits two levels below the root")
        .to_path_buf()
}
