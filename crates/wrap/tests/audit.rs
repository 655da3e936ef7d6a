//! The wrap core's audit trail (issue 29): every forwarded `tools/call` goes
//! out with its intent and ends with exactly one outcome; once the journal
//! is unavailable no call is forwarded and each is answered with a denial;
//! quarantines and drops are aggregated per interval; the session counts
//! what it forwarded, per method.

use portcullis_wire::check_transcript;
use portcullis_wrap::flood::INTERVAL_MS;
use portcullis_wrap::{
    AnsweredBy, AuditRecord, Config, Effect, End, Intent, JOURNAL_DENIAL, Outcome, Wrap,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What a session did, in order.
#[derive(Default, Debug)]
struct Seen {
    client: Vec<Value>,
    client_bytes: Vec<u8>,
    /// Every line the upstream received, with the intent it came with.
    upstream: Vec<(Value, Option<Intent>)>,
    audit: Vec<AuditRecord>,
    shown: Vec<u64>,
    notices: Vec<String>,
    end: Option<End>,
}

impl Seen {
    fn take(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            assert!(self.end.is_none(), "an effect after the end: {effect:?}");
            match effect {
                Effect::ToClient(line) => {
                    self.client_bytes.extend_from_slice(line.as_bytes());
                    self.client
                        .push(serde_json::from_slice(line.as_bytes()).unwrap());
                }
                Effect::ToUpstream(line) => {
                    let value: Value = serde_json::from_slice(line.as_bytes()).unwrap();
                    assert_ne!(value["method"], "tools/call", "a call without its intent");
                    self.upstream.push((value, None));
                }
                Effect::ForwardCall { intent, line } => {
                    let value = serde_json::from_slice(line.as_bytes()).unwrap();
                    self.upstream.push((value, Some(intent)));
                }
                Effect::Quarantine(q) => self.shown.push(q.line),
                Effect::Audit(record) => self.audit.push(record),
                Effect::Notice(text) => self.notices.push(text),
                Effect::Close(end) => self.end = Some(end),
                Effect::PinsChanged(_) | Effect::EndUpstreamInput => {}
            }
        }
        check_transcript(&self.client_bytes).expect("the client's stdout is strictly framed");
    }

    fn outcomes(&self) -> Vec<Outcome> {
        self.audit
            .iter()
            .filter_map(|r| match r {
                AuditRecord::Outcome(o) => Some(*o),
                _ => None,
            })
            .collect()
    }

    fn calls_upstream(&self) -> usize {
        self.upstream
            .iter()
            .filter(|(v, _)| v["method"] == "tools/call")
            .count()
    }

    fn answer(&self, id: i64) -> &Value {
        self.client
            .iter()
            .find(|v| v["id"] == id && v.get("method").is_none())
            .unwrap_or_else(|| panic!("no answer for {id}: {:?}", self.client))
    }
}

struct Session {
    wrap: Wrap,
    seen: Seen,
    now: u64,
}

impl Session {
    fn new() -> Self {
        let config = Config {
            request_timeout_ms: 60_000,
            ..Config::default()
        };
        Self {
            wrap: Wrap::new(config),
            seen: Seen::default(),
            now: 0,
        }
    }

    fn at(&mut self, now: u64) -> &mut Self {
        self.now = now;
        self
    }

    fn client(&mut self, line: &str) -> &mut Self {
        let effects = self
            .wrap
            .from_client(format!("{line}\n").as_bytes(), self.now);
        self.seen.take(effects);
        self
    }

    fn upstream(&mut self, line: &str) -> &mut Self {
        let effects = self
            .wrap
            .from_upstream(format!("{line}\n").as_bytes(), self.now);
        self.seen.take(effects);
        self
    }

