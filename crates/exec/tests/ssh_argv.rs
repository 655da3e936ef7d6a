//! SshExecutor's command line: the exact `ssh` argv, the cleared
//! environment, and what a tool without known hosts or a key gets.

mod common;

use std::path::Path;
use std::time::Duration;

use common::ssh::{action, key_store, policy, strings};
use portcullis_exec::{SshExecutor, quote_remote_argv, ssh_args};
use portcullis_gateway::ActionTarget;
use serde_json::json;

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

/// `ConnectTimeout` is the action's time budget in whole seconds, rounded
/// up, and at least 1: a whole number of seconds stays as it is.
#[test]
fn connect_timeout_is_the_budget_rounded_up_to_whole_seconds() {
    let action = action(&["true", "{text}"], "x", 1024, 1000);
    let ActionTarget::Ssh(cmd) = action.target() else {
        panic!("not ssh")
    };
    for ms in [1u64, 999, 1000, 1001, 2000, 2500, 3000, 59_999, 60_000] {
        let args = strings(&ssh_args(cmd, None, Duration::from_millis(ms)));
        let whole_seconds = ms.div_ceil(1000).max(1);
        let expected = format!("ConnectTimeout={whole_seconds}");
        assert!(
            args.windows(2).any(|w| w[0] == "-o" && w[1] == expected),
            "{ms} ms: {args:?}"
        );
    }
}
