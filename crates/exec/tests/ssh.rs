//! SshExecutor's process handling, against a fake `ssh` program: the
//! identity it sees, process groups killed at the deadline and at shutdown,
//! output caps and exit statuses.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::spelling::{Rng, random_spelling};
use common::ssh::{action, action_with_timeout, fake_ssh};
use portcullis_exec::SshExecutor;
use portcullis_exec::scrub::MIN_CUT_PREFIX;
use portcullis_gateway::Executor;

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

/// One call (`true {text}` with a 30 s deadline) run on a thread of its
/// own, so the test can watch and stop the client while it runs.
fn execute_in_background(
    executor: &SshExecutor,
) -> std::thread::JoinHandle<portcullis_gateway::Outcome> {
    let action = action(&["true", "{text}"], "x", 1024, 30_000);
    let executor = executor.clone();
    std::thread::spawn(move || executor.execute(&action))
}

#[test]
fn shutdown_kills_the_running_client_with_its_group_and_removes_the_private_directory() {
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("pids");
    // The client and a child of it (same process group), both sleeping.
    let fake = fake_ssh(&format!(
        "echo $$ >> {f}
sleep 60 &
echo $! >> {f}
wait",
        f = pid_file.display()
    ));
    let executor = SshExecutor::with_program(&fake.path).with_file_identity();
    let call = execute_in_background(&executor);
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

/// `wait_reaped` reports a client still running (nobody killed it) as
/// not reaped once its limit passes, and waits for one that `shutdown`
/// killed until its call has reaped it. (The call's own deadline, far
/// off, only bounds the test should `shutdown` kill nothing.)
#[test]
fn wait_reaped_waits_for_killed_clients_and_reports_running_ones() {
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("pids");
    let fake = fake_ssh(&format!(
        "echo $$ >> {f}\nexec sleep 60",
        f = pid_file.display()
    ));
    let executor = SshExecutor::with_program(&fake.path);
    let call = execute_in_background(&executor);
    let started = wait_for_lines(&pid_file, 1, Duration::from_secs(10));
    assert!(!executor.wait_reaped(Duration::from_millis(20)));
    assert_eq!(executor.running(), 1);
    assert_eq!(executor.shutdown(), 1);
    let reaped = executor.wait_reaped(Duration::from_secs(60));
    let running = executor.running();
    let outcome = call.join().unwrap();
    reap_leftovers(&started);
    assert!(reaped);
    assert_eq!(running, 0);
    assert!(
        outcome.text.starts_with("ssh was killed by signal 9"),
        "{outcome:?}"
    );
}

/// `wait_reaped` waits as long as a call runs, not only for killed
/// clients: a client that ends on its own a second after it started is
/// waited for, and reaped by its call when `wait_reaped` returns.
#[test]
fn wait_reaped_waits_for_a_client_that_ends_on_its_own() {
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("pids");
    let fake = fake_ssh(&format!(
        "echo $$ >> {f}\nsleep 1\necho done",
        f = pid_file.display()
    ));
    let executor = SshExecutor::with_program(&fake.path);
    let call = execute_in_background(&executor);
    wait_for_lines(&pid_file, 1, Duration::from_secs(10));
    let reaped = executor.wait_reaped(Duration::from_secs(60));
    let running = executor.running();
    let outcome = call.join().unwrap();
    assert!(reaped);
    assert_eq!(running, 0);
    assert_eq!(outcome, portcullis_gateway::Outcome::success("done\n"));
}

/// Shutting down an executor that runs nothing kills nothing, and it
/// starts nothing afterwards.
#[test]
fn shutdown_with_nothing_running_kills_nothing_and_refuses_new_calls() {
    let fake = fake_ssh("echo ran");
    let executor = SshExecutor::with_program(&fake.path);
    assert_eq!(executor.shutdown(), 0);
    let refused = executor.execute(&action_with_timeout(5000));
    assert!(refused.is_error);
    assert_eq!(
        refused.text,
        "cannot prepare the ssh call: the gateway is shutting down"
    );
    assert!(executor.wait_reaped(Duration::ZERO));
}

/// A client killed at the deadline has been reaped (not left as a
/// process of the executor) when its call returns.
#[test]
fn a_client_killed_at_the_deadline_is_reaped_before_the_call_returns() {
    let fake = fake_ssh("echo started\nexec sleep 30");
    let executor = SshExecutor::with_program(&fake.path);
    let outcome = executor.execute(&action(&["true", "{text}"], "x", 1000, 300));
    assert!(
        outcome.text.starts_with("timed out after 300ms"),
        "{outcome:?}"
    );
    assert_eq!(executor.running(), 0);
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

/// Output that a process outliving the client (out of its group, so not
/// killed with it) writes shortly after the client ended is still
/// collected: the readers wait for end-of-file a while after `ssh` ends.
#[test]
fn output_written_just_after_the_client_ends_is_collected() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("outside");
    // The client ends only once the writer is out of its group.
    let fake = fake_ssh(&format!(
        "echo early
setsid sh -c ': > \"$0\"; sleep 0.2; echo late' '{m}' &
while [ ! -e '{m}' ]; do sleep 0.01; done
exit 0",
        m = marker.display()
    ));
    let outcome = SshExecutor::with_program(&fake.path).execute(&action_with_timeout(5000));
    assert_eq!(
        outcome,
        portcullis_gateway::Outcome::success("early\nlate\n")
    );
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

/// Output cut at the cap inside the credential loses that prefix too, as
/// HTTP bodies do: a remote command that prints the key cannot leak its
/// first bytes by running into the cap.
#[test]
fn output_cut_inside_the_credential_loses_the_prefix() {
    let prefix: String = common::ssh::KEY_CANARY.chars().take(12).collect();
    let fake = fake_ssh(&format!(
        "printf 'ok %s' '{prefix}'; head -c 5000 /dev/zero"
    ));
    let cap = 3 + prefix.len();
    let outcome =
        SshExecutor::with_program(&fake.path).execute(&action(&["true", "{text}"], "x", cap, 5000));
    assert!(!outcome.text.contains(&prefix), "{}", outcome.text);
    assert!(
        outcome.text.starts_with("ok [redacted]"),
        "{}",
        outcome.text
    );
}

/// Either stream cut at its cap inside the credential, written by the
/// spelling oracle literally or in mixed spellings, keeps no prefix of it:
/// stderr is cut as stdout is.
#[test]
fn either_stream_cut_inside_a_spelled_credential_loses_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..3 {
        let mut rng = Rng::new(seed);
        let units: Vec<String> = common::ssh::KEY_CANARY
            .chars()
            .map(|c| {
                if seed == 0 {
                    c.to_string()
                } else {
                    random_spelling(c, &mut rng)
                }
            })
            .collect();
        let file = dir.path().join(format!("output-{seed}"));
        std::fs::write(&file, format!("ok {}", units.concat())).unwrap();
        for (stream, to, label) in [("stdout", "", ""), ("stderr", " >&2", "[stderr]\n")] {
            let fake = fake_ssh(&format!(
                "cat '{}'{to}; head -c 5000 /dev/zero{to}",
                file.display()
            ));
            for whole in [MIN_CUT_PREFIX, units.len() - 1] {
                let at = units[..whole].concat().len();
                for cap in [3 + at, 3 + at + units[whole].len() - 1] {
                    let outcome = SshExecutor::with_program(&fake.path).execute(&action(
                        &["true", "{text}"],
                        "x",
                        cap,
                        5000,
                    ));
                    assert!(
                        outcome
                            .text
                            .starts_with(&format!("{label}ok [redacted]\n[{stream} truncated at ")),
                        "seed {seed}, {stream} cut at {cap}: {}",
                        outcome.text
                    );
                }
            }
        }
    }
}
