//! `audit verify` held to the journal format (issue 29): each member rule,
//! each relation, each chain rule on journals forged line by line with a
//! chain built here (sha2 and hmac, nothing from the writer or the
//! verifier), and properties over journals the real writer
//! ([`JournalFile`]) wrote, then edited, cut, duplicated or reordered.
//! The writers failing closed, syncing and keeping time are judged in
//! `writer`; the command's report, exit status and errors in `report`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use hmac::{Hmac, Mac as _};
use portcullis_wire::{Fingerprint, Stage};
use portcullis_wrap::tools::bounded_name;
use portcullis_wrap::{AnsweredBy, AuditRecord, Dropped, Intent, Outcome, Pin};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use super::journal::rfc3339;
use super::shape::{self, escaped_in_names, is_bounded_name, is_bounded_text, parse_time};
use super::verify::{Line, Lines, MAX_KEPT_PROBLEMS, MAX_LINE_BYTES, Verdict, verify_stream};
use super::{AuditKey, JournalFile};

mod report;
mod writer;

const KEY: &[u8] = b"a-key-of-more-than-16-bytes";
const FP: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const ZEROS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const T0: &str = "2026-11-30T01:26:00.123Z";
const T1: &str = "2026-11-30T01:26:01.000Z";
const T2: &str = "2026-11-30T01:26:02.500Z";
const SESSION: &str = "4242-18f3a";

// ---------------------------------------------------------------------------
// Helpers

fn verdict(bytes: &[u8], key: Option<&[u8]>, allow_cut_short: bool) -> Verdict {
    verify_stream(bytes, key.map(<[u8]>::to_vec), allow_cut_short).expect("reading a slice")
}

/// The problems of `bytes`, verified under `key`.
fn problems(bytes: &[u8], key: Option<&[u8]>) -> Vec<(u64, String)> {
    verdict(bytes, key, false)
        .problems
        .kept
        .into_iter()
        .map(|p| (p.line, p.problem))
        .collect()
}

/// Exactly one problem, on `line`, saying `what`.
fn one_problem(bytes: &[u8], key: Option<&[u8]>, line: u64, what: &str) {
    let found = problems(bytes, key);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0, line, "{found:#?}");
    assert!(found[0].1.contains(what), "{what:?}: {found:#?}");
}

fn hex_sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A session's chain, built here from the format alone.
struct Forge {
    session: String,
    seq: u64,
    prev: String,
    key: Option<Vec<u8>>,
}

impl Forge {
    fn new(session: &str, key: Option<&[u8]>) -> Self {
        Self {
            session: session.to_owned(),
            seq: 0,
            prev: ZEROS.to_owned(),
            key: key.map(<[u8]>::to_vec),
        }
    }

    /// The session's next line: `kind` at `time` with `members`.
    fn line(&mut self, kind: &str, time: &str, members: Value) -> String {
        let mut line = format!(
            "{{\"kind\":{},\"time\":{},\"session\":{},\"seq\":{},\"prev\":\"{}\"",
            json!(kind),
            json!(time),
            json!(self.session),
            self.seq,
            self.prev
        );
        for (name, value) in members.as_object().expect("members") {
            line.push_str(&format!(",{}:{value}", json!(name)));
        }
        line.push('}');
        if let Some(key) = &self.key {
            let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key");
            mac.update(line.as_bytes());
            let mac = hex::encode(mac.finalize().into_bytes());
            line.pop();
            line.push_str(&format!(",\"mac\":\"{mac}\"}}"));
        }
        self.prev = hex_sha256(line.as_bytes());
        self.seq += 1;
        line
    }

    fn start(&mut self, command: &str) -> String {
        let keyed = self.key.is_some();
        self.line(
            "session_start",
            T0,
            json!({"command": command, "keyed": keyed, "version": "0.1.0"}),
        )
    }

    fn end(&mut self, time: &str) -> String {
        let members = json!({"records": self.seq, "last": self.prev});
        self.line("session_end", time, members)
    }

    fn wrap_end(&mut self, time: &str) -> String {
        let members =
            json!({"records": self.seq, "last": self.prev, "forwarded": {"tools/call": 1}});
        self.line("session_end", time, members)
    }
}

fn rejection() -> Value {
    json!({"line":4,"stage":"schema","code":-32602,"fingerprint":FP})
}

fn intent(ticket: u64) -> Value {
    json!({"ticket":ticket,"line":3,"tool":"service_status","target_kind":"http",
        "host":"127.0.0.1","port":8080,"target_fingerprint":FP,"timeout_ms":30000})
}

fn outcome(ticket: u64) -> Value {
    json!({"ticket":ticket,"is_error":false,"executed":true,"cancelled":false,"late":false,
        "elapsed_ms":12})
}

fn wrap_intent(call: u64) -> Value {
    json!({"line":3,"call":call,"tool":"echo","arguments_sha256":FP,"timeout_ms":30000})
}

fn wrap_outcome(call: u64) -> Value {
    json!({"call":call,"is_error":false,"answered_by":"upstream","cancelled":false,
        "timed_out":false,"elapsed_ms":5})
}

fn join(lines: &[String]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect()
}

/// An mcp session: start, a rejection, an intent and its outcome, end.
fn mcp_session(session: &str, key: Option<&[u8]>) -> Vec<String> {
    let mut f = Forge::new(session, key);
    vec![
        f.start("mcp"),
        f.line("rejection", T0, rejection()),
        f.line("intent", T1, intent(0)),
        f.line("outcome", T1, outcome(0)),
        f.end(T2),
    ]
}

/// A record as a map (the shape tests take one line's object).
fn record(kind: &str, members: Value) -> Map<String, Value> {
    let mut f = Forge::new(SESSION, None);
    if kind != "session_start" {
        f.start("mcp");
    }
    let line = f.line(kind, T1, members);
    serde_json::from_str(&line).expect("a forged line is JSON")
}

fn shape_problems(record: &Map<String, Value>) -> Vec<String> {
    shape::problems(record).0
}

// ---------------------------------------------------------------------------
// Members and their rules

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

#[test]
fn a_time_is_the_writers_one_layout_of_a_real_instant() {
    for secs in [
        0,
        951_782_400,
        1_700_000_000,
        4_107_542_399,
        253_402_300_799,
    ] {
        let written = rfc3339(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(7));
        assert!(parse_time(&written).is_some(), "{written}");
    }
    for forged in [
        "2026-11-30T01:26:00Z",
        "2026-11-30T01:26:00.12Z",
        "2026-11-30T01:26:00.1234Z",
        "2026-11-30T01:26:00.123+00:00",
        "2026-11-30T01:26:00.123z",
        "2026-11-30t01:26:00.123Z",
        "2026-11-30 01:26:00.123Z",
        "2026-13-30T01:26:00.123Z",
        "2026-02-30T01:26:00.123Z",
        "2026-11-30T24:00:00.000Z",
        "2026-11-30T23:59:60.000Z",
        "+026-11-30T01:26:00.123Z",
        "",
    ] {
        assert!(parse_time(forged).is_none(), "{forged}");
    }
}

#[test]
fn what_the_writer_writes_for_mcp_verifies() {
    let lines = mcp_session(SESSION, None);
    assert_eq!(problems(&join(&lines), None), []);
    let keyed = mcp_session(SESSION, Some(KEY));
    assert_eq!(problems(&join(&keyed), Some(KEY)), []);
    for stage in Stage::ALL {
        let mut members = rejection();
        members["stage"] = stage.as_str().into();
        assert_eq!(
            shape_problems(&record("rejection", members)),
            Vec::<String>::new()
        );
    }
    let mut members = intent(7);
    members["line"] = Value::Null;
    assert_eq!(
        shape_problems(&record("intent", members)),
        Vec::<String>::new()
    );
}

