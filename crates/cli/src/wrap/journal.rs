//! The wrap audit journal (`portcullis wrap --audit FILE [--audit-key-env
//! NAME]`): the session's chain in the shared journal file (see
//! `crate::audit::JournalFile`: `session_start`, every record with `seq`,
//! `prev` and, keyed, `mac`, then `session_end` with the count of forwarded
//! requests per method). Every other record is one of the core's
//! [`AuditRecord`]s (kinds `wrap_rejection`, `wrap_denied`,
//! `wrap_quarantine`, `wrap_dropped`, `wrap_pinned`, `wrap_rug_pull`,
//! `wrap_withheld`, `wrap_timeout`, `wrap_upstream_exited`, `wrap_outcome`)
//! or an [`Intent`] (`wrap_intent`, synced before its call is forwarded);
//! none holds frame bytes, ids or argument values.
//!
//! A write that fails breaks the journal for the rest of the run (a
//! partial line may be in the file); the driver then makes the core fail
//! closed.
//!
//! A tool name is chosen by the client or the upstream and may be as long
//! as a frame: a record's `tool` is written as its
//! [`bounded_name`](portcullis_wrap::tools::bounded_name), and any other
//! text member is cut at [`MAX_TEXT_BYTES`], whoever built the record.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use portcullis_wrap::tools::bounded_name;
use portcullis_wrap::{AuditRecord, Intent};
use serde_json::{Map, Value};

use crate::audit::{AuditKey, JournalFile};

/// Bytes of a text member other than `tool` written to a record (a
/// denial's reason names at most eight failing keywords).
pub const MAX_TEXT_BYTES: usize = 4096;

/// An open wrap journal: this run's session in the file.
#[derive(Debug)]
pub struct WrapJournal {
    file: JournalFile,
}

impl WrapJournal {
    /// Open `path` for appending (created 0600 when missing) and start the
    /// session. A path that cannot be opened is an error; a first record
    /// that cannot be written leaves the journal broken
    /// ([`WrapJournal::is_broken`]).
    pub fn open(path: &Path, key: Option<AuditKey>) -> io::Result<Self> {
        JournalFile::open(path, "wrap", key).map(|file| Self { file })
    }

    /// Start the session on `sink`, reading times from `clock` (a test's
    /// sink that fails on cue, a test's stepped clock), and whether its
    /// first record was written.
    #[cfg(test)]
    pub fn on(
        sink: Box<dyn crate::audit::Sink>,
        clock: crate::audit::Clock,
        key: Option<AuditKey>,
    ) -> (Self, io::Result<()>) {
        let (file, started) = JournalFile::start(sink, clock, "wrap", key);
        (Self { file }, started)
    }

    /// This run's session id in the file.
    pub fn session(&self) -> &str {
        self.file.session()
    }

    /// Whether a write failed (nothing more is appended).
    pub fn is_broken(&self) -> bool {
        self.file.is_broken()
    }

    /// Append one record.
    pub fn record(&mut self, record: &AuditRecord) -> io::Result<()> {
        self.append(bounded(record), false)
    }

    /// Append a call's intent and sync it to disk: only then may the call
    /// be forwarded.
    pub fn intent(&mut self, intent: &Intent) -> io::Result<()> {
        let mut body = intent.to_json();
        if let Value::Object(map) = &mut body {
            bound_text(map);
        }
        self.append(body, true)
    }

    /// End the session: `session_end`, with `forwarded` (client requests
    /// forwarded, by method).
    pub fn close(&mut self, forwarded: &BTreeMap<String, u64>) -> io::Result<()> {
        let forwarded: Map<String, Value> = forwarded
            .iter()
            .map(|(method, n)| (method.clone(), Value::from(*n)))
            .collect();
        let mut extra = Map::new();
        extra.insert("forwarded".into(), Value::Object(forwarded));
        self.file.close(extra)
    }

    fn append(&mut self, record: Value, sync: bool) -> io::Result<()> {
        let Value::Object(mut body) = record else {
            return Err(io::Error::other("a record that is not an object"));
        };
        let kind = match body.remove("kind") {
            Some(Value::String(kind)) => kind,
            _ => return Err(io::Error::other("a record without its kind")),
        };
        self.file.append(&kind, body, sync)
    }
}

