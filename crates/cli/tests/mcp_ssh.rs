//! `portcullis mcp` with the real SSH executor against a private sshd on
//! loopback (`portcullis_exec::testing::LocalSshd`). A valid call runs
//! exactly one remote command; hostile inputs run none. Skipped, with a
//! message on stderr, where `/usr/sbin/sshd` is not installed.

mod common;

use std::path::Path;

use common::{Launch, call, hostile_cases, session};
use portcullis_exec::testing::LocalSshd;
use serde_json::json;

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
        assert_eq!(run.code(), Some(3), "case {name:?}\n{}", run.context());
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