/// `members` of `kind` with `key` set to `value` (or removed, for `None`):
/// exactly one problem, naming `key`, and saying `what`.
fn one_member_problem(kind: &str, members: &Value, key: &str, value: Option<Value>, what: &str) {
    let mut record = record(kind, members.clone());
    match value {
        Some(value) => {
            record.insert(key.to_owned(), value);
        }
        None => {
            record.remove(key);
        }
    }
    let found = shape_problems(&record);
    assert_eq!(found.len(), 1, "{kind}.{key}: {found:?}");
    assert!(found[0].contains(key), "{kind}.{key}: {found:?}");
    assert!(found[0].contains(what), "{kind}.{key}: {found:?}");
}

#[test]
fn each_forged_mcp_member_is_refused_on_its_own() {
    let (r, i, o) = (rejection(), intent(0), outcome(0));
    let cases: Vec<(&str, &Value, &str, Option<Value>, &str)> = vec![
        // The forgeries of issue 8.
        ("intent", &i, "time", Some(json!("garbage")), "RFC 3339"),
        (
            "rejection",
            &r,
            "stage",
            Some(json!("nonsense")),
            "stage name",
        ),
        ("intent", &i, "host", None, "missing"),
        ("intent", &i, "target_fingerprint", None, "missing"),
        ("intent", &i, "timeout_ms", None, "missing"),
        (
            "outcome",
            &o,
            "elevated",
            Some(json!(true)),
            "unknown member",
        ),
        (
            "rejection",
            &r,
            "raw",
            Some(json!("frame bytes")),
            "unknown member",
        ),
        // Times.
        (
            "intent",
            &i,
            "time",
            Some(json!("2026-11-30T01:26:00.123+02:00")),
            "RFC 3339",
        ),
        (
            "intent",
            &i,
            "time",
            Some(json!(1_764_465_960)),
            "not a string",
        ),
        // The chain members.
        ("intent", &i, "seq", Some(json!(-1)), "out of range"),
        ("intent", &i, "seq", Some(json!("1")), "not an integer"),
        ("intent", &i, "seq", None, "missing"),
        (
            "intent",
            &i,
            "prev",
            Some(json!(FP.to_uppercase())),
            "64 lowercase hex",
        ),
        ("intent", &i, "prev", None, "missing"),
        ("intent", &i, "mac", Some(json!("00")), "64 lowercase hex"),
        // Fingerprints.
        (
            "rejection",
            &r,
            "fingerprint",
            Some(json!("abc")),
            "64 lowercase hex",
        ),
        (
            "rejection",
            &r,
            "fingerprint",
            Some(json!(format!("{}g", &FP[1..]))),
            "64 lowercase hex",
        ),
        (
            "intent",
            &i,
            "target_fingerprint",
            Some(json!(format!("{FP}0"))),
            "64 lowercase hex",
        ),
        // Integers: type and range.
        ("rejection", &r, "line", Some(json!(0)), "out of range"),
        ("rejection", &r, "line", Some(json!(1.5)), "not an integer"),
        ("rejection", &r, "line", Some(Value::Null), "not an integer"),
        ("rejection", &r, "code", Some(json!(-31999)), "out of range"),
        ("intent", &i, "port", Some(json!(65536)), "out of range"),
        ("intent", &i, "ticket", Some(json!(-1)), "out of range"),
        ("intent", &i, "line", Some(json!(true)), "nor null"),
        (
            "intent",
            &i,
            "timeout_ms",
            Some(json!(600_001)),
            "out of range",
        ),
        ("outcome", &o, "elapsed_ms", Some(json!(-5)), "out of range"),
        // Booleans.
        (
            "outcome",
            &o,
            "is_error",
            Some(json!("false")),
            "not a boolean",
        ),
        ("outcome", &o, "late", Some(json!(0)), "not a boolean"),
        ("outcome", &o, "executed", None, "missing"),
        // Strings with a shape.
        ("intent", &i, "target_kind", Some(json!("ftp")), "neither"),
        ("intent", &i, "tool", Some(json!("rm -rf /")), "tool name"),
        ("intent", &i, "host", Some(json!("a b")), "host"),
        ("intent", &i, "session", Some(json!("forged")), "session id"),
        (
            "intent",
            &i,
            "session",
            Some(json!("042-18f3a")),
            "session id",
        ),
        (
            "intent",
            &i,
            "session",
            Some(json!("42-018f3a")),
            "session id",
        ),
        (
            "intent",
            &i,
            "session",
            Some(json!("42-18F3A")),
            "session id",
        ),
        // Nanoseconds 0 are written `0`, never with a leading zero.
        ("intent", &i, "session", Some(json!("42-00")), "session id"),
        ("intent", &i, "session", Some(json!(12)), "not a string"),
        // Members of another kind are unknown here.
        ("outcome", &o, "tool", Some(json!("x")), "unknown member"),
        ("rejection", &r, "ticket", Some(json!(0)), "unknown member"),
    ];
    for (kind, members, key, value, what) in cases {
        one_member_problem(kind, members, key, value, what);
    }
}

#[test]
fn each_forged_member_of_the_common_and_wrap_kinds_is_refused_on_its_own() {
    let start = json!({"command":"mcp","keyed":false,"version":"0.1.0"});
    let end = json!({"records":1,"last":FP});
    let (wi, wo) = (wrap_intent(1), wrap_outcome(1));
    let quarantine = json!({"upstream_line":5,"stage":"json","fingerprint":FP,"count":1,
        "last_upstream_line":5});
    let dropped = json!({"upstream_line":5,"why":"late_response","count":1,
        "last_upstream_line":5});
    let late = json!({"line":5,"why":"answer_after_cancel","count":2,"last_line":6});
    let pin = format!("sha256:{FP}");
    let rug = json!({"tool":"echo","pinned":pin,"seen":format!("sha256:{ZEROS}")});
    let denied = json!({"line":3,"tool":"echo","reason":"denied: not listed"});
    let timeout = json!({"line":3,"method":"tools/call"});
    let exited = json!({"unanswered":0});
    let pinned = json!({"tool":"echo","pin":pin});
    let cases: Vec<(&str, &Value, &str, Option<Value>, &str)> = vec![
        (
            "session_start",
            &start,
            "command",
            Some(json!("replay")),
            "neither",
        ),
        (
            "session_start",
            &start,
            "keyed",
            Some(json!("yes")),
            "not a boolean",
        ),
        (
            "session_start",
            &start,
            "version",
            Some(json!("1 0")),
            "version",
        ),
        ("session_start", &start, "version", None, "missing"),
        (
            "session_end",
            &end,
            "records",
            Some(json!(0)),
            "out of range",
        ),
        ("session_end", &end, "last", None, "missing"),
        (
            "session_end",
            &end,
            "forwarded",
            Some(json!([])),
            "not an object",
        ),
        (
            "session_end",
            &end,
            "forwarded",
            Some(json!({"":1})),
            "method name",
        ),
        (
            "session_end",
            &end,
            "forwarded",
            Some(json!({"ping":-1})),
            "count",
        ),
        ("wrap_intent", &wi, "call", Some(json!(0)), "out of range"),
        (
            "wrap_intent",
            &wi,
            "arguments_sha256",
            Some(json!("{}")),
            "64 lowercase hex",
        ),
        (
            "wrap_intent",
            &wi,
            "timeout_ms",
            Some(json!(3_600_001)),
            "out of range",
        ),
        (
            "wrap_intent",
            &wi,
            "tool",
            Some(json!("a\u{1b}[31m")),
            "tool name",
        ),
        (
            "wrap_intent",
            &wi,
            "ticket",
            Some(json!(1)),
            "unknown member",
        ),
        (
            "wrap_outcome",
            &wo,
            "answered_by",
            Some(json!("server")),
            "neither",
        ),
        ("wrap_outcome", &wo, "timed_out", None, "missing"),
        (
            "wrap_outcome",
            &wo,
            "executed",
            Some(json!(true)),
            "unknown member",
        ),
        (
            "wrap_quarantine",
            &quarantine,
            "stage",
            Some(json!("authy")),
            "stage name",
        ),
        (
            "wrap_quarantine",
            &quarantine,
            "count",
            Some(json!(0)),
            "out of range",
        ),
        (
            "wrap_quarantine",
            &quarantine,
            "last_upstream_line",
            None,
            "missing",
        ),
        (
            "wrap_dropped",
            &dropped,
            "why",
            Some(json!("bored")),
            "reason for a drop",
        ),
        (
            "wrap_dropped",
            &dropped,
            "last_line",
            Some(json!(5)),
            "unknown member",
        ),
        (
            "wrap_dropped",
            &late,
            "last_upstream_line",
            Some(json!(6)),
            "unknown member",
        ),
        ("wrap_dropped", &late, "last_line", None, "missing"),
        ("wrap_pinned", &pinned, "pin", Some(json!(FP)), "pin"),
        (
            "wrap_rug_pull",
            &rug,
            "seen",
            Some(json!(format!("sha256:{}", &FP[1..]))),
            "pin",
        ),
        (
            "wrap_denied",
            &denied,
            "reason",
            Some(json!("x".repeat(4097))),
            "cut marker",
        ),
        (
            "wrap_denied",
            &denied,
            "line",
            Some(json!(0)),
            "out of range",
        ),
        (
            "wrap_timeout",
            &timeout,
            "method",
            Some(json!("")),
            "method name",
        ),
        (
            "wrap_timeout",
            &timeout,
            "method",
            Some(json!("a\nb")),
            "method name",
        ),
        (
            "wrap_timeout",
            &timeout,
            "method",
            Some(json!("m".repeat(4097))),
            "cut marker",
        ),
        (
            "wrap_upstream_exited",
            &exited,
            "unanswered",
            Some(json!(-1)),
            "out of range",
        ),
    ];
    for (kind, members, key, value, what) in cases {
        one_member_problem(kind, members, key, value, what);
    }
}

