//! One function per fuzz target. Each panics when its property fails; fuzz
//! targets, bolero and proptest properties and regression replay all call
//! these and nothing else.

use std::collections::HashSet;

use arbitrary::{Arbitrary, Unstructured};
use portcullis_gateway::mcp::Revision;
use portcullis_gateway::{ActionTarget, OnInvalid, Outcome, reply};
use portcullis_wire::strict_json::parse_value;
use portcullis_wire::{ErrorObject, Id, Limits, Outbound, Stage, check_transcript, encode};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::fixtures::{small_cap_policy, test_policy};
use crate::json_arbitrary::ArbitraryJson;
use crate::model::{self, key_of};
use crate::recorder::Recorder;
use crate::reference::{IdKey, executable_lines, owed_before, values_in, written};
use crate::session::{
    Chunking, SessionReport, run_session, run_session_deferred, run_session_deferred_like,
    run_session_with,
};

/// A harness: takes fuzzer bytes, panics when its property fails.
pub type Harness = fn(&[u8]);

/// Every harness, by fuzz target name.
pub const TARGETS: &[(&str, Harness)] = &[
    ("stdin_bytes", stdin_bytes),
    ("session_model", session_model),
    ("chunking", chunking),
    ("stdout_frames", stdout_frames),
    ("strict_json", strict_json),
    ("authz_expansion", crate::authz_harness::authz_expansion),
    ("schema_nesting", crate::schema_nesting::schema_nesting),
    ("wrap_session", crate::wrap_harness::wrap_session),
    ("policy_load", crate::policy_harness::policy_load),
    (
        "transcript_check",
        crate::transcript_harness::transcript_check,
    ),
];

/// Harnesses that replay `regressions/<name>/` in process but are not fuzz
/// targets (their input is a recipe, e.g. a frame repeated into a long
/// session, rather than bytes worth mutating).
pub const REPLAYS: &[(&str, Harness)] = &[
    ("schema_closure", crate::schema_closure::schema_closure),
    ("session_memory", crate::memory::session_memory),
];

/// Fuzz targets whose replay runs more than one fuzzed execution does: the
/// input's choices that an execution leaves to a byte (e.g. `wrap_session`'s
/// session policy) are all taken in turn.
pub const EXHAUSTIVE_REPLAYS: &[(&str, Harness)] =
    &[("wrap_session", crate::wrap_harness::wrap_session_both_modes)];

/// The harness that replays inputs of `name` (a fuzz target, in its
/// exhaustive form when it has one, or a replay-only harness).
pub fn by_name(name: &str) -> Option<Harness> {
    EXHAUSTIVE_REPLAYS
        .iter()
        .chain(TARGETS)
        .chain(REPLAYS)
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
}

const TOOLS: [&str; 4] = [
    "service_status",
    "restart_service",
    "region_probe",
    "avatar_delete",
];

/// Arbitrary bytes into the stdin entry point, under both session policies.
/// Every recorded action must come from a line the independent reference
/// check accepts as a complete valid `tools/call` in a valid session, and
/// must target an allowlisted host; under `close`, nothing is recorded after
/// the first rejected frame; stdout passes the transcript checker (checked
/// inside `run_session`). The input is one read, so a call is still in
/// flight when a later frame of it ends the session; under `close` the
/// session runs again with every outcome reported at end of input (calls
/// in flight at a truncated last frame too), which must read and run
/// exactly the same. Under both schedules every request before the first
/// invalid frame is answered exactly once (a call the client cancelled at
/// most once), with that frame's error (if any) the last frame written
/// ([`assert_answers`]).
pub fn stdin_bytes(data: &[u8]) {
    // Judged only when something executed: the reference reads every
    // line, and most fuzzer inputs execute nothing.
    let reference = std::cell::OnceCell::new();
    for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
        let policy = test_policy(mode);
        let report = run_session(&policy, data, &Chunking::Whole);
        check_stdin_report(data, mode, &report, &reference);
        if mode == OnInvalid::Close {
            let owed = owed_before(data, first_invalid(&report).map(|r| r.line));
            assert_answers(
                "close",
                &report,
                &owed.requests,
                &owed.cancelled,
                Extra::LastError,
            );
            let deferred = run_session_deferred(&policy, data, &Chunking::Whole);
            assert_eq!(
                (&deferred.actions, &deferred.rejections, &deferred.closed),
                (&report.actions, &report.rejections, &report.closed),
                "with outcomes reported at end of input the session read or ran something else"
            );
            assert_answers(
                "close, outcomes at end of input",
                &deferred,
                &owed.requests,
                &owed.cancelled,
                Extra::LastError,
            );
        }
    }
}

