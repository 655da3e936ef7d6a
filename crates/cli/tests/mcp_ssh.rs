//! `portcullis mcp` with the real SSH executor against a private sshd on
//! loopback (`portcullis_testkit::fakes::LocalSshd`). A valid call runs
//! exactly one remote command; hostile inputs run none. Skipped, with a
//! message on stderr, where `/usr/sbin/sshd` is not installed.
//!
//! And, with a fake `ssh` that never ends (`ssh_lifetime`), nothing outlives
//! the gateway: on every way the session ends — end of input, close on an
//! invalid frame, a stdout failure, SIGTERM, SIGINT — the gateway exits
//! within a bound with its documented status, the client and its process
//! group are gone, and no identity material is left under `TMPDIR`.

mod common;
mod ssh_lifetime;

use std::path::Path;
use std::time::{Duration, Instant};

use common::hostile::{hostile_case_exit, hostile_cases};
use common::{Launch, call, session};
use portcullis_testkit::fakes::LocalSshd;
use rustix::process::Signal;
use serde_json::json;
use ssh_lifetime::{KeySource, Scenario};

fn sshd() -> Option<LocalSshd> {
    if !LocalSshd::installed() {
        eprintln!(
            "SKIP: /usr/sbin/sshd is not installed (apt-get install openssh-server); SSH process tests not run"
        );
        return None;
    }
    if which("ssh").is_none() {
        eprintln!("SKIP: no ssh client on PATH; SSH process tests not run");
        return None;
    }
    Some(LocalSshd::start().unwrap_or_else(|e| panic!("cannot start the local sshd: {e}")))
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|p| p.exists())
}

/// A policy whose `note` tool appends its argument to `marker` on the
/// remote side (argv, never shell text: the argument is `$1` of `sh -c`).
fn policy(sshd: &LocalSshd, marker: &Path) -> String {
    let script = format!("printf '%s\\n' \"$1\" >> {}", marker.display());
    let mut text =
        String::from("[server]\nname = \"ssh-process-test\"\nmax_frame_bytes = 8192\n\n");
    text.push_str(&sshd.credential_toml("deploy_key"));
    text.push('\n');
    text.push_str(&sshd.tool_toml(
        "note",
        &["sh", "-c", &script, "note", "{note}"],
        "deploy_key",
        15_000,
        &["note"],
    ));
    // tool_toml leaves additionalProperties to the gateway's default (false).
    text
}

#[test]
fn a_valid_call_runs_exactly_one_remote_command_and_hostile_inputs_none() {
    let Some(sshd) = sshd() else { return };
    let cwd = tempfile::tempdir().expect("cwd");
    let files = tempfile::tempdir().expect("files");
    let marker = files.path().join("marker");
    let policy_path = files.path().join("policy.toml");
    std::fs::write(&policy_path, policy(&sshd, &marker)).expect("policy");
    let launch = Launch::new(cwd.path(), &["mcp", "--policy"]).arg(&policy_path);

    let pwned = files.path().join("pwned");
    let hostile_note = format!("hello; touch {} #", pwned.display());
    let args = json!({ "note": hostile_note });
    for (name, input) in hostile_cases("note", &args) {
        let run = launch.run(&input);
        run.assert_clean_stdout();
        assert_eq!(
            run.code(),
            Some(hostile_case_exit(name)),
            "case {name:?}\n{}",
            run.context()
        );
        assert!(
            !marker.exists(),
            "case {name:?} ran a remote command\n{}\nsshd log:\n{}",
            run.context(),
            sshd.log()
        );
    }

    let run = launch.run(&session(&[&call(2, "note", args)]));
    run.assert_code(0);
    assert_eq!(run.assert_clean_stdout(), 2, "{}", run.context());
    let (text, is_error) = run.tool_result(2);
    assert!(
        !is_error,
        "{text}\n{}\nsshd log:\n{}",
        run.context(),
        sshd.log()
    );
    let written = std::fs::read_to_string(&marker).expect("the command ran");
    // Exactly once, with the argument as one literal word.
    assert_eq!(written, format!("{hostile_note}\n"));
    assert!(!pwned.exists(), "the argument was interpreted by a shell");
}

// ---------------------------------------------------------------------------
// Nothing outlives the gateway

/// `--grace-ms` for these runs: short, the client never ends by itself.
const GRACE_MS: u64 = 300;

/// How long after its trigger the gateway may take to exit: the grace
/// period, then killing and reaping the client.
const EXIT_BOUND: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy)]
enum Ending {
    EndOfInput,
    InvalidFrame,
    StdoutFailure,
    Signal(Signal),
}

