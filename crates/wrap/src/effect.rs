//! What the wrap core asks its driver to do: the only way out of the core.

use std::collections::BTreeMap;

use portcullis_wire::{Fingerprint, Stage};
use serde_json::{Value, json};

use crate::encode::Line;
use crate::pin::{Pin, Pins};

/// Something the driver must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Write this line to the client (our stdout).
    ToClient(Line),
    /// Write this line to the upstream's stdin.
    ToUpstream(Line),
    /// A `tools/call` to forward: append `intent` to the audit journal and
    /// sync it, and only then write `line` to the upstream's stdin. When the
    /// intent cannot be recorded, `line` must not be written: once the rest
    /// of the batch is carried out, tell the core
    /// ([`crate::Wrap::journal_unavailable`]), which answers the call with a
    /// denial and forwards no call from then on. Without a journal, write
    /// `line`.
    ForwardCall {
        /// The record of the call, before it reaches the upstream.
        intent: Intent,
        /// The `tools/call` request as the upstream receives it.
        line: Line,
    },
    /// An upstream stdout line that is not exactly one valid JSON-RPC
    /// message: show it on stderr, never forward it.
    Quarantine(Quarantined),
    /// Append this record to the audit journal.
    Audit(AuditRecord),
    /// A one-line notice for stderr (rug pulls, dropped responses).
    Notice(String),
    /// The pin set grew or changed: write it (`--pins-write`).
    PinsChanged(Pins),
    /// The client ended its input: close the upstream's stdin.
    EndUpstreamInput,
    /// The session is over.
    Close(End),
}

/// A quarantined upstream line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    /// 1-based line number on the upstream's stdout.
    pub line: u64,
    /// Why it was not forwarded.
    pub reason: String,
    /// The line's bytes (without the newline), as far as they were kept: an
    /// over-long line is discarded as it streams past and shows none.
    pub bytes: Vec<u8>,
}

/// How the session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The client ended its input and the upstream answered everything.
    Finished,
    /// An invalid client frame closed the session (under `on_invalid =
    /// "close"`): nothing after it was read, the requests accepted before it
    /// were answered (by the upstream, or with an error once the grace
    /// period passed), then at most one error frame was written for it.
    ClientInvalid {
        /// 1-based client input line.
        line: u64,
        /// Stage that refused it.
        stage: Stage,
        /// JSON-RPC code.
        code: i64,
        /// Reason (never argument values).
        reason: String,
    },
    /// The upstream's stdout ended while the session was open or requests
    /// were in flight; each of them was answered with an error.
    UpstreamExited {
        /// Client requests answered with an error because of it.
        unanswered: usize,
    },
}

/// Why a message from the upstream was dropped (counted, never forwarded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dropped {
    /// A response whose id matches no request in flight (never sent, or
    /// already answered).
    UnmatchedResponse,
    /// A response to a request that timed out or that the client cancelled:
    /// expected of an honest upstream that was working on it.
    LateResponse,
    /// An error response without an id.
    ErrorWithoutId,
    /// A request for a method the upstream may not send the client.
    RequestNotAllowed,
    /// A request whose id is too long or already used, one too many in
    /// flight, or sent while the session is closing.
    RequestRefused,
    /// A notification the client is not sent.
    NotificationNotAllowed,
}

impl Dropped {
    /// Stable name for audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            Dropped::UnmatchedResponse => "unmatched_response",
            Dropped::LateResponse => "late_response",
            Dropped::ErrorWithoutId => "error_without_id",
            Dropped::RequestNotAllowed => "request_not_allowed",
            Dropped::RequestRefused => "request_refused",
            Dropped::NotificationNotAllowed => "notification_not_allowed",
        }
    }
}

