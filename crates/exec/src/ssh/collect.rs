//! Reading a running client's output (stdout and stderr concurrently, each
//! capped), waiting for it until the deadline, and rendering what came
//! back as the call's [`Outcome`].

use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use portcullis_gateway::Outcome;

use super::SshError;
use super::clients::Tracked;
use crate::fmt_duration;
use crate::output::{Capped, Overflow, read_capped, text_of};

/// How the child ended.
#[derive(Debug)]
pub(super) enum Waited {
    Exited(ExitStatus),
    TimedOut,
    WaitFailed(io::Error),
}

/// How long the output readers may take to see end-of-file once `ssh` has
/// ended. Only a process that inherited the pipes and outlived `ssh` can
/// hold them open that long; its output is then not collected.
const READER_GRACE: Duration = Duration::from_secs(2);

/// The end state plus stdout and stderr (`None`: still open at the grace
/// deadline).
type Collected = (Waited, Option<Capped>, Option<Capped>);

fn spawn_reader<R: io::Read + Send + 'static>(
    stream: R,
    cap: usize,
    name: &str,
) -> io::Result<mpsc::Receiver<Capped>> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(format!("ssh-{name}"))
        .spawn(move || {
            let captured = match read_capped(stream, cap, Overflow::Drain) {
                Ok(c) => c,
                Err((_, partial)) => partial,
            };
            let _ = tx.send(captured);
        })?;
    Ok(rx)
}

/// Read stdout and stderr concurrently (one thread each) while waiting for
/// the child, killing its group at the deadline.
pub(super) fn collect(
    child: &mut Tracked<'_>,
    cap: usize,
    timeout: Duration,
) -> Result<Collected, SshError> {
    let deadline = Instant::now() + timeout;
    let out = child
        .child
        .stdout
        .take()
        .map(|s| spawn_reader(s, cap, "stdout"))
        .transpose()
        .map_err(SshError::Thread)?;
    let err = child
        .child
        .stderr
        .take()
        .map(|s| spawn_reader(s, cap, "stderr"))
        .transpose()
        .map_err(SshError::Thread)?;
    let waited = wait_until(child, deadline);
    let grace = Instant::now() + READER_GRACE;
    let receive = |rx: Option<mpsc::Receiver<Capped>>| match rx {
        None => Some(Capped::default()),
        Some(rx) => rx
            .recv_timeout(grace.saturating_duration_since(Instant::now()))
            .ok(),
    };
    let out = receive(out);
    let err = receive(err);
    Ok((waited, out, err))
}

fn wait_until(child: &mut Tracked<'_>, deadline: Instant) -> Waited {
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Waited::Exited(status),
            Ok(None) => {}
            Err(e) => return Waited::WaitFailed(e),
        }
        let now = Instant::now();
        if now >= deadline {
            child.kill_and_reap();
            return Waited::TimedOut;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

pub(super) fn render(
    waited: &Waited,
    stdout: Option<&Capped>,
    stderr: Option<&Capped>,
    timeout: Duration,
) -> Outcome {
    let (headline, is_error) = match waited {
        Waited::Exited(status) => match (status.code(), status.signal()) {
            (Some(0), _) => (None, false),
            (Some(255), _) => (
                Some(
                    "ssh failed (exit status 255): connection, host key or authentication error"
                        .to_owned(),
                ),
                true,
            ),
            (Some(code), _) => (
                Some(format!("remote command failed: exit status {code}")),
                true,
            ),
            (None, Some(signal)) => (Some(format!("ssh was killed by signal {signal}")), true),
            (None, None) => (Some("ssh ended abnormally".to_owned()), true),
        },
        Waited::TimedOut => (
            Some(format!(
                "timed out after {}; the ssh client was killed",
                fmt_duration(timeout)
            )),
            true,
        ),
        Waited::WaitFailed(e) => (Some(format!("waiting for ssh failed: {e}")), true),
    };
    let mut text = String::new();
    if let Some(line) = &headline {
        text.push_str(line);
    }
    stream_section(&mut text, "stdout", stdout);
    stream_section(&mut text, "stderr", stderr);
    if text.is_empty() {
        text.push_str("exit status 0 (no output)");
    }
    Outcome { text, is_error }
}

/// Append one stream to `text`: stdout unlabelled, stderr under a
/// `[stderr]` line; then a truncation note when the cap was hit.
fn stream_section(text: &mut String, name: &str, captured: Option<&Capped>) {
    let mut section = |piece: &str| {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(piece);
    };
    let Some(captured) = captured else {
        section(&format!(
            "[{name} not collected: still open {}s after ssh ended]",
            READER_GRACE.as_secs()
        ));
        return;
    };
    if !captured.bytes.is_empty() {
        if name != "stdout" {
            section(&format!("[{name}]\n"));
        }
        section(&text_of(&captured.bytes, captured.truncated));
    }
    if captured.truncated {
        section(&format!(
            "[{name} truncated at {} bytes; {} more bytes discarded]",
            captured.bytes.len(),
            captured.discarded
        ));
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt as _;

    use super::*;

    #[test]
    fn rendering() {
        let cap = |b: &[u8]| Capped {
            bytes: b.to_vec(),
            truncated: false,
            discarded: 0,
        };
        let ok = Waited::Exited(ExitStatus::from_raw(0));
        let t = Duration::from_secs(3);
        assert_eq!(
            render(&ok, Some(&cap(b"hi\n")), Some(&cap(b"")), t),
            Outcome::success("hi\n")
        );
        assert_eq!(
            render(&ok, Some(&cap(b"")), Some(&cap(b"")), t),
            Outcome::success("exit status 0 (no output)")
        );
        assert_eq!(
            render(&ok, Some(&cap(b"out")), Some(&cap(b"warn\n")), t),
            Outcome::success("out\n[stderr]\nwarn\n")
        );
        let failed = Waited::Exited(ExitStatus::from_raw(3 << 8));
        assert_eq!(
            render(&failed, Some(&cap(b"")), Some(&cap(b"nope")), t),
            Outcome::failure("remote command failed: exit status 3\n[stderr]\nnope")
        );
        let timed = render(&Waited::TimedOut, Some(&cap(b"")), None, t);
        assert!(timed.is_error);
        assert_eq!(
            timed.text,
            "timed out after 3s; the ssh client was killed\n[stderr not collected: still open 2s after ssh ended]"
        );
        let cut = Capped {
            bytes: b"abc".to_vec(),
            truncated: true,
            discarded: 7,
        };
        assert_eq!(
            render(&ok, Some(&cut), Some(&cap(b"")), t).text,
            "abc\n[stdout truncated at 3 bytes; 7 more bytes discarded]"
        );
    }
}