    /// initialize, initialized, and a tools/list showing `echo`.
    fn ready(&mut self) -> &mut Self {
        self.client(r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
            .upstream(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"up","version":"1"}}}"#)
            .client(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .client(r#"{"jsonrpc":"2.0","id":"list","method":"tools/list"}"#)
            .upstream(r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"},"n":{"type":"number"}}}}]}}"#)
    }

    fn call(&mut self, id: i64, arguments: &str) -> &mut Self {
        self.client(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{arguments}}}}}"#
        ))
    }

    /// The upstream id of the last call forwarded.
    fn last_call(&self) -> i64 {
        let (line, _) = self
            .seen
            .upstream
            .iter()
            .rev()
            .find(|(v, _)| v["method"] == "tools/call")
            .expect("a call was forwarded");
        line["id"].as_i64().unwrap()
    }
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn denial() -> Value {
    json!({"content":[{"type":"text","text":"denied: audit journal unavailable"}],"isError":true})
}

#[test]
fn a_forwarded_call_goes_out_with_its_intent() {
    let mut s = Session::new();
    s.ready().at(7).call(10, r#"{"n": 1e1, "message": "hi"}"#);
    let (line, intent) = s.seen.upstream.last().unwrap();
    assert_eq!(line["method"], "tools/call");
    let intent = intent.clone().expect("the call carries its intent");
    assert_eq!(
        intent,
        Intent {
            line: 4,
            call: line["id"].as_i64().unwrap(),
            tool: "echo".into(),
            // The canonical arguments: members sorted, 1e1 read as a double.
            arguments_sha256: sha256_hex(r#"{"message":"hi","n":10.0}"#),
            timeout_ms: 60_000,
        }
    );
    assert_eq!(
        intent.to_json(),
        json!({"kind":"wrap_intent","line":4,"call":intent.call,"tool":"echo","arguments_sha256":intent.arguments_sha256,"timeout_ms":60000})
    );
    // Other requests go out without one.
    assert!(s.seen.upstream[..2].iter().all(|(_, i)| i.is_none()));
}

#[test]
fn a_call_without_arguments_hashes_an_empty_object() {
    let mut s = Session::new();
    s.ready()
        .client(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}"#);
    let intent = s.seen.upstream.last().unwrap().1.clone().unwrap();
    assert_eq!(intent.arguments_sha256, sha256_hex("{}"));
}

#[test]
fn each_way_a_call_ends_gives_exactly_one_outcome() {
    let mut s = Session::new();
    s.ready();
    // Answered by the upstream: a result, a result with isError, an error.
    s.at(100).call(1, r#"{"message":"a"}"#);
    let a = s.last_call();
    s.call(2, r#"{"message":"b"}"#);
    let b = s.last_call();
    s.call(3, r#"{"message":"c"}"#);
    let c = s.last_call();
    s.at(130)
        .upstream(&format!(
            r#"{{"jsonrpc":"2.0","id":{a},"result":{{"content":[]}}}}"#
        ))
        .upstream(&format!(
            r#"{{"jsonrpc":"2.0","id":{b},"result":{{"content":[],"isError":true}}}}"#
        ))
        .upstream(&format!(
            r#"{{"jsonrpc":"2.0","id":{c},"error":{{"code":-32000,"message":"no"}}}}"#
        ));
    // Cancelled by the client, after it went out.
    s.call(4, r#"{"message":"d"}"#);
    let d = s.last_call();
    s.at(150)
        .client(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}"#);
    // A non-object result: the wrapper answers with an error.
    s.call(5, r#"{"message":"e"}"#);
    let e = s.last_call();
    s.upstream(&format!(r#"{{"jsonrpc":"2.0","id":{e},"result":[1]}}"#));
    // Timed out.
    s.call(6, r#"{"message":"f"}"#);
    let f = s.last_call();
    s.seen.take(s.wrap.tick(150 + 60_000));
    // The upstream exits with one in flight.
    s.call(7, r#"{"message":"g"}"#);
    let g = s.last_call();
    s.seen.take(s.wrap.upstream_eof(60_200));
    let outcome = |call, is_error, answered_by, cancelled, timed_out, elapsed_ms| Outcome {
        call,
        is_error,
        answered_by,
        cancelled,
        timed_out,
        elapsed_ms,
    };
    use AnsweredBy::{Upstream, Wrapper};
    assert_eq!(
        s.seen.outcomes(),
        [
            outcome(a, false, Upstream, false, false, 30),
            outcome(b, true, Upstream, false, false, 30),
            outcome(c, true, Upstream, false, false, 30),
            outcome(d, false, Wrapper, true, false, 20),
            outcome(e, true, Wrapper, false, false, 0),
            outcome(f, true, Wrapper, false, true, 60_000),
            outcome(g, true, Wrapper, false, false, 50),
        ]
    );
    assert_eq!(
        AuditRecord::Outcome(outcome(f, true, Wrapper, false, true, 60_000)).to_json(),
        json!({"kind":"wrap_outcome","call":f,"is_error":true,"answered_by":"wrapper","cancelled":false,"timed_out":true,"elapsed_ms":60000})
    );
}

#[test]
fn a_call_answered_with_an_unreadable_line_or_drained_at_close_has_its_outcome() {
    let mut config = Config::default();
    config.limits.max_frame_bytes = 512;
    config.grace_ms = 1_000;
    let mut s = Session {
        wrap: Wrap::new(config),
        seen: Seen::default(),
        now: 0,
    };
    s.ready().call(1, r#"{"message":"a"}"#);
    let a = s.last_call();
    let pad = "x".repeat(600);
    s.upstream(&format!(
        r#"{{"jsonrpc":"2.0","id":{a},"result":{{"pad":"{pad}"}}}}"#
    ));
    s.call(2, r#"{"message":"b"}"#);
    let b = s.last_call();
    // An invalid frame: the session drains, then its time is up.
    s.client("{oops");
    s.seen.take(s.wrap.tick(1_000));
    let ended: Vec<(i64, bool, AnsweredBy)> = s
        .seen
        .outcomes()
        .iter()
        .map(|o| (o.call, o.is_error, o.answered_by))
        .collect();
    assert_eq!(
        ended,
        [
            (a, true, AnsweredBy::Wrapper),
            (b, true, AnsweredBy::Wrapper)
        ]
    );
    assert!(matches!(s.seen.end, Some(End::ClientInvalid { .. })));
}

#[test]
fn the_drivers_end_gives_each_call_in_flight_its_outcome() {
    let mut s = Session::new();
    s.ready().call(1, r#"{"message":"a"}"#);
    let a = s.last_call();
    s.seen.take(s.wrap.finish(40));
    assert_eq!(
        s.seen.outcomes(),
        [Outcome {
            call: a,
            is_error: true,
            answered_by: AnsweredBy::Wrapper,
            cancelled: false,
            timed_out: false,
            elapsed_ms: 40,
        }]
    );
    assert!(s.wrap.is_closed());
    assert!(s.wrap.finish(50).is_empty(), "once");
}

#[test]
fn a_call_cancelled_in_the_same_chunk_never_goes_out() {
    let mut s = Session::new();
    s.ready();
    let chunk = concat!(
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}"#,
        "\n"
    );
    let effects = s.wrap.from_client(chunk.as_bytes(), 0);
    s.seen.take(effects);
    assert_eq!(s.seen.calls_upstream(), 0, "{:?}", s.seen.upstream);
    assert!(
        !s.seen
            .upstream
            .iter()
            .any(|(v, _)| v["method"] == "notifications/cancelled"),
        "no cancellation for a call the upstream never got"
    );
    assert!(s.seen.outcomes().is_empty());
    assert_eq!(s.wrap.counters().forwarded.get("tools/call"), None);
    assert_eq!(s.wrap.in_flight(), 0);
}

#[test]
fn a_failed_intent_denies_its_call_and_every_later_one() {
    let mut s = Session::new();
    s.ready().call(1, r#"{"message":"a"}"#);
    let a = s.last_call();
    // The driver could not record the intent: the line was not written.
    s.seen.take(s.wrap.journal_unavailable(Some(a), 5));
    assert_eq!(s.seen.answer(1)["result"], denial());
    assert_eq!(
        s.seen.outcomes(),
        [Outcome {
            call: a,
            is_error: true,
            answered_by: AnsweredBy::Wrapper,
            cancelled: false,
            timed_out: false,
            elapsed_ms: 5,
        }]
    );
    assert_eq!(s.wrap.in_flight(), 0);
    let forwarded_before = s.seen.calls_upstream();
    // Every later call, to any tool, is denied without reaching the upstream.
    s.call(2, r#"{"message":"b"}"#).client(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"not-listed","arguments":{}}}"#,
    );
    assert_eq!(s.seen.answer(2)["result"], denial());
    assert_eq!(s.seen.answer(3)["result"], denial());
    assert_eq!(s.seen.calls_upstream(), forwarded_before);
    assert_eq!(s.wrap.counters().forwarded.get("tools/call"), None);
    assert_eq!(s.wrap.counters().journal_denials, 3);
    assert_eq!(
        s.wrap.counters().calls_denied,
        3,
        "a call denied for the journal is a denied call"
    );
    // Other requests still go through.
    s.client(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#);
    assert_eq!(s.seen.upstream.last().unwrap().0["method"], "ping");
    assert!(s.wrap.is_journal_down());
    assert_eq!(JOURNAL_DENIAL, "denied: audit journal unavailable");
}

#[test]
fn a_journal_broken_from_the_start_forwards_no_call() {
    let mut s = Session::new();
    s.seen.take(s.wrap.journal_unavailable(None, 0));
    s.ready().call(1, r#"{"message":"a"}"#);
    assert_eq!(s.seen.answer(1)["result"], denial());
    assert_eq!(s.seen.calls_upstream(), 0);
    assert!(s.seen.audit.iter().any(|r| matches!(
        r,
        AuditRecord::CallDenied { reason, .. } if reason == "audit journal unavailable"
    )));
}

#[test]
fn a_failed_intent_while_draining_lets_the_session_close() {
    let mut s = Session::new();
    s.ready().call(1, r#"{"message":"a"}"#);
    let a = s.last_call();
    s.client("{oops");
    assert!(s.seen.end.is_none(), "waiting for the call");
    s.seen.take(s.wrap.journal_unavailable(Some(a), 1));
    assert_eq!(s.seen.answer(1)["result"], denial());
    assert!(matches!(s.seen.end, Some(End::ClientInvalid { .. })));
}

#[test]
fn forwarded_requests_are_counted_per_method() {
    let mut s = Session::new();
    s.ready()
        .call(1, r#"{"message":"a"}"#)
        .call(2, r#"{"message":"b"}"#)
        .client(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#)
        .client(r#"{"jsonrpc":"2.0","id":4,"method":"resources/list"}"#);
    let forwarded: Vec<(&str, u64)> = s
        .wrap
        .counters()
        .forwarded
        .iter()
        .map(|(m, n)| (m.as_str(), *n))
        .collect();
    assert_eq!(
        forwarded,
        [
            ("initialize", 1),
            ("ping", 1),
            ("tools/call", 2),
            ("tools/list", 1)
        ]
    );
}

#[test]
fn a_flood_of_junk_is_one_record_now_and_one_per_interval() {
    let mut s = Session::new();
    s.at(1_000).upstream("banner");
    let junk = vec![b'\n'; 100_000];
    let effects = s.wrap.from_upstream(&junk, 1_200);
    s.seen.take(effects);
    s.at(1_500).upstream("more junk");
    // The first line of each stage at once; the rest counted.
    assert_eq!(s.seen.shown, [1, 2]);
    assert_eq!(s.seen.audit.len(), 2, "{:?}", s.seen.audit);
    assert_eq!(s.wrap.counters().quarantined, 100_002);
    // Each run is written once its interval is over: a tick is asked for.
    assert_eq!(s.wrap.next_deadline(), Some(1_000 + INTERVAL_MS));
    s.seen.take(s.wrap.tick(1_999));
    assert_eq!(s.seen.audit.len(), 2);
    s.seen.take(s.wrap.tick(2_000));
    assert_eq!(s.wrap.next_deadline(), Some(1_200 + INTERVAL_MS));
    // A tick past an interval's end (not only at it) writes its run.
    s.seen.take(s.wrap.tick(2_250));
    assert_eq!(s.wrap.next_deadline(), None);
    let records: Vec<Value> = s.seen.audit.iter().map(AuditRecord::to_json).collect();
    let lines = |r: &Value| {
        (
            r["stage"].as_str().unwrap().to_owned(),
            r["upstream_line"].as_u64().unwrap(),
            r["count"].as_u64().unwrap(),
            r["last_upstream_line"].as_u64().unwrap(),
        )
    };
    let records: Vec<_> = records.iter().map(lines).collect();
    assert_eq!(
        records,
        [
            ("json".to_owned(), 1, 1, 1),
            ("framing".to_owned(), 2, 1, 2),
            ("json".to_owned(), 100_002, 1, 100_002),
            ("framing".to_owned(), 3, 99_999, 100_001),
        ]
    );
    assert_eq!(s.seen.shown, [1, 2], "the runs are not shown line by line");
    assert_eq!(s.seen.notices.len(), 2, "{:?}", s.seen.notices);
    assert!(
        s.seen.notices[0].contains("quarantined 1 more")
            && s.seen.notices[0].contains("json stage (line 100002)"),
        "{:?}",
        s.seen.notices
    );
    assert!(
        s.seen.notices[1].contains("99999 more") && s.seen.notices[1].contains("lines 3 to 100001"),
        "{:?}",
        s.seen.notices
    );
    // A new interval starts with a line shown at once.
    s.at(2_300).upstream("again");
    assert_eq!(s.seen.shown, [1, 2, 100_003]);
}

#[test]
fn runs_still_counted_are_written_before_the_session_closes() {
    let mut s = Session::new();
    s.upstream(r#"{"jsonrpc":"2.0","id":77,"result":{}}"#)
        .upstream(r#"{"jsonrpc":"2.0","id":78,"result":{}}"#)
        .upstream(r#"{"jsonrpc":"2.0","id":79,"result":{}}"#);
    s.seen.take(s.wrap.upstream_eof(10));
    let dropped: Vec<Value> = s
        .seen
        .audit
        .iter()
        .map(AuditRecord::to_json)
        .filter(|r| r["kind"] == "wrap_dropped")
        .collect();
    assert_eq!(
        dropped,
        [
            json!({"kind":"wrap_dropped","upstream_line":1,"why":"unmatched_response","count":1,"last_upstream_line":1}),
            json!({"kind":"wrap_dropped","upstream_line":2,"why":"unmatched_response","count":2,"last_upstream_line":3}),
        ]
    );
    assert!(
        s.seen
            .notices
            .iter()
            .any(|n| n.starts_with("dropped 2 more upstream response(s)")
                && n.ends_with("(upstream lines 2 to 3)")),
        "{:?}",
        s.seen.notices
    );
    assert!(s.seen.end.is_some());
}

/// What stderr says of the upstream's drops: an unmatched response is
/// named with its line (it may be a confused server worth a look); the
/// other drops (a notification the client is not sent, a request the
/// upstream may not make) are records only.
#[test]
fn only_an_unmatched_response_is_told_on_stderr() {
    let mut s = Session::new();
    s.upstream(r#"{"jsonrpc":"2.0","method":"notifications/made_up"}"#)
        .upstream(r#"{"jsonrpc":"2.0","id":"u1","method":"tools/call","params":{}}"#);
    assert_eq!(s.wrap.counters().dropped, 2);
    assert_eq!(s.seen.notices, Vec::<String>::new());
    s.upstream(r#"{"jsonrpc":"2.0","id":77,"result":{}}"#);
    assert_eq!(
        s.seen.notices,
        ["dropped upstream line 3: a response that matches no request in flight"]
    );
}

/// An invalid client frame under close says on stderr how long the
/// upstream has to answer what is in flight, and only when something is.
#[test]
fn closing_on_an_invalid_frame_tells_what_it_waits_for() {
    let mut s = Session::new();
    s.ready().client("not json");
    assert!(
        !s.seen
            .notices
            .iter()
            .any(|n| n.contains("invalid client frame")),
        "{:?}",
        s.seen.notices
    );
    let mut s = Session::new();
    s.ready().call(5, r#"{"message":"hi"}"#).client("not json");
    let told: Vec<&String> = s
        .seen
        .notices
        .iter()
        .filter(|n| n.contains("invalid client frame"))
        .collect();
    assert_eq!(
        told,
        [
            "invalid client frame on line 5: no more client input is read; waiting up to 5000 ms for the upstream to answer 1 request(s) in flight"
        ]
    );
}
