//! Finding `llvm-cov` and `llvm-profdata` of the LLVM that rustc is built on:
//! a profile written by one LLVM major version cannot be read by another.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process::{capture, scrub_env};

/// The pair of tools handed to cargo-llvm-cov (`LLVM_COV`, `LLVM_PROFDATA`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tools {
    pub cov: PathBuf,
    pub profdata: PathBuf,
    /// Where they were found, for the report.
    pub source: String,
}

/// The major version in `rustc -vV` (`LLVM version: 22.1.2`) or
/// `llvm-cov --version` (`LLVM version 22.1.2`) output.
pub fn major_version(text: &str) -> Option<u32> {
    let (_, rest) = text.split_once("LLVM version")?;
    let rest = rest.trim_start_matches(':').trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Where to look, in order: `LLVM_COV`/`LLVM_PROFDATA` when both are set,
/// rustup's `llvm-tools` component in the toolchain's sysroot,
/// `llvm-cov-<major>` on `PATH` (Debian/Ubuntu `llvm-<major>`), then
/// `/usr/lib/llvm-<major>/bin`.
pub fn candidates(
    major: u32,
    sysroot_bin: &Path,
    from_env: Option<(PathBuf, PathBuf)>,
    on_path: impl Fn(&str) -> Option<PathBuf>,
) -> Vec<Tools> {
    let mut out = Vec::new();
    if let Some((cov, profdata)) = from_env {
        out.push(Tools {
            cov,
            profdata,
            source: "LLVM_COV and LLVM_PROFDATA".to_owned(),
        });
    }
    out.push(Tools {
        cov: sysroot_bin.join("llvm-cov"),
        profdata: sysroot_bin.join("llvm-profdata"),
        source: "rustup's llvm-tools".to_owned(),
    });
    if let (Some(cov), Some(profdata)) = (
        on_path(&format!("llvm-cov-{major}")),
        on_path(&format!("llvm-profdata-{major}")),
    ) {
        out.push(Tools {
            cov,
            profdata,
            source: format!("llvm-cov-{major} on PATH"),
        });
    }
    let system = PathBuf::from(format!("/usr/lib/llvm-{major}/bin"));
    out.push(Tools {
        cov: system.join("llvm-cov"),
        profdata: system.join("llvm-profdata"),
        source: system.display().to_string(),
    });
    out
}

/// What to run when no matching tools exist.
pub fn install_hint(major: u32) -> String {
    format!(
        "no llvm-cov/llvm-profdata of LLVM {major} (the LLVM rustc is built on) found: \
         `rustup component add llvm-tools`, or `apt-get install llvm-{major}`, \
         or set LLVM_COV and LLVM_PROFDATA"
    )
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn tool_major(tool: &Path) -> Option<u32> {
    let (status, text) = capture(Command::new(tool).arg("--version")).ok()?;
    status.success().then(|| major_version(&text)).flatten()
}

fn rustc(root: &Path, args: &[&str]) -> Result<String> {
    let mut cmd = Command::new("rustc");
    cmd.args(args).current_dir(root);
    scrub_env(&mut cmd);
    let (status, text) = capture(&mut cmd)?;
    if !status.success() {
        bail!("`rustc {}` failed: {}", args.join(" "), text.trim());
    }
    Ok(text)
}

/// The first candidate whose two tools exist and report rustc's LLVM major
/// version.
pub fn locate(root: &Path) -> Result<Tools> {
    let version = rustc(root, &["-vV"])?;
    let major = major_version(&version).context("`rustc -vV` names no LLVM version")?;
    let host = version
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .context("`rustc -vV` names no host")?
        .trim();
    let sysroot = PathBuf::from(rustc(root, &["--print", "sysroot"])?.trim());
    let sysroot_bin = sysroot.join("lib").join("rustlib").join(host).join("bin");
    let from_env = match (env::var_os("LLVM_COV"), env::var_os("LLVM_PROFDATA")) {
        (Some(cov), Some(profdata)) => {
            let resolve = |p: PathBuf| {
                if p.components().count() == 1 {
                    on_path(&p.to_string_lossy()).unwrap_or(p)
                } else {
                    p
                }
            };
            Some((resolve(cov.into()), resolve(profdata.into())))
        }
        _ => None,
    };
    let env_given = from_env.is_some();
    for tools in candidates(major, &sysroot_bin, from_env, on_path) {
        let cov = tool_major(&tools.cov);
        let profdata = tool_major(&tools.profdata);
        if cov == Some(major) && profdata == Some(major) {
            return Ok(tools);
        }
        if env_given && tools.source.starts_with("LLVM_COV") {
            bail!(
                "LLVM_COV={} / LLVM_PROFDATA={} are LLVM {cov:?}/{profdata:?}, rustc is LLVM {major}; {}",
                tools.cov.display(),
                tools.profdata.display(),
                install_hint(major)
            );
        }
    }
    bail!(install_hint(major))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn major_version_reads_rustc_and_llvm_cov_output() {
        let rustc = "rustc 1.95.0 (59807616e 2026-04-14)\nbinary: rustc\nhost: x86_64-unknown-linux-gnu\nrelease: 1.95.0\nLLVM version: 22.1.2\n";
        assert_eq!(major_version(rustc), Some(22));
        let debian = "Debian LLVM version 22.1.2\n  Optimized build.\n";
        assert_eq!(major_version(debian), Some(22));
        let rustup = "LLVM (http://llvm.org/):\n  LLVM version 22.1.2-rust-1.95.0-stable\n";
        assert_eq!(major_version(rustup), Some(22));
        assert_eq!(major_version("clang version 18"), None);
    }

    #[test]
    fn environment_first_then_rustup_then_versioned_names_then_usr_lib() {
        let found = candidates(
            22,
            Path::new("/sysroot/bin"),
            Some(("/opt/cov".into(), "/opt/profdata".into())),
            |name| Some(PathBuf::from("/usr/bin").join(name)),
        );
        let covs: Vec<_> = found.iter().map(|t| t.cov.clone()).collect();
        assert_eq!(
            covs,
            [
                PathBuf::from("/opt/cov"),
                "/sysroot/bin/llvm-cov".into(),
                "/usr/bin/llvm-cov-22".into(),
                "/usr/lib/llvm-22/bin/llvm-cov".into(),
            ]
        );
        assert_eq!(
            found[2].profdata,
            PathBuf::from("/usr/bin/llvm-profdata-22")
        );
        let without = candidates(22, Path::new("/s"), None, |_| None);
        assert_eq!(without.len(), 2, "{without:?}");
    }

    #[test]
    fn the_hint_names_both_ways_to_install() {
        let hint = install_hint(22);
        assert!(hint.contains("rustup component add llvm-tools"), "{hint}");
        assert!(hint.contains("apt-get install llvm-22"), "{hint}");
    }
}
