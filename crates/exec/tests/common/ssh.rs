//! SSH tools for the executor's tests: a policy, a key store holding a
//! canary key, authorized actions, and a fake `ssh` program.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;

use portcullis_gateway::{AuthorizedAction, Secret, SecretStore};
use portcullis_testkit::fakes::toml_string;
use serde_json::json;

pub const KEY_CANARY: &str =
    "-----BEGIN OPENSSH PRIVATE KEY-----\ncanary-key\n-----END OPENSSH PRIVATE KEY-----";

/// An SSH tool on 127.0.0.1:2222 running `argv` with one string argument
/// `text`.
pub fn policy(argv: &[&str], known_hosts: Option<&str>, cap: usize, timeout_ms: u64) -> String {
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

pub fn key_store() -> SecretStore {
    let mut store = SecretStore::default();
    store.insert("key", Secret::new(KEY_CANARY));
    store
}

pub fn action(argv: &[&str], text: &str, cap: usize, timeout_ms: u64) -> AuthorizedAction {
    super::authorize(
        &policy(argv, Some("/etc/portcullis/known_hosts"), cap, timeout_ms),
        key_store(),
        "run",
        json!({ "text": text }),
    )
}

pub fn strings(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_str().unwrap().to_owned())
        .collect()
}

pub fn action_with_timeout(timeout_ms: u64) -> AuthorizedAction {
    action(&["true", "{text}"], "x", 1024, timeout_ms)
}

/// A fake `ssh` written as a shell script in a temp dir.
pub struct FakeSsh {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

pub fn fake_ssh(body: &str) -> FakeSsh {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ssh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    FakeSsh { _dir: dir, path }
}
