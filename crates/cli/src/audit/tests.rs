use std::time::{Duration, UNIX_EPOCH};

use portcullis_wire::Stage;
use serde_json::Value;

use super::journal::rfc3339;
use super::shape::problems;
use super::verify::Tally;

#[test]
fn rfc3339_matches_known_instants() {
    let at = |secs: u64, millis: u64| {
        rfc3339(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis))
    };
    assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
    assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
    assert_eq!(at(1_700_000_000, 999), "2023-11-14T22:13:20.999Z");
    assert_eq!(at(4_107_542_399, 0), "2100-02-28T23:59:59.000Z");
    assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
}

const FP: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn rejection(session: &str) -> Value {
    serde_json::json!({"kind":"rejection","time":"2026-11-30T01:26:00.123Z","session":session,
        "line":1,"stage":"utf8","code":-32700,"fingerprint":FP})
}

fn intent(session: &str, ticket: u64) -> Value {
    serde_json::json!({"kind":"intent","time":"2026-11-30T01:26:00.123Z","session":session,
        "ticket":ticket,"line":3,"tool":"service_status","target_kind":"http",
        "host":"127.0.0.1","port":8080,"target_fingerprint":FP,"timeout_ms":30000})
}

fn outcome(session: &str, ticket: u64) -> Value {
    serde_json::json!({"kind":"outcome","time":"2026-11-30T01:26:01.000Z","session":session,
        "ticket":ticket,"is_error":false,"executed":true,"cancelled":false,"late":false,
        "elapsed_ms":12})
}

