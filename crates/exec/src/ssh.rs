//! The SSH executor: one authorized remote command, run with the system
//! OpenSSH client.
//!
//! Decisions:
//!
//! - **Local side: an argv vector, never a shell.** `ssh` is started with
//!   [`std::process::Command`]; see [`ssh_args`] for the exact options.
//!   User configuration is ignored (`-F none`), the host key must already be
//!   in the policy's `known_hosts` file (`StrictHostKeyChecking=yes`; with
//!   no `known_hosts` configured, `/dev/null` is used, so every host key is
//!   unknown and the call fails), the system-wide known hosts file is not
//!   consulted either, nothing is ever written to a known hosts file, and
//!   only the tool's identity is offered (`IdentitiesOnly=yes`, no agent).
//! - **Remote side: argv semantics preserved.** OpenSSH sends the remote
//!   command as one string, which the remote user's login shell parses.
//!   [`quote_remote_argv`] single-quotes every argument, so each element
//!   arrives as exactly one literal argument (`a b; rm -rf /` stays one
//!   argument). This assumes a POSIX-compatible login shell on the remote
//!   side (sh, bash, dash, zsh, ksh); csh-family or fish shells are not
//!   supported.
//! - **Identity.** A credential read from a file is passed by that path.
//!   One held in memory (from the environment) is written to a 0600 file in
//!   a private 0700 temporary directory that exists only for the call. A
//!   tool without a credential offers no key at all
//!   (`PubkeyAuthentication=no`), never the user's default keys.
//! - **Environment.** Cleared, except `PATH`; `HOME` points at a private
//!   empty directory. (OpenSSH takes the home directory from the password
//!   database, not `HOME`; every file it would read from there is
//!   overridden by the options above.) Stdin is `/dev/null`.
//! - **Time.** `action.timeout()` bounds the whole call: `ConnectTimeout`
//!   is set from it, and the client is killed when it is exceeded
//!   (`is_error: true`, `timed out after Ns; …`).
//! - **Output.** stdout and stderr are read concurrently, each kept up to
//!   `max_output_bytes`; the rest is drained and discarded so the remote
//!   side never blocks. UTF-8 passes as-is; anything else is reported as
//!   `<N bytes of binary content>`.
//! - **Result.** stdout, then a `[stderr]` section when stderr is not
//!   empty. Exit status 0 is success; any other status, a signal, a
//!   timeout or a failure to start `ssh` is `is_error: true` with a first
//!   line saying which. Exit status 255 is what `ssh` uses for its own
//!   failures (connection, host key, authentication); a remote command
//!   that itself exits 255 is indistinguishable from that.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use portcullis_gateway::{ActionTarget, AuthorizedAction, Executor, Outcome, SshCommand};
use thiserror::Error;

use crate::fmt_duration;
use crate::output::{Capped, Overflow, read_capped, text_of};
use crate::scrub::Scrubber;

/// The known hosts file used when a tool names none: empty, so every host
/// key is unknown and strict checking refuses the connection.
pub const NO_KNOWN_HOSTS: &str = "/dev/null";

/// `PATH` for the child when the gateway's own is unset.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Why an SSH call could not run to completion.
#[derive(Debug, Error)]
pub(crate) enum SshError {
    /// The private scratch directory or identity file could not be made.
    #[error("cannot prepare the ssh call: {0}")]
    Prepare(io::Error),
    /// The `ssh` program could not be started.
    #[error("cannot start the ssh client {program}: {source}")]
    Spawn {
        /// The program that was run.
        program: String,
        /// Why it failed.
        source: io::Error,
    },
    /// A reader thread could not be started.
    #[error("cannot start an output reader: {0}")]
    Thread(io::Error),
}

/// Runs authorized commands with the system OpenSSH client.
#[derive(Clone)]
pub struct SshExecutor {
    program: PathBuf,
}

impl fmt::Debug for SshExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshExecutor")
            .field("program", &self.program)
            .finish()
    }
}

impl Default for SshExecutor {
    fn default() -> Self {
        Self::new()
    }
}

impl SshExecutor {
    /// Runs `ssh`, found on `PATH`.
    pub fn new() -> Self {
        Self::with_program("ssh")
    }

