//! Building: the toolchain and cargo-fuzz the nightly needs, one `cargo fuzz
//! build` of the targets with AddressSanitizer, and the fast `none` build
//! that instruments only the boundary crates.

use std::ffi::OsString;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process::{self, capture, cargo, describe, run_visible};
use crate::project::{Project, Sanitizer};

/// `cargo fuzz build` flags of the AddressSanitizer build. `-O --debug-assertions`
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

/// The crates whose code is the boundary: the only ones the fast build
/// instruments for coverage. A profile of `stdin_bytes` under cargo-fuzz's
/// flags showed most of its coverage work in dependencies (jsonschema,
/// regex, url, serde) and the testkit's oracles, which steer the fuzzer
/// little: their branches follow the boundary's.
pub const INSTRUMENTED_CRATES: [&str; 3] =
    ["portcullis-wire", "portcullis-gateway", "portcullis-wrap"];

/// Our own crates that are not instrumented but keep debug assertions and
/// overflow checks, as every cargo-fuzz build has them.
const CHECKED_CRATES: [&str; 2] = ["portcullis-testkit", "portcullis-fuzz"];

/// Coverage flags of the fast build: cargo-fuzz's edge counters, PC table
/// and stack depth, without compare tracing (`-sanitizer-coverage-trace-
/// compares`, a call per comparison: ≈ 40% of that profile). The
/// AddressSanitizer share keeps cargo-fuzz's full instrumentation over the
/// same working corpus, so compare-guided mutation still feeds it.
const COVERAGE_FLAGS: [&str; 6] = [
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-stack-depth",
    "-Cllvm-args=-simplifycfg-branch-fold-threshold=0",
];

/// `--config` values giving each crate of ours its flags, through cargo's
/// unstable per-package `rustflags` (`-Zprofile-rustflags`): `RUSTFLAGS`
/// reach every crate alike.
pub fn lean_package_configs() -> Vec<String> {
    let list = |flags: &[&str]| {
        flags
            .iter()
            .map(|f| format!("{f:?}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let instrumented = list(
        &COVERAGE_FLAGS
            .iter()
            .copied()
            .chain(["-Cdebug-assertions"])
            .collect::<Vec<_>>(),
    );
    let checked = list(&["-Cdebug-assertions"]);
    INSTRUMENTED_CRATES
        .iter()
        .map(|krate| format!("profile.release.package.{krate}.rustflags=[{instrumented}]"))
        .chain(
            CHECKED_CRATES
                .iter()
                .map(|krate| format!("profile.release.package.{krate}.rustflags=[{checked}]")),
        )
        .collect()
}

/// The fast (`none`) build: no sanitizer, coverage on the boundary crates
/// only. Same binary paths as `cargo fuzz build --sanitizer none`.
fn lean_build_command(
    project: &Project,
    toolchain: &str,
    host: &str,
    target: Option<&String>,
) -> Command {
    let mut cmd = cargo(Some(toolchain));
    cmd.current_dir(project.fuzz_dir())
        .args(["build", "-Zprofile-rustflags", "--release"])
        .args(["--config", "profile.release.debug=\"line-tables-only\""])
        .args(["--target", host])
        .arg("--target-dir")
        .arg(project.fuzz_target_dir(Sanitizer::None));
    for config in lean_package_configs() {
        cmd.arg("--config").arg(config);
    }
    if let Some(target) = target {
        cmd.args(["--bin", target]);
    }
    // What cargo-fuzz sets for every crate: the `fuzzing` cfg, and one
    // codegen unit so that ThinLTO can still inline across instrumented code.
    cmd.env("RUSTFLAGS", "--cfg fuzzing -Ccodegen-units=1");
    cmd
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
        let mut cmd = match sanitizer {
            Sanitizer::None => lean_build_command(project, toolchain, host, target),
            Sanitizer::Address => {
                let mut cmd = cargo(Some(toolchain));
                cmd.current_dir(&project.root)
                    .args(["fuzz", "build"])
                    .args(build_flags(project, sanitizer, host));
                cmd.args(target);
                cmd
            }
        };
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

    /// The fast build must instrument crates that exist, under the names
    /// cargo knows them by: a renamed crate would silently lose coverage.
    #[test]
    fn the_instrumented_crates_are_the_workspace_boundary_crates() {
        let root = Project::locate().root;
        for krate in INSTRUMENTED_CRATES.iter().chain(&CHECKED_CRATES) {
            let found = [
                "crates/wire",
                "crates/gateway",
                "crates/wrap",
                "crates/testkit",
                "fuzz",
            ]
            .iter()
            .any(|dir| {
                std::fs::read_to_string(root.join(dir).join("Cargo.toml"))
                    .is_ok_and(|toml| toml.contains(&format!("name = \"{krate}\"")))
            });
            assert!(found, "{krate} is not the name of a crate of ours");
        }
    }

    #[test]
    fn lean_configs_give_coverage_to_the_boundary_and_checks_to_all_ours() {
        let configs = lean_package_configs();
        let wire = configs
            .iter()
            .find(|c| c.starts_with("profile.release.package.portcullis-wire.rustflags="))
            .expect("wire is configured");
        assert!(wire.contains("\"-Cpasses=sancov-module\""), "{wire}");
        assert!(wire.contains("\"-Cdebug-assertions\""), "{wire}");
        assert!(!wire.contains("trace-compares"), "{wire}");
        let testkit = configs
            .iter()
            .find(|c| c.starts_with("profile.release.package.portcullis-testkit.rustflags="))
            .expect("testkit is configured");
        assert_eq!(
            testkit,
            "profile.release.package.portcullis-testkit.rustflags=[\"-Cdebug-assertions\"]"
        );
    }

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