/// A JSON-RPC error code in a rejection record is one of the codes
/// JSON-RPC reserves (-32768 to -32000): both ends are accepted, and one
/// past either end, or a code of the other sign, is refused.
#[test]
fn a_rejection_code_is_held_to_the_reserved_range_at_both_ends() {
    let wrap = json!({"line":9,"stage":"json","code":-32700,"fingerprint":FP});
    for (kind, members) in [("rejection", rejection()), ("wrap_rejection", wrap)] {
        for code in [-32768, -32000] {
            let mut r = record(kind, members.clone());
            r.insert("code".to_owned(), json!(code));
            assert_eq!(shape_problems(&r), Vec::<String>::new(), "{kind} {code}");
        }
        for code in [-32769, -31999, 0, 32000, 32700] {
            one_member_problem(kind, &members, "code", Some(json!(code)), "out of range");
        }
    }
}

#[test]
fn an_unknown_or_missing_kind_is_named_and_no_member_name_is_echoed() {
    let mut r = record("outcome", outcome(0));
    r.insert("kind".into(), "party".into());
    assert_eq!(
        shape_problems(&r),
        ["field \"kind\" is not a known record kind"]
    );
    r.remove("kind");
    assert_eq!(shape_problems(&r), ["missing field \"kind\""]);
    r.insert("kind".into(), 7.into());
    assert_eq!(shape_problems(&r), ["field \"kind\" is not a string"]);
    let mut r = record("outcome", outcome(0));
    r.insert("\u{1b}[31mred".into(), 1.into());
    assert_eq!(shape_problems(&r), ["unknown member (name withheld)"]);
}

#[test]
fn every_problem_of_a_line_is_named() {
    let mut r = record("intent", intent(0));
    for gone in ["line", "host", "port"] {
        r.remove(gone);
    }
    r.insert("time".into(), "garbage".into());
    r.insert("extra".into(), 1.into());
    let found = shape_problems(&r);
    for expected in [
        "field \"time\" is not an RFC 3339",
        "missing field \"line\"",
        "missing field \"host\"",
        "missing field \"port\"",
        "unknown member \"extra\"",
    ] {
        assert!(
            found.iter().any(|f| f.starts_with(expected)),
            "{expected}: {found:?}"
        );
    }
    assert_eq!(found.len(), 5, "{found:?}");
}

// ---------------------------------------------------------------------------
// Relations within a record

#[test]
fn members_of_one_record_must_agree() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "session_end",
            json!({"records":2,"last":FP}),
            "records is not",
        ),
        (
            "session_end",
            json!({"records":1,"last":ZEROS}),
            "last is not",
        ),
        (
            "wrap_quarantine",
            json!({"upstream_line":5,"stage":"json","fingerprint":FP,"count":2,"last_upstream_line":4}),
            "last line is before",
        ),
        (
            "wrap_quarantine",
            json!({"upstream_line":5,"stage":"json","fingerprint":FP,"count":3,"last_upstream_line":6}),
            "count is more",
        ),
        (
            "wrap_dropped",
            json!({"upstream_line":5,"why":"late_response","count":1,"last_upstream_line":9}),
            "two line numbers",
        ),
        (
            "wrap_dropped",
            json!({"line":5,"why":"answer_after_cancel","count":9,"last_line":6}),
            "count is more",
        ),
        (
            "wrap_rug_pull",
            json!({"tool":"echo","pinned":format!("sha256:{FP}"),"seen":format!("sha256:{FP}")}),
            "equal",
        ),
    ];
    for (kind, members, what) in cases {
        let mut f = Forge::new(SESSION, None);
        f.start("wrap");
        let mut r: Map<String, Value> = serde_json::from_str(&f.line(kind, T1, members)).unwrap();
        if kind == "session_end" {
            // Its own seq is 1 and its prev is the start's hash: the
            // members above say otherwise.
            r.insert("prev".into(), FP.into());
        }
        let found = shape_problems(&r);
        assert_eq!(found.len(), 1, "{kind}: {found:?}");
        assert!(found[0].contains(what), "{kind}: {found:?}");
    }
    // seq 0 is the session_start, and only it has the first prev.
    let mut f = Forge::new(SESSION, None);
    let not_start: Map<String, Value> =
        serde_json::from_str(&f.line("rejection", T0, rejection())).unwrap();
    assert_eq!(
        shape_problems(&not_start),
        ["seq is 0 but the record is not a session_start"]
    );
    let mut start = record(
        "session_start",
        json!({"command":"mcp","keyed":false,"version":"1"}),
    );
    start.insert("seq".into(), 3.into());
    assert_eq!(
        shape_problems(&start),
        ["a session_start whose seq is not 0"]
    );
    start.insert("seq".into(), 0.into());
    start.insert("prev".into(), FP.into());
    assert_eq!(
        shape_problems(&start),
        ["prev of a session's first record (seq 0) is not 64 zeros"]
    );
    let mut later = record("rejection", rejection());
    later.insert("prev".into(), ZEROS.into());
    assert_eq!(
        shape_problems(&later),
        ["prev is 64 zeros but seq is not 0"]
    );
}

#[test]
fn a_wrap_outcome_is_one_of_the_ends_a_call_can_have() {
    let mut possible = Vec::new();
    for by in ["upstream", "wrapper"] {
        for bits in 0..8u8 {
            let (is_error, cancelled, timed_out) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
            let mut members = wrap_outcome(1);
            members["answered_by"] = by.into();
            members["is_error"] = is_error.into();
            members["cancelled"] = cancelled.into();
            members["timed_out"] = timed_out.into();
            if shape_problems(&record("wrap_outcome", members)).is_empty() {
                possible.push((by, is_error, cancelled, timed_out));
            }
        }
    }
    // The upstream's answer (error or not); the wrapper's error, with or
    // without a time-out; the wrapper's silence on a cancel.
    assert_eq!(
        possible,
        [
            ("upstream", false, false, false),
            ("upstream", true, false, false),
            ("wrapper", true, false, false),
            ("wrapper", false, true, false),
            ("wrapper", true, false, true),
        ]
    );
}

