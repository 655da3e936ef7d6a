//! Building: the toolchain and cargo-fuzz the nightly needs, and one
//! `cargo fuzz build` of the targets with the flags minimization reuses.

use std::ffi::OsString;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process::{self, capture, cargo, describe, run_visible};
use crate::project::{Project, Sanitizer};

/// Build flags shared by `cargo fuzz build` and `cargo fuzz tmin`, so that
/// minimization reuses the binary instead of rebuilding. `-O --debug-assertions`
/// is what plain `cargo fuzz build` does: optimized, with overflow checks.
pub fn build_flags(project: &Project, sanitizer: Sanitizer, host: &str) -> Vec<OsString> {
    vec![
        "-O".into(),
        "--debug-assertions".into(),
        "--sanitizer".into(),
        sanitizer.as_str().into(),
        "--target".into(),
        host.into(),
        "--target-dir".into(),
        project.fuzz_target_dir(sanitizer).into(),
    ]
}

/// Fails with a clear message unless `rustc +<toolchain>` works; returns its version.
pub(crate) fn ensure_toolchain(toolchain: &str) -> Result<String> {
    let mut cmd = Command::new("rustc");
    cmd.arg(format!("+{toolchain}")).arg("--version");
    process::scrub_env(&mut cmd);
    match capture(&mut cmd) {
        Ok((status, text)) if status.success() => Ok(text.trim().to_owned()),
        Ok((_, text)) => bail!(
            "the `{toolchain}` toolchain is required (cargo-fuzz builds with AddressSanitizer, \
             a nightly-only rustc flag) but `rustc +{toolchain} --version` failed:\n{}\n\
             install it with: rustup toolchain install {toolchain} --profile minimal",
            text.split("Stack backtrace:")
                .next()
                .unwrap_or_default()
                .trim()
        ),
        Err(e) => bail!(
            "the `{toolchain}` toolchain is required but rustc could not be run ({e:#}); \
             install rustup and then: rustup toolchain install {toolchain} --profile minimal"
        ),
    }
}

/// Installs cargo-fuzz when `cargo fuzz --version` fails; returns its version.
pub(crate) fn ensure_cargo_fuzz() -> Result<String> {
    let version = || -> Option<String> {
        let (status, text) = capture(cargo(None).args(["fuzz", "--version"])).ok()?;
        status.success().then(|| text.trim().to_owned())
    };
    if let Some(v) = version() {
        return Ok(v);
    }
    println!("==> cargo-fuzz not found; installing it with `cargo install --locked cargo-fuzz`");
    run_visible(cargo(None).args(["install", "--locked", "cargo-fuzz"]))?;
    version().context("`cargo fuzz --version` still fails after installing cargo-fuzz")
}

/// The first C++ compiler found, which libfuzzer-sys needs to build libFuzzer.
fn find_cxx() -> Option<String> {
    let from_env = std::env::var("CXX")
        .ok()
        .and_then(|cxx| cxx.split_whitespace().next().map(str::to_owned));
    from_env
        .into_iter()
        .chain(["c++", "g++", "clang++"].map(str::to_owned))
        .find(|cxx| {
            Command::new(cxx)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

pub(crate) fn build(
    project: &Project,
    toolchain: &str,
    sanitizer: Sanitizer,
    host: &str,
    targets: &[String],
    all: bool,
) -> Result<()> {
    // One invocation builds every target; a subset is built target by target.
    let runs: Vec<Option<&String>> = if all {
        vec![None]
    } else {
        targets.iter().map(Some).collect()
    };
    for target in runs {
        let mut cmd = cargo(Some(toolchain));
        cmd.current_dir(&project.root)
            .args(["fuzz", "build"])
            .args(build_flags(project, sanitizer, host));
        cmd.args(target);
        println!("==> {}", describe(&cmd));
        if let Err(e) = run_visible(&mut cmd) {
            if find_cxx().is_none() {
                return Err(e.context(
                    "no C++ compiler found (tried $CXX, c++, g++, clang++); libfuzzer-sys \
                     compiles libFuzzer's C++ runtime: install one, e.g. `apt-get install g++`",
                ));
            }
            return Err(e);
        }
    }
    for target in targets {
        let bin = project.fuzz_binary(sanitizer, host, target);
        if !bin.is_file() {
            bail!("the build succeeded but {} is missing", bin.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn build_flags_pin_profile_triple_and_target_dir() {
        let project = Project {
            root: PathBuf::from("/repo"),
        };
        let flags = build_flags(&project, Sanitizer::Address, "x86_64-unknown-linux-gnu");
        assert_eq!(
            flags,
            [
                "-O",
                "--debug-assertions",
                "--sanitizer",
                "address",
                "--target",
                "x86_64-unknown-linux-gnu",
                "--target-dir",
                "/repo/fuzz/target"
            ]
            .map(OsString::from)
        );
    }
}