/// The first rejection that is not a refused call (schema or authz): the
/// frame that ends a `close` session.
fn first_invalid(report: &SessionReport) -> Option<&portcullis_gateway::RejectionRecord> {
    report
        .rejections
        .iter()
        .find(|r| !matches!(r.stage, Stage::Schema | Stage::Authz))
}

/// Which frames, besides the answers a session owes, it may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    /// Under `close`: one error, for the frame that ended the session, and
    /// only as the very last frame (only if the session closed).
    LastError,
    /// Under `keep-open`: errors anywhere, for the invalid frames.
    Errors,
}

/// The answering rule (RFC 9113 §6.8, a graceful GOAWAY): every request in
/// `owed` is answered exactly once (those in `cancelled` at most once),
/// whatever the completion schedule; every other frame is an error that
/// answers none of them, and under [`Extra::LastError`] there is at most
/// one, the last frame written, and none unless the session closed.
/// `what` names the session in failure messages.
pub fn assert_answers(
    what: &str,
    report: &SessionReport,
    owed: &[IdKey],
    cancelled: &[IdKey],
    extra: Extra,
) {
    let frames = written(&report.stdout);
    for id in owed {
        let times = frames.iter().filter(|f| f.id.as_ref() == Some(id)).count();
        let allowed = if cancelled.contains(id) { 0..=1 } else { 1..=1 };
        assert!(
            allowed.contains(&times),
            "{what}: request {id:?} was answered {times} times, not once (closed: {:?})\nstdout:\n{}",
            report.closed,
            String::from_utf8_lossy(&report.stdout)
        );
    }
    let others: Vec<usize> = frames
        .iter()
        .enumerate()
        .filter(|(_, f)| f.id.as_ref().is_none_or(|id| !owed.contains(id)))
        .map(|(at, _)| at)
        .collect();
    for &at in &others {
        assert!(
            frames[at].error,
            "{what}: frame {} answers no request owed an answer and is not an error\nstdout:\n{}",
            at + 1,
            String::from_utf8_lossy(&report.stdout)
        );
    }
    if extra == Extra::LastError {
        let allowed = usize::from(report.closed.is_some());
        assert!(
            others.len() <= allowed && others.iter().all(|&at| at + 1 == frames.len()),
            "{what}: under close, the error for the frame that ends the session must be the last frame \
             and the only other one (frames {:?} of {}; closed: {:?})\nstdout:\n{}",
            others.iter().map(|at| at + 1).collect::<Vec<_>>(),
            frames.len(),
            report.closed,
            String::from_utf8_lossy(&report.stdout)
        );
    }
}

/// What [`stdin_bytes`] asserts of one session.
fn check_stdin_report(
    data: &[u8],
    mode: OnInvalid,
    report: &SessionReport,
    reference: &std::cell::OnceCell<Vec<Option<String>>>,
) {
    assert_eq!(
        report.actions.len(),
        report.journal.len(),
        "the executor saw exactly what the journal recorded"
    );
    for (entry, action) in report.journal.iter().zip(&report.actions) {
        let line = usize::try_from(entry.line).expect("line fits") - 1;
        let reference = reference
            .get_or_init(|| executable_lines(data, &TOOLS, crate::fixtures::TEST_MAX_FRAME_VALUES));
        let accepted = reference.get(line).cloned().flatten();
        assert_eq!(
            accepted.as_deref(),
            Some(action.tool()),
            "{mode:?}: line {} executed {} but the reference check refuses it",
            entry.line,
            action.tool()
        );
        assert_allowlisted(action.target());
    }
    // A well-formed call refused by the schema or authorization is a
    // tool error and never ends the session; any other rejection under
    // `close` does, and nothing after it is processed.
    if let Some(closed) = &report.closed {
        assert!(
            !matches!(closed.stage, Stage::Schema | Stage::Authz),
            "{mode:?}: a refused call closed the session: {closed:?}"
        );
    }
    let invalid = first_invalid(report);
    if mode == OnInvalid::Close
        && let Some(first) = invalid
    {
        assert!(
            report.journal.iter().all(|e| e.line < first.line),
            "an action was recorded after the first invalid frame (line {})",
            first.line
        );
        assert!(
            report.closed.is_some(),
            "an invalid frame under close must close the session"
        );
        assert_eq!(
            report.rejections.last().map(|r| r.line),
            Some(first.line),
            "nothing is processed after close"
        );
    }
}

