//! Which credential values a run may use. A value the scrubber cannot
//! redact (shorter than `MIN_CREDENTIAL_BYTES` after trimming), a value
//! over `MAX_CREDENTIAL_BYTES`, and a `file` that is not a regular file are
//! problems, like a missing value: nothing is bound, and the problem names
//! the variable or file and the reason, never the value. Resolving never
//! blocks on a FIFO and never reads a device.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use portcullis_gateway::policy::CredentialSource;
use portcullis_gateway::secrets::{MAX_CREDENTIAL_BYTES, MIN_CREDENTIAL_BYTES};
use portcullis_gateway::{Policy, Secret, SecretStore};

fn policy_with(credentials: BTreeMap<String, CredentialSource>) -> Policy {
    let mut policy = Policy::from_toml("[server]\nname = \"t\"\n", Path::new("p.toml")).unwrap();
    policy.credentials = credentials;
    policy
}

/// Resolve `sources` on a thread of its own, so a resolution that blocks
/// fails the test instead of hanging it.
fn resolve(sources: &[(&str, CredentialSource)]) -> SecretStore {
    let policy = policy_with(
        sources
            .iter()
            .map(|(name, source)| ((*name).to_owned(), source.clone()))
            .collect(),
    );
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(SecretStore::from_environment(&policy));
    });
    result
        .recv_timeout(Duration::from_secs(10))
        .expect("resolving the credentials blocked for 10 s")
}

fn file(source: &Path) -> CredentialSource {
    CredentialSource::File(source.to_owned())
}

/// The scrubber redacts nothing shorter than four bytes, so the gateway
/// would send such a credential and a reflecting upstream would hand it
/// to the client as it is.
#[test]
fn a_credential_shorter_than_the_scrubber_redacts_is_a_problem_naming_its_length() {
    assert_eq!(MIN_CREDENTIAL_BYTES, 4);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let three = write("three", "q#Z");
    let padded = write("padded", "  \tq#Z \n");
    // Two bytes in one character: the length is in bytes, as the
    // scrubber counts it.
    let accent = write("accent", "\u{e9}");
    let four = write("four", "q#Zx\n");
    let two_accents = write("two_accents", "\u{e9}\u{e9}");
    let store = resolve(&[
        ("three", file(&three)),
        ("padded", file(&padded)),
        ("accent", file(&accent)),
        ("four", file(&four)),
        ("two_accents", file(&two_accents)),
    ]);
    for (name, path, bytes) in [
        ("three", &three, 3),
        ("padded", &padded, 3),
        ("accent", &accent, 2),
    ] {
        assert!(store.get(name).is_none(), "{name} was bound");
        assert_eq!(
            store.problems()[name],
            format!(
                "file {} holds a value of {bytes} bytes, shorter than the 4 bytes the \
                 gateway needs to redact it from what tools return",
                path.display()
            )
        );
    }
    assert_eq!(store.get("four").map(Secret::expose), Some("q#Zx"));
    assert_eq!(
        store.get("two_accents").map(Secret::expose),
        Some("\u{e9}\u{e9}")
    );
    assert_eq!(store.problems().len(), 3, "{:?}", store.problems());
}

/// A credential file is read whole up to 64 KiB, and refused past it.
#[test]
fn a_credential_file_over_64_kib_is_a_problem() {
    assert_eq!(MAX_CREDENTIAL_BYTES, 65_536);
    let dir = tempfile::tempdir().unwrap();
    let at_cap = dir.path().join("at_cap");
    std::fs::write(&at_cap, "k".repeat(MAX_CREDENTIAL_BYTES)).unwrap();
    let one_over = dir.path().join("one_over");
    std::fs::write(&one_over, "k".repeat(MAX_CREDENTIAL_BYTES + 1)).unwrap();
    let kib_65 = dir.path().join("kib_65");
    std::fs::write(&kib_65, "k".repeat(65 * 1024)).unwrap();
    let store = resolve(&[
        ("at_cap", file(&at_cap)),
        ("one_over", file(&one_over)),
        ("kib_65", file(&kib_65)),
    ]);
    assert_eq!(
        store.get("at_cap").map(|s| s.expose().len()),
        Some(MAX_CREDENTIAL_BYTES)
    );
    for (name, path) in [("one_over", &one_over), ("kib_65", &kib_65)] {
        assert!(store.get(name).is_none(), "{name} was bound");
        assert_eq!(
            store.problems()[name],
            format!("file {} is larger than 65536 bytes", path.display())
        );
    }
}