    /// Runs the given client program (an OpenSSH `ssh`).
    pub fn with_program(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
        }
    }

    /// The client program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The full command for `cmd`: program, [`ssh_args`], cleared
    /// environment with `PATH` and `HOME = home`, stdin null, stdout and
    /// stderr piped.
    pub fn command(
        &self,
        cmd: &SshCommand,
        identity: Option<&Path>,
        home: &Path,
        timeout: Duration,
    ) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(ssh_args(cmd, identity, timeout))
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| FALLBACK_PATH.into()),
            )
            .env("HOME", home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    fn run(&self, action: &AuthorizedAction, cmd: &SshCommand) -> Outcome {
        let started = Instant::now();
        let secret = action.credential().map(|s| s.expose());
        let result = self.run_inner(action, cmd);
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(err) => Outcome::failure(err.to_string()),
        };
        let outcome = Scrubber::new(secret).scrub_outcome(outcome);
        tracing::info!(
            tool = action.tool(),
            host = cmd.host(),
            port = cmd.port(),
            is_error = outcome.is_error,
            elapsed_ms,
            "ssh action finished"
        );
        outcome
    }

    fn run_inner(&self, action: &AuthorizedAction, cmd: &SshCommand) -> Result<Outcome, SshError> {
        // One private directory per call: HOME for the child, and the
        // identity file when the key is held in memory. Removed on drop.
        let scratch = tempfile::Builder::new()
            .prefix("portcullis-ssh-")
            .tempdir()
            .map_err(SshError::Prepare)?;
        std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o700))
            .map_err(SshError::Prepare)?;
        let home = scratch.path().join("home");
        std::fs::create_dir(&home).map_err(SshError::Prepare)?;
        let identity: Option<PathBuf> = match action.credential() {
            None => None,
            Some(secret) => match secret.path() {
                Some(path) => Some(path.to_owned()),
                None => {
                    let path = scratch.path().join("identity");
                    write_private(&path, secret.expose()).map_err(SshError::Prepare)?;
                    Some(path)
                }
            },
        };
        let timeout = action.timeout();
        let mut child = self
            .command(cmd, identity.as_deref(), &home, timeout)
            .spawn()
            .map_err(|source| SshError::Spawn {
                program: self.program.display().to_string(),
                source,
            })?;
        let cap = cmd.max_output_bytes();
        let collected = collect(&mut child, cap, timeout);
        if collected.is_err() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let (waited, stdout, stderr) = collected?;
        drop(scratch);
        Ok(render(&waited, stdout.as_ref(), stderr.as_ref(), timeout))
    }
}

impl Executor for SshExecutor {
    fn execute(&self, action: &AuthorizedAction) -> Outcome {
        match action.target() {
            ActionTarget::Ssh(cmd) => self.run(action, cmd),
            ActionTarget::Http(_) => {
                Outcome::failure("internal: the SSH executor was handed an HTTP action")
            }
        }
    }
}

/// The arguments passed to `ssh` (after the program name) for `cmd`.
///
/// ```text
/// -T -n -F none
/// -o BatchMode=yes -o StrictHostKeyChecking=yes -o GlobalKnownHostsFile=/dev/null
/// -o UpdateHostKeys=no -o CheckHostIP=no
/// -o IdentitiesOnly=yes -o IdentityAgent=none
/// -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no
/// -o ForwardAgent=no -o ForwardX11=no -o ClearAllForwardings=yes
/// -o ControlMaster=no -o ControlPath=none -o PermitLocalCommand=no
/// -o ProxyCommand=none -o ProxyJump=none -o EscapeChar=none -o LogLevel=ERROR
/// -o UserKnownHostsFile=<known_hosts | /dev/null>
/// -o ConnectTimeout=<timeout rounded up to whole seconds, at least 1>
/// (-i <identity> | -o PubkeyAuthentication=no)
/// -p <port> -l <user> -- <host> <quote_remote_argv(argv)>
/// ```
pub fn ssh_args(cmd: &SshCommand, identity: Option<&Path>, timeout: Duration) -> Vec<OsString> {
    let known_hosts: OsString = cmd
        .known_hosts()
        .map_or_else(|| NO_KNOWN_HOSTS.into(), |p| p.as_os_str().to_owned());
    let connect_secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
    let mut args: Vec<OsString> = vec!["-T".into(), "-n".into(), "-F".into(), "none".into()];
    let mut opt = |o: OsString| {
        args.push("-o".into());
        args.push(o);
    };
    for fixed in [
        "BatchMode=yes",
        "StrictHostKeyChecking=yes",
        "GlobalKnownHostsFile=/dev/null",
        "UpdateHostKeys=no",
        "CheckHostIP=no",
        "IdentitiesOnly=yes",
        "IdentityAgent=none",
        "PasswordAuthentication=no",
        "KbdInteractiveAuthentication=no",
        "ForwardAgent=no",
        "ForwardX11=no",
        "ClearAllForwardings=yes",
        "ControlMaster=no",
        "ControlPath=none",
        "PermitLocalCommand=no",
        "ProxyCommand=none",
        "ProxyJump=none",
        "EscapeChar=none",
        "LogLevel=ERROR",
    ] {
        opt(fixed.into());
    }
    let mut known = OsString::from("UserKnownHostsFile=");
    known.push(&known_hosts);
    opt(known);
    opt(format!("ConnectTimeout={}", connect_secs.max(1)).into());
    match identity {
        Some(path) => {
            args.push("-i".into());
            args.push(path.as_os_str().to_owned());
        }
        None => {
            args.push("-o".into());
            args.push("PubkeyAuthentication=no".into());
        }
    }
    args.push("-p".into());
    args.push(cmd.port().to_string().into());
    args.push("-l".into());
    args.push(cmd.user().into());
    args.push("--".into());
    args.push(ssh_host(cmd.host()).into());
    args.push(quote_remote_argv(cmd.argv()).into());
    args
}

