//! Test support: a private OpenSSH server on loopback.
//!
//! [`LocalSshd::start`] generates a host key and a client key in a fresh
//! temporary directory, writes an `sshd_config` that lets only that client
//! key in (as the current user), starts `/usr/sbin/sshd -D -e -f <config>`
//! on `127.0.0.1:<free port>` and waits until it answers with an SSH
//! banner. A `known_hosts` file pinning the host key is written next to it.
//! Dropping the value kills the server and removes the directory.
//!
//! Nothing outside the temporary directory is changed, with one
//! exception: sshd running as root refuses to start without its privilege
//! separation directory `/run/sshd`, which is created (0755, empty) when
//! missing, exactly as the distribution's service unit would.
//!
//! Used by the executor's SSH tests and by the binary's process-level tests;
//! it lives in testkit so that no shipped crate carries it.

use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use thiserror::Error;

/// Where the server binary is expected.
pub const SSHD: &str = "/usr/sbin/sshd";

/// sshd's privilege separation directory (needed when running as root).
const PRIVSEP_DIR: &str = "/run/sshd";

/// Why the server could not be started.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LocalSshdError {
    /// `/usr/sbin/sshd` does not exist (install `openssh-server`).
    #[error("{SSHD} not installed")]
    NotInstalled,
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// A helper program or the server failed.
    #[error("{what} failed: {detail}")]
    Failed {
        /// What was being done.
        what: String,
        /// Its output or log.
        detail: String,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> LocalSshdError {
    let what = what.into();
    move |source| LocalSshdError::Io { what, source }
}

/// A private sshd on `127.0.0.1`, running until dropped.
pub struct LocalSshd {
    dir: TempDir,
    child: Child,
    port: u16,
    user: String,
    identity: PathBuf,
    known_hosts: PathBuf,
    log: PathBuf,
}

impl fmt::Debug for LocalSshd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSshd")
            .field("dir", &self.dir.path())
            .field("port", &self.port)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl LocalSshd {
    /// Whether `/usr/sbin/sshd` exists.
    pub fn installed() -> bool {
        Path::new(SSHD).exists()
    }

    /// Generate keys and start the server; see the module docs.
    pub fn start() -> Result<Self, LocalSshdError> {
        if !Self::installed() {
            return Err(LocalSshdError::NotInstalled);
        }
        let dir = tempfile::Builder::new()
            .prefix("portcullis-sshd-")
            .tempdir()
            .map_err(io_err("create temporary directory"))?;
        let host_key = dir.path().join("host_ed25519_key");
        let identity = dir.path().join("client_ed25519_key");
        keygen(&host_key, "portcullis-test-host")?;
        keygen(&identity, "portcullis-test-client")?;
        let client_pub = read(&with_suffix(&identity, ".pub"))?;
        let authorized_keys = dir.path().join("authorized_keys");
        write(&authorized_keys, &client_pub)?;
        let user = run_text(Command::new("id").arg("-un"), "id -un")?;
        let uid = run_text(Command::new("id").arg("-u"), "id -u")?;
        if uid == "0" && !Path::new(PRIVSEP_DIR).exists() {
            fs::create_dir_all(PRIVSEP_DIR).map_err(io_err(format!("create {PRIVSEP_DIR}")))?;
        }
        let config = dir.path().join("sshd_config");
        let log = dir.path().join("sshd.log");
        let extra = penalty_options(dir.path(), &host_key)?;
        let mut last_error = None;
        // A port picked by binding :0 can be taken again before sshd binds
        // it; retry a few times.
        for _ in 0..5 {
            let port = free_port()?;
            write(
                &config,
                &sshd_config(port, &host_key, &authorized_keys, &extra),
            )?;
            let log_file = fs::File::create(&log).map_err(io_err("create sshd log"))?;
            let log_err = log_file.try_clone().map_err(io_err("clone sshd log"))?;
            let mut child = Command::new(SSHD)
                .arg("-D")
                .arg("-e")
                .arg("-f")
                .arg(&config)
                .env_clear()
                .env(
                    "PATH",
                    std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
                )
                .stdin(Stdio::null())
                .stdout(log_file)
                .stderr(log_err)
                .spawn()
                .map_err(io_err(format!("start {SSHD}")))?;
            match wait_ready(&mut child, port, Duration::from_secs(15)) {
                Ok(()) => {
                    let host_pub = read(&with_suffix(&host_key, ".pub"))?;
                    let known_hosts = dir.path().join("known_hosts");
                    write(
                        &known_hosts,
                        &format!("[127.0.0.1]:{port} {}\n", host_pub.trim()),
                    )?;
                    return Ok(Self {
                        dir,
                        child,
                        port,
                        user,
                        identity,
                        known_hosts,
                        log,
                    });
                }
                Err(detail) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let logged = fs::read_to_string(&log).unwrap_or_default();
                    last_error = Some(LocalSshdError::Failed {
                        what: format!("starting sshd on 127.0.0.1:{port}"),
                        detail: format!("{detail}; sshd log:\n{logged}"),
                    });
                }
            }
        }
        Err(last_error.unwrap_or_else(|| LocalSshdError::Failed {
            what: "starting sshd".into(),
            detail: "no attempt made".into(),
        }))
    }

    /// The port it listens on (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The user it lets in (the current user).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The client's private key file (0600).
    pub fn identity(&self) -> &Path {
        &self.identity
    }

    /// The client's private key text.
    pub fn identity_text(&self) -> String {
        fs::read_to_string(&self.identity).unwrap_or_default()
    }

    /// A known_hosts file with `[127.0.0.1]:<port> <host key>`.
    pub fn known_hosts(&self) -> &Path {
        &self.known_hosts
    }

    /// The temporary directory holding keys, config and log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What sshd has logged so far (for failure messages).
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A `[credentials.<name>]` section reading the client key from its
    /// file.
    pub fn credential_toml(&self, name: &str) -> String {
        format!(
            "[credentials.{name}]\nfile = {}\n",
            toml_string(&self.identity.display().to_string())
        )
    }

    /// A `[[tools]]` entry running `argv` on this server as [`Self::user`],
    /// pinned to [`Self::known_hosts`], with `credential`, `timeout_ms`,
    /// and an input schema declaring `string_args` as required strings.
    /// `argv` elements are written as TOML strings verbatim, so
    /// `{placeholder}` templates work.
    pub fn tool_toml(
        &self,
        name: &str,
        argv: &[&str],
        credential: &str,
        timeout_ms: u64,
        string_args: &[&str],
    ) -> String {
        let argv: Vec<String> = argv.iter().map(|a| toml_string(a)).collect();
        let required: Vec<String> = string_args.iter().map(|a| toml_string(a)).collect();
        let mut text = format!(
            "[[tools]]\nname = {name}\ntimeout_ms = {timeout_ms}\n[tools.ssh]\nhost = \"127.0.0.1\"\nport = {port}\nuser = {user}\nargv = [{argv}]\nallow = [\"127.0.0.1:{port}\"]\ncredential = {credential}\nknown_hosts = {known}\n[tools.input_schema]\ntype = \"object\"\nrequired = [{required}]\n",
            name = toml_string(name),
            port = self.port,
            user = toml_string(&self.user),
            argv = argv.join(", "),
            credential = toml_string(credential),
            known = toml_string(&self.known_hosts.display().to_string()),
            required = required.join(", "),
        );
        for arg in string_args {
            text.push_str(&format!("properties.{arg} = {{ type = \"string\" }}\n"));
        }
        text
    }
}