/// A FIFO would block start-up until something writes to it, `/dev/zero`
/// would be read until memory runs out; neither is opened.
#[test]
fn a_credential_file_that_is_not_a_regular_file_is_a_problem_and_never_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .expect("mkfifo");
    let socket = dir.path().join("socket");
    let _listener = UnixListener::bind(&socket).expect("bind a unix socket");
    let mut cases: Vec<(&str, PathBuf, &str)> = vec![
        ("fifo", fifo, "a FIFO (named pipe)"),
        ("directory", dir.path().to_owned(), "a directory"),
        ("socket", socket, "a socket"),
    ];
    if Path::new("/dev/zero").exists() {
        cases.push(("zero", PathBuf::from("/dev/zero"), "a character device"));
    }
    let sources: Vec<(&str, CredentialSource)> = cases
        .iter()
        .map(|(name, path, _)| (*name, file(path)))
        .collect();
    let store = resolve(&sources);
    for (name, path, what) in &cases {
        assert!(store.get(name).is_none(), "{name} was bound");
        assert_eq!(
            store.problems()[*name],
            format!(
                "file {} is {what}; a credential file must be a regular file",
                path.display()
            )
        );
    }
}

#[test]
fn a_credential_file_that_is_not_utf8_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("binary");
    std::fs::write(&binary, b"tok\xff\xfe-value").unwrap();
    let store = resolve(&[("binary", file(&binary))]);
    assert!(store.get("binary").is_none());
    assert_eq!(
        store.problems()["binary"],
        format!("file {} is not UTF-8 text", binary.display())
    );
}

/// The environment of a running test binary cannot be changed safely, so
/// the test runs itself again with the variables set, and the child makes
/// the assertions.
#[test]
fn an_environment_credential_too_short_or_too_long_is_a_problem() {
    const SHORT: &str = "PORTCULLIS_TEST_TOKEN_SHORT";
    const LONG: &str = "PORTCULLIS_TEST_TOKEN_LONG";
    const FOUR: &str = "PORTCULLIS_TEST_TOKEN_FOUR";
    const BINARY: &str = "PORTCULLIS_TEST_TOKEN_BINARY";
    const BINARY_LONG: &str = "PORTCULLIS_TEST_TOKEN_BINARY_LONG";
    const AT_LIMIT: &str = "PORTCULLIS_TEST_TOKEN_AT_LIMIT";
    const BINARY_AT_LIMIT: &str = "PORTCULLIS_TEST_TOKEN_BINARY_AT_LIMIT";
    const NAME: &str = "an_environment_credential_too_short_or_too_long_is_a_problem";
    if std::env::var_os(SHORT).is_some() {
        let store = resolve(&[
            ("short", CredentialSource::Env(SHORT.into())),
            ("long", CredentialSource::Env(LONG.into())),
            ("four", CredentialSource::Env(FOUR.into())),
            ("binary", CredentialSource::Env(BINARY.into())),
            ("binary-long", CredentialSource::Env(BINARY_LONG.into())),
            ("at-limit", CredentialSource::Env(AT_LIMIT.into())),
            (
                "binary-at-limit",
                CredentialSource::Env(BINARY_AT_LIMIT.into()),
            ),
        ]);
        assert!(store.get("short").is_none());
        assert_eq!(
            store.problems()["short"],
            format!(
                "environment variable {SHORT} holds a value of 3 bytes, shorter than the 4 \
                 bytes the gateway needs to redact it from what tools return"
            )
        );
        assert!(store.get("long").is_none());
        assert_eq!(
            store.problems()["long"],
            format!("environment variable {LONG} is longer than 65536 bytes")
        );
        assert_eq!(store.get("four").map(Secret::expose), Some("q#Zx"));
        // Not UTF-8: said so when short, and the length still wins when long.
        assert_eq!(
            store.problems()["binary"],
            format!("environment variable {BINARY} is not UTF-8 text")
        );
        assert_eq!(
            store.problems()["binary-long"],
            format!("environment variable {BINARY_LONG} is longer than 65536 bytes")
        );
        // Exactly the limit is within it.
        assert_eq!(
            store.get("at-limit").map(|s| s.expose().len()),
            Some(MAX_CREDENTIAL_BYTES),
            "{:?}",
            store.problems().get("at-limit")
        );
        assert_eq!(
            store.problems()["binary-at-limit"],
            format!("environment variable {BINARY_AT_LIMIT} is not UTF-8 text")
        );
        return;
    }
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--test-threads=1"])
        .env(SHORT, " q#Z\n")
        .env(LONG, "k".repeat(MAX_CREDENTIAL_BYTES + 1))
        .env(FOUR, "q#Zx")
        .env(BINARY, OsStr::from_bytes(b"tok\xffen"))
        .env(
            BINARY_LONG,
            OsStr::from_bytes(&[0xff; MAX_CREDENTIAL_BYTES + 1]),
        )
        .env(AT_LIMIT, "k".repeat(MAX_CREDENTIAL_BYTES))
        .env(
            BINARY_AT_LIMIT,
            OsStr::from_bytes(&[0xff; MAX_CREDENTIAL_BYTES]),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success() && stdout.contains("1 passed"),
        "the child run failed or ran nothing:\n{stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
}
