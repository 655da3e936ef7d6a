//! SshExecutor: argv construction, a fake `ssh` program for process
//! handling, and (when `/usr/sbin/sshd` is installed) a real private sshd.

mod common;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use portcullis_exec::testing::{LocalSshd, toml_string};
use portcullis_exec::{RealExecutor, SshExecutor, quote_remote_argv, ssh_args};
use portcullis_gateway::{
    ActionTarget, AuthorizedAction, BoundPolicy, Executor, Policy, Secret, SecretStore,
};
use serde_json::json;

const KEY_CANARY: &str =
    "-----BEGIN OPENSSH PRIVATE KEY-----\ncanary-key\n-----END OPENSSH PRIVATE KEY-----";

/// An SSH tool on 127.0.0.1:2222 running `argv` with one string argument
/// `text`.
fn policy(argv: &[&str], known_hosts: Option<&str>, cap: usize, timeout_ms: u64) -> String {
    let argv: Vec<String> = argv.iter().map(|a| toml_string(a)).collect();
    let known = known_hosts
        .map(|k| format!("known_hosts = {}\n", toml_string(k)))
        .unwrap_or_default();
    format!(
        r#"
[server]
name = "exec-test"

[credentials.key]
env = "PORTCULLIS_EXEC_TEST_UNUSED"

[[tools]]
name = "run"
timeout_ms = {timeout_ms}
[tools.ssh]
host = "127.0.0.1"
port = 2222
user = "deploy"
argv = [{argv}]
allow = ["127.0.0.1:2222"]
credential = "key"
max_output_bytes = {cap}
{known}[tools.input_schema]
type = "object"
required = ["text"]
properties.text = {{ type = "string" }}
"#,
        argv = argv.join(", "),
    )
}

fn key_store() -> SecretStore {
    let mut store = SecretStore::default();
    store.insert("key", Secret::new(KEY_CANARY));
    store
}

fn action(argv: &[&str], text: &str, cap: usize, timeout_ms: u64) -> AuthorizedAction {
    common::authorize(
        &policy(argv, Some("/etc/portcullis/known_hosts"), cap, timeout_ms),
        key_store(),
        "run",
        json!({ "text": text }),
    )
}

fn strings(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_str().unwrap().to_owned())
        .collect()
}

#[test]
fn argv_is_exact() {
    let action = action(&["printf", "%s", "{text}"], "a b; rm -rf /", 1024, 2500);
    let ActionTarget::Ssh(cmd) = action.target() else {
        panic!("not ssh")
    };
    let args = strings(&ssh_args(
        cmd,
        Some(Path::new("/keys/id")),
        action.timeout(),
    ));
    let expected: Vec<&str> = vec![
        "-T",
        "-n",
        "-F",
        "none",
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "GlobalKnownHostsFile=/dev/null",
        "-o",
        "UpdateHostKeys=no",
        "-o",
        "CheckHostIP=no",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "IdentityAgent=none",
        "-o",
        "PasswordAuthentication=no",
        "-o",
        "KbdInteractiveAuthentication=no",
        "-o",
        "ForwardAgent=no",
        "-o",
        "ForwardX11=no",
        "-o",
        "ClearAllForwardings=yes",
        "-o",
        "ControlMaster=no",
        "-o",
        "ControlPath=none",
        "-o",
        "PermitLocalCommand=no",
        "-o",
        "ProxyCommand=none",
        "-o",
        "ProxyJump=none",
        "-o",
        "EscapeChar=none",
        "-o",
        "LogLevel=ERROR",
        "-o",
        "UserKnownHostsFile=/etc/portcullis/known_hosts",
        "-o",
        "ConnectTimeout=3",
        "-i",
        "/keys/id",
        "-p",
        "2222",
        "-l",
        "deploy",
        "--",
        "127.0.0.1",
        "'printf' '%s' 'a b; rm -rf /'",
    ];
    assert_eq!(args, expected);
    assert_eq!(
        args.last().unwrap(),
        &quote_remote_argv(&["printf".into(), "%s".into(), "a b; rm -rf /".into()])
    );
}

