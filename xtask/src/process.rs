//! Running tools: cargo on a chosen toolchain, and child processes whose
//! output is streamed line by line, logged, and bounded in time.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// Removes what `cargo run` (which runs xtask) sets to point at the toolchain
/// that built xtask, so that a nested `cargo +nightly ...` picks its own.
pub fn scrub_env(cmd: &mut Command) -> &mut Command {
    for var in ["CARGO", "RUSTUP_TOOLCHAIN", "RUSTC", "RUSTDOC"] {
        cmd.env_remove(var);
    }
    cmd
}

/// `cargo [+toolchain]`.
pub fn cargo(toolchain: Option<&str>) -> Command {
    let mut cmd = Command::new("cargo");
    if let Some(toolchain) = toolchain {
        cmd.arg(format!("+{toolchain}"));
    }
    scrub_env(&mut cmd);
    cmd
}

/// A shell-like rendering of a command, for logs and error messages.
pub fn describe(cmd: &Command) -> String {
    let quote = |s: &OsStr| {
        let s = s.to_string_lossy();
        if !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=+,:@%".contains(c))
        {
            s.into_owned()
        } else {
            format!("'{}'", s.replace('\'', r"'\''"))
        }
    };
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a command to completion, returning its status and its stdout
/// followed by its stderr.
pub fn capture(cmd: &mut Command) -> Result<(ExitStatus, String)> {
    let output = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("could not run `{}`", describe(cmd)))?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok((output.status, text))
}

/// Runs a command with inherited stdout/stderr and fails unless it succeeds.
pub fn run_visible(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("could not run `{}`", describe(cmd)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", describe(cmd));
    }
    Ok(())
}

/// The host triple of a toolchain, from `rustc -vV`.
pub fn host_triple(toolchain: &str) -> Result<String> {
    let mut cmd = Command::new("rustc");
    cmd.arg(format!("+{toolchain}")).arg("-vV");
    scrub_env(&mut cmd);
    let (status, text) = capture(&mut cmd)?;
    if !status.success() {
        bail!("`{}` failed: {}", describe(&cmd), text.trim());
    }
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|h| h.trim().to_owned())
        .context("`rustc -vV` printed no host triple")
}

/// How to stop a child that outlives its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kill {
    /// Kill the child only. It stays in our process group, so Ctrl-C still
    /// reaches it.
    Child,
    /// Start the child in its own process group and kill the whole group
    /// (for wrappers such as `cargo fuzz tmin` whose real work is done by
    /// grandchildren).
    Group,
}

#[derive(Debug)]
pub struct Streamed {
    pub status: ExitStatus,
    /// The deadline passed and the child was killed.
    pub timed_out: bool,
}