// ---------------------------------------------------------------------------
// Tool names and text as wrap bounds them

#[test]
fn the_characters_escaped_in_names_are_those_bounded_name_escapes() {
    for code in (0..=0x10_ffffu32).filter(|c| !(0xd800..=0xdfff).contains(c)) {
        let c = char::from_u32(code).expect("a scalar value");
        let name = c.to_string();
        let shown = bounded_name(&name);
        let escaped = shown.starts_with("\\u{");
        assert_eq!(escaped, escaped_in_names(c), "U+{code:04X}");
        assert!(is_bounded_name(&shown), "U+{code:04X}: {shown:?}");
        // A character shown as itself where it is escaped, or the other
        // way round, is not what wrap writes.
        let other = if escaped {
            name.clone()
        } else if c == '\\' {
            "\\".to_owned()
        } else {
            format!("\\u{{{code:x}}}")
        };
        assert!(!is_bounded_name(&other), "U+{code:04X}: {other:?}");
    }
}

#[test]
fn a_name_wrap_did_not_write_is_refused() {
    let long = "n".repeat(128);
    for forged in [
        format!("{long}n"),
        "a\u{1b}b".to_owned(),
        "\\u{01}".to_owned(),
        "\\u{1B}".to_owned(),
        "\\u{}".to_owned(),
        "\\u{110000}".to_owned(),
        "\\x".to_owned(),
        "a\\".to_owned(),
        // Cut markers that wrap cannot write: cut short of the bound, a
        // length below what was shown, a leading zero.
        format!("{}…(300 bytes)", "n".repeat(118)),
        format!("{long}…(128 bytes)"),
        format!("{long}…(0300 bytes)"),
        format!("{long}…(300 bytes) "),
    ] {
        assert!(!is_bounded_name(&forged), "{forged:?}");
    }
    for genuine in [
        String::new(),
        long.clone(),
        // A name that reads like a cut one, and one cut before a character
        // whose escape takes 10 bytes.
        format!("{}…(300 bytes)", "n".repeat(100)),
        format!("{}…(300 bytes)", "n".repeat(120)),
        format!("{long}…(129 bytes)"),
        "…(5 bytes)".to_owned(),
        bounded_name(&"é".repeat(100)),
        bounded_name(&"\u{1}".repeat(100)),
        bounded_name(&format!("{}\u{10ffff}", "n".repeat(119))),
    ] {
        assert!(is_bounded_name(&genuine), "{genuine:?}");
    }
}

/// The length a cut name states is held to what was shown before the cut:
/// each `\\` shown stands for one byte of the name, and the character cut
/// off took at least the room left (a character escaped as `\u{200b}`,
/// 8 bytes shown, is one of 3 bytes).
#[test]
fn a_cut_name_states_at_least_the_bytes_it_shows_and_the_one_cut_off() {
    let backslashes = bounded_name(&"\\".repeat(65));
    assert_eq!(backslashes, format!("{}…(65 bytes)", "\\\\".repeat(64)));
    assert!(is_bounded_name(&backslashes));
    assert!(!is_bounded_name(&format!(
        "{}…(64 bytes)",
        "\\\\".repeat(64)
    )));
    let zero_width = bounded_name(&format!("{}\u{200b}", "n".repeat(121)));
    assert_eq!(zero_width, format!("{}…(124 bytes)", "n".repeat(121)));
    assert!(is_bounded_name(&zero_width));
    assert!(!is_bounded_name(&format!(
        "{}…(123 bytes)",
        "n".repeat(121)
    )));
}

/// Text cut as the wrap journal cuts it.
fn cut(text: &str) -> String {
    if text.len() <= 4096 {
        return text.to_owned();
    }
    let end = (0..=4096)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap();
    format!("{}…({} bytes)", &text[..end], text.len())
}

#[test]
fn text_is_at_most_4096_bytes_or_cut_with_its_length() {
    for len in [0, 1, 4095, 4096, 4097, 10_000] {
        assert!(is_bounded_text(&cut(&"x".repeat(len))), "{len}");
        assert!(is_bounded_text(&cut(&"é€😀".repeat(len / 9 + 1))), "{len}");
    }
    assert!(!is_bounded_text(&"x".repeat(4097)));
    assert!(!is_bounded_text(&format!(
        "{}…(9999 bytes)",
        "x".repeat(4092)
    )));
    assert!(!is_bounded_text(&format!(
        "{}…(4096 bytes)",
        "x".repeat(4096)
    )));
    assert!(!is_bounded_text(&format!(
        "{}…(4097 bytes)",
        "x".repeat(4097)
    )));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Whatever a peer names a tool, its shown name is accepted.
    #[test]
    fn every_name_bounded_name_shows_is_accepted(
        name in prop_oneof![
            ".{0,200}",
            "[\\x00-\\x1f\\\\a\u{200b}\u{202e}\u{10ffff}é]{0,200}",
            "[a-z]{100,140}[\u{0}-\u{10ffff}]{0,3}",
        ]
    ) {
        let shown = bounded_name(&name);
        prop_assert!(is_bounded_name(&shown), "{:?} shown as {:?}", name, shown);
        prop_assert!(is_bounded_text(&cut(&name)));
    }
}

// ---------------------------------------------------------------------------
// Reading lines

/// Hands out `chunk` bytes per read.
struct Trickle<'a> {
    bytes: &'a [u8],
    chunk: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.chunk.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

fn read_all(bytes: &[u8], chunk: usize) -> Vec<(u64, String)> {
    let mut lines = Lines::new(Trickle { bytes, chunk });
    let mut seen = Vec::new();
    while let Some((number, line)) = lines.next_line().expect("reading") {
        let what = match line {
            Line::Whole(b) => format!("whole {}", b.len()),
            Line::Unterminated(b) => format!("unterminated {}", b.len()),
            Line::TooLong { bytes } => format!("too long {bytes}"),
        };
        seen.push((number, what));
    }
    seen
}

#[test]
fn lines_are_read_whole_up_to_the_cap_and_counted_past_it() {
    let mut bytes = Vec::new();
    for len in [
        0,
        5,
        MAX_LINE_BYTES,
        MAX_LINE_BYTES + 1,
        3 * MAX_LINE_BYTES + 7,
        1,
    ] {
        bytes.extend(std::iter::repeat_n(b'x', len));
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(b"tail");
    let expected: Vec<(u64, String)> = [
        "whole 0".to_owned(),
        "whole 5".to_owned(),
        format!("whole {MAX_LINE_BYTES}"),
        format!("too long {}", MAX_LINE_BYTES + 1),
        format!("too long {}", 3 * MAX_LINE_BYTES + 7),
        "whole 1".to_owned(),
        "unterminated 4".to_owned(),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, s)| (i as u64 + 1, s))
    .collect();
    for chunk in [
        1,
        2,
        7,
        4096,
        MAX_LINE_BYTES - 1,
        MAX_LINE_BYTES + 3,
        usize::MAX,
    ] {
        assert_eq!(read_all(&bytes, chunk), expected, "chunk {chunk}");
    }
    let mut long = vec![b'y'; 2 * MAX_LINE_BYTES];
    long.extend_from_slice(b"\n");
    long.extend(vec![b'z'; MAX_LINE_BYTES + 1]);
    assert_eq!(
        read_all(&long, 4096),
        [
            (1, format!("too long {}", 2 * MAX_LINE_BYTES)),
            (2, format!("too long {}", MAX_LINE_BYTES + 1)),
        ]
    );
}