fn assert_allowlisted(target: &ActionTarget) {
    match target {
        ActionTarget::Http(h) => {
            let uri = h.uri();
            assert_eq!(
                (uri.scheme_str(), h.host(), h.port()),
                (Some("http"), "127.0.0.1", 8080),
                "HTTP action outside the allowlist: {uri}"
            );
        }
        ActionTarget::Ssh(s) => {
            assert_eq!((s.host(), s.port()), ("127.0.0.1", 2222));
            assert_eq!(
                s.argv()[..2],
                ["systemctl".to_owned(), "restart".to_owned()]
            );
        }
    }
}

/// Structured operations against the session model: the recorder must equal
/// the model's prediction exactly (valid calls execute exactly once), and
/// every request it owes an answer gets exactly one, before the error of
/// a frame that closes the session. Run with outcomes reported once the
/// read is carried out (the input is one read, so calls are in flight
/// when a later frame ends the session) and again at end of input (in
/// flight at a truncated last frame too).
pub fn session_model(data: &[u8]) {
    let Some((mode, ops)) = model::from_fuzz(data) else {
        return;
    };
    check_model(&ops, mode);
}

/// Assert the gateway does exactly what the model predicts for `ops`,
/// under both completion schedules.
pub fn check_model(ops: &[model::Op], mode: OnInvalid) {
    let policy = test_policy(mode);
    let limits = portcullis_gateway::Config::from_policy(&policy).limits;
    let scenario = model::scenario_with(ops, mode, limits);
    let report = run_session(&policy, &scenario.input, &Chunking::Whole);
    check_model_report(ops, mode, &scenario, &report);
    let deferred = run_session_deferred(&policy, &scenario.input, &Chunking::Whole);
    check_model_report(ops, mode, &scenario, &deferred);
}

/// One session of [`check_model`].
fn check_model_report(
    ops: &[model::Op],
    mode: OnInvalid,
    scenario: &model::Scenario,
    report: &SessionReport,
) {
    let actual: Vec<_> = report.actions.iter().map(key_of).collect();
    assert_eq!(
        actual, scenario.expected,
        "{mode:?}: recorded actions differ from the model for ops {ops:?}"
    );
    let stages: Vec<_> = report.rejections.iter().map(|r| r.stage).collect();
    assert_eq!(
        stages, scenario.rejections,
        "{mode:?}: rejection stages differ from the model for ops {ops:?}"
    );
    assert_eq!(
        model::tool_error_ids(&report.stdout),
        scenario.tool_errors,
        "{mode:?}: isError results differ from the model for ops {ops:?}"
    );
    for refusal in model::refusals(&report.stdout) {
        for value in model::REFUSED_VALUES {
            assert!(
                !refusal.contains(value),
                "{mode:?}: a refusal echoed the argument value {value:?}: {refusal}"
            );
        }
    }
    assert_eq!(
        report.closed.is_some(),
        scenario.closes,
        "{mode:?}: session close differs from the model for ops {ops:?}: {:?}",
        report.closed
    );
    let owed: Vec<IdKey> = scenario.answered.iter().map(|&id| IdKey::Int(id)).collect();
    let cancelled: Vec<IdKey> = scenario
        .cancelled
        .iter()
        .map(|&id| IdKey::Int(id))
        .collect();
    let extra = match mode {
        OnInvalid::Close => Extra::LastError,
        OnInvalid::KeepOpen => Extra::Errors,
    };
    let what = format!("{mode:?}, ops {ops:?}");
    assert_answers(&what, report, &owed, &cancelled, extra);
    let frames = written(&report.stdout);
    for id in &cancelled {
        assert!(
            frames.iter().all(|f| f.id.as_ref() != Some(id)),
            "{mode:?}: call {id:?} was cancelled while it ran, yet answered, for ops {ops:?}"
        );
    }
    if let Some(revision) = report.revision {
        let requests = crate::mcp_schema::requests_of(&scenario.input);
        if let Err(err) = crate::mcp_schema::check_stdout(&report.stdout, revision, &requests) {
            panic!("stdout does not match the official schema: {err}");
        }
    }
}

