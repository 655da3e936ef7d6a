//! What a source file does not say about its run, read from here: the
//! commit checked out, this machine, and the file's modification date.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process::{capture, describe};
use crate::sidecar;

/// Where the date, commit and machine of a run come from when its file
/// does not record them (tests substitute fixed answers).
pub trait Local {
    fn commit(&self) -> Result<String>;
    fn machine(&self) -> String;
    /// The file's modification date, `YYYY-MM-DD` (UTC).
    fn date_of(&self, path: &Path) -> Result<String>;
}

/// This checkout on this machine.
#[derive(Debug)]
pub struct ThisMachine {
    pub root: PathBuf,
}

impl Local for ThisMachine {
    fn commit(&self) -> Result<String> {
        short_head(&self.root)
    }

    fn machine(&self) -> String {
        this_machine()
    }

    fn date_of(&self, path: &Path) -> Result<String> {
        let modified = fs::metadata(path)
            .and_then(|m| m.modified())
            .with_context(|| format!("reading the modification time of {}", path.display()))?;
        Ok(sidecar::iso_date(modified))
    }
}

/// `git rev-parse --short HEAD` in `root`.
pub fn short_head(root: &Path) -> Result<String> {
    let mut cmd = Command::new("git");
    cmd.current_dir(root).args(["rev-parse", "--short", "HEAD"]);
    let (status, text) = capture(&mut cmd).with_context(|| describe(&cmd))?;
    if !status.success() {
        bail!("`{}` failed: {}", describe(&cmd), text.trim());
    }
    Ok(text.trim().to_owned())
}

/// `2 cores, Intel(R) Xeon(R) Processor, 24 GiB`, from `/proc` and the
/// parallelism the standard library sees.
pub fn this_machine() -> String {
    describe_machine(
        std::thread::available_parallelism().ok().map(usize::from),
        fs::read_to_string("/proc/cpuinfo").ok().as_deref(),
        fs::read_to_string("/proc/meminfo").ok().as_deref(),
    )
}

/// The machine's description from what could be read of it; a part that
/// could not be read is left out.
pub fn describe_machine(
    cores: Option<usize>,
    cpuinfo: Option<&str>,
    meminfo: Option<&str>,
) -> String {
    let mut parts = Vec::new();
    if let Some(cores) = cores {
        parts.push(format!("{cores} core{}", if cores == 1 { "" } else { "s" }));
    }
    let model = cpuinfo.and_then(|text| {
        text.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == "model name")
                .then(|| value.split_whitespace().collect::<Vec<_>>().join(" "))
        })
    });
    parts.extend(model.filter(|m| !m.is_empty()));
    let kib = meminfo.and_then(|text| {
        text.lines().find_map(|line| {
            let rest = line.strip_prefix("MemTotal:")?;
            rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()
        })
    });
    if let Some(kib) = kib {
        let gib = (kib as f64 / (1024.0 * 1024.0)).round();
        parts.push(format!("{gib:.0} GiB"));
    }
    if parts.is_empty() {
        "unknown machine".to_owned()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_is_cores_model_and_memory() {
        let cpuinfo = "processor\t: 0\nmodel name\t: Intel(R)  Xeon(R) Processor\nflags\t\t: fpu\n\
                       processor\t: 1\nmodel name\t: Intel(R)  Xeon(R) Processor\n";
        let meminfo = "MemTotal:       24683664 kB\nMemFree:         1000 kB\n";
        assert_eq!(
            describe_machine(Some(2), Some(cpuinfo), Some(meminfo)),
            "2 cores, Intel(R) Xeon(R) Processor, 24 GiB"
        );
        assert_eq!(describe_machine(Some(1), None, None), "1 core");
        assert_eq!(
            describe_machine(None, Some(""), Some("")),
            "unknown machine"
        );
    }

    #[test]
    fn this_checkout_has_a_head() {
        let head = short_head(&crate::project::Project::locate().root).unwrap();
        assert!(
            head.len() >= 7 && head.chars().all(|c| c.is_ascii_hexdigit()),
            "{head}"
        );
    }
}
