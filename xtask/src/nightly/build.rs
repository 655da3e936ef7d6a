//! Building: the toolchain and cargo-fuzz the nightly needs, and the two
//! builds of the targets — the fast `none` build and the AddressSanitizer
//! build — both with coverage on the boundary crates only.

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process::{self, capture, cargo, describe, run_visible};
use crate::project::{Project, Sanitizer};

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

/// The crates whose code is the boundary: the only ones either build
/// instruments for coverage. A profile of `stdin_bytes` under cargo-fuzz's
/// flags showed most of its coverage work in dependencies (jsonschema,
/// regex, url, serde) and the testkit's oracles, which steer the fuzzer
/// little: their branches follow the boundary's.
pub const INSTRUMENTED_CRATES: [&str; 3] =
    ["portcullis-wire", "portcullis-gateway", "portcullis-wrap"];

/// Our own crates that are not instrumented but keep debug assertions and
/// overflow checks, as every cargo-fuzz build has them.
const CHECKED_CRATES: [&str; 2] = ["portcullis-testkit", "portcullis-fuzz"];

/// Coverage flags of both builds: cargo-fuzz's edge counters, PC table and
/// stack depth.
const COVERAGE_FLAGS: [&str; 6] = [
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-stack-depth",
    "-Cllvm-args=-simplifycfg-branch-fold-threshold=0",
];

/// Compare tracing (a call per comparison, which feeds libFuzzer the
/// operands to splice into inputs): ≈ 40% of the fast build's profile, so
/// only the AddressSanitizer build has it, on the boundary crates — where
/// the comparisons that matter are (method names, keys, tool names).
const TRACE_COMPARES: &str = "-Cllvm-args=-sanitizer-coverage-trace-compares";

/// `--config` values giving each crate of ours its flags for a build with
/// `sanitizer`, through cargo's unstable per-package `rustflags`
/// (`-Zprofile-rustflags`): `RUSTFLAGS` reach every crate alike.
pub fn package_configs(sanitizer: Sanitizer) -> Vec<String> {
    let list = |flags: &[&str]| {
        flags
            .iter()
            .map(|f| format!("{f:?}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let compares = match sanitizer {
        Sanitizer::Address => Some(TRACE_COMPARES),
        Sanitizer::None => None,
    };
    let instrumented = list(
        &COVERAGE_FLAGS
            .iter()
            .copied()
            .chain(compares)
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

/// What `RUSTFLAGS` carries, for every crate: the `fuzzing` cfg and one
/// codegen unit (so that ThinLTO can still inline across instrumented
/// code), as cargo-fuzz sets them; under AddressSanitizer the sanitizer
/// itself and debug assertions, as `cargo fuzz build -O
/// --debug-assertions` gives every crate — memory checks and assertions
/// stay in the dependencies; only their coverage counters go. The build
/// without a sanitizer also links mimalloc (`fuzz/src/lib.rs`), which the
/// ASan build must not.
fn global_rustflags(sanitizer: Sanitizer) -> &'static str {
    match sanitizer {
        Sanitizer::None => "--cfg fuzzing -Ccodegen-units=1 --cfg portcullis_fast_alloc",
        Sanitizer::Address => {
            "--cfg fuzzing -Ccodegen-units=1 -Zsanitizer=address -Cdebug-assertions"
        }
    }
}

/// The build of the targets with `sanitizer`: coverage on the boundary
/// crates only. Same binary paths as `cargo fuzz build --sanitizer <s>`
/// (with the nightly's target dirs).
fn build_command(
    project: &Project,
    toolchain: &str,
    sanitizer: Sanitizer,
    host: &str,
    target: Option<&String>,
) -> Command {
    let mut cmd = cargo(Some(toolchain));
    cmd.current_dir(project.fuzz_dir())
        .args(["build", "-Zprofile-rustflags", "--release"])
        .args(["--config", "profile.release.debug=\"line-tables-only\""])
        .args(["--target", host])
        .arg("--target-dir")
        .arg(project.fuzz_target_dir(sanitizer));
    for config in package_configs(sanitizer) {
        cmd.arg("--config").arg(config);
    }
    if let Some(target) = target {
        cmd.args(["--bin", target]);
    }
    cmd.env("RUSTFLAGS", global_rustflags(sanitizer));
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
        let mut cmd = build_command(project, toolchain, sanitizer, host, target);
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

    fn configured<'a>(configs: &'a [String], krate: &str) -> &'a str {
        let prefix = format!("profile.release.package.{krate}.rustflags=");
        configs
            .iter()
            .find(|c| c.starts_with(&prefix))
            .unwrap_or_else(|| panic!("{krate} is not configured: {configs:?}"))
    }

    #[test]
    fn both_builds_give_coverage_to_the_boundary_and_checks_to_all_ours() {
        for sanitizer in [Sanitizer::None, Sanitizer::Address] {
            let configs = package_configs(sanitizer);
            for krate in INSTRUMENTED_CRATES {
                let flags = configured(&configs, krate);
                assert!(flags.contains("\"-Cpasses=sancov-module\""), "{flags}");
                assert!(flags.contains("\"-Cdebug-assertions\""), "{flags}");
                assert_eq!(
                    flags.contains("trace-compares"),
                    sanitizer == Sanitizer::Address,
                    "compare tracing only under ASan: {flags}"
                );
            }
            for krate in CHECKED_CRATES {
                assert_eq!(
                    configured(&configs, krate),
                    format!("profile.release.package.{krate}.rustflags=[\"-Cdebug-assertions\"]")
                );
            }
        }
    }

    #[test]
    fn only_the_asan_build_has_the_sanitizer_and_both_have_the_fuzzing_cfg() {
        let none = global_rustflags(Sanitizer::None);
        let asan = global_rustflags(Sanitizer::Address);
        assert!(!none.contains("sanitizer"), "{none}");
        // The fast allocator would hide every heap access from ASan.
        assert!(none.contains("--cfg portcullis_fast_alloc"), "{none}");
        assert!(!asan.contains("portcullis_fast_alloc"), "{asan}");
        assert!(asan.contains("-Zsanitizer=address"), "{asan}");
        assert!(asan.contains("-Cdebug-assertions"), "{asan}");
        for flags in [none, asan] {
            assert!(flags.contains("--cfg fuzzing"), "{flags}");
            assert!(
                !flags.contains("sancov"),
                "coverage is per package: {flags}"
            );
        }
    }

    #[test]
    fn each_build_has_its_own_target_dir_and_pins_profile_and_triple() {
        let project = Project {
            root: PathBuf::from("/repo"),
        };
        for (sanitizer, dir) in [
            (Sanitizer::Address, "/repo/fuzz/target"),
            (Sanitizer::None, "/repo/fuzz/target/sanitizer-none"),
        ] {
            let cmd = build_command(
                &project,
                "nightly",
                sanitizer,
                "x86_64-unknown-linux-gnu",
                None,
            );
            let args: Vec<String> = cmd
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let after = |flag: &str| {
                let at = args.iter().position(|a| a == flag).expect(flag);
                args[at + 1].clone()
            };
            assert!(args.contains(&"--release".to_owned()), "{args:?}");
            assert_eq!(after("--target"), "x86_64-unknown-linux-gnu");
            assert_eq!(after("--target-dir"), dir);
        }
    }
}