/// The same bytes fed whole, byte by byte and in fuzzer-chosen chunks give
/// identical stdout, actions, rejections and close, under both session
/// policies and again with the smallest frame cap a policy may set (so the
/// cap is crossed mid-chunk on most inputs, not only past 4 KiB). Outcomes are reported at
/// end of input so the completion schedule does not depend on the chunking
/// (with immediate completion, a result can land before or after a later
/// frame's reply depending on where a read ends, as in the real driver).
pub fn chunking(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let sizes: Vec<usize> = (0..u.int_in_range(1..=8).unwrap_or(1))
        .map(|_| usize::from(u.int_in_range(1u8..=64).unwrap_or(1)))
        .collect();
    let input = u.take_rest();
    let policies = [
        (test_policy(OnInvalid::Close), "close"),
        (test_policy(OnInvalid::KeepOpen), "keep-open"),
        (small_cap_policy(), "keep-open, small cap"),
    ];
    for (policy, mode) in policies {
        let whole = run_session_deferred(&policy, input, &Chunking::Whole);
        for chunking in [Chunking::ByteByByte, Chunking::Sizes(sizes.clone())] {
            let split = run_session_deferred_like(&policy, input, &chunking, &whole);
            assert_eq!(
                whole.stdout, split.stdout,
                "{mode} {chunking:?}: stdout differs"
            );
            assert_eq!(
                whole.actions, split.actions,
                "{mode} {chunking:?}: actions differ"
            );
            assert_eq!(
                whole.rejections, split.rejections,
                "{mode} {chunking:?}: rejections differ"
            );
            assert_eq!(
                whole.closed, split.closed,
                "{mode} {chunking:?}: close differs"
            );
        }
    }
}

/// Arbitrary tool outcomes and errors through the encoder (directly and via
/// a live session); the transcript checker must accept every result.
pub fn stdout_frames(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let text = String::arbitrary(&mut u).unwrap_or_default();
    let is_error = bool::arbitrary(&mut u).unwrap_or_default();
    let revision = match u.int_in_range(0u8..=2).unwrap_or(0) {
        0 => Revision::V2025_06_18,
        1 => Revision::V2025_11_25,
        _ => Revision::V2026_07_28,
    };
    let id = if bool::arbitrary(&mut u).unwrap_or_default() {
        Id::Str(String::arbitrary(&mut u).unwrap_or_default())
    } else {
        Id::Int(i64::arbitrary(&mut u).unwrap_or_default() % (1 << 53))
    };
    let data_value = ArbitraryJson::arbitrary(&mut u).map(|j| j.0).ok();
    let message = String::arbitrary(&mut u).unwrap_or_default();
    let code = i64::arbitrary(&mut u).unwrap_or_default();
    let notification_params = crate::json_arbitrary::object(&mut u, 4).unwrap_or_default();

    let frames = [
        Outbound::Response {
            id: id.clone(),
            result: reply::call_tool(revision, &text, is_error),
        },
        Outbound::Error {
            id: Some(id),
            error: ErrorObject {
                code,
                message: message.clone(),
                data: data_value.clone(),
            },
        },
        Outbound::Error {
            id: None,
            error: ErrorObject {
                code,
                message,
                data: data_value,
            },
        },
        Outbound::Notification {
            method: text.clone(),
            params: Some(Value::Object(notification_params)),
        },
    ];
    let mut transcript = Vec::new();
    for frame in &frames {
        let bytes = match encode(frame) {
            Ok(bytes) => bytes,
            Err(portcullis_wire::EncodeError::UnsafeErrorCode(c)) => {
                assert!(c.unsigned_abs() >= 1 << 53, "refused a safe code {c}");
                continue;
            }
            Err(err) => panic!("encoder refused a valid message: {err}"),
        };
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(bytes.last(), Some(&b'\n'));
        if let Err(v) = check_transcript(&bytes) {
            panic!("encoder output rejected by the transcript checker: {v}");
        }
        transcript.extend(bytes);
    }
    if let Err(v) = check_transcript(&transcript) {
        panic!("concatenated encoder output rejected: {v}");
    }

    // The same outcome through a real session.
    let policy = test_policy(OnInvalid::Close);
    let recorder = Recorder::new(Outcome { text, is_error });
    let mut input = crate::fixtures::legacy_handshake();
    input.extend(crate::fixtures::call(
        2,
        "service_status",
        serde_json::json!({"service":"api"}),
    ));
    let report = run_session_with(&policy, &input, &Chunking::Whole, &recorder);
    assert_eq!(report.actions.len(), 1);
}

