//! Two ledgers, never one counter: what was refused, and what was handed to
//! the executor. A test can say "one frame rejected, session closed, zero
//! executor calls" as three separate facts.
//!
//! Records are small and fixed-size apart from the tool name (no frame
//! bytes, ids, arguments or targets: fingerprints stand for them), and a
//! long-running driver takes them with [`Ledger::drain`] once audited, so
//! only the counters live as long as the session.

use std::collections::BTreeMap;

use portcullis_wire::{Fingerprint, Stage};

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

/// Records taken out of a [`Ledger`] by [`Ledger::drain`], in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drained {
    /// Refused frames.
    pub rejections: Vec<RejectionRecord>,
    /// Actions handed to the executor (an entry drained while its action
    /// runs keeps `outcome: None`).
    pub journal: Vec<JournalEntry>,
}

/// The rejection ledger and the execution journal of one session.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    /// Refused frames, in order.
    pub rejections: Vec<RejectionRecord>,
    /// Actions handed to the executor, in order.
    pub journal: Vec<JournalEntry>,
    /// Counters.
    pub counters: Counters,
}

impl Ledger {
    /// Take every record kept so far; the counters stay.
    pub fn drain(&mut self) -> Drained {
        Drained {
            rejections: std::mem::take(&mut self.rejections),
            journal: std::mem::take(&mut self.journal),
        }
    }

    pub(crate) fn reject(&mut self, record: RejectionRecord) {
        *self
            .counters
            .frames_rejected
            .entry(record.stage)
            .or_default() += 1;
        self.rejections.push(record);
    }

    pub(crate) fn executed(&mut self, entry: JournalEntry) {
        self.counters.executor_calls += 1;
        self.journal.push(entry);
    }

    pub(crate) fn completed(&mut self, ticket: u64, is_error: bool) {
        self.counters.executor_completions += 1;
        // A drained entry is no longer here to update; its driver has it.
        if let Some(entry) = self.journal.iter_mut().rev().find(|e| e.ticket == ticket) {
            entry.outcome = Some(is_error);
        }
    }
}
