//! The journal writers held to their promises (docs/audit.md): a failed
//! write or sync at any point ends the session in the file for good
//! (nothing more lands, every later append fails, so every later action
//! is denied); `session_start`, each intent and `session_end` are synced
//! before the append returns; times never go back when the clock steps
//! back; what `mcp`'s records hold; and the key's and the file's errors.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use portcullis_gateway::{
    AuthorizedAction, Config, Effect, Gateway, Outcome as ActionOutcome, Policy, RejectionRecord,
    SecretStore, Ticket,
};
use portcullis_wire::{Fingerprint, Stage};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::super::test_sink::{Failure, FlakySink, Recorder, Script, fails_closed, stepped};
use super::super::{AuditKey, Journal, JournalFile, OutcomeRecord, key_for, rfc3339};
use super::{KEY, hex_sha256, verdict};

/// A wall-clock instant on a whole millisecond, as the journal writes it.
fn instant() -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(1_790_000_000_123)
}

fn key(keyed: bool) -> Option<AuditKey> {
    keyed.then(|| AuditKey::from_bytes(KEY))
}

fn lines(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("a whole line is JSON"))
        .collect()
}

fn never_failing() -> Script {
    Script {
        chunk: usize::MAX,
        fail_at: None,
        failure: Failure::Error,
    }
}

fn rejection_body(line: u64) -> Map<String, Value> {
    let body = json!({"line": line, "stage": "json", "code": -32700,
        "fingerprint": Fingerprint::of(b"frame").to_hex()});
    body.as_object().expect("an object").clone()
}

// ---------------------------------------------------------------------------
// mcp's actions, authorized by the gateway (the only way to make one)

const POLICY: &str = r#"
[server]
name = "journal-test"

[credentials.deploy_key]
file = "/nonexistent/deploy_key"

[[tools]]
name = "service_status"
description = "Read one service's status page"
timeout_ms = 1500
[tools.http]
method = "GET"
url = "http://127.0.0.1:8080/status/{service}"
allow = ["127.0.0.1:8080"]
[tools.input_schema]
type = "object"
required = ["service"]
properties.service = { type = "string" }

[[tools]]
name = "restart_service"
description = "Restart one service"
[tools.ssh]
host = "127.0.0.1"
port = 2222
user = "deploy"
argv = ["systemctl", "restart", "{service}"]
allow = ["127.0.0.1:2222"]
credential = "deploy_key"
[tools.input_schema]
type = "object"
required = ["service"]
properties.service = { type = "string" }
"#;

/// One HTTP and one SSH action, each with the line of its call.
fn actions() -> Vec<(u64, AuthorizedAction)> {
    let policy = Policy::from_toml(POLICY, Path::new("journal-test.toml")).expect("a valid policy");
    let secrets = SecretStore::stand_ins(&policy);
    let bound = Arc::new(policy.bind_secrets(secrets));
    let mut gateway = Gateway::new(
        Arc::clone(bound.policy()),
        Arc::clone(bound.secrets()),
        Config::from_policy(&bound),
    );
    let session = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"service_status","arguments":{"service":"secret-api"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"restart_service","arguments":{"service":"secret-db"}}}"#,
        "\n",
    );
    let actions: Vec<(u64, AuthorizedAction)> = gateway
        .receive(session.as_bytes())
        .into_iter()
        .filter_map(|effect| match effect {
            Effect::Execute { line, action, .. } => Some((line, action)),
            _ => None,
        })
        .collect();
    assert_eq!(actions.len(), 2, "both calls are authorized");
    actions
}

fn rejection(line: u64) -> RejectionRecord {
    RejectionRecord {
        line,
        stage: Stage::Schema,
        code: -32602,
        fingerprint: Fingerprint::of(format!("frame {line}").as_bytes()),
    }
}