impl Drop for LocalSshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TOML basic string holding `s`.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn sshd_config(port: u16, host_key: &Path, authorized_keys: &Path, extra: &str) -> String {
    format!(
        "# Private test server written by portcullis_testkit::fakes::LocalSshd.\n\
         ListenAddress 127.0.0.1\n\
         Port {port}\n\
         HostKey {host_key}\n\
         AuthorizedKeysFile {authorized_keys}\n\
         PubkeyAuthentication yes\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         UsePAM no\n\
         StrictModes no\n\
         PidFile none\n\
         PermitRootLogin prohibit-password\n\
         AllowTcpForwarding no\n\
         AllowAgentForwarding no\n\
         X11Forwarding no\n\
         PermitTTY no\n\
         PrintMotd no\n\
         PrintLastLog no\n\
         UseDNS no\n\
         LogLevel INFO\n\
         {extra}",
        host_key = host_key.display(),
        authorized_keys = authorized_keys.display(),
    )
}

/// OpenSSH 9.8+ penalizes sources that connect without authenticating
/// (the readiness probe does); turn that off where the option exists.
fn penalty_options(dir: &Path, host_key: &Path) -> Result<String, LocalSshdError> {
    let candidate = "PerSourcePenalties no\n";
    let probe = dir.join("sshd_config.probe");
    let text = sshd_config(22, host_key, &dir.join("authorized_keys"), candidate);
    write(&probe, &text)?;
    let ok = Command::new(SSHD)
        .arg("-t")
        .arg("-f")
        .arg(&probe)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(io_err(format!("run {SSHD} -t")))?
        .success();
    let _ = fs::remove_file(&probe);
    Ok(if ok {
        candidate.to_owned()
    } else {
        String::new()
    })
}

fn keygen(path: &Path, comment: &str) -> Result<(), LocalSshdError> {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .map_err(io_err("run ssh-keygen"))?;
    if !out.status.success() {
        return Err(LocalSshdError::Failed {
            what: "ssh-keygen".into(),
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(())
}

fn run_text(command: &mut Command, what: &str) -> Result<String, LocalSshdError> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(io_err(what))?;
    if !out.status.success() {
        return Err(LocalSshdError::Failed {
            what: what.into(),
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn read(path: &Path) -> Result<String, LocalSshdError> {
    fs::read_to_string(path).map_err(io_err(format!("read {}", path.display())))
}

fn write(path: &Path, text: &str) -> Result<(), LocalSshdError> {
    fs::write(path, text).map_err(io_err(format!("write {}", path.display())))
}

fn free_port() -> Result<u16, LocalSshdError> {
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io_err("bind 127.0.0.1:0"))?;
    let port = listener
        .local_addr()
        .map_err(io_err("read the bound port"))?
        .port();
    Ok(port)
}

/// Wait until the server sends its `SSH-` banner on `port`.
fn wait_ready(child: &mut Child, port: u16, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("sshd exited early with {status}"));
        }
        if let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut banner = [0u8; 4];
            if stream.read_exact(&mut banner).is_ok() && &banner == b"SSH-" {
                return Ok(());
            }
        }
        if Instant::now() >= deadline {
            return Err(format!("no SSH banner within {}s", limit.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_strings_round_trip() {
        for s in [
            "plain",
            "with \"quotes\" and \\",
            "tab\tnl\n\r",
            "\u{1}ctl\u{7f}",
            "héllo {x}",
        ] {
            let doc = format!("v = {}", toml_string(s));
            let table: toml::Table =
                toml::from_str(&doc).unwrap_or_else(|e| panic!("{doc:?}: {e}"));
            assert_eq!(table["v"].as_str(), Some(s));
        }
    }
}