/// The host as the `ssh` command line wants it: IPv6 without brackets.
fn ssh_host(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// Join `argv` into one POSIX shell command line in which every element is
/// exactly one literal word: each is wrapped in single quotes, and each
/// `'` inside becomes `'\''` (close quote, escaped quote, reopen).
/// Nothing inside single quotes is special to a POSIX shell, so `$`, `` ` ``,
/// `;`, `|`, `*`, newlines and spaces all stay literal.
pub fn quote_remote_argv(argv: &[String]) -> String {
    let mut out = String::new();
    for (i, arg) in argv.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push('\'');
        for c in arg.chars() {
            if c == '\'' {
                out.push_str("'\\''");
            } else {
                out.push(c);
            }
        }
        out.push('\'');
    }
    out
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

fn write_private(path: &Path, key: &str) -> io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(key.as_bytes())?;
    // The store trims values; OpenSSH wants the key's final newline.
    file.write_all(b"\n")?;
    file.sync_all()
}

/// How the child ended.
#[derive(Debug)]
enum Waited {
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
/// the child, killing it at the deadline.
fn collect(child: &mut Child, cap: usize, timeout: Duration) -> Result<Collected, SshError> {
    let deadline = Instant::now() + timeout;
    let out = child
        .stdout
        .take()
        .map(|s| spawn_reader(s, cap, "stdout"))
        .transpose()
        .map_err(SshError::Thread)?;
    let err = child
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

fn wait_until(child: &mut Child, deadline: Instant) -> Waited {
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Waited::Exited(status),
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Waited::WaitFailed(e);
            }
        }
        let now = Instant::now();
        if now >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Waited::TimedOut;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

fn render(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn quoting_is_one_literal_word_per_element() {
        assert_eq!(quote_remote_argv(&s(&["ls", "-l"])), "'ls' '-l'");
        assert_eq!(quote_remote_argv(&s(&["a b; rm -rf /"])), "'a b; rm -rf /'");
        assert_eq!(quote_remote_argv(&s(&["it's"])), "'it'\\''s'");
        assert_eq!(quote_remote_argv(&s(&[""])), "''");
        assert_eq!(quote_remote_argv(&s(&["''"])), "''\\'''\\'''");
        assert_eq!(quote_remote_argv(&s(&["$(id)`id`\n*"])), "'$(id)`id`\n*'");
        assert_eq!(quote_remote_argv(&[]), "");
    }

    /// The quoting round-trips through a real POSIX shell: `sh -c` with the
    /// quoted line hands each element to `printf` as exactly one argument.
    #[test]
    fn quoting_round_trips_through_sh() {
        let args = s(&[
            "a b; touch /nonexistent/pwned",
            "it's",
            "",
            "$(echo no)",
            "`echo no`",
            "*",
            "line1\nline2",
            "back\\slash",
            "'",
            "\"dq\"",
            "~",
            "héllo",
        ]);
        let mut line = vec!["printf".to_owned(), "<%s>".to_owned()];
        line.extend(args.iter().cloned());
        let out = Command::new("/bin/sh")
            .arg("-c")
            .arg(quote_remote_argv(&line))
            .env_clear()
            .current_dir("/")
            .output()
            .expect("run /bin/sh");
        assert!(out.status.success());
        let expected: String = args.iter().map(|a| format!("<{a}>")).collect();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    }

    #[test]
    fn ipv6_hosts_lose_their_brackets() {
        assert_eq!(ssh_host("[::1]"), "::1");
        assert_eq!(ssh_host("example.com"), "example.com");
        assert_eq!(ssh_host("127.0.0.1"), "127.0.0.1");
    }

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
