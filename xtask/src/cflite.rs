//! `cargo xtask clusterfuzzlite-check`: run `.clusterfuzzlite/build.sh` the
//! way the ClusterFuzzLite builder does (`$SRC/portcullis`, `$OUT`, `$WORK`),
//! without Docker, and check that every fuzz target lands in `$OUT`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::libfuzzer::Limits;
use crate::process::{capture, describe, run_visible, scrub_env};
use crate::project::{Project, files_in};

pub fn run(project: &Project, toolchain: &str) -> Result<()> {
    let script = project.root.join(".clusterfuzzlite").join("build.sh");
    if !script.is_file() {
        bail!("{} is missing", script.display());
    }
    let targets = project.fuzz_targets()?;

    let tmp = tempfile::Builder::new()
        .prefix("portcullis-cflite-")
        .tempdir()?;
    let (src, out, work) = (
        tmp.path().join("src"),
        tmp.path().join("out"),
        tmp.path().join("work"),
    );
    for dir in [&src, &out, &work] {
        fs::create_dir_all(dir)?;
    }
    // The builder image has the repository at $SRC/portcullis.
    let checkout = src.join("portcullis");
    std::os::unix::fs::symlink(&project.root, &checkout)
        .with_context(|| format!("linking {}", checkout.display()))?;

    let mut cmd = Command::new("bash");
    scrub_env(&mut cmd);
    cmd.arg("-eu")
        .arg(&script)
        .current_dir(&checkout)
        .env("SRC", &src)
        .env("OUT", &out)
        .env("WORK", &work)
        .env("SANITIZER", "address")
        .env("FUZZING_ENGINE", "libfuzzer")
        .env("ARCHITECTURE", "x86_64")
        // The builder image's cargo is nightly; locally, pick it with rustup.
        .env("RUSTUP_TOOLCHAIN", toolchain);
    println!(
        "==> OUT={} SRC={} WORK={} RUSTUP_TOOLCHAIN={toolchain} {}",
        out.display(),
        src.display(),
        work.display(),
        describe(&cmd)
    );
    run_visible(&mut cmd)?;

    let mut problems = Vec::new();
    let empty_corpus = tmp.path().join("empty-corpus");
    fs::create_dir_all(&empty_corpus)?;
    for target in &targets {
        let bin = out.join(target);
        let executable =
            fs::metadata(&bin).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        if !executable {
            problems.push(format!("$OUT/{target} is missing or not executable"));
            continue;
        }
        let dict = out.join(format!("{target}.dict"));
        if !dict.is_file() {
            problems.push(format!("$OUT/{target}.dict is missing"));
        }
        let options = out.join(format!("{target}.options"));
        let max_len = fs::read_to_string(&options)
            .ok()
            .and_then(|text| options_max_len(&text));
        if max_len != Some(Limits::DEFAULT.max_len) {
            problems.push(format!(
                "$OUT/{target}.options sets max_len {max_len:?}, the nightly's is {} \
                 (.clusterfuzzlite/build.sh writes it)",
                Limits::DEFAULT.max_len
            ));
        }
        let seeds_expected = !files_in(&project.corpus(target))?.is_empty()
            || files_in(&project.regressions(target))?
                .iter()
                .any(|f| f.extension().is_some_and(|e| e == "bin"));
        let zip = out.join(format!("{target}_seed_corpus.zip"));
        if seeds_expected && !zip.is_file() {
            problems.push(format!("$OUT/{target}_seed_corpus.zip is missing"));
        }

        // Smoke run: the binary starts, loads the dictionary and runs inputs.
        let mut smoke = Command::new(&bin);
        smoke
            .arg("-runs=100")
            .arg(format!("-dict={}", dict.display()))
            .arg(&empty_corpus)
            .env("ASAN_OPTIONS", crate::libfuzzer::asan_options());
        let (status, text) = capture(&mut smoke)?;
        if !status.success() || !text.contains("Dictionary: ") {
            problems.push(format!(
                "$OUT/{target} smoke run failed ({status}):\n{}",
                text.lines()
                    .rev()
                    .take(15)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
        println!(
            "    {target}: binary ok, dict {}, seed corpus {}",
            if dict.is_file() { "ok" } else { "MISSING" },
            if zip.is_file() {
                format!("{} bytes", fs::metadata(&zip)?.len())
            } else if seeds_expected {
                "MISSING".to_owned()
            } else {
                "none (corpus/ and regressions/ are empty)".to_owned()
            }
        );
    }

    let mut listing: Vec<String> = files_in(&out)?
        .iter()
        .filter_map(|f| Some(f.file_name()?.to_string_lossy().into_owned()))
        .collect();
    listing.sort();
    println!("    $OUT: {}", listing.join(" "));

    if !problems.is_empty() {
        bail!(
            "ClusterFuzzLite build check failed:\n  {}",
            problems.join("\n  ")
        );
    }
    println!(
        "==> ClusterFuzzLite build check passed for {} target(s)",
        targets.len()
    );
    Ok(())
}

/// `max_len` from a ClusterFuzzLite `<target>.options` file (INI, section
/// `[libfuzzer]`), which must match the nightly's limit.
fn options_max_len(text: &str) -> Option<u64> {
    let mut in_libfuzzer = false;
    for line in text.lines().map(str::trim) {
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_libfuzzer = section.trim() == "libfuzzer";
        } else if in_libfuzzer
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "max_len"
        {
            return value.trim().parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_len_is_read_from_the_libfuzzer_section_only() {
        assert_eq!(
            options_max_len("[libfuzzer]\nmax_len = 65536\n"),
            Some(65536)
        );
        assert_eq!(
            options_max_len("[asan]\nmax_len = 1\n[libfuzzer]\ntimeout=10\nmax_len=4096\n"),
            Some(4096)
        );
        assert_eq!(options_max_len("max_len = 65536\n"), None);
        assert_eq!(options_max_len("[libfuzzer]\nmax_len = lots\n"), None);
    }
}
