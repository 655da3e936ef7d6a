//! Two ledgers, never one counter: what was refused, and what was handed to
//! the executor. A test can say "one frame rejected, session closed, zero
//! executor calls" as three separate facts.
//!
//! The session keeps only the [`Counters`]. The records leave it as effects
//! ([`crate::Effect::Rejected`], [`crate::Effect::Execute`]) and go to a
//! sink: a `Vec` in the replay driver, the audit journal in the binary.
//! They are small and fixed-size apart from the tool name (no frame bytes,
//! ids, arguments or targets: fingerprints stand for them).

use std::collections::BTreeMap;

use portcullis_wire::{Fingerprint, Stage};

use crate::authz::AuthorizedAction;

/// One refused frame. No raw bytes, no id, no argument values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectionRecord {
    /// 1-based input line.
    pub line: u64,
    /// Stage that refused it.
    pub stage: Stage,
    /// JSON-RPC code it maps to.
    pub code: i64,
    /// SHA-256 of the frame.
    pub fingerprint: Fingerprint,
}

/// One action handed to the executor. No argument values: the target is
/// kept as a fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    /// Ticket that correlates `Execute` with `complete`.
    pub ticket: u64,
    /// 1-based input line of the frame that produced it.
    pub line: u64,
    /// Tool name.
    pub tool: String,
    /// `"http"` or `"ssh"`.
    pub kind: &'static str,
    /// SHA-256 of the authorized target's one-line description (the
    /// audit journal's `target_fingerprint`).
    pub target: Fingerprint,
    /// `None` while in flight; `Some(is_error)` once completed.
    pub outcome: Option<bool>,
}

/// Separate counters for the two sides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames (and framing failures) received.
    pub frames_received: u64,
    /// Frames rejected, by stage.
    pub frames_rejected: BTreeMap<Stage, u64>,
    /// Sessions closed because of an invalid frame.
    pub sessions_closed: u64,
    /// Actions handed to the executor.
    pub executor_calls: u64,
    /// Completions reported back.
    pub executor_completions: u64,
}

impl Counters {
    /// Total rejected frames over all stages.
    pub fn rejected_total(&self) -> u64 {
        self.frames_rejected.values().sum()
    }
}

impl JournalEntry {
    /// The entry for an `Execute` effect, still in flight: what a journal
    /// sink records, with a fingerprint for the target.
    pub fn of(ticket: u64, line: u64, action: &AuthorizedAction) -> Self {
        Self {
            ticket,
            line,
            tool: action.tool().to_owned(),
            kind: action.kind(),
            target: Fingerprint::of_display(&action.target_display()),
            outcome: None,
        }
    }
}