/// An mcp session of `events` written by [`Journal`]: rejections, intents
/// (synced) and outcomes, then its end, each append noted.
fn mcp_session(
    events: &[u8],
    keyed: bool,
    actions: &[(u64, AuthorizedAction)],
    sink: Box<dyn super::super::Sink>,
    rec: &mut Recorder,
) {
    let (clock, _) = stepped(instant(), &[]);
    let (mut journal, started) = Journal::on(sink, clock, key(keyed));
    rec.step(Some(started), true);
    let done = ActionOutcome::success("ok");
    let (mut next, mut open) = (0, Vec::new());
    for &event in events {
        match event % 3 {
            0 => rec.step(
                Some(journal.rejection(&rejection(u64::from(event) + 1))),
                false,
            ),
            1 => {
                let (line, action) = &actions[usize::from(event) % actions.len()];
                rec.step(
                    Some(journal.intent(Ticket(next), Some(*line), action)),
                    true,
                );
                open.push(next);
                next += 1;
            }
            _ => {
                let Some(ticket) = open.pop() else { continue };
                let record = OutcomeRecord {
                    outcome: &done,
                    executed: true,
                    cancelled: event.is_multiple_of(2),
                    late: false,
                    elapsed: Duration::from_millis(u64::from(event)),
                };
                rec.step(Some(journal.outcome(Ticket(ticket), &record)), false);
            }
        }
    }
    journal.close();
    rec.step(None, true);
}

/// A session of `events` written by [`JournalFile`] itself, ended by
/// [`JournalFile::close`] (whose result `mcp`'s close does not return).
fn file_session(events: &[u8], keyed: bool, sink: Box<dyn super::super::Sink>, rec: &mut Recorder) {
    let (clock, _) = stepped(instant(), &[]);
    let (mut journal, started) = JournalFile::start(sink, clock, "mcp", key(keyed));
    rec.step(Some(started), true);
    for &event in events {
        let sync = event.is_multiple_of(2);
        rec.step(
            Some(journal.append("rejection", rejection_body(u64::from(event) + 1), sync)),
            sync,
        );
    }
    rec.step(Some(journal.close(Map::new())), true);
}

fn chunks() -> impl Strategy<Value = usize> {
    prop_oneof![Just(usize::MAX), 40..400usize]
}