/// One audit record. No frame bytes, argument values or ids: fingerprints
/// stand for frames.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AuditRecord {
    /// A client frame refused at a stage before forwarding.
    ClientRejected {
        /// Client input line.
        line: u64,
        /// Stage.
        stage: Stage,
        /// JSON-RPC code.
        code: i64,
        /// SHA-256 of the frame.
        fingerprint: Fingerprint,
    },
    /// A `tools/call` denied by the wrapper (not allowed, changed since
    /// pinned, arguments outside the pinned schema).
    CallDenied {
        /// Client input line.
        line: u64,
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// Upstream lines quarantined at one stage: the first of an interval
    /// alone (`count` 1), the others of that interval as one record (see
    /// [`crate::flood`]).
    Quarantined {
        /// Upstream stdout line (the first of the run).
        line: u64,
        /// Stage that refused it.
        stage: Stage,
        /// SHA-256 of the run's first line (of its first
        /// `max_frame_bytes + 1` bytes when over-long).
        fingerprint: Fingerprint,
        /// Lines the record stands for (≥ 1).
        count: u64,
        /// The run's last line (`line` when `count` is 1).
        last_line: u64,
    },
    /// Upstream messages dropped for one reason, aggregated like
    /// quarantined lines.
    Dropped {
        /// Upstream stdout line (the first of the run).
        line: u64,
        /// Why.
        why: Dropped,
        /// Messages the record stands for (≥ 1).
        count: u64,
        /// The run's last line.
        last_line: u64,
    },
    /// A tool pinned in this session (trust on first use or allowlist).
    Pinned {
        /// The tool.
        tool: String,
        /// Its pin.
        pin: Pin,
    },
    /// A client answer to a request the upstream had cancelled (clients
    /// answer what was cancelled while their answer was on its way): dropped,
    /// never forwarded, never a protocol violation.
    LateAnswer {
        /// Client input line (the first of the run).
        line: u64,
        /// Answers the record stands for (≥ 1), aggregated like quarantined
        /// lines.
        count: u64,
        /// The run's last line.
        last_line: u64,
    },
    /// A pinned tool came back different: dropped from the list, calls denied.
    RugPull {
        /// The tool.
        tool: String,
        /// The pin it had.
        pinned: Pin,
        /// The pin of what the upstream now lists.
        seen: Pin,
    },
    /// A listed tool withheld from the client (not allowed, or unusable).
    ToolWithheld {
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A request the upstream did not answer in time.
    TimedOut {
        /// Client input line of the request.
        line: u64,
        /// Its method.
        method: String,
    },
    /// The upstream's stdout ended.
    UpstreamExited {
        /// Client requests answered with an error because of it.
        unanswered: usize,
    },
    /// A forwarded `tools/call` ended: exactly one per [`Intent`], after it.
    Outcome(Outcome),
}

/// A `tools/call` about to be forwarded, as its journal record
/// (`wrap_intent`): which tool, under which upstream id, and a hash of its
/// arguments, never their values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    /// Client input line of the call.
    pub line: u64,
    /// The upstream id the wrapper gave the call (unique in the session).
    pub call: i64,
    /// The tool, as the client named it (the journal bounds it).
    pub tool: String,
    /// SHA-256 (lowercase hex) of the call's `arguments` in canonical form
    /// ([`crate::canonical`]), `{}` when absent.
    pub arguments_sha256: String,
    /// How long the upstream has to answer, in ms.
    pub timeout_ms: u64,
}

impl Intent {
    /// The record as a JSON object with its `kind`.
    pub fn to_json(&self) -> Value {
        json!({
            "kind": "wrap_intent",
            "line": self.line,
            "call": self.call,
            "tool": self.tool,
            "arguments_sha256": self.arguments_sha256,
            "timeout_ms": self.timeout_ms,
        })
    }
}

/// Who ended a forwarded call, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnsweredBy {
    /// The upstream's own answer was forwarded.
    Upstream,
    /// The wrapper ended it: an error in place of an answer (timed out,
    /// upstream gone, answer unreadable, session closing, journal
    /// unavailable), or no answer at all (cancelled by the client).
    Wrapper,
}

impl AnsweredBy {
    /// Stable name for audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            AnsweredBy::Upstream => "upstream",
            AnsweredBy::Wrapper => "wrapper",
        }
    }
}

/// How a forwarded `tools/call` ended (`wrap_outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The intent's `call`.
    pub call: i64,
    /// A JSON-RPC error, a result with `isError: true`, or an error from
    /// the wrapper.
    pub is_error: bool,
    /// Whose answer the client got.
    pub answered_by: AnsweredBy,
    /// The client cancelled it (it got no answer).
    pub cancelled: bool,
    /// Its time ran out.
    pub timed_out: bool,
    /// From the intent to the end, in ms of the core's clock.
    pub elapsed_ms: u64,
}