#[test]
fn lines_that_are_not_records_are_each_a_problem() {
    let session = mcp_session(SESSION, None);
    let mut bytes = join(&session[..2]);
    bytes.extend_from_slice(b"\n");
    bytes.extend_from_slice(b"\xff\xfe\n");
    bytes.extend_from_slice(b"not json\n");
    bytes.extend_from_slice(b"[1,2]\n");
    bytes.extend_from_slice(b"{\"kind\":\"intent\",\"kind\":\"intent\"}\n");
    bytes.extend(vec![b'{'; MAX_LINE_BYTES + 1]);
    bytes.push(b'\n');
    bytes.extend_from_slice(&join(&session[2..]));
    bytes.extend_from_slice(&session[0].as_bytes()[..40]);
    let found = problems(&bytes, None);
    let said: Vec<(u64, &str)> = found.iter().map(|(l, p)| (*l, p.as_str())).collect();
    let expect = [
        (3, "empty line"),
        (4, "not UTF-8"),
        (5, "not one strict JSON value"),
        (6, "not a JSON object"),
        (7, "not one strict JSON value"),
        (8, "longer than any record"),
        (12, "truncated final line"),
    ];
    assert_eq!(found.len(), expect.len(), "{found:#?}");
    for ((line, what), (got_line, got)) in expect.iter().zip(&said) {
        assert_eq!(line, got_line, "{found:#?}");
        assert!(got.contains(what), "{found:#?}");
    }
}

#[test]
fn a_record_laid_out_otherwise_than_the_writers_do_is_refused() {
    let lines = mcp_session(SESSION, None);
    // The last line: no later hash covers it, the layout does.
    let end = &lines[4];
    let rewrites = [
        end.replacen(",\"seq\"", ", \"seq\"", 1),
        end.replacen('}', " }", 1),
        end.replacen("\"session_end\"", "\"session\\u005fend\"", 1),
        format!(
            "{{\"time\"{}",
            end.replacen(
                "{\"kind\":\"session_end\",\"time\"",
                ",\"kind\":\"session_end\"",
                1
            )
            .trim_start_matches('{')
            .replacen(",\"kind\":\"session_end\"", "", 1)
            .replacen('}', ",\"kind\":\"session_end\"}", 1)
        ),
        end.replacen("\"last\"", "\"records\":4,\"last\"", 1)
            .replacen(",\"records\":4}", "}", 1),
    ];
    for rewrite in rewrites {
        assert_ne!(&rewrite, end);
        let mut forged = lines.clone();
        forged[4] = rewrite.clone();
        one_problem(&join(&forged), None, 5, "not laid out as the writers write");
    }
}

// ---------------------------------------------------------------------------
// Chains

#[test]
fn genuine_sessions_interleaved_in_one_file_verify() {
    let a = mcp_session("11-a1", None);
    let b = mcp_session("12-b2", None);
    let mut w = Forge::new("13-c3", None);
    let c = [
        w.start("wrap"),
        w.line("wrap_intent", T0, wrap_intent(1)),
        w.line("wrap_outcome", T1, wrap_outcome(1)),
        w.wrap_end(T2),
    ];
    let mut lines = Vec::new();
    for i in 0..5 {
        lines.push(a[i].clone());
        lines.push(b[i].clone());
        if let Some(line) = c.get(i) {
            lines.push(line.clone());
        }
    }
    let v = verdict(&join(&lines), None, false);
    assert!(v.ok(), "{:#?}", v.problems);
    let sessions: Vec<String> = v
        .verifier
        .sessions
        .iter()
        .map(|s| {
            format!(
                "{} {:?} lines {} to {}, {} records, closed: {}",
                s.id,
                s.command.map(|c| c.as_str()),
                s.first_line,
                s.last_line,
                s.records,
                s.closed_at.is_some(),
            )
        })
        .collect();
    assert_eq!(
        sessions,
        [
            "11-a1 Some(\"mcp\") lines 1 to 13, 5 records, closed: true",
            "12-b2 Some(\"mcp\") lines 2 to 14, 5 records, closed: true",
            "13-c3 Some(\"wrap\") lines 3 to 12, 4 records, closed: true",
        ]
    );
    let kinds: BTreeMap<&str, u64> = v.verifier.kind_counts().into_iter().collect();
    assert_eq!(kinds["session_start"], 3);
    assert_eq!(kinds["wrap_outcome"], 1);
    assert_eq!(kinds["outcome"], 2);
    assert_eq!(kinds["wrap_timeout"], 0);
    assert_eq!(v.verifier.records, 14);
}

#[test]
fn a_deleted_line_is_one_problem_at_the_line_after_it() {
    let mut f = Forge::new(SESSION, None);
    let mut lines = vec![f.start("mcp")];
    for _ in 0..5 {
        lines.push(f.line("rejection", T1, rejection()));
    }
    lines.push(f.end(T2));
    let mut cut = lines.clone();
    cut.remove(2);
    one_problem(
        &join(&cut),
        None,
        3,
        "seq skips 1 record(s) of its session after line 2",
    );
    // The session's start: its first line is not seq 0.
    one_problem(&join(&lines[1..]), None, 1, "not its session_start");
    // Its end: cut short, named by its last line.
    one_problem(&join(&lines[..6]), None, 6, "cut short");
}

#[test]
fn an_edited_line_breaks_the_prev_of_the_next() {
    let mut lines = mcp_session(SESSION, None);
    lines[2] = lines[2].replace("\"port\":8080", "\"port\":8081");
    one_problem(&join(&lines), None, 4, "prev is not the SHA-256 of line 3");
}

#[test]
fn a_duplicated_or_moved_line_is_refused() {
    let lines = mcp_session(SESSION, None);
    let mut twice = lines.clone();
    twice.insert(2, lines[1].clone());
    one_problem(&join(&twice), None, 3, "seq goes back");
    // Intent and outcome swapped.
    let mut swapped = lines.clone();
    swapped.swap(2, 3);
    let found = problems(&join(&swapped), None);
    assert_eq!(found[0].0, 3, "{found:#?}");
    assert!(found[0].1.contains("seq skips"), "{found:#?}");
    assert!(found[0].1.contains("no open intent"), "{found:#?}");
    assert!(
        found
            .iter()
            .any(|(l, p)| *l == 4 && p.contains("seq goes back")),
        "{found:#?}"
    );
}

#[test]
fn a_journal_appended_twice_or_a_replayed_session_is_refused_once_per_session() {
    let a = mcp_session("11-a1", None);
    let b = mcp_session("12-b2", Some(KEY));
    let once = [a.clone(), b.clone()].concat();
    let twice = [once.clone(), once.clone()].concat();
    let found = problems(&join(&twice), Some(KEY));
    // a is not keyed, against --key-env: said once for each start; the
    // replays start again.
    let restarts: Vec<u64> = found
        .iter()
        .filter(|(_, p)| p.contains("starts again"))
        .map(|(l, _)| *l)
        .collect();
    assert_eq!(restarts, [11, 16], "{found:#?}");
    let found = problems(&join(&twice), None);
    assert_eq!(found.len(), 2, "{found:#?}");
    // A session replayed into the middle of another.
    let mut spliced = a.clone();
    spliced.splice(3..3, a.iter().cloned());
    let found = problems(&join(&spliced), None);
    assert_eq!(found[0].0, 4, "{found:#?}");
    assert!(
        found[0]
            .1
            .contains("starts again (its session_start is on line 1)")
    );
}

#[test]
fn nothing_may_follow_a_session_end() {
    let mut f = Forge::new(SESSION, None);
    let mut lines = vec![f.start("mcp"), f.end(T1)];
    lines.push(f.line("rejection", T1, rejection()));
    one_problem(
        &join(&lines),
        None,
        3,
        "after its session's session_end (line 2)",
    );
}