fn line(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

#[test]
fn tally_pairs_intents_with_outcomes_per_session() {
    let mut t = Tally::default();
    let lines = [
        rejection("1-a"),
        intent("1-a", 0),
        intent("2-b", 0),
        outcome("1-a", 0),
    ];
    for (i, l) in lines.iter().enumerate() {
        t.record(i + 1, &line(l)).unwrap();
    }
    assert_eq!(
        (t.rejections, t.intents, t.outcomes, t.open.len()),
        (1, 2, 1, 1)
    );
    let orphan = t.record(5, &line(&outcome("1-a", 0))).unwrap_err();
    assert!(orphan.contains("no open intent"), "{orphan}");
    let second = t.record(6, &line(&intent("2-b", 0))).unwrap_err();
    assert!(second.contains("second intent"), "{second}");
    let dup = br#"{"kind":"outcome","kind":"outcome"}"#;
    assert!(t.record(7, dup).unwrap_err().contains("strict JSON"));
}

#[test]
fn what_the_journal_writes_verifies() {
    // Times from the writer itself, at instants with every width.
    for secs in [0, 951_782_400, 1_700_000_000, 4_107_542_399] {
        let mut v = intent("4242-18f3a", 7);
        v["time"] = rfc3339(UNIX_EPOCH + Duration::from_secs(secs)).into();
        v["line"] = Value::Null;
        assert_eq!(problems(v.as_object().unwrap()), Vec::<String>::new());
    }
    for stage in Stage::ALL {
        let mut v = rejection("1-a");
        v["stage"] = stage.as_str().into();
        assert_eq!(problems(v.as_object().unwrap()), Vec::<String>::new());
    }
    let mut v = outcome("1-a", 0);
    v["time"] = "2026-11-30T01:26:00+00:00".into();
    assert_eq!(problems(v.as_object().unwrap()), Vec::<String>::new());
}

/// `base` with `key` set to `value` (or removed, for `None`): exactly
/// one problem, naming `key`, and saying `what`.
fn one_problem(base: Value, key: &str, value: Option<Value>, what: &str) {
    let mut v = base;
    let map = v.as_object_mut().unwrap();
    match value {
        Some(value) => {
            map.insert(key.to_owned(), value);
        }
        None => {
            map.remove(key);
        }
    }
    let found = problems(map);
    assert_eq!(found.len(), 1, "{key}: {found:?}");
    assert!(found[0].contains(key), "{key}: {found:?}");
    assert!(found[0].contains(what), "{key}: {found:?}");
    let mut t = Tally::default();
    assert!(t.record(1, &line(&v)).is_err());
}

#[test]
fn each_forged_member_is_refused_on_its_own() {
    use serde_json::json;
    let cases: &[(Value, &str, Option<Value>, &str)] = &[
        // The forgeries of the issue.
        (intent("1-a", 0), "time", Some(json!("garbage")), "RFC 3339"),
        (
            rejection("1-a"),
            "stage",
            Some(json!("nonsense")),
            "stage name",
        ),
        (intent("1-a", 0), "host", None, "missing"),
        (intent("1-a", 0), "target_fingerprint", None, "missing"),
        (intent("1-a", 0), "timeout_ms", None, "missing"),
        (
            outcome("1-a", 0),
            "elevated",
            Some(json!(true)),
            "unknown member",
        ),
        (
            rejection("1-a"),
            "raw",
            Some(json!("frame bytes")),
            "unknown member",
        ),
        // Times: not RFC 3339, or not UTC.
        (
            intent("1-a", 0),
            "time",
            Some(json!("2026-11-30 01:26:00")),
            "RFC 3339",
        ),
        (
            intent("1-a", 0),
            "time",
            Some(json!("2026-13-30T01:26:00Z")),
            "RFC 3339",
        ),
        (
            intent("1-a", 0),
            "time",
            Some(json!("2026-11-30T01:26:00")),
            "RFC 3339",
        ),
        (
            intent("1-a", 0),
            "time",
            Some(json!(1_764_465_960)),
            "not a string",
        ),
        (
            intent("1-a", 0),
            "time",
            Some(json!("2026-11-30T01:26:00+02:00")),
            "UTC",
        ),
        // Fingerprints.
        (
            rejection("1-a"),
            "fingerprint",
            Some(json!("abc")),
            "64 lowercase hex",
        ),
        (
            rejection("1-a"),
            "fingerprint",
            Some(json!(FP.to_uppercase())),
            "64 lowercase hex",
        ),
        (
            rejection("1-a"),
            "fingerprint",
            Some(json!(format!("{}g", &FP[1..]))),
            "64 lowercase hex",
        ),
        (
            intent("1-a", 0),
            "target_fingerprint",
            Some(json!(format!("{FP}0"))),
            "64 lowercase hex",
        ),
        // Integers: type and range.
        (rejection("1-a"), "line", Some(json!(0)), "out of range"),
        (rejection("1-a"), "line", Some(json!("3")), "not an integer"),
        (rejection("1-a"), "line", Some(json!(1.5)), "not an integer"),
        (
            rejection("1-a"),
            "line",
            Some(Value::Null),
            "not an integer",
        ),
        (rejection("1-a"), "code", Some(json!(200)), "out of range"),
        (
            rejection("1-a"),
            "code",
            Some(json!(-31999)),
            "out of range",
        ),
        (intent("1-a", 0), "port", Some(json!(0)), "out of range"),
        (intent("1-a", 0), "port", Some(json!(65536)), "out of range"),
        (intent("1-a", 0), "ticket", Some(json!(-1)), "out of range"),
        (intent("1-a", 0), "line", Some(json!(0)), "out of range"),
        (intent("1-a", 0), "line", Some(json!(true)), "nor null"),
        (
            intent("1-a", 0),
            "timeout_ms",
            Some(json!(0)),
            "out of range",
        ),
        (
            intent("1-a", 0),
            "timeout_ms",
            Some(json!(600_001)),
            "out of range",
        ),
        (
            outcome("1-a", 0),
            "elapsed_ms",
            Some(json!(-5)),
            "out of range",
        ),
        (
            outcome("1-a", 0),
            "ticket",
            Some(json!("0")),
            "not an integer",
        ),
        // Booleans.
        (
            outcome("1-a", 0),
            "is_error",
            Some(json!("false")),
            "not a boolean",
        ),
        (outcome("1-a", 0), "late", Some(json!(0)), "not a boolean"),
        (outcome("1-a", 0), "executed", None, "missing"),
        (outcome("1-a", 0), "cancelled", None, "missing"),
        // Strings with a shape.
        (
            intent("1-a", 0),
            "target_kind",
            Some(json!("ftp")),
            "neither",
        ),
        (intent("1-a", 0), "tool", Some(json!("")), "tool name"),
        (
            intent("1-a", 0),
            "tool",
            Some(json!("rm -rf /")),
            "tool name",
        ),
        (intent("1-a", 0), "host", Some(json!("")), "host"),
        (intent("1-a", 0), "host", Some(json!("a b")), "host"),
        (intent("1-a", 0), "session", Some(json!("")), "session id"),
        (
            intent("1-a", 0),
            "session",
            Some(json!("forged")),
            "session id",
        ),
        (intent("1-a", 0), "session", Some(json!(12)), "not a string"),
        (intent("1-a", 0), "session", None, "missing"),
        (outcome("1-a", 0), "time", None, "missing"),
        // Members of another kind are unknown here.
        (
            outcome("1-a", 0),
            "tool",
            Some(json!("x")),
            "unknown member",
        ),
        (rejection("1-a"), "ticket", Some(json!(0)), "unknown member"),
    ];
    for (base, key, value, what) in cases {
        one_problem(base.clone(), key, value.clone(), what);
    }
}

#[test]
fn an_unknown_or_missing_kind_is_the_only_problem_reported() {
    let mut v = outcome("1-a", 0);
    v["kind"] = "party".into();
    assert_eq!(
        problems(v.as_object().unwrap()),
        ["field \"kind\" is not a known record kind"]
    );
    v.as_object_mut().unwrap().remove("kind");
    assert_eq!(problems(v.as_object().unwrap()), ["missing field \"kind\""]);
    // A member name that is not name-like is withheld, not echoed.
    let mut v = outcome("1-a", 0);
    v["\u{1b}[31mred"] = 1.into();
    assert_eq!(
        problems(v.as_object().unwrap()),
        ["unknown member (name withheld)"]
    );
}

#[test]
fn every_problem_of_a_line_is_named() {
    let forged = serde_json::json!({"kind":"intent","time":"garbage","session":"1-a",
        "ticket":0,"tool":"x","target_kind":"http","extra":1});
    let found = problems(forged.as_object().unwrap());
    for expected in [
        "field \"time\" is not an RFC 3339 time",
        "missing field \"line\"",
        "missing field \"host\"",
        "missing field \"port\"",
        "missing field \"target_fingerprint\"",
        "missing field \"timeout_ms\"",
        "unknown member \"extra\"",
    ] {
        assert!(found.iter().any(|f| f == expected), "{expected}: {found:?}");
    }
    assert_eq!(found.len(), 7, "{found:?}");
}
