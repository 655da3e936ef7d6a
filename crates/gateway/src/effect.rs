//! What the session asks its driver to do: the only way out of the core.
//!
//! A driver carries out [`Effect`]s in order and never looks inside the
//! gateway: the frames to write, the actions to run (with the input line
//! that asked for them), the refusals to record, cancellations and the
//! close all arrive here.

use portcullis_wire::{EncodeError, Outbound, Stage, encode};

use crate::authz::AuthorizedAction;
use crate::ledger::RejectionRecord;

/// One complete outbound line (ends with `\n`), made only by the encoder:
/// whatever a driver writes passed [`portcullis_wire::encode()`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame(Vec<u8>);

impl Frame {
    /// Encode `message` as one frame.
    pub(crate) fn encode(message: &Outbound) -> Result<Self, EncodeError> {
        encode(message).map(Frame)
    }

    /// The bytes to write.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The bytes to write, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

impl std::ops::Deref for Frame {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for Frame {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Correlates an `Execute` with its `complete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub u64);

/// Why the session closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseReason {
    /// 1-based input line of the frame that closed it.
    pub line: u64,
    /// Stage that refused it.
    pub stage: Stage,
    /// JSON-RPC code.
    pub code: i64,
    /// Reason (never argument values).
    pub reason: String,
}

/// Something the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Write this complete frame to stdout.
    Write(Frame),
    /// Run this action; report back with [`crate::Gateway::complete`].
    /// `line` is the 1-based input line of the call that asked for it.
    Execute {
        /// Correlates the outcome.
        ticket: Ticket,
        /// Input line of the `tools/call`.
        line: u64,
        /// What to run.
        action: AuthorizedAction,
    },
    /// A frame was refused: record it (rejection ledger, audit journal).
    /// Refusals arrive in input order with the `Execute`s.
    Rejected(RejectionRecord),
    /// Stop waiting for this action: the client cancelled it and nothing
    /// more will be written for it.
    Cancel(Ticket),
    /// The session is over: flush what was written and exit nonzero. It
    /// comes only once every action handed out was completed or cancelled
    /// (their answers, then the closing frame's own, written before it);
    /// nothing is written or run after it.
    Close(CloseReason),
}