#[test]
fn a_session_without_its_end_is_cut_short_unless_allowed() {
    let lines = mcp_session(SESSION, None);
    let bytes = join(&lines[..3]);
    one_problem(&bytes, None, 3, "its session was cut short");
    let v = verdict(&bytes, None, true);
    assert!(v.ok(), "{:#?}", v.problems);
    assert_eq!(v.verifier.sessions[0].closed_at, None);
    // The intent of line 3 has no outcome: interrupted, listed, no
    // problem, in a closed session too.
    let interrupted = &v.verifier.sessions[0].interrupted;
    assert_eq!(interrupted.len(), 1);
    assert_eq!(
        (
            interrupted[0].line,
            interrupted[0].id_name,
            interrupted[0].id
        ),
        (3, "ticket", 0)
    );
    assert_eq!(interrupted[0].tool, "service_status");
    let mut f = Forge::new(SESSION, None);
    let closed = [f.start("mcp"), f.line("intent", T1, intent(4)), f.end(T1)];
    let v = verdict(&join(&closed), None, false);
    assert!(v.ok(), "{:#?}", v.problems);
    assert_eq!(v.verifier.sessions[0].interrupted.len(), 1);
}

#[test]
fn times_never_go_back_within_a_session() {
    let mut f = Forge::new(SESSION, None);
    let lines = [
        f.start("mcp"),
        f.line("intent", T2, intent(0)),
        f.line("outcome", T1, outcome(0)),
        f.end(T2),
    ];
    one_problem(&join(&lines), None, 3, "time is earlier than on line 2");
    // Nor before the session's start, with the start's mac, in a keyed
    // journal.
    let before = "2026-11-30T01:25:59.999Z";
    assert!(before < T0);
    let mut f = Forge::new(SESSION, Some(KEY));
    let lines = [
        f.start("mcp"),
        f.line("rejection", before, rejection()),
        f.end(T1),
    ];
    one_problem(
        &join(&lines),
        Some(KEY),
        2,
        "time is earlier than on line 1",
    );
    // Across sessions, times may go any way.
    let a = mcp_session("11-a1", None);
    let mut g = Forge::new("12-b2", None);
    let b = [g.start("mcp"), g.end(T0)];
    assert_eq!(problems(&join(&[a, b.to_vec()].concat()), None), []);
}

#[test]
fn intents_and_outcomes_pair_up_once() {
    let mut f = Forge::new(SESSION, None);
    let lines = [
        f.start("mcp"),
        f.line("intent", T0, intent(1)),
        f.line("intent", T0, intent(1)),
        f.line("outcome", T0, outcome(1)),
        f.line("outcome", T0, outcome(1)),
        f.line("intent", T0, intent(0)),
        f.line("outcome", T0, outcome(0)),
        f.line("outcome", T0, outcome(7)),
        f.end(T0),
    ];
    let found = problems(&join(&lines), None);
    let said: Vec<(u64, &str)> = found.iter().map(|(l, p)| (*l, p.as_str())).collect();
    assert_eq!(
        said,
        [
            (3, "a second intent for the ticket of line 2"),
            (
                5,
                "an outcome with no open intent for its ticket in its session"
            ),
            (
                6,
                "an intent whose ticket is not above its session's earlier intents' (each action has one intent, in order)"
            ),
            (
                8,
                "an outcome with no open intent for its ticket in its session"
            ),
        ]
    );
    // In wrap, by call; and intents in another session do not pair.
    let mut w = Forge::new("7-77", None);
    let mut m = Forge::new("8-88", None);
    let lines = [
        w.start("wrap"),
        m.start("mcp"),
        w.line("wrap_intent", T0, wrap_intent(3)),
        m.line("outcome", T0, outcome(3)),
        w.line("wrap_outcome", T0, wrap_outcome(3)),
        w.line("wrap_outcome", T0, wrap_outcome(3)),
        w.wrap_end(T0),
        m.end(T0),
    ];
    let found = problems(&join(&lines), None);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(found[0].0, 4);
    assert_eq!(
        (found[1].0, found[1].1.as_str()),
        (
            6,
            "an outcome with no open intent for its call in its session"
        )
    );
}

#[test]
fn a_session_holds_only_its_commands_kinds() {
    let mut f = Forge::new(SESSION, None);
    let lines = [
        f.start("mcp"),
        f.line("wrap_timeout", T0, json!({"line":3,"method":"ping"})),
        f.end(T0),
    ];
    one_problem(&join(&lines), None, 2, "a wrap record in an mcp session");
    let mut f = Forge::new(SESSION, None);
    let lines = [
        f.start("wrap"),
        f.line("rejection", T0, rejection()),
        f.wrap_end(T0),
    ];
    one_problem(&join(&lines), None, 2, "an mcp record in a wrap session");
    // The end of a wrap session counts what it forwarded; mcp's does not.
    let mut f = Forge::new(SESSION, None);
    let lines = [f.start("wrap"), f.end(T0)];
    one_problem(&join(&lines), None, 2, "missing field \"forwarded\"");
    let mut f = Forge::new(SESSION, None);
    let lines = [f.start("mcp"), f.wrap_end(T0)];
    one_problem(&join(&lines), None, 2, "unknown member \"forwarded\"");
}

#[test]
fn macs_are_on_every_record_of_a_keyed_session_and_none_other() {
    // Unkeyed start, keyed records after it; and the other way round.
    let mut plain = Forge::new(SESSION, None);
    let mut keyed = Forge::new(SESSION, Some(KEY));
    let start = plain.start("mcp");
    keyed.seq = plain.seq;
    keyed.prev = plain.prev.clone();
    let lines = [
        start,
        keyed.line("rejection", T0, rejection()),
        keyed.end(T0),
    ];
    let found = problems(&join(&lines), None);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found
            .iter()
            .all(|(_, p)| p == "a mac, though its session is not keyed")
    );
    let mut keyed = Forge::new(SESSION, Some(KEY));
    let mut plain = Forge::new(SESSION, None);
    let start = keyed.start("mcp");
    plain.seq = keyed.seq;
    plain.prev = keyed.prev.clone();
    let lines = [
        start,
        plain.line("rejection", T0, rejection()),
        plain.end(T0),
    ];
    let found = problems(&join(&lines), None);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found
            .iter()
            .all(|(_, p)| p == "no mac, though its session is keyed")
    );
}

#[test]
fn under_a_key_every_mac_is_checked_and_every_session_keyed() {
    let keyed = mcp_session("11-a1", Some(KEY));
    let v = verdict(&join(&keyed), Some(KEY), false);
    assert!(v.ok(), "{:#?}", v.problems);
    assert_eq!(v.verifier.macs, 5);
    // Without the key the macs are counted, not checked.
    let v = verdict(&join(&keyed), None, false);
    assert!(v.ok());
    assert_eq!(v.verifier.macs, 5);
    // Another key: every line.
    let found = problems(&join(&keyed), Some(b"another key of 16 bytes"));
    assert_eq!(found.len(), 5, "{found:#?}");
    assert!(found.iter().all(|(_, p)| p.contains("mac does not match")));
    // An unkeyed session: said once, at its start.
    let plain = mcp_session("12-b2", None);
    one_problem(&join(&plain), Some(KEY), 1, "its session is not keyed");
    // The last record edited: only the mac tells.
    let mut edited = keyed.clone();
    edited[4] = edited[4].replace(T2, "2026-11-30T01:26:02.501Z");
    one_problem(&join(&edited), Some(KEY), 5, "mac does not match");
    // A mac that is not the line's last member (of the last record, which
    // no later hash covers): not what was signed.
    let mut moved = keyed.clone();
    let record: Value = serde_json::from_str(&moved[4]).expect("JSON");
    let mac = record["mac"].as_str().expect("a mac");
    moved[4] = moved[4]
        .replacen(&format!(",\"mac\":\"{mac}\""), "", 1)
        .replacen(",\"prev\"", &format!(",\"mac\":\"{mac}\",\"prev\""), 1);
    let found = problems(&join(&moved), Some(KEY));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0, 5, "{found:#?}");
    assert!(found[0].1.contains("mac does not match"), "{found:#?}");
    // The key is never shown.
    let shown = format!("{:?}", super::verify::Verifier::new(Some(KEY.to_vec())));
    assert!(shown.contains("Key(..)"), "{shown}");
    assert!(
        !shown.contains("a-key-of") && !shown.contains("97, 45"),
        "{shown}"
    );
    // A record of an unknown session, without a mac.
    let mut f = Forge::new("9-99", None);
    f.seq = 1;
    let stray = f.line("rejection", T0, rejection());
    let found = problems(&join(&[stray]), Some(KEY));
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].1.contains("no mac, and --key-env asks for one"),
        "{found:#?}"
    );
}

