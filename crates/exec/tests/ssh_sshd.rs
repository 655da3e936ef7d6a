//! SshExecutor against a real private sshd on 127.0.0.1 (when
//! `/usr/sbin/sshd` is installed), and the startup sweep of directories
//! left by runs that died.

mod common;

use std::path::{Path, PathBuf};

use common::ssh::{KEY_CANARY, action_with_timeout, fake_ssh};
use portcullis_exec::{RealExecutor, SshExecutor};
use portcullis_gateway::{BoundPolicy, Executor, Policy, Secret, SecretStore};
use portcullis_testkit::fakes::{LocalSshd, toml_string};
use serde_json::json;

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
    // Once the lock is released its owner is gone too. A process another
    // test forks in the meantime shares the lock's file description until
    // it execs, so the lock may outlive `drop` by a moment under load.
    let mut removed = Vec::new();
    for _ in 0..100 {
        removed = portcullis_exec::ssh::sweep_stale(tmp.path());
        if !removed.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(removed, vec![locked]);
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

/// An unlocked directory whose pid is alive is stale once it is over a
/// minute old (its pid was reused by another process); a young one is
/// kept (see the test above).
#[test]
fn the_sweep_removes_an_old_directory_whose_pid_was_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let old = scratch_with_key(tmp.path(), std::process::id(), "old000");
    let two_minutes_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(120);
    std::fs::File::open(&old)
        .unwrap()
        .set_modified(two_minutes_ago)
        .unwrap();
    let removed = portcullis_exec::ssh::sweep_stale(tmp.path());
    assert_eq!(removed, vec![old.clone()]);
    assert!(!old.exists());
}

/// Only real directories are swept: a symbolic link named like a stale
/// directory (of a dead run) is left, and so is what it points to.
#[test]
fn the_sweep_leaves_a_symbolic_link_named_like_a_stale_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("elsewhere");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep"), "kept").unwrap();
    let link = tmp.path().join(format!(
        "{}{}-link00",
        portcullis_exec::ssh::SCRATCH_PREFIX,
        dead_pid()
    ));
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let removed = portcullis_exec::ssh::sweep_stale(tmp.path());
    assert_eq!(removed, Vec::<PathBuf>::new());
    assert!(std::fs::symlink_metadata(&link).is_ok());
    assert_eq!(
        std::fs::read_to_string(target.join("keep")).unwrap(),
        "kept"
    );
}