#[test]
fn no_known_hosts_means_every_host_is_unknown_and_no_key_means_no_pubkey() {
    let action = common::authorize(
        &policy(&["true", "{text}"], None, 1024, 1000),
        key_store(),
        "run",
        json!({ "text": "x" }),
    );
    let ActionTarget::Ssh(cmd) = action.target() else {
        panic!("not ssh")
    };
    let args = strings(&ssh_args(cmd, None, Duration::from_millis(1)));
    let has = |pair: [&str; 2]| args.windows(2).any(|w| w == pair);
    assert!(has(["-o", "UserKnownHostsFile=/dev/null"]), "{args:?}");
    assert!(has(["-o", "StrictHostKeyChecking=yes"]), "{args:?}");
    assert!(has(["-o", "PubkeyAuthentication=no"]), "{args:?}");
    assert!(has(["-o", "ConnectTimeout=1"]), "{args:?}");
    assert!(!args.iter().any(|a| a == "-i"), "{args:?}");
}

#[test]
fn command_clears_the_environment() {
    let action = action(&["true", "{text}"], "x", 1024, 1000);
    let ActionTarget::Ssh(cmd) = action.target() else {
        panic!("not ssh")
    };
    let command = SshExecutor::with_program("/usr/bin/ssh").command(
        cmd,
        Some(Path::new("/k")),
        Path::new("/private/home"),
        action.timeout(),
    );
    assert_eq!(command.get_program(), "/usr/bin/ssh");
    let envs: Vec<String> = command
        .get_envs()
        .map(|(k, _)| k.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(envs, vec!["HOME".to_owned(), "PATH".to_owned()]);
    let home = command
        .get_envs()
        .find(|(k, _)| *k == "HOME")
        .and_then(|(_, v)| v)
        .unwrap();
    assert_eq!(home, "/private/home");
}

/// A fake `ssh` written as a shell script in a temp dir.
struct FakeSsh {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn fake_ssh(body: &str) -> FakeSsh {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ssh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    FakeSsh { _dir: dir, path }
}

#[test]
fn fake_client_sees_argv_env_and_a_private_identity_file() {
    let fake = fake_ssh(
        r#"for a in "$@"; do printf '<%s>\n' "$a"; done
echo ---
env | sort | grep -v '^PWD=' | grep -v '^SHLVL=' | grep -v '^_='
echo ---
# The identity follows -i; report its mode and content.
prev=; for a in "$@"; do if [ "$prev" = "-i" ]; then stat -L -c '%a' "$a"; cat "$a"; fi; prev=$a; done"#,
    );
    let action = action(&["printf", "%s", "{text}"], "it's $(id)", 64 * 1024, 5000);
    let outcome = SshExecutor::with_program(&fake.path).execute(&action);
    assert!(!outcome.is_error, "{outcome:?}");
    let text = outcome.text;
    assert!(
        text.contains("<'printf' '%s' 'it'\\''s $(id)'>\n"),
        "{text}"
    );
    assert!(text.contains("<127.0.0.1>\n<'printf'"), "{text}");
    let env_section = text.split("---\n").nth(1).unwrap();
    let names: Vec<&str> = env_section
        .lines()
        .map(|l| l.split('=').next().unwrap())
        .collect();
    assert_eq!(names, vec!["HOME", "PATH"], "{env_section}");
    let key_section = text.split("---\n").nth(2).unwrap();
    // The in-memory key was written 0600, with the final newline, and
    // the result text never carries it (scrubbed).
    assert!(key_section.starts_with("600\n"), "{key_section}");
    assert!(!text.contains("canary-key"), "{text}");
    assert!(key_section.contains("[redacted]"), "{key_section}");
}

/// What the fake client reports about its identity: the `-i` path, the
/// file's device:inode and type, and `HOME`.
const REPORT_IDENTITY: &str = r#"prev=; for a in "$@"; do if [ "$prev" = "-i" ]; then echo "$a"; stat -L -c '%d:%i %F' "$a"; fi; prev=$a; done; echo "$HOME""#;

/// Open descriptors of this process that are memory files with this
/// device:inode.
fn memory_files_open(dev_ino: &str) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter(|fd| {
            let Ok(meta) = std::fs::metadata(fd.path()) else {
                return false;
            };
            use std::os::unix::fs::MetadataExt;
            format!("{}:{}", meta.dev(), meta.ino()) == dev_ino
        })
        .count()
}

#[test]
fn an_in_memory_key_never_touches_a_disk_and_is_closed_after_the_call() {
    let fake = fake_ssh(REPORT_IDENTITY);
    let action = action(&["true", "{text}"], "x", 1024, 5000);
    let outcome = SshExecutor::with_program(&fake.path).execute(&action);
    assert!(!outcome.is_error, "{outcome:?}");
    let mut lines = outcome.text.lines();
    let identity = lines.next().unwrap();
    let (dev_ino, kind) = lines.next().unwrap().split_once(' ').unwrap();
    let home = lines.next().unwrap();
    // The key is reached through the gateway's descriptor table, not a
    // path on any file system.
    let prefix = format!("/proc/{}/fd/", std::process::id());
    assert!(identity.starts_with(&prefix), "{identity}");
    assert_eq!(kind, "regular file");
    assert_eq!(
        memory_files_open(dev_ino),
        0,
        "the memory file is still open"
    );
    assert!(!Path::new(home).exists());
}

#[test]
fn the_fallback_identity_file_is_private_and_removed_after_the_call() {
    let fake = fake_ssh(
        r#"prev=; for a in "$@"; do if [ "$prev" = "-i" ]; then echo "$a"; stat -c '%a' "$a"; stat -c '%a' "$(dirname "$a")"; fi; prev=$a; done; echo "$HOME""#,
    );
    let executor = SshExecutor::with_program(&fake.path).with_file_identity();
    let action = action(&["true", "{text}"], "x", 1024, 5000);
    let outcome = executor.execute(&action);
    assert!(!outcome.is_error, "{outcome:?}");
    let lines: Vec<&str> = outcome.text.lines().collect();
    let [identity, file_mode, dir_mode, home] = lines[..] else {
        panic!("{outcome:?}")
    };
    assert!(identity.ends_with("/identity"), "{identity}");
    assert_eq!((file_mode, dir_mode), ("600", "700"));
    let scratch = executor.scratch_dir().expect("a private directory");
    assert!(Path::new(identity).starts_with(&scratch), "{identity}");
    assert!(!Path::new(identity).exists());
    assert!(!Path::new(home).exists());
    drop(executor);
    assert!(
        !scratch.exists(),
        "the private directory outlived the executor"
    );
}

/// Whether `pid` is a live process (a zombie is not: it only waits to be
/// reaped).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .next()?
                .to_owned();
            Some(state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

/// Wait (at most `limit`) until `path` holds `lines` lines.
fn wait_for_lines(path: &Path, lines: usize, limit: Duration) -> Vec<u32> {
    let deadline = Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let pids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if pids.len() >= lines {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "{} never had {lines} lines",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kill leftovers by pid, so a failing test leaves nothing sleeping.
fn reap_leftovers(pids: &[u32]) {
    for &pid in pids {
        if alive(pid) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

#[test]
fn shutdown_kills_the_running_client_with_its_group_and_removes_the_private_directory() {
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("pids");
    // The client and a child of it (same process group), both sleeping.
    let fake = fake_ssh(&format!(
        "echo $$ >> {f}
sleep 300 &
echo $! >> {f}
wait",
        f = pid_file.display()
    ));
    let executor = SshExecutor::with_program(&fake.path).with_file_identity();
    let action = action(&["true", "{text}"], "x", 1024, 600_000);
    let call = {
        let executor = executor.clone();
        std::thread::spawn(move || executor.execute(&action))
    };
    let started = wait_for_lines(&pid_file, 2, Duration::from_secs(10));
    assert_eq!(executor.running(), 1);
    let scratch = executor.scratch_dir().expect("a private directory");
    let identity_files = walk_files(&scratch);
    assert!(
        identity_files.iter().any(|f| f.ends_with("identity")),
        "{identity_files:?}"
    );

    let t = Instant::now();
    assert_eq!(executor.shutdown(), 1);
    let outcome = call.join().unwrap();
    let took = t.elapsed();
    let survivors: Vec<u32> = started.iter().copied().filter(|&p| alive(p)).collect();
    reap_leftovers(&survivors);
    assert!(survivors.is_empty(), "still running: {survivors:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(outcome.is_error);
    assert!(
        outcome.text.starts_with("ssh was killed by signal 9"),
        "{outcome:?}"
    );
    assert!(executor.wait_reaped(Duration::from_secs(1)));
    assert!(!scratch.exists(), "the private directory survived shutdown");

    // Nothing starts after shutdown.
    let after = action_with_timeout(5000);
    let refused = executor.execute(&after);
    assert!(refused.is_error);
    assert!(refused.text.contains("shutting down"), "{refused:?}");
    assert_eq!(
        std::fs::read_to_string(&pid_file).unwrap().lines().count(),
        2
    );
}

fn action_with_timeout(timeout_ms: u64) -> AuthorizedAction {
    action(&["true", "{text}"], "x", 1024, timeout_ms)
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn what_the_client_leaves_running_in_its_group_is_killed_when_it_exits() {
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("pids");
    let fake = fake_ssh(&format!(
        "sleep 300 >/dev/null 2>&1 &
echo $! >> {f}
echo done",
        f = pid_file.display()
    ));
    let outcome = SshExecutor::with_program(&fake.path).execute(&action_with_timeout(5000));
    assert_eq!(outcome, portcullis_gateway::Outcome::success("done\n"));
    let left = wait_for_lines(&pid_file, 1, Duration::from_secs(1));
    // The kill is sent before the call returns; give the kernel a moment.
    let deadline = Instant::now() + Duration::from_secs(2);
    while left.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let survivors: Vec<u32> = left.iter().copied().filter(|&p| alive(p)).collect();
    reap_leftovers(&survivors);
    assert!(survivors.is_empty(), "still running: {survivors:?}");
}

#[test]
fn output_caps_and_exit_status() {
    let fake = fake_ssh(
        "head -c 100000 /dev/zero | tr '\\000' x\nhead -c 5000 /dev/zero | tr '\\000' e >&2\nexit 3",
    );
    let action = action(&["true", "{text}"], "x", 1000, 5000);
    let outcome = SshExecutor::with_program(&fake.path).execute(&action);
    assert!(outcome.is_error);
    let expected = format!(
        "remote command failed: exit status 3\n{}\n[stdout truncated at 1000 bytes; 99000 more bytes discarded]\n[stderr]\n{}\n[stderr truncated at 1000 bytes; 4000 more bytes discarded]",
        "x".repeat(1000),
        "e".repeat(1000)
    );
    assert_eq!(outcome.text, expected);
}

#[test]
fn exit_255_is_a_transport_failure() {
    let fake = fake_ssh("echo 'Host key verification failed.' >&2\nexit 255");
    let action = action(&["true", "{text}"], "x", 1000, 5000);
    let outcome = SshExecutor::with_program(&fake.path).execute(&action);
    assert!(outcome.is_error);
    assert!(
        outcome.text.starts_with("ssh failed (exit status 255)"),
        "{outcome:?}"
    );
    assert!(outcome.text.contains("Host key verification failed."));
}

#[test]
fn slow_client_is_killed_at_the_deadline() {
    let fake = fake_ssh("echo started\nexec sleep 30");
    let action = action(&["true", "{text}"], "x", 1000, 500);
    let started = Instant::now();
    let outcome = SshExecutor::with_program(&fake.path).execute(&action);
    let elapsed = started.elapsed();
    assert!(outcome.is_error);
    assert_eq!(
        outcome.text,
        "timed out after 500ms; the ssh client was killed\nstarted\n"
    );
    assert!(elapsed >= Duration::from_millis(450), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[test]
fn a_grandchild_holding_the_pipes_does_not_hang_the_call() {
    // `sleep` inherits stdout and escapes the client's process group
    // (`setsid`), so killing the group leaves it holding the pipe for a
    // while.
    let fake = fake_ssh("echo started\nsetsid sleep 6\necho never");
    let action = action(&["true", "{text}"], "x", 1000, 300);
    let started = Instant::now();
    let outcome = SshExecutor::with_program(&fake.path).execute(&action);
    let elapsed = started.elapsed();
    assert!(outcome.is_error);
    assert!(
        outcome.text.starts_with("timed out after 300ms"),
        "{outcome:?}"
    );
    assert!(
        outcome.text.contains("[stdout not collected"),
        "{outcome:?}"
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[test]
fn missing_client_is_an_error() {
    let action = action(&["true", "{text}"], "x", 1000, 500);
    let outcome = SshExecutor::with_program("/nonexistent/portcullis/ssh").execute(&action);
    assert!(outcome.is_error);
    assert!(
        outcome
            .text
            .starts_with("cannot start the ssh client /nonexistent/portcullis/ssh"),
        "{outcome:?}"
    );
}

// ---- a real sshd on 127.0.0.1 ------------------------------------------------

fn local_sshd() -> Option<LocalSshd> {
    if !LocalSshd::installed() {
        eprintln!("skipping: /usr/sbin/sshd not installed");
        return None;
    }
    Some(LocalSshd::start().unwrap_or_else(|e| panic!("starting a private sshd: {e}")))
}

/// Policy with a file-sourced key (the `Secret` carries the path).
fn sshd_policy(sshd: &LocalSshd, argv: &[&str], args: &[&str]) -> BoundPolicy {
    let text = format!(
        "[server]\nname = \"exec-sshd-test\"\n\n{}\n{}",
        sshd.credential_toml("key"),
        sshd.tool_toml("run", argv, "key", 20_000, args),
    );
    let policy = Policy::from_toml(&text, Path::new("test.toml")).expect("policy");
    let store = SecretStore::from_environment(&policy);
    assert!(store.problems().is_empty(), "{:?}", store.problems());
    policy.bind_secrets(store)
}

fn marker_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("portcullis-exec-test-")
        .tempdir()
        .unwrap()
}

#[test]
fn real_sshd_runs_the_command_exactly_once() {
    let Some(sshd) = local_sshd() else { return };
    let dir = marker_dir();
    let marker = dir.path().join("marker");
    let policy = sshd_policy(
        &sshd,
        &["sh", "-c", "echo run >> \"$1\"", "sh", "{path}"],
        &["path"],
    );
    let action =
        common::authorize_with(&policy, "run", json!({ "path": marker.to_str().unwrap() }));
    let outcome = RealExecutor::new().execute(&action);
    assert!(!outcome.is_error, "{outcome:?}\nsshd log:\n{}", sshd.log());
    assert_eq!(outcome.text, "exit status 0 (no output)");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "run\n");
}

#[test]
fn real_sshd_touch_creates_the_marker() {
    let Some(sshd) = local_sshd() else { return };
    let dir = marker_dir();
    let marker = dir.path().join("touched");
    let policy = sshd_policy(&sshd, &["touch", "{path}"], &["path"]);
    let action =
        common::authorize_with(&policy, "run", json!({ "path": marker.to_str().unwrap() }));
    let outcome = SshExecutor::new().execute(&action);
    assert!(!outcome.is_error, "{outcome:?}\nsshd log:\n{}", sshd.log());
    assert!(marker.exists());
}

#[test]
fn real_sshd_passes_metacharacters_literally() {
    let Some(sshd) = local_sshd() else { return };
    let pwned = PathBuf::from(format!("/tmp/pwned-{}", common::unique()));
    let text = format!(
        "a b; touch {} $(touch {0}) `touch {0}` 'q' \"dq\"",
        pwned.display()
    );
    let policy = sshd_policy(&sshd, &["printf", "%s", "{text}"], &["text"]);
    let action = common::authorize_with(&policy, "run", json!({ "text": text }));
    let outcome = SshExecutor::new().execute(&action);
    assert!(!outcome.is_error, "{outcome:?}\nsshd log:\n{}", sshd.log());
    assert_eq!(outcome.text, text);
    assert!(!pwned.exists(), "{} was created", pwned.display());
}

#[test]
fn real_sshd_with_an_in_memory_key() {
    let Some(sshd) = local_sshd() else { return };
    let text = format!(
        "[server]\nname = \"exec-sshd-test\"\n\n[credentials.key]\nenv = \"PORTCULLIS_EXEC_TEST_UNUSED\"\n\n{}",
        sshd.tool_toml("run", &["printf", "%s", "{text}"], "key", 20_000, &["text"]),
    );
    let mut store = SecretStore::default();
    // Trimmed, as SecretStore::from_environment would hold it.
    store.insert("key", Secret::new(sshd.identity_text().trim()));
    let action = common::authorize(&text, store, "run", json!({ "text": "from memory" }));
    // OpenSSH accepts the memory file (mode 0600, reached through /proc)
    // and the fallback file alike.
    for (how, executor) in [
        ("memory file", SshExecutor::new()),
        ("fallback file", SshExecutor::new().with_file_identity()),
    ] {
        let outcome = executor.execute(&action);
        assert_eq!(
            outcome,
            portcullis_gateway::Outcome::success("from memory"),
            "{how}\nsshd log:\n{}",
            sshd.log()
        );
    }
}

#[test]
fn real_sshd_reports_remote_exit_status_and_stderr() {
    let Some(sshd) = local_sshd() else { return };
    let policy = sshd_policy(
        &sshd,
        &[
            "sh",
            "-c",
            "echo out; echo \"$1\" >&2; exit 7",
            "sh",
            "{text}",
        ],
        &["text"],
    );
    let action = common::authorize_with(&policy, "run", json!({ "text": "oops" }));
    let outcome = SshExecutor::new().execute(&action);
    assert_eq!(
        outcome,
        portcullis_gateway::Outcome::failure(
            "remote command failed: exit status 7\nout\n[stderr]\noops\n"
        )
    );
}

#[test]
fn real_sshd_unknown_host_key_is_refused() {
    let Some(sshd) = local_sshd() else { return };
    let dir = marker_dir();
    let marker = dir.path().join("must-not-exist");
    let empty_known_hosts = dir.path().join("known_hosts");
    std::fs::write(&empty_known_hosts, "").unwrap();
    let tool = sshd
        .tool_toml("run", &["touch", "{path}"], "key", 20_000, &["path"])
        .replace(
            &toml_string(&sshd.known_hosts().display().to_string()),
            &toml_string(&empty_known_hosts.display().to_string()),
        );
    let text = format!(
        "[server]\nname = \"exec-sshd-test\"\n\n{}\n{}",
        sshd.credential_toml("key"),
        tool
    );
    let policy = Policy::from_toml(&text, Path::new("test.toml")).unwrap();
    let store = SecretStore::from_environment(&policy);
    let policy = policy.bind_secrets(store);
    let action =
        common::authorize_with(&policy, "run", json!({ "path": marker.to_str().unwrap() }));
    let outcome = SshExecutor::new().execute(&action);
    assert!(outcome.is_error, "{outcome:?}");
    assert!(
        outcome.text.starts_with("ssh failed (exit status 255)"),
        "{outcome:?}"
    );
    assert!(
        outcome.text.contains("Host key verification failed"),
        "{outcome:?}"
    );
    assert!(!marker.exists());
    // The known_hosts file was not written to.
    assert_eq!(std::fs::read_to_string(&empty_known_hosts).unwrap(), "");
}

// ---- the startup sweep ------------------------------------------------------

/// A pid that is certainly not running: a child that has been reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// `<tmp>/portcullis-ssh-<pid>-<tag>/call-x/identity` holding the key.
fn scratch_with_key(tmp: &Path, pid: u32, tag: &str) -> PathBuf {
    let dir = tmp.join(format!(
        "{}{pid}-{tag}",
        portcullis_exec::ssh::SCRATCH_PREFIX
    ));
    std::fs::create_dir_all(dir.join("call-x/home")).unwrap();
    std::fs::write(dir.join("call-x/identity"), KEY_CANARY).unwrap();
    dir
}

#[test]
fn the_sweep_removes_only_directories_of_runs_that_are_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let dead = scratch_with_key(tmp.path(), dead_pid(), "dead00");
    // Alive (this test's pid) but not locked yet, and young: a gateway
    // between creating its directory and locking it.
    let young = scratch_with_key(tmp.path(), std::process::id(), "young0");
    // Dead pid, but someone holds the lock: still in use.
    let locked = scratch_with_key(tmp.path(), dead_pid(), "locked");
    let lock = std::fs::File::open(&locked).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    // Not ours to judge.
    let other = tmp.path().join("portcullis-ssh-notapid");
    std::fs::create_dir(&other).unwrap();
    let unrelated = tmp.path().join("something-else-1-2");
    std::fs::create_dir(&unrelated).unwrap();

    let removed = portcullis_exec::ssh::sweep_stale(tmp.path());
    assert_eq!(removed, vec![dead.clone()]);
    assert!(!dead.exists());
    for kept in [&young, &locked, &other, &unrelated] {
        assert!(kept.exists(), "{} was removed", kept.display());
    }
    drop(lock);
    // Once the lock is released its owner is gone too.
    assert_eq!(portcullis_exec::ssh::sweep_stale(tmp.path()), vec![locked]);
}

#[test]
fn a_live_executor_survives_the_sweep_of_another_run() {
    let fake = fake_ssh("echo ok");
    let executor = SshExecutor::with_program(&fake.path);
    assert!(!executor.execute(&action_with_timeout(5000)).is_error);
    let scratch = executor.scratch_dir().expect("a private directory");
    let tmp = scratch.parent().unwrap();
    let removed = portcullis_exec::ssh::sweep_stale(tmp);
    assert!(!removed.contains(&scratch), "{removed:?}");
    assert!(scratch.exists());
}
