//! What the wrap core asks its driver to do: the only way out of the core.

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
    /// An upstream line quarantined.
    Quarantined {
        /// Upstream stdout line.
        line: u64,
        /// Stage that refused it.
        stage: Stage,
        /// SHA-256 of the line (of its first `max_frame_bytes + 1` bytes
        /// when over-long).
        fingerprint: Fingerprint,
    },
    /// An upstream message dropped.
    Dropped {
        /// Upstream stdout line.
        line: u64,
        /// Why.
        why: Dropped,
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
        /// Client input line.
        line: u64,
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
            } => {
                json!({"kind": "wrap_quarantine", "upstream_line": line, "stage": stage.as_str(), "fingerprint": fingerprint.to_hex()})
            }
            AuditRecord::Dropped { line, why } => {
                json!({"kind": "wrap_dropped", "upstream_line": line, "why": why.as_str()})
            }
            AuditRecord::LateAnswer { line } => {
                json!({"kind": "wrap_dropped", "line": line, "why": "answer_after_cancel"})
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
        }
    }
}

/// What a session counted (the records themselves left as effects).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
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
}