/// Differential: the strict reader and the reference reading through
/// serde_json give the same verdict, value and reason; any text the strict
/// parser accepts, serde_json accepts with an equal value, and it has no
/// duplicate keys (by an independent check). The value limit: an accepted
/// text is accepted again with the limit at its own count of values
/// (counted on the tree by the reference check's [`values_in`]) and refused at the JSON stage one
/// below, by the reader, the reference and the envelope reader alike;
/// every text gets the same verdict from both readings under a limit of
/// a few values.
pub fn strict_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let strict = parse_value(text, &Limits::default());
    let reference = portcullis_wire::strict_json::reference::parse_value(text, &Limits::default());
    match (&strict, &reference) {
        (Ok(mine), Ok(theirs)) => assert_eq!(
            mine, theirs,
            "the reader and the reference read different values"
        ),
        (Err(mine), Err(theirs)) => assert_eq!(mine.reason, theirs.reason),
        (Ok(_), Err(r)) => panic!(
            "the reader accepted what the reference refuses: {}",
            r.reason
        ),
        (Err(r), Ok(_)) => panic!(
            "the reader refused what the reference accepts: {}",
            r.reason
        ),
    }
    let message = portcullis_wire::parse_message_borrowed(text, &Limits::default());
    assert_eq!(
        matches!(&message, Err(r) if r.stage == portcullis_wire::Stage::Json),
        reference.is_err(),
        "the envelope reader decides the JSON stage differently"
    );
    let lenient = serde_json::from_str::<Value>(text);
    if let Ok(value) = strict {
        match lenient {
            Ok(other) => assert_eq!(value, other, "strict and serde_json disagree on the value"),
            Err(err) => panic!("strict accepted what serde_json rejects: {err}"),
        }
        assert_eq!(
            has_duplicate_keys(text),
            Some(false),
            "strict accepted an object with duplicate keys"
        );
        // serde_json accepts integers up to 64 bits, so the differential
        // alone is blind to the ±(2^53−1) rule; check it on the value.
        if let Some(n) = unsafe_integer(&value) {
            panic!("strict accepted the integer {n}, beyond ±(2^53−1)");
        }
        check_value_limit(text, values_in(&value));
    }
    // A limit of a few values, so that fuzzer-sized texts cross it.
    let few = Limits {
        max_values: data.len() % 8,
        ..Limits::default()
    };
    let strict = parse_value(text, &few);
    let reference = portcullis_wire::strict_json::reference::parse_value(text, &few);
    assert_eq!(
        strict.as_ref().map_err(|r| &r.reason),
        reference.as_ref().map_err(|r| &r.reason),
        "the reader and the reference disagree under a limit of {} values",
        few.max_values
    );
}

