//! The session model: structured operations rendered to bytes, and a small
//! model that predicts exactly which actions must happen.
//!
//! The model is written from the spec, not from the gateway's code: a
//! legacy session serves only `initialize` and `ping` before the
//! handshake; eras never mix; every invalid frame closes the session under `close` and is skipped
//! under `keep-open`; ids are never reused; a valid call executes exactly
//! once. Every tool kind's arguments are schema-checked: a call to the HTTP
//! or the SSH tool with arguments its schema refuses executes nothing, is
//! answered with an `isError` result and leaves the session open in both
//! modes. The depth limit counts from the top of the frame, so it holds
//! inside `params.arguments` as anywhere else. The model also predicts the
//! stage of every rejection, and which requests are owed an answer: every
//! request served before the session ends, even when an invalid frame
//! ends it while calls still run (they are answered first, that frame's
//! error last).
//!
//! Modules, in the order a scenario is built: `ops` (what a client does,
//! decoded from fuzzer bytes), `predict` (the spec's session state: it
//! assigns each operation its ids and predicts what it must do), `render`
//! (the bytes of an operation with those ids, and nothing else), and
//! `observe` (reading a session's results back to compare).

mod observe;
mod ops;
mod predict;
mod render;

use portcullis_gateway::OnInvalid;
use portcullis_wire::{Limits, Stage};

pub use observe::{Predicted, REFUSED_VALUES, key_of, refusals, tool_error_ids};
pub use ops::{BadId, Op, Service, from_fuzz, valid_session};

use predict::Model;

/// Rendered input and the model's prediction.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Bytes to feed.
    pub input: Vec<u8>,
    /// Actions that must happen, in order.
    pub expected: Vec<Predicted>,
    /// Whether the session must end closed.
    pub closes: bool,
    /// The stage of every rejected frame, in order.
    pub rejections: Vec<Stage>,
    /// Request ids answered with an `isError` tool result (calls refused by
    /// the schema or authorization), in order.
    pub tool_errors: Vec<i64>,
    /// Every request served (not refused as invalid), in input order: each
    /// is owed exactly one answer, whenever its call completes — under
    /// `close` also when a later invalid frame ends the session, before
    /// that frame's error.
    pub answered: Vec<i64>,
    /// Calls of `answered` cancelled while they ran: they get no answer.
    /// A harness feeds the input in one read, and a call runs from the
    /// read that hands it out until that read's effects are carried out,
    /// so every later cancellation of it in the input finds it running.
    pub cancelled: Vec<i64>,
}

/// Render `ops` into input bytes and predict the actions, for a session
/// under `mode` whose `max_frame_bytes` is `max_frame` (and the default
/// depth limit).
pub fn scenario(ops: &[Op], mode: OnInvalid, max_frame: usize) -> Scenario {
    let limits = Limits {
        max_frame_bytes: max_frame,
        ..Limits::default()
    };
    scenario_with(ops, mode, limits)
}

/// [`scenario`] for a session with these frame and depth limits.
pub fn scenario_with(ops: &[Op], mode: OnInvalid, limits: Limits) -> Scenario {
    let mut model = Model::new(mode, limits);
    for op in ops {
        if !model.apply(op) {
            break;
        }
    }
    Scenario {
        closes: model.closed(),
        input: model.input,
        expected: model.expected,
        rejections: model.rejections,
        tool_errors: model.tool_errors,
        answered: model.answered,
        cancelled: model.cancelled,
    }
}