/// The record as JSON with its text members bounded, as it is journaled
/// and logged: a name a peer chose never reaches either whole.
pub fn bounded(record: &AuditRecord) -> Value {
    let mut body = record.to_json();
    if let Value::Object(map) = &mut body {
        bound_text(map);
    }
    body
}

/// Bound the text members of a record: `tool` to its bounded name, the
/// others to [`MAX_TEXT_BYTES`].
fn bound_text(record: &mut Map<String, Value>) {
    for (key, value) in record.iter_mut() {
        let Value::String(text) = value else { continue };
        if key == "tool" {
            *text = bounded_name(text);
        } else if text.len() > MAX_TEXT_BYTES {
            let end = (0..=MAX_TEXT_BYTES)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            let whole = text.len();
            text.truncate(end);
            let _ = write!(text, "…({whole} bytes)");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use portcullis_wire::{Fingerprint, Stage};
    use portcullis_wrap::{AnsweredBy, Dropped, Outcome, Pin};
    use proptest::prelude::*;

    use super::*;
    use crate::audit::test_sink::{
        Failure, FlakySink, Recorder, Script, fails_closed, stepped, verify_problems,
    };

    const KEY: &[u8] = b"a-wrap-key-of-more-than-16-bytes";
    const FP: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn clock() -> crate::audit::Clock {
        stepped(UNIX_EPOCH + Duration::from_millis(1_790_000_000_123), &[]).0
    }

    fn key(keyed: bool) -> Option<AuditKey> {
        keyed.then(|| AuditKey::from_bytes(KEY))
    }

    fn pin(n: u8) -> Pin {
        let mut def = Map::new();
        def.insert("name".into(), n.into());
        Pin::of(&def)
    }

    fn outcome(call: i64, answered_by: AnsweredBy) -> AuditRecord {
        AuditRecord::Outcome(Outcome {
            call,
            is_error: answered_by == AnsweredBy::Wrapper,
            answered_by,
            cancelled: false,
            timed_out: false,
            elapsed_ms: 7,
        })
    }

    /// A wrap session of `events` written by [`WrapJournal`]: every kind of
    /// record, intents (synced) and their outcomes, then its end (every
    /// open call ended first, as the driver does), each append noted.
    fn session(events: &[u8], keyed: bool, sink: Box<dyn crate::audit::Sink>, rec: &mut Recorder) {
        let (mut journal, started) = WrapJournal::on(sink, clock(), key(keyed));
        rec.step(Some(started), true);
        let (mut next, mut open) = (0, Vec::new());
        for &event in events {
            let line = u64::from(event) + 1;
            let record = match event % 12 {
                0 | 1 => {
                    next += 1;
                    open.push(next);
                    let intent = Intent {
                        line,
                        call: next,
                        tool: format!("tool\u{202e}{}", "é".repeat(usize::from(event))),
                        arguments_sha256: FP.into(),
                        timeout_ms: 30_000,
                    };
                    rec.step(Some(journal.intent(&intent)), true);
                    continue;
                }
                2 => match open.pop() {
                    Some(call) => outcome(call, AnsweredBy::Upstream),
                    None => AuditRecord::UpstreamExited { unanswered: 0 },
                },
                3 => AuditRecord::ClientRejected {
                    line,
                    stage: Stage::Json,
                    code: -32700,
                    fingerprint: Fingerprint::of(&[event]),
                },
                4 => AuditRecord::CallDenied {
                    line,
                    tool: "x".repeat(usize::from(event)),
                    reason: "why ".repeat(usize::from(event) * 8),
                },
                5 => AuditRecord::Quarantined {
                    line,
                    stage: Stage::Framing,
                    fingerprint: Fingerprint::of(&[event]),
                    count: 2,
                    last_line: line + 3,
                },
                6 => AuditRecord::Dropped {
                    line,
                    why: Dropped::LateResponse,
                    count: 1,
                    last_line: line,
                },
                7 => AuditRecord::LateAnswer {
                    line,
                    count: 1,
                    last_line: line,
                },
                8 => AuditRecord::Pinned {
                    tool: "echo".into(),
                    pin: pin(event),
                },
                9 => AuditRecord::RugPull {
                    tool: "echo".into(),
                    pinned: pin(event),
                    seen: pin(event.wrapping_add(1)),
                },
                10 => AuditRecord::ToolWithheld {
                    tool: "shell".into(),
                    reason: "not allowed".into(),
                },
                _ => AuditRecord::TimedOut {
                    line,
                    method: "tools/list".into(),
                },
            };
            rec.step(Some(journal.record(&record)), false);
        }
        while let Some(call) = open.pop() {
            rec.step(
                Some(journal.record(&outcome(call, AnsweredBy::Wrapper))),
                false,
            );
        }
        let forwarded = BTreeMap::from([("tools/call".to_owned(), next.unsigned_abs())]);
        rec.step(Some(journal.close(&forwarded)), true);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

        /// Whatever write or sync fails, `wrap`'s journal appends nothing
        /// after it and every later intent fails: no later call is
        /// forwarded (the driver forwards a call only once its intent is
        /// written).
        #[test]
        fn a_failed_write_makes_wrap_deny_every_later_call(
            events in prop::collection::vec(any::<u8>(), 0..8),
            keyed in any::<bool>(),
            chunk in prop_oneof![Just(usize::MAX), 40..400usize],
            zero in any::<bool>(),
        ) {
            let failure = if zero { Failure::Zero } else { Failure::Error };
            fails_closed(
                &mut |sink, rec| session(&events, keyed, sink, rec),
                chunk,
                failure,
                keyed.then_some(KEY),
            );
        }
    }

    /// One session of every record `wrap` writes, whatever proptest
    /// draws: each intent synced before it returns, and failing closed at
    /// every operation.
    #[test]
    fn wrap_syncs_each_intent_and_fails_closed_at_every_operation() {
        let events: Vec<u8> = (0..12).chain([0, 1, 2]).collect();
        for keyed in [false, true] {
            fails_closed(
                &mut |sink, rec| session(&events, keyed, sink, rec),
                usize::MAX,
                Failure::Error,
                keyed.then_some(KEY),
            );
        }
    }

    fn written(journal: impl FnOnce(&mut WrapJournal)) -> Vec<Value> {
        let (sink, tape) = FlakySink::new(Script {
            chunk: usize::MAX,
            fail_at: None,
            failure: Failure::Error,
        });
        let (mut wrap, started) = WrapJournal::on(Box::new(sink), clock(), None);
        started.expect("the start is written");
        journal(&mut wrap);
        wrap.close(&BTreeMap::new()).expect("the end");
        let bytes = tape.lock().expect("the tape").bytes.clone();
        assert_eq!(verify_problems(&bytes, None), []);
        bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("JSON"))
            .collect()
    }

    #[test]
    fn text_members_are_bounded_whoever_built_the_record() {
        // A tool name a peer chose, as long as a frame; a reason in
        // three-byte characters whose 4096th byte is inside one.
        let tool = format!("a\u{1b}b{}", "n".repeat(5_000));
        let reason = "€".repeat(2_000);
        let exact = "x".repeat(MAX_TEXT_BYTES);
        let records = written(|journal| {
            journal
                .record(&AuditRecord::CallDenied {
                    line: 3,
                    tool: tool.clone(),
                    reason: reason.clone(),
                })
                .expect("a denial");
            journal
                .record(&AuditRecord::ToolWithheld {
                    tool: "echo".into(),
                    reason: exact.clone(),
                })
                .expect("a withheld tool");
            journal
                .intent(&Intent {
                    line: 4,
                    call: 1,
                    tool: tool.clone(),
                    arguments_sha256: FP.into(),
                    timeout_ms: 1_000,
                })
                .expect("an intent");
            journal
                .record(&outcome(1, AnsweredBy::Upstream))
                .expect("an outcome");
        });
        let shown = bounded_name(&tool);
        assert!(
            shown.starts_with("a\\u{1b}b") && shown.ends_with("…(5003 bytes)"),
            "{shown}"
        );
        assert_eq!(records[1]["tool"], shown.as_str());
        let cut = format!("{}…(6000 bytes)", "€".repeat(1_365));
        assert_eq!(records[1]["reason"], cut.as_str());
        // At the bound exactly: kept whole.
        assert_eq!(records[2]["reason"], exact.as_str());
        assert_eq!(records[3]["tool"], shown.as_str());
        assert_eq!(records[3]["arguments_sha256"], FP);
        // The debug log shows the record bounded the same way.
        let logged = bounded(&AuditRecord::CallDenied {
            line: 3,
            tool: tool.clone(),
            reason: reason.clone(),
        });
        assert_eq!(logged["tool"], records[1]["tool"]);
        assert_eq!(logged["reason"], records[1]["reason"]);
    }

    #[test]
    fn the_end_counts_what_was_forwarded_by_method() {
        let (sink, tape) = FlakySink::new(Script {
            chunk: usize::MAX,
            fail_at: None,
            failure: Failure::Error,
        });
        let (mut journal, started) = WrapJournal::on(Box::new(sink), clock(), key(true));
        started.expect("the start is written");
        assert!(!journal.is_broken());
        let session = journal.session().to_owned();
        let forwarded =
            BTreeMap::from([("initialize".to_owned(), 1), ("tools/list".to_owned(), 3)]);
        journal.close(&forwarded).expect("the end");
        let bytes = tape.lock().expect("the tape").bytes.clone();
        assert_eq!(verify_problems(&bytes, Some(KEY)), []);
        let end: Value =
            serde_json::from_slice(bytes.split(|&b| b == b'\n').nth(1).expect("two lines"))
                .expect("JSON");
        assert_eq!(end["kind"], "session_end");
        assert_eq!(end["session"], session.as_str());
        assert_eq!(
            end["forwarded"],
            serde_json::json!({"initialize": 1, "tools/list": 3})
        );
    }

    #[test]
    fn wrap_opens_its_session_in_the_file() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("audit.jsonl");
        let mut journal = WrapJournal::open(&path, None).expect("open");
        assert!(!journal.is_broken());
        journal
            .record(&AuditRecord::UpstreamExited { unanswered: 1 })
            .expect("a record");
        journal.close(&BTreeMap::new()).expect("the end");
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(verify_problems(&bytes, None), []);
        let start: Value =
            serde_json::from_slice(bytes.split(|&b| b == b'\n').next().expect("a line"))
                .expect("JSON");
        assert_eq!(start["command"], "wrap");
        assert_eq!(start["session"], journal.session());
    }

    /// The driver reads `is_broken` to stop forwarding calls: a journal
    /// whose write failed says so, from its first record or a later one.
    #[test]
    fn a_failed_write_leaves_the_journal_broken() {
        let flaky = |fail_at| {
            FlakySink::new(Script {
                chunk: usize::MAX,
                fail_at,
                failure: Failure::Error,
            })
            .0
        };
        let (journal, started) = WrapJournal::on(Box::new(flaky(Some(0))), clock(), None);
        assert!(started.is_err());
        assert!(journal.is_broken(), "the first record failed");
        let (mut journal, started) = WrapJournal::on(Box::new(flaky(Some(2))), clock(), None);
        assert!(started.is_ok() && !journal.is_broken());
        let exited = AuditRecord::UpstreamExited { unanswered: 0 };
        assert!(journal.record(&exited).is_err());
        assert!(journal.is_broken(), "a later record failed");
    }

    #[test]
    fn a_record_without_its_kind_is_refused_and_nothing_written() {
        let (sink, tape) = FlakySink::new(Script {
            chunk: usize::MAX,
            fail_at: None,
            failure: Failure::Error,
        });
        let (mut journal, _) = WrapJournal::on(Box::new(sink), clock(), None);
        let before = tape.lock().expect("the tape").bytes.len();
        for body in [
            serde_json::json!(["wrap_timeout"]),
            serde_json::json!({"line": 1, "method": "ping"}),
            serde_json::json!({"kind": 7, "line": 1, "method": "ping"}),
        ] {
            assert!(journal.append(body.clone(), false).is_err(), "{body}");
        }
        assert_eq!(tape.lock().expect("the tape").bytes.len(), before);
        assert!(
            !journal.is_broken(),
            "nothing was written: the chain goes on"
        );
    }
}