/// `text`, accepted under the default limits, holds `count` values:
/// accepted with the limit there, refused one below, by every reading.
fn check_value_limit(text: &str, count: usize) {
    let at = |max_values| Limits {
        max_values,
        ..Limits::default()
    };
    assert!(
        parse_value(text, &at(count)).is_ok(),
        "the reader refused a text of {count} values at a limit of {count}"
    );
    assert!(
        portcullis_wire::strict_json::reference::parse_value(text, &at(count)).is_ok(),
        "the reference refused a text of {count} values at a limit of {count}"
    );
    let below = at(count - 1);
    let refusal = |verdict: Result<Value, portcullis_wire::Rejection>, who: &str| {
        let rejection = verdict.expect_err(who);
        assert_eq!(rejection.stage, portcullis_wire::Stage::Json, "{who}");
        rejection.reason
    };
    let mine = refusal(
        parse_value(text, &below),
        "the reader accepted a text of one value more than its limit",
    );
    let theirs = refusal(
        portcullis_wire::strict_json::reference::parse_value(text, &below),
        "the reference accepted a text of one value more than its limit",
    );
    assert_eq!(mine, theirs);
    let limit = format!("max_frame_values ({})", count - 1);
    assert!(
        mine.contains(&limit),
        "the refusal does not name {limit}: {mine}"
    );
    assert!(
        matches!(
            portcullis_wire::parse_message_borrowed(text, &below),
            Err(r) if r.stage == portcullis_wire::Stage::Json
        ),
        "the envelope reader read a text of one value more than its limit"
    );
}

/// The first integer in `value` (at any depth) outside ±(2^53−1).
fn unsafe_integer(value: &Value) -> Option<&serde_json::Number> {
    const MAX_SAFE: u64 = (1 << 53) - 1;
    match value {
        Value::Number(n) => {
            let magnitude = n.as_i64().map(i64::unsigned_abs).or_else(|| n.as_u64());
            magnitude.is_some_and(|m| m > MAX_SAFE).then_some(n)
        }
        Value::Array(items) => items.iter().find_map(unsafe_integer),
        Value::Object(map) => map.values().find_map(unsafe_integer),
        _ => None,
    }
}

/// serde_json's lenient reading of `text` (later members replace earlier
/// ones of the same key, as `serde_json::from_str::<Value>` has it) and
/// whether any object at any depth repeats a key, in one pass; `None` if
/// the text is not JSON. The same judgement as [`has_duplicate_keys`], for
/// oracles that need the value too.
pub fn value_and_duplicates(text: &str) -> Option<(Value, bool)> {
    struct Reading<'a>(&'a std::cell::Cell<bool>);
    impl<'de> de::DeserializeSeed<'de> for Reading<'_> {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Reading<'_> {
        type Value = Value;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
            Ok(Value::Bool(b))
        }
        fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
            Ok(Value::from(n))
        }
        fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
            Ok(Value::from(n))
        }
        fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
            Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
        }
        fn visit_str<E>(self, s: &str) -> Result<Value, E> {
            Ok(Value::String(s.to_owned()))
        }
        fn visit_string<E>(self, s: String) -> Result<Value, E> {
            Ok(Value::String(s))
        }
        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element_seed(Reading(self.0))? {
                items.push(item);
            }
            Ok(Value::Array(items))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut members = serde_json::Map::new();
            while let Some(key) = map.next_key::<String>()? {
                let value = map.next_value_seed(Reading(self.0))?;
                if members.insert(key, value).is_some() {
                    self.0.set(true);
                }
            }
            Ok(Value::Object(members))
        }
    }
    let duplicates = std::cell::Cell::new(false);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = de::DeserializeSeed::deserialize(Reading(&duplicates), &mut de).ok()?;
    de.end().ok()?;
    Some((value, duplicates.get()))
}

/// Independent duplicate-key detector: `Some(true)` if any object at any
/// depth repeats a key, `None` if the text is not JSON.
pub fn has_duplicate_keys(text: &str) -> Option<bool> {
    struct Dups;
    impl<'de> de::DeserializeSeed<'de> for Dups {
        type Value = bool;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Dups {
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_str<E>(self, _: &str) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_unit<E>(self) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
            let mut found = false;
            while let Some(d) = seq.next_element_seed(Dups)? {
                found |= d;
            }
            Ok(found)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut keys = HashSet::new();
            let mut found = false;
            while let Some(key) = map.next_key::<String>()? {
                found |= !keys.insert(key);
                found |= map.next_value_seed(Dups)?;
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let found = de::DeserializeSeed::deserialize(Dups, &mut de).ok()?;
    de.end().ok()?;
    Some(found)
}