fn failures() -> impl Strategy<Value = Failure> {
    prop_oneof![Just(Failure::Error), Just(Failure::Zero)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Whatever write or sync fails, and however writes are cut, the
    /// file writer appends nothing after it and reports every later
    /// append failed.
    #[test]
    fn a_failed_write_ends_the_file_writers_session_for_good(
        events in prop::collection::vec(any::<u8>(), 0..8),
        keyed in any::<bool>(),
        chunk in chunks(),
        failure in failures(),
    ) {
        fails_closed(
            &mut |sink, rec| file_session(&events, keyed, sink, rec),
            chunk,
            failure,
            keyed.then_some(KEY),
        );
    }

    /// The same for `mcp`'s journal: once a write failed, every later
    /// intent fails, so every later action is denied.
    #[test]
    fn a_failed_write_makes_mcp_deny_every_later_action(
        events in prop::collection::vec(any::<u8>(), 0..8),
        keyed in any::<bool>(),
        chunk in chunks(),
        failure in failures(),
    ) {
        let actions = actions();
        fails_closed(
            &mut |sink, rec| mcp_session(&events, keyed, &actions, sink, rec),
            chunk,
            failure,
            keyed.then_some(KEY),
        );
    }
}

/// One session of every record `mcp` writes, whatever proptest draws: each
/// intent synced before it returns, and failing closed at every
/// operation.
#[test]
fn mcp_syncs_each_intent_and_fails_closed_at_every_operation() {
    let actions = actions();
    for keyed in [false, true] {
        fails_closed(
            &mut |sink, rec| mcp_session(&[1, 0, 4, 2, 2, 7], keyed, &actions, sink, rec),
            usize::MAX,
            Failure::Error,
            keyed.then_some(KEY),
        );
    }
}

/// A failure cut into single bytes: every byte of every line is a point
/// where the write may fail, the first record's included.
#[test]
fn a_write_failing_at_any_byte_ends_the_session_for_good() {
    fails_closed(
        &mut |sink, rec| file_session(&[1, 2], true, sink, rec),
        1,
        Failure::Error,
        Some(KEY),
    );
}

// ---------------------------------------------------------------------------
// Times

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A clock stepped back (by an administrator, by NTP) never makes a
    /// session's times go backwards; each time is one the clock showed,
    /// and the end's is the latest it showed.
    #[test]
    fn times_never_go_back_when_the_clock_steps_back(
        steps in prop::collection::vec(-5_000i64..5_000, 0..12),
    ) {
        let (sink, tape) = FlakySink::new(never_failing());
        let (clock, readings) = stepped(instant(), &steps);
        let (mut journal, started) = JournalFile::start(Box::new(sink), clock, "mcp", None);
        prop_assert!(started.is_ok());
        for line in 0..steps.len() as u64 {
            prop_assert!(journal.append("rejection", rejection_body(line + 1), false).is_ok());
        }
        prop_assert!(journal.close(Map::new()).is_ok());
        let bytes = tape.lock().expect("the tape").bytes.clone();
        let times: Vec<String> = lines(&bytes)
            .iter()
            .map(|r| r["time"].as_str().expect("a time").to_owned())
            .collect();
        let shown: Vec<String> = readings
            .lock()
            .expect("the readings")
            .iter()
            .map(|&t| rfc3339(t))
            .collect();
        for pair in times.windows(2) {
            prop_assert!(pair[0] <= pair[1], "times go back: {:?}", times);
        }
        for time in &times {
            prop_assert!(shown.contains(time), "{} is no time the clock showed: {:?}", time, shown);
        }
        prop_assert_eq!(times.last(), shown.iter().max());
        let v = verdict(&bytes, None, false);
        prop_assert!(v.ok(), "{:#?}", v.problems);
    }
}

#[test]
fn a_clock_stepped_back_leaves_the_times_where_they_were() {
    let (sink, tape) = FlakySink::new(never_failing());
    let (clock, _) = stepped(instant(), &[0, -3_000, 2_000, 2_000, -60_000, 500]);
    let (mut journal, started) = JournalFile::start(Box::new(sink), clock, "mcp", None);
    started.expect("the start is written");
    for line in 1..=4 {
        journal
            .append("rejection", rejection_body(line), false)
            .expect("a record");
    }
    journal.close(Map::new()).expect("the end");
    let bytes = tape.lock().expect("the tape").bytes.clone();
    let at = |ms: u64| rfc3339(instant() + Duration::from_millis(ms));
    let times: Vec<Value> = lines(&bytes).iter().map(|r| r["time"].clone()).collect();
    // The clock reads 0, -3 s, -1 s, +1 s, -59 s, -58.5 s from the start.
    assert_eq!(
        times,
        [at(0), at(0), at(0), at(1_000), at(1_000), at(1_000)]
    );
    let v = verdict(&bytes, None, false);
    assert!(v.ok(), "{:#?}", v.problems);
}

/// A clock at or before the epoch (a board without a real-time clock, a
/// clock reset): the session id's nanoseconds are 0, written `0`, and the
/// journal still verifies.
#[test]
fn a_journal_written_on_a_clock_before_the_epoch_verifies() {
    for start in [UNIX_EPOCH, UNIX_EPOCH - Duration::from_secs(86_400)] {
        let (sink, tape) = FlakySink::new(never_failing());
        let (clock, _) = stepped(start, &[]);
        let (mut journal, started) = JournalFile::start(Box::new(sink), clock, "mcp", key(true));
        started.expect("the start is written");
        assert_eq!(journal.session(), format!("{}-0", std::process::id()));
        journal
            .append("rejection", rejection_body(1), false)
            .expect("a record");
        journal.close(Map::new()).expect("the end");
        let bytes = tape.lock().expect("the tape").bytes.clone();
        let v = verdict(&bytes, Some(KEY), false);
        assert!(v.ok(), "{:#?}", v.problems);
    }
}

