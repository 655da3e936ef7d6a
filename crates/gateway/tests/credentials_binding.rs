//! Binding credentials for a run: values come trimmed from the environment
//! or a file (a file credential remembers its path, which SSH needs), an
//! unset, empty or unreadable source is a problem named without any value,
//! and a secret never shows in `Debug`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use portcullis_gateway::policy::CredentialSource;
use portcullis_gateway::{Policy, Secret, SecretStore};

fn policy_with(credentials: BTreeMap<String, CredentialSource>) -> Policy {
    let mut policy = Policy::from_toml("[server]\nname = \"t\"\n", Path::new("p.toml")).unwrap();
    policy.credentials = credentials;
    policy
}

fn one(name: &str, source: CredentialSource) -> Policy {
    policy_with(BTreeMap::from([(name.to_owned(), source)]))
}

#[test]
fn an_environment_credential_is_bound_to_its_value() {
    // PATH is set (and not blank) wherever tests run.
    let path = std::env::var("PATH").unwrap();
    let store = SecretStore::from_environment(&one("tok", CredentialSource::Env("PATH".into())));
    let secret = store.get("tok").expect("bound");
    assert_eq!(secret.expose(), path.trim());
    assert_eq!(secret.path(), None);
    assert!(store.problems().is_empty());
}

#[test]
fn an_unset_environment_credential_is_a_problem_naming_the_variable() {
    let store = SecretStore::from_environment(&one(
        "tok",
        CredentialSource::Env("PORTCULLIS_TEST_TOKEN_UNSET".into()),
    ));
    assert!(store.get("tok").is_none());
    assert_eq!(
        store.problems()["tok"],
        "environment variable PORTCULLIS_TEST_TOKEN_UNSET is unset or empty"
    );
}

/// Set but blank: the test runs itself again with the variable set (the
/// environment of a running test binary cannot be changed safely), and the
/// child makes the assertions.
#[test]
fn a_blank_environment_credential_is_a_problem_and_binds_nothing() {
    const VAR: &str = "PORTCULLIS_TEST_TOKEN_BLANK";
    const NAME: &str = "a_blank_environment_credential_is_a_problem_and_binds_nothing";
    if let Ok(value) = std::env::var(VAR) {
        assert!(!value.is_empty() && value.trim().is_empty(), "{value:?}");
        let store = SecretStore::from_environment(&one("tok", CredentialSource::Env(VAR.into())));
        assert!(store.get("tok").is_none());
        assert_eq!(
            store.problems()["tok"],
            format!("environment variable {VAR} is unset or empty")
        );
        return;
    }
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--test-threads=1"])
        .env(VAR, " \t \n")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success() && stdout.contains("1 passed"),
        "the child run failed or ran nothing:\n{stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
}

#[test]
fn a_file_credential_is_bound_trimmed_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "  s3cret\n").unwrap();
    let store = SecretStore::from_environment(&one("tok", CredentialSource::File(file.clone())));
    let secret = store.get("tok").expect("bound");
    assert_eq!(secret.expose(), "s3cret");
    assert_eq!(secret.path(), Some(file.as_path()));
    assert!(store.problems().is_empty());
}

#[test]
fn a_blank_file_is_a_problem_and_binds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blank");
    std::fs::write(&file, " \n\t\n").unwrap();
    let store = SecretStore::from_environment(&one("tok", CredentialSource::File(file.clone())));
    assert!(store.get("tok").is_none());
    assert_eq!(
        store.problems()["tok"],
        format!("file {} is empty", file.display())
    );
}

#[test]
fn an_unreadable_file_is_a_problem_naming_the_file() {
    let missing = PathBuf::from("/nonexistent/portcullis/token");
    let store = SecretStore::from_environment(&one("tok", CredentialSource::File(missing)));
    assert!(store.get("tok").is_none());
    let problem = &store.problems()["tok"];
    assert!(
        problem.starts_with("file /nonexistent/portcullis/token: "),
        "{problem}"
    );
}

#[test]
fn every_credential_gets_its_own_entry() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key");
    std::fs::write(&file, "key-1").unwrap();
    let store = SecretStore::from_environment(&policy_with(BTreeMap::from([
        ("a".to_owned(), CredentialSource::File(file)),
        ("b".to_owned(), CredentialSource::Env("PATH".into())),
        (
            "c".to_owned(),
            CredentialSource::Env("PORTCULLIS_TEST_TOKEN_UNSET".into()),
        ),
    ])));
    assert_eq!(store.get("a").map(Secret::expose), Some("key-1"));
    assert!(store.get("b").is_some());
    assert!(store.get("c").is_none());
    assert_eq!(store.problems().keys().collect::<Vec<_>>(), ["c"]);
}

#[test]
fn stand_ins_bind_every_credential_to_a_placeholder_value() {
    let policy = policy_with(BTreeMap::from([
        (
            "a".to_owned(),
            CredentialSource::Env("PORTCULLIS_TEST_TOKEN_UNSET".into()),
        ),
        (
            "b".to_owned(),
            CredentialSource::File("/nonexistent".into()),
        ),
    ]));
    let store = SecretStore::stand_ins(&policy);
    assert_eq!(store.get("a").map(Secret::expose), Some("stand-in:a"));
    assert_eq!(store.get("b").map(Secret::expose), Some("stand-in:b"));
    assert!(store.problems().is_empty());
}

#[test]
fn an_inserted_secret_is_found_by_name_and_never_debug_printed() {
    let mut store = SecretStore::default();
    store.insert("tok", Secret::new("hunter2"));
    assert_eq!(store.get("tok").map(Secret::expose), Some("hunter2"));
    assert!(store.get("other").is_none());
    assert_eq!(
        format!("{:?}", Secret::new("hunter2")),
        "Secret(<redacted>)"
    );
    assert!(!format!("{store:?}").contains("hunter2"));
}