/// Runs `cmd`, writing every stdout/stderr line to `log` and handing it to
/// `on_line`; `on_tick` is called at least twice a second with the elapsed
/// time. The child is killed once `deadline` has passed.
pub fn run_streaming(
    cmd: &mut Command,
    log: &Path,
    deadline: Duration,
    kill: Kill,
    mut on_line: impl FnMut(&str),
    mut on_tick: impl FnMut(Duration),
) -> Result<Streamed> {
    let mut log_file = BufWriter::new(
        File::create(log).with_context(|| format!("creating log {}", log.display()))?,
    );
    writeln!(log_file, "$ {}", describe(cmd))?;
    if kill == Kill::Group {
        cmd.process_group(0);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("could not run `{}`", describe(cmd)))?;

    let (tx, rx) = mpsc::channel::<String>();
    let pipes: [Box<dyn Read + Send>; 2] = [
        Box::new(child.stdout.take().context("child stdout")?),
        Box::new(child.stderr.take().context("child stderr")?),
    ];
    for pipe in pipes {
        let tx = tx.clone();
        thread::spawn(move || {
            let mut reader = BufReader::new(pipe);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf);
                        let line = line.trim_end_matches(['\n', '\r']).to_owned();
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
    drop(tx);

    let start = Instant::now();
    let mut killed_at: Option<Instant> = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(line) => {
                writeln!(log_file, "{line}")?;
                on_line(&line);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        on_tick(start.elapsed());
        match killed_at {
            None if start.elapsed() > deadline => {
                writeln!(
                    log_file,
                    "xtask: deadline of {deadline:?} passed; killing the process"
                )?;
                match kill {
                    Kill::Child => {
                        let _ = child.kill();
                    }
                    Kill::Group => {
                        let _ = Command::new("kill")
                            .args(["-KILL", "--", &format!("-{}", child.id())])
                            .stderr(Stdio::null())
                            .status();
                    }
                }
                killed_at = Some(Instant::now());
            }
            // Output pipes may be held open by grandchildren; stop waiting.
            Some(at) if at.elapsed() > Duration::from_secs(5) => break,
            _ => {}
        }
    }
    let status = child
        .wait()
        .with_context(|| format!("waiting for `{}`", describe(cmd)))?;
    log_file.flush()?;
    Ok(Streamed {
        status,
        timed_out: killed_at.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_quotes_only_what_needs_it() {
        let mut cmd = Command::new("cargo");
        cmd.args([
            "+nightly",
            "fuzz",
            "run",
            "-max_total_time=60",
            "a b",
            "it's",
        ]);
        assert_eq!(
            describe(&cmd),
            r"cargo +nightly fuzz run -max_total_time=60 'a b' 'it'\''s'"
        );
    }

    #[test]
    fn streaming_logs_every_line_and_reports_status() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("out.log");
        let mut lines = Vec::new();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo one; echo two >&2; exit 3"]);
        let out = run_streaming(
            &mut cmd,
            &log,
            Duration::from_secs(30),
            Kill::Child,
            |l| lines.push(l.to_owned()),
            |_| {},
        )
        .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert!(!out.timed_out);
        lines.sort();
        assert_eq!(lines, ["one", "two"]);
        let logged = std::fs::read_to_string(&log).unwrap();
        assert!(logged.starts_with("$ sh -c "), "{logged}");
        assert!(
            logged.contains("one\n") && logged.contains("two\n"),
            "{logged}"
        );
    }

    #[test]
    fn streaming_kills_a_child_past_its_deadline() {
        let dir = tempfile::tempdir().unwrap();
        for kill in [Kill::Child, Kill::Group] {
            let start = Instant::now();
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            let out = run_streaming(
                &mut cmd,
                &dir.path().join("sleep.log"),
                Duration::from_millis(200),
                kill,
                |_| {},
                |_| {},
            )
            .unwrap();
            assert!(out.timed_out);
            assert!(!out.status.success());
            assert!(start.elapsed() < Duration::from_secs(10));
        }
    }
}

/// CPU seconds (user + system) used so far by this process's children that
/// have been waited for, libFuzzer's own `-jobs` workers included: a run's
/// share of a core, where wall-clock exec/s on a shared machine is not.
pub fn children_cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    cpu_secs_of_children(&stat, rustix::param::clock_ticks_per_second())
}

/// `cutime + cstime` of a `/proc/<pid>/stat` line, in seconds (proc(5):
/// fields 16 and 17, after the parenthesized command name).
fn cpu_secs_of_children(stat: &str, ticks_per_sec: u64) -> Option<f64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_comm.split_whitespace().skip(13);
    let cutime: u64 = fields.next()?.parse().ok()?;
    let cstime: u64 = fields.next()?.parse().ok()?;
    (ticks_per_sec > 0).then(|| (cutime + cstime) as f64 / ticks_per_sec as f64)
}

#[cfg(test)]
mod cpu_tests {
    use super::*;

    #[test]
    fn children_cpu_time_is_fields_sixteen_and_seventeen() {
        // A command name with spaces and parentheses, as proc(5) warns.
        let stat = "4242 (fuzz (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    7 3 250 50 20 0 1 0 12345 0 0";
        assert_eq!(cpu_secs_of_children(stat, 100), Some(3.0));
    }

    #[test]
    fn a_child_that_burns_cpu_is_counted() {
        let before = children_cpu_secs().expect("readable on Linux");
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .expect("sh runs");
        assert!(status.success());
        let after = children_cpu_secs().expect("readable on Linux");
        assert!(after > before, "{before} -> {after}");
    }
}