// ---------------------------------------------------------------------------
// What mcp's records hold

#[test]
fn mcp_records_hold_what_the_format_names_and_no_argument_value() {
    let actions = actions();
    let (sink, tape) = FlakySink::new(never_failing());
    let (clock, _) = stepped(instant(), &[0, 250, 250, 250, 250, 250]);
    let (mut journal, started) = Journal::on(Box::new(sink), clock, key(true));
    started.expect("the start is written");
    journal.rejection(&rejection(4)).expect("a rejection");
    for (ticket, (line, action)) in actions.iter().enumerate() {
        let ticket = Ticket(u64::try_from(ticket).expect("small"));
        journal
            .intent(ticket, Some(*line), action)
            .expect("an intent");
    }
    let failed = ActionOutcome::failure("refused");
    let record = OutcomeRecord {
        outcome: &failed,
        executed: false,
        cancelled: true,
        late: true,
        elapsed: Duration::from_millis(1_234),
    };
    journal.outcome(Ticket(1), &record).expect("an outcome");
    journal.close();
    let bytes = tape.lock().expect("the tape").bytes.clone();
    let text = String::from_utf8(bytes.clone()).expect("UTF-8");
    assert!(
        !text.contains("secret-"),
        "an argument value reached the journal: {text}"
    );
    assert!(
        !text.contains("stand-in"),
        "a credential reached the journal: {text}"
    );
    let records = lines(&bytes);
    let own = |r: &Value| -> Value {
        let mut r = r.as_object().expect("an object").clone();
        for common in ["time", "session", "seq", "prev", "mac"] {
            r.remove(common);
        }
        Value::Object(r)
    };
    let describe = |i: usize| hex_sha256(actions[i].1.describe_target().as_bytes());
    assert_eq!(
        records.iter().map(own).collect::<Vec<_>>(),
        [
            json!({"kind":"session_start","command":"mcp","keyed":true,
                "version":env!("CARGO_PKG_VERSION")}),
            json!({"kind":"rejection","line":4,"stage":"schema","code":-32602,
                "fingerprint":Fingerprint::of(b"frame 4").to_hex()}),
            json!({"kind":"intent","ticket":0,"line":3,"tool":"service_status",
                "target_kind":"http","host":"127.0.0.1","port":8080,
                "target_fingerprint":describe(0),"timeout_ms":1500}),
            json!({"kind":"intent","ticket":1,"line":4,"tool":"restart_service",
                "target_kind":"ssh","host":"127.0.0.1","port":2222,
                "target_fingerprint":describe(1),"timeout_ms":30000}),
            json!({"kind":"outcome","ticket":1,"is_error":true,"executed":false,
                "cancelled":true,"late":true,"elapsed_ms":1234}),
            json!({"kind":"session_end","records":5,"last":records[5]["prev"].clone()}),
        ]
    );
    // The session id: the process and the clock's nanoseconds at the start.
    let nanos = instant()
        .duration_since(UNIX_EPOCH)
        .expect("after the epoch");
    let session = format!("{}-{:x}", std::process::id(), nanos.as_nanos());
    assert!(records.iter().all(|r| r["session"] == session.as_str()));
    assert_eq!(records[0]["time"], rfc3339(instant()));
    assert_eq!(
        records[5]["last"].as_str(),
        Some(hex_sha256(text.lines().nth(4).expect("a fifth line").as_bytes()).as_str())
    );
    let v = verdict(&bytes, Some(KEY), false);
    assert!(v.ok(), "{:#?}", v.problems);
    // The intent of ticket 0 has no outcome: an interrupted action.
    let interrupted = &v.verifier.sessions[0].interrupted;
    assert_eq!(interrupted.len(), 1);
    assert_eq!((interrupted[0].id, interrupted[0].line), (0, 3));
}