#[test]
fn no_problem_echoes_what_a_line_holds() {
    const CANARY: &str = "zq\u{1b}[31mCANARY";
    let mut f = Forge::new(SESSION, None);
    let mut lines = vec![f.start("mcp")];
    lines.push(f.line(
        "rejection",
        T0,
        json!({"line":4,"stage":CANARY,"code":-32602,"fingerprint":FP}),
    ));
    lines.push(f.line(CANARY, T0, json!({})));
    lines.push(f.line("intent", CANARY, intent(0)));
    lines.push(f.line("outcome", T0, json!({CANARY: 1})));
    let mut g = Forge::new(CANARY, None);
    lines.push(g.line("intent", T0, intent(0)));
    lines.push(format!("{{\"{CANARY}\":1,"));
    let found = problems(&join(&lines), None);
    assert!(found.len() >= 6, "{found:#?}");
    for (_, p) in &found {
        assert!(!p.contains("CANARY") && !p.contains('\u{1b}'), "{p}");
    }
}

#[test]
fn the_problems_kept_are_bounded_and_all_are_counted() {
    let bytes = vec![b'\n'; MAX_KEPT_PROBLEMS + 5];
    let v = verdict(&bytes, None, false);
    assert_eq!(v.problems.kept.len(), MAX_KEPT_PROBLEMS);
    assert_eq!(v.problems.total, MAX_KEPT_PROBLEMS as u64 + 5);
    assert_eq!(v.verifier.lines, MAX_KEPT_PROBLEMS as u64 + 5);
}

// ---------------------------------------------------------------------------
// Journals the real writer wrote

/// A `wrap` record's kind and members, bounded as the wrap journal
/// bounds them (tool names shown, text cut).
fn wrap_body(record: Value) -> (String, Map<String, Value>) {
    let Value::Object(mut body) = record else {
        unreachable!("records are objects")
    };
    let Some(Value::String(kind)) = body.remove("kind") else {
        unreachable!("records have a kind")
    };
    for (name, value) in &mut body {
        if let Value::String(text) = value {
            *text = if name == "tool" {
                bounded_name(text)
            } else {
                cut(text)
            };
        }
    }
    (kind, body)
}

fn fingerprint(n: u8) -> Fingerprint {
    Fingerprint::of(&[n])
}

fn pin(n: u8) -> Pin {
    let mut def = Map::new();
    def.insert("name".into(), n.into());
    Pin::of(&def)
}

/// One event of a generated session (an index into what its command
/// writes).
fn write_event(journal: &mut JournalFile, wrap: bool, event: u8, state: &mut (u64, Vec<u64>)) {
    let (next, open) = state;
    let mcp = |kind: &str, body: Value| (kind.to_owned(), body.as_object().unwrap().clone());
    let (kind, body) = if !wrap {
        match event % 4 {
            0 => mcp("rejection", rejection()),
            1 | 2 => {
                *next += 1;
                open.push(*next - 1);
                mcp("intent", intent(*next - 1))
            }
            _ => match open.pop() {
                Some(ticket) => mcp("outcome", outcome(ticket)),
                None => mcp("rejection", rejection()),
            },
        }
    } else {
        let line = u64::from(event) + 1;
        let record = match event % 12 {
            0 | 1 => {
                *next += 1;
                open.push(*next);
                let call = i64::try_from(*next).unwrap();
                return append(
                    journal,
                    wrap_body(
                        Intent {
                            line,
                            call,
                            tool: format!("tool-{}", "é".repeat(usize::from(event) * 3)),
                            arguments_sha256: FP.into(),
                            timeout_ms: 30_000,
                        }
                        .to_json(),
                    ),
                );
            }
            2 | 3 => match open.pop() {
                Some(call) => AuditRecord::Outcome(Outcome {
                    call: i64::try_from(call).unwrap(),
                    is_error: event.is_multiple_of(2),
                    answered_by: AnsweredBy::Upstream,
                    cancelled: false,
                    timed_out: false,
                    elapsed_ms: 3,
                }),
                None => AuditRecord::UpstreamExited { unanswered: 2 },
            },
            4 => AuditRecord::ClientRejected {
                line,
                stage: Stage::Json,
                code: -32700,
                fingerprint: fingerprint(event),
            },
            5 => AuditRecord::CallDenied {
                line,
                tool: "\u{202e}x".repeat(usize::from(event) * 4),
                reason: "why ".repeat(usize::from(event) * 50),
            },
            6 => AuditRecord::Quarantined {
                line,
                stage: Stage::Framing,
                fingerprint: fingerprint(event),
                count: 3,
                last_line: line + 7,
            },
            7 => AuditRecord::Dropped {
                line,
                why: Dropped::UnmatchedResponse,
                count: 1,
                last_line: line,
            },
            8 => AuditRecord::LateAnswer {
                line,
                count: 2,
                last_line: line + 1,
            },
            9 => AuditRecord::Pinned {
                tool: "echo".into(),
                pin: pin(event),
            },
            10 => AuditRecord::RugPull {
                tool: "echo".into(),
                pinned: pin(event),
                seen: pin(event + 1),
            },
            _ => AuditRecord::TimedOut {
                line,
                method: "tools/list".into(),
            },
        };
        wrap_body(record.to_json())
    };
    append(journal, (kind, body));
}

fn append(journal: &mut JournalFile, (kind, body): (String, Map<String, Value>)) {
    journal.append(&kind, body, false).expect("append");
}

/// What a generated journal is made of: each session's command (`true`:
/// wrap), then the events in the order they are written.
#[derive(Debug, Clone)]
struct Plan {
    wrap: Vec<bool>,
    events: Vec<(Index, u8)>,
}

fn plans() -> impl Strategy<Value = Plan> {
    (
        prop::collection::vec(any::<bool>(), 1..4),
        prop::collection::vec((any::<Index>(), any::<u8>()), 0..14),
    )
        .prop_map(|(wrap, events)| Plan { wrap, events })
}