/// Start a call to the SSH tool, wait until the fake client runs, end the
/// session by `ending`, and check what is left. Returns the exit status
/// and how long the gateway took to exit after the trigger.
fn end_while_ssh_runs(source: KeySource, ending: Ending) -> (Option<i32>, Duration) {
    let scenario = Scenario::new(source);
    let mut gateway = scenario.spawn(GRACE_MS);
    let stdout = gateway.child.stdout.take().expect("stdout");
    let (kept_stdout, drained) = match ending {
        Ending::StdoutFailure => (Some(stdout), None),
        _ => (None, Some(common::drain(stdout))),
    };
    gateway.write(&ssh_lifetime::session_with_ssh_call());
    let started = scenario.wait_for_client(Duration::from_secs(10));
    if started.is_none() {
        gateway.close_stdin();
        let _ = gateway.wait(EXIT_BOUND);
        let stderr = gateway.stderr();
        panic!(
            "the fake ssh never started ({})\nstderr:\n{stderr}",
            gateway.launch
        );
    }

    let trigger = Instant::now();
    match ending {
        Ending::EndOfInput => gateway.close_stdin(),
        Ending::InvalidFrame => gateway.write(&ssh_lifetime::invalid_frame()),
        Ending::StdoutFailure => {
            drop(kept_stdout);
            gateway.write(&ssh_lifetime::ping(3));
        }
        Ending::Signal(signal) => gateway.signal(signal),
    }
    let status = gateway.wait(EXIT_BOUND);
    let took = trigger.elapsed();
    let survivors = scenario.survivors();
    ssh_lifetime::kill_leftovers(&scenario);
    drop(gateway.stdin.take());
    let stderr = if status.is_some() {
        gateway.stderr()
    } else {
        String::new()
    };
    let status = status.unwrap_or_else(|| {
        panic!(
            "{ending:?} ({source:?}): the gateway did not exit within {EXIT_BOUND:?} ({})",
            gateway.launch
        )
    });
    if let Some(drained) = drained {
        let _ = drained.join();
    }
    assert!(
        survivors.none(),
        "{ending:?} ({source:?}): survived the gateway: {survivors:?} (exit {status:?} after {took:?})\nstderr:\n{stderr}"
    );
    eprintln!(
        "{ending:?} ({source:?}): exit {:?} after {took:?}",
        status.code()
    );
    (status.code(), took)
}

#[test]
fn end_of_input_kills_the_ssh_client_and_leaves_no_key_material() {
    let (code, took) = end_while_ssh_runs(KeySource::Env, Ending::EndOfInput);
    assert_eq!(code, Some(0));
    assert!(took >= Duration::from_millis(GRACE_MS), "{took:?}");
}

#[test]
fn end_of_input_kills_the_ssh_client_of_a_key_file_credential() {
    let (code, _) = end_while_ssh_runs(KeySource::File, Ending::EndOfInput);
    assert_eq!(code, Some(0));
}

#[test]
fn close_on_an_invalid_frame_kills_the_ssh_client_and_leaves_no_key_material() {
    let (code, _) = end_while_ssh_runs(KeySource::Env, Ending::InvalidFrame);
    assert_eq!(code, Some(3));
}

#[test]
fn a_stdout_failure_kills_the_ssh_client_and_leaves_no_key_material() {
    let (code, _) = end_while_ssh_runs(KeySource::Env, Ending::StdoutFailure);
    assert_eq!(code, Some(4));
}

#[test]
fn sigterm_kills_the_ssh_client_and_exits_143_without_waiting_for_the_grace_period() {
    let (code, took) = end_while_ssh_runs(KeySource::Env, Ending::Signal(Signal::TERM));
    assert_eq!(code, Some(143));
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn sigint_kills_the_ssh_client_and_exits_130() {
    let (code, took) = end_while_ssh_runs(KeySource::Env, Ending::Signal(Signal::INT));
    assert_eq!(code, Some(130));
    assert!(took < Duration::from_secs(3), "{took:?}");
}

/// A pid that is certainly not running: a child already reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().expect("true");
    let pid = child.id();
    child.wait().expect("wait");
    pid
}

#[test]
fn startup_sweeps_identity_material_left_by_a_dead_run_and_keeps_a_live_one() {
    let scenario = Scenario::new(KeySource::Env);
    let plant = |pid: u32, tag: &str| {
        let dir = scenario
            .tmp
            .path()
            .join(format!("portcullis-ssh-{pid}-{tag}"));
        std::fs::create_dir_all(dir.join("call-abc/home")).expect("plant");
        std::fs::write(dir.join("call-abc/identity"), &scenario.key).expect("plant key");
        dir
    };
    let stale = plant(dead_pid(), "crash1");
    // A run that is still going (it holds the lock), whatever its pid says.
    let live = plant(dead_pid(), "alive1");
    let lock = std::fs::File::open(&live).expect("open");
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).expect("lock");

    let mut gateway = scenario.spawn(GRACE_MS);
    gateway.close_stdin();
    let status = gateway.wait(EXIT_BOUND).expect("the gateway exits");
    assert_eq!(status.code(), Some(0), "{}", gateway.stderr());
    assert!(!stale.exists(), "stale identity material was left in place");
    assert!(
        live.join("call-abc/identity").exists(),
        "a live run's directory was swept"
    );
    drop(lock);
}

#[test]
fn sigterm_ends_a_gateway_blocked_on_a_client_that_stops_reading() {
    let scenario = Scenario::new(KeySource::Env);
    let mut gateway = scenario.spawn(GRACE_MS);
    // stdout is never read: once the pipe is full the core blocks in a
    // write and cannot see the signal.
    let stdout = gateway.child.stdout.take().expect("stdout");
    gateway.write(&ssh_lifetime::session_with_ssh_call());
    assert!(
        scenario.wait_for_client(Duration::from_secs(10)).is_some(),
        "the fake ssh never started"
    );
    let mut stdin = gateway.stdin.take().expect("stdin");
    let flood = std::thread::spawn(move || {
        use std::io::Write as _;
        for id in 10..20_000 {
            if stdin.write_all(&ssh_lifetime::ping(id)).is_err() {
                return;
            }
        }
    });
    // Let the pipes fill.
    std::thread::sleep(Duration::from_millis(500));
    let trigger = Instant::now();
    gateway.signal(Signal::TERM);
    let status = gateway.wait(EXIT_BOUND);
    let took = trigger.elapsed();
    let survivors = scenario.survivors();
    ssh_lifetime::kill_leftovers(&scenario);
    drop(stdout);
    let _ = flood.join();
    let status = status.expect("the gateway did not exit after SIGTERM");
    eprintln!(
        "SIGTERM with stdout blocked: exit {:?} after {took:?}",
        status.code()
    );
    assert_eq!(status.code(), Some(143));
    assert!(survivors.none(), "survived the gateway: {survivors:?}");
}