// ---------------------------------------------------------------------------
// What the writer refuses

#[test]
fn a_body_that_sets_a_chain_member_is_refused_and_the_chain_goes_on() {
    let (sink, tape) = FlakySink::new(never_failing());
    let (clock, _) = stepped(instant(), &[]);
    let (mut journal, started) = JournalFile::start(Box::new(sink), clock, "mcp", None);
    started.expect("the start is written");
    let written = tape.lock().expect("the tape").bytes.len();
    for member in ["kind", "time", "session", "seq", "prev", "mac"] {
        let mut body = rejection_body(1);
        body.insert(member.to_owned(), json!("forged"));
        let err = journal
            .append("rejection", body, false)
            .expect_err("a body may not set a chain member");
        assert!(err.to_string().contains(member), "{member}: {err}");
        assert_eq!(
            tape.lock().expect("the tape").bytes.len(),
            written,
            "{member}"
        );
    }
    // Nothing was written: the journal is not broken, the chain goes on.
    assert!(!journal.is_broken());
    journal
        .append("rejection", rejection_body(1), false)
        .expect("a record after a refused body");
    journal.close(Map::new()).expect("the end");
    let bytes = tape.lock().expect("the tape").bytes.clone();
    assert_eq!(lines(&bytes).len(), 3);
    let v = verdict(&bytes, None, false);
    assert!(v.ok(), "{:#?}", v.problems);
}

#[test]
fn nothing_is_appended_after_the_session_end() {
    let (sink, tape) = FlakySink::new(never_failing());
    let (clock, _) = stepped(instant(), &[]);
    let (mut journal, started) = JournalFile::start(Box::new(sink), clock, "wrap", None);
    started.expect("the start is written");
    let mut forwarded = Map::new();
    forwarded.insert("forwarded".into(), json!({"tools/call": 0}));
    journal.close(forwarded).expect("the end");
    let ended = tape.lock().expect("the tape").clone();
    let err = journal
        .append("wrap_upstream_exited", Map::new(), false)
        .expect_err("a record after the end");
    assert!(err.to_string().contains("ended"), "{err}");
    assert!(journal.close(Map::new()).is_err(), "a second end");
    let after = tape.lock().expect("the tape").clone();
    assert_eq!((after.ops, after.bytes), (ended.ops, ended.bytes.clone()));
    assert!(!journal.is_broken(), "an ended session is not a failed one");
    let v = verdict(&ended.bytes, None, false);
    assert!(v.ok(), "{:#?}", v.problems);
}

// ---------------------------------------------------------------------------
// The file and the key

#[test]
fn the_journal_file_is_created_0600_and_each_run_appends_its_own_session() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("audit.jsonl");
    let sessions: Vec<String> = (0..2)
        .map(|_| {
            let mut journal = JournalFile::open(&path, "mcp", None).expect("open");
            assert!(!journal.is_broken());
            journal.close(Map::new()).expect("close");
            journal.session().to_owned()
        })
        .collect();
    assert_ne!(sessions[0], sessions[1]);
    let mode = std::fs::metadata(&path)
        .expect("the file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let bytes = std::fs::read(&path).expect("read");
    let records = lines(&bytes);
    let of: Vec<&str> = records
        .iter()
        .map(|r| r["session"].as_str().unwrap())
        .collect();
    assert_eq!(of, [&sessions[0], &sessions[0], &sessions[1], &sessions[1]]);
    let v = verdict(&bytes, None, false);
    assert!(v.ok(), "{:#?}", v.problems);
    // A journal that cannot be opened is an error, not a broken journal.
    let missing = dir.path().join("no such directory").join("audit.jsonl");
    assert!(JournalFile::open(&missing, "mcp", None).is_err());
}