impl AuditRecord {
    /// The record as a JSON object with its `kind` (the driver adds `time`
    /// and `session`).
    pub fn to_json(&self) -> Value {
        match self {
            AuditRecord::ClientRejected {
                line,
                stage,
                code,
                fingerprint,
            } => {
                json!({"kind": "wrap_rejection", "line": line, "stage": stage.as_str(), "code": code, "fingerprint": fingerprint.to_hex()})
            }
            AuditRecord::CallDenied { line, tool, reason } => {
                json!({"kind": "wrap_denied", "line": line, "tool": tool, "reason": reason})
            }
            AuditRecord::Quarantined {
                line,
                stage,
                fingerprint,
                count,
                last_line,
            } => {
                json!({"kind": "wrap_quarantine", "upstream_line": line, "stage": stage.as_str(), "fingerprint": fingerprint.to_hex(), "count": count, "last_upstream_line": last_line})
            }
            AuditRecord::Dropped {
                line,
                why,
                count,
                last_line,
            } => {
                json!({"kind": "wrap_dropped", "upstream_line": line, "why": why.as_str(), "count": count, "last_upstream_line": last_line})
            }
            AuditRecord::LateAnswer {
                line,
                count,
                last_line,
            } => {
                json!({"kind": "wrap_dropped", "line": line, "why": "answer_after_cancel", "count": count, "last_line": last_line})
            }
            AuditRecord::Pinned { tool, pin } => {
                json!({"kind": "wrap_pinned", "tool": tool, "pin": pin.to_text()})
            }
            AuditRecord::RugPull { tool, pinned, seen } => {
                json!({"kind": "wrap_rug_pull", "tool": tool, "pinned": pinned.to_text(), "seen": seen.to_text()})
            }
            AuditRecord::ToolWithheld { tool, reason } => {
                json!({"kind": "wrap_withheld", "tool": tool, "reason": reason})
            }
            AuditRecord::TimedOut { line, method } => {
                json!({"kind": "wrap_timeout", "line": line, "method": method})
            }
            AuditRecord::UpstreamExited { unanswered } => {
                json!({"kind": "wrap_upstream_exited", "unanswered": unanswered})
            }
            AuditRecord::Outcome(outcome) => json!({
                "kind": "wrap_outcome",
                "call": outcome.call,
                "is_error": outcome.is_error,
                "answered_by": outcome.answered_by.as_str(),
                "cancelled": outcome.cancelled,
                "timed_out": outcome.timed_out,
                "elapsed_ms": outcome.elapsed_ms,
            }),
        }
    }
}

/// What a session counted (the records themselves left as effects).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Client requests forwarded to the upstream, by method (`tools/call`
    /// included): the methods are the wrapper's fixed set and the policy's
    /// `[wrap] methods`, so this stays small.
    pub forwarded: BTreeMap<String, u64>,
    /// Client frames (and framing failures) received.
    pub client_frames: u64,
    /// Client frames refused before forwarding (any stage).
    pub client_rejected: u64,
    /// Calls denied by the tool gate.
    pub calls_denied: u64,
    /// Lines written to the upstream.
    pub to_upstream: u64,
    /// Upstream lines (and framing failures) received.
    pub upstream_lines: u64,
    /// Upstream lines quarantined.
    pub quarantined: u64,
    /// Upstream messages dropped (unmatched responses and the like).
    pub dropped: u64,
    /// Client answers to requests the upstream had cancelled, dropped.
    pub late_answers: u64,
    /// Lines written to the client.
    pub to_client: u64,
    /// Rug pulls seen.
    pub rug_pulls: u64,
    /// Requests timed out.
    pub timeouts: u64,
    /// `tools/call`s denied because the audit journal is unavailable.
    pub journal_denials: u64,
}

impl Counters {
    /// A request counted as forwarded never reached the upstream after all.
    pub(crate) fn unforward(&mut self, method: &str) {
        self.to_upstream = self.to_upstream.saturating_sub(1);
        if let Some(n) = self.forwarded.get_mut(method) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.forwarded.remove(method);
            }
        }
    }
}