/// The journal `plan` makes, written by [`JournalFile`], every session
/// closed; and each line's session (by index) and seq.
fn write_journal(dir: &Path, plan: &Plan, keyed: bool) -> (Vec<u8>, Vec<(usize, u64)>) {
    let path = dir.join("journal.jsonl");
    let _ = std::fs::remove_file(&path);
    let mut journals: Vec<(JournalFile, bool, (u64, Vec<u64>))> = plan
        .wrap
        .iter()
        .map(|&wrap| {
            let key = keyed.then(|| AuditKey::from_bytes(KEY));
            let command = if wrap { "wrap" } else { "mcp" };
            let journal = JournalFile::open(&path, command, key).expect("open");
            (journal, wrap, (0, Vec::new()))
        })
        .collect();
    for (which, event) in &plan.events {
        let (journal, wrap, state) = &mut journals[which.index(plan.wrap.len())];
        write_event(journal, *wrap, *event, state);
    }
    for (journal, wrap, (_, open)) in &mut journals {
        let mut extra = Map::new();
        if *wrap {
            // wrap ends every call before its session.
            while let Some(call) = open.pop() {
                let outcome = AuditRecord::Outcome(Outcome {
                    call: i64::try_from(call).unwrap(),
                    is_error: true,
                    answered_by: AnsweredBy::Wrapper,
                    cancelled: false,
                    timed_out: false,
                    elapsed_ms: 0,
                });
                append(journal, wrap_body(outcome.to_json()));
            }
            extra.insert(
                "forwarded".into(),
                json!({"initialize": 1, "tools/call": 2}),
            );
        }
        journal.close(extra).expect("close");
    }
    let sessions: Vec<String> = journals
        .iter()
        .map(|(j, _, _)| j.session().to_owned())
        .collect();
    let bytes = std::fs::read(&path).expect("read the journal");
    let places = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let r: Value = serde_json::from_slice(l).expect("JSON");
            let at = sessions
                .iter()
                .position(|s| r["session"] == **s)
                .expect("a session");
            (at, r["seq"].as_u64().expect("seq"))
        })
        .collect();
    (bytes, places)
}

fn split_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    assert_eq!(
        lines.pop(),
        Some(Vec::new()),
        "the journal ends with a newline"
    );
    lines
}

fn join_bytes(lines: &[Vec<u8>]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| l.iter().copied().chain([b'\n']))
        .collect()
}

/// `bytes` fails to verify, naming lines of the file.
fn refused(bytes: &[u8], key: Option<&[u8]>, what: &str) -> Result<(), TestCaseError> {
    let v = verdict(bytes, key, false);
    let lines = bytes.split(|&b| b == b'\n').count() as u64;
    prop_assert!(!v.ok(), "{} went unseen", what);
    for p in &v.problems.kept {
        prop_assert!((1..=lines).contains(&p.line), "{}: {:?}", what, p);
    }
    Ok(())
}

/// Whether each session's lines are still in the order of their seq.
fn in_chain_order(places: &[(usize, u64)]) -> bool {
    let mut last: BTreeMap<usize, u64> = BTreeMap::new();
    places.iter().all(|(session, seq)| {
        let ok = last.get(session).is_none_or(|l| seq > l);
        last.insert(*session, *seq);
        ok
    })
}

/// Every manipulation of a genuine journal fails to verify: `edits`
/// single bytes changed (in a keyed journal anywhere, else outside each
/// session's last record), each line deleted, each line duplicated (after
/// itself and at `at`), `swaps` of two lines (refused exactly when they
/// reorder a session), a session's tail deleted, a session replayed, a
/// forged record put in.
fn manipulations_are_refused(
    plan: &Plan,
    keyed: bool,
    edits: &[(Index, u8)],
    picks: &[(Index, Index)],
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (bytes, places) = write_journal(dir.path(), plan, keyed);
    let key = keyed.then_some(KEY);
    let v = verdict(&bytes, key, false);
    prop_assert!(v.ok(), "the genuine journal: {:#?}", v.problems);
    let lines = split_lines(&bytes);
    let n = lines.len();

    // Single bytes.
    let mut last_of: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, (session, _)) in places.iter().enumerate() {
        last_of.insert(*session, i);
    }
    let mut unguarded = Vec::new();
    let mut offset = 0;
    for (i, line) in lines.iter().enumerate() {
        if !keyed && last_of.values().any(|&l| l == i) {
            unguarded.push(offset..offset + line.len());
        }
        offset += line.len() + 1;
    }
    for (at, byte) in edits {
        let at = at.index(bytes.len());
        if unguarded.iter().any(|r| r.contains(&at)) {
            continue;
        }
        let mut edited = bytes.clone();
        edited[at] = if *byte == bytes[at] {
            byte ^ 0x01
        } else {
            *byte
        };
        refused(
            &edited,
            key,
            &format!("byte {at} set to {:#04x}", edited[at]),
        )?;
    }

    for i in 0..n {
        let mut fewer = lines.clone();
        fewer.remove(i);
        refused(&join_bytes(&fewer), key, &format!("line {} deleted", i + 1))?;
        let mut more = lines.clone();
        more.insert(i, lines[i].clone());
        refused(&join_bytes(&more), key, &format!("line {} doubled", i + 1))?;
    }
    for (a, b) in picks {
        let (a, b) = (a.index(n), b.index(n));
        let mut more = lines.clone();
        more.insert(b, lines[a].clone());
        refused(
            &join_bytes(&more),
            key,
            &format!("line {} copied before line {}", a + 1, b + 1),
        )?;
        if a == b {
            continue;
        }
        let mut swapped = lines.clone();
        swapped.swap(a, b);
        let mut order = places.clone();
        order.swap(a, b);
        let bytes = join_bytes(&swapped);
        if in_chain_order(&order) {
            // Lines of different sessions only: another interleaving.
            let v = verdict(&bytes, key, false);
            prop_assert!(
                v.ok(),
                "lines {} and {} swapped: {:#?}",
                a + 1,
                b + 1,
                v.problems
            );
        } else {
            refused(
                &bytes,
                key,
                &format!("lines {} and {} swapped", a + 1, b + 1),
            )?;
        }
    }

    // Each session's tail from its seq 1 on, and its whole replay.
    for session in last_of.keys() {
        let kept: Vec<Vec<u8>> = lines
            .iter()
            .zip(&places)
            .filter(|(_, (s, seq))| s != session || *seq == 0)
            .map(|(l, _)| l.clone())
            .collect();
        refused(&join_bytes(&kept), key, "a session's tail deleted")?;
        let replay: Vec<Vec<u8>> = lines
            .iter()
            .zip(&places)
            .filter(|(_, (s, _))| s == session)
            .map(|(l, _)| l.clone())
            .collect();
        refused(
            &join_bytes(&[lines.clone(), replay].concat()),
            key,
            "a session replayed",
        )?;
    }

    // A forged record, chained to the line before it in its session: the
    // forger computes hashes, but holds no key.
    if let Some((b, _)) = picks.first() {
        let at = b.index(n).max(1);
        let (session, _) = places[at];
        let before = (0..at).rev().find(|&i| places[i].0 == session);
        if let Some(before) = before {
            let previous: Value = serde_json::from_slice(&lines[before]).expect("JSON");
            let mut forge = Forge::new(
                previous["session"].as_str().expect("session"),
                keyed.then_some(b"not the writer's key".as_slice()),
            );
            forge.seq = previous["seq"].as_u64().expect("seq") + 1;
            forge.prev = hex_sha256(&lines[before]);
            let time = previous["time"].as_str().expect("time");
            let wrap = plan.wrap[session];
            let forged = if wrap {
                forge.line(
                    "wrap_rejection",
                    time,
                    json!({"line":9,"stage":"json","code":-32700,"fingerprint":FP}),
                )
            } else {
                forge.line("rejection", time, rejection())
            };
            let mut more = lines.clone();
            more.insert(before + 1, forged.into_bytes());
            refused(&join_bytes(&more), key, "a forged record put in")?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_manipulation_of_a_keyed_journal_is_refused(
        plan in plans(),
        edits in prop::collection::vec((any::<Index>(), any::<u8>()), 48),
        picks in prop::collection::vec((any::<Index>(), any::<Index>()), 16),
    ) {
        manipulations_are_refused(&plan, true, &edits, &picks)?;
    }

    #[test]
    fn every_manipulation_of_an_unkeyed_journal_is_refused(
        plan in plans(),
        edits in prop::collection::vec((any::<Index>(), any::<u8>()), 48),
        picks in prop::collection::vec((any::<Index>(), any::<Index>()), 16),
    ) {
        manipulations_are_refused(&plan, false, &edits, &picks)?;
    }
}