#[test]
fn mcp_opens_its_session_in_the_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("audit.jsonl");
    let mut journal = Journal::open(&path, key(true)).expect("open");
    journal.rejection(&rejection(2)).expect("a rejection");
    journal.close();
    let bytes = std::fs::read(&path).expect("read");
    let records = lines(&bytes);
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["session_start", "rejection", "session_end"]);
    assert_eq!(records[0]["command"], "mcp");
    let v = verdict(&bytes, Some(KEY), false);
    assert!(v.ok(), "{:#?}", v.problems);
}

/// A journal on a pipe or a device cannot be synced: its writes still
/// count (the sync's "not supported" is no failure).
#[test]
fn a_journal_that_cannot_be_synced_still_journals() {
    let mut journal = JournalFile::open(Path::new("/dev/null"), "mcp", None).expect("open");
    assert!(!journal.is_broken());
    journal
        .append("rejection", rejection_body(1), true)
        .expect("a synced record on /dev/null");
    journal.close(Map::new()).expect("the end");
    assert!(!journal.is_broken());
}

#[test]
fn a_journal_on_a_full_device_is_broken_from_its_first_record() {
    let Ok(mut journal) = JournalFile::open(Path::new("/dev/full"), "wrap", key(true)) else {
        // No /dev/full here: the process tests judge this too.
        return;
    };
    assert!(journal.is_broken());
    let err = journal
        .append("wrap_upstream_exited", Map::new(), true)
        .expect_err("nothing after a failed write");
    assert!(err.to_string().contains("unavailable"), "{err}");
    assert!(journal.close(Map::new()).is_err());
}

#[test]
fn the_key_is_read_from_its_variable_and_never_shown() {
    const NAME: &str = "PORTCULLIS_WRITER_TEST_KEY";
    let value = |text: &str| Some(std::ffi::OsString::from(text));
    let err = |given| {
        format!(
            "{:#}",
            AuditKey::from_variable(NAME, given).expect_err("an unusable key")
        )
    };
    assert_eq!(
        err(None),
        format!("the audit key variable {NAME} is not set")
    );
    let short = "fifteen-bytes!!";
    assert_eq!(
        err(value(short)),
        format!("the audit key in {NAME} has 15 bytes; at least 16 are needed")
    );
    let good = AuditKey::from_variable(NAME, value("sixteen-bytes!!!")).expect("16 bytes");
    assert_eq!(format!("{good:?}"), "AuditKey(..)");
    // The variable as the process has it: unset here.
    let unset = format!("{:#}", AuditKey::from_env(NAME).expect_err("unset"));
    assert!(unset.contains(NAME), "{unset}");
    // `--audit-key-env` needs `--audit`; the variable is read only with both.
    let file = Some(Path::new("audit.jsonl"));
    assert!(key_for(None, None).expect("no key").is_none());
    assert!(key_for(file, None).expect("no key").is_none());
    let without = format!(
        "{:#}",
        key_for(None, Some(NAME)).expect_err("a key without a journal")
    );
    assert_eq!(without, "--audit-key-env needs --audit FILE");
    let unset = format!("{:#}", key_for(file, Some(NAME)).expect_err("unset"));
    assert!(
        unset.starts_with("cannot key the audit journal: ") && unset.contains(NAME),
        "{unset}"
    );
    // A keyed journal's debug form shows neither the key nor its bytes.
    let (sink, _) = FlakySink::new(never_failing());
    let (clock, _) = stepped(instant(), &[]);
    let (journal, _) = JournalFile::start(Box::new(sink), clock, "mcp", key(true));
    let shown = format!("{journal:?}");
    assert!(
        shown.contains("keyed: true") && !shown.contains("a-key-of"),
        "{shown}"
    );
}

#[test]
fn a_time_past_what_can_be_written_does_not_panic() {
    let far = UNIX_EPOCH + Duration::from_secs(400_000 * 365 * 86_400);
    assert!(super::parse_time(&rfc3339(far)).is_some());
    let before = UNIX_EPOCH - Duration::from_secs(1);
    assert_eq!(rfc3339(before), "1970-01-01T00:00:00.000Z");
}
