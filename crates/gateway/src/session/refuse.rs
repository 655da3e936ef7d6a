//! Error-reply rules: a refused request whose id could be read gets an
//! error with that id. When no id could be read, `"id": null` is never
//! written: the error omits `id` where the negotiated revision permits it
//! (2025-11-25 and later) and only under `close` (so keep-open can never
//! start an error storm with a peer that answers garbage with garbage);
//! otherwise nothing is written. A reused id is never echoed (the client
//! would pair the error with its earlier request), and an id echoed once is
//! used up, so no request is ever answered twice. Notifications are never
//! answered. A well-formed call refused by the schema or authorization is
//! answered as a tool error and ends the session only under
//! `on_denied = "close"`. A refusal that ends the session is answered
//! after every action already in flight (see `Core::end`). Every refusal
//! leaves as [`Effect::Rejected`] at once.
//! [`error_reply`] is the echo rule alone, for `portcullis wrap`'s client
//! side too.

use portcullis_wire::codes::INVALID_PARAMS;
use portcullis_wire::{ErrorObject, Id, Outbound, Rejection, Stage, Unworded};
use serde_json::{Value, json};

use super::{Core, Ending};
use crate::effect::{CloseReason, Effect};
use crate::ledger::RejectionRecord;
use crate::mcp::{Refusal, Revision, SessionState};
use crate::policy::{OnDenied, OnInvalid};
use crate::reply;

impl Core {
    fn record(&mut self, record: RejectionRecord, effects: &mut Vec<Effect>) {
        *self
            .counters
            .frames_rejected
            .entry(record.stage)
            .or_default() += 1;
        effects.push(Effect::Rejected(record));
    }

    pub(super) fn refuse_mcp(
        &mut self,
        line: u64,
        frame: &[u8],
        refusal: Refusal,
        effects: &mut Vec<Effect>,
    ) {
        let rejection =
            Rejection::new(Stage::Mcp, refusal.code, refusal.message, frame).with_id(refusal.id);
        self.refuse(line, rejection, refusal.data, effects);
    }

    /// Record a frame refused while it was read (UTF-8, strict JSON,
    /// JSON-RPC) and answer it per the error-reply rules. Its reason is
    /// worded only where it can be shown: under `keep-open` a frame whose
    /// id was never read is neither answered nor a cause to close (see
    /// [`error_reply`]), so a JSON-stage refusal there costs no second
    /// reading of the frame.
    pub(super) fn refuse_read(
        &mut self,
        line: u64,
        refused: Unworded<'_>,
        effects: &mut Vec<Effect>,
    ) {
        if self.config.on_invalid == OnInvalid::KeepOpen && refused.id().is_none() {
            let record = RejectionRecord {
                line,
                stage: refused.stage(),
                code: refused.code(),
                fingerprint: refused.fingerprint(),
            };
            return self.record(record, effects);
        }
        self.refuse(line, refused.word(), None, effects);
    }

    /// Record a frame refused at the framing..mcp stages and answer it per
    /// the error-reply rules.
    pub(super) fn refuse(
        &mut self,
        line: u64,
        rejection: Rejection,
        data: Option<Value>,
        effects: &mut Vec<Effect>,
    ) {
        let record = RejectionRecord {
            line,
            stage: rejection.stage,
            code: rejection.code,
            fingerprint: rejection.fingerprint,
        };
        self.record(record, effects);
        let on_invalid = self.config.on_invalid;
        let answer = error_reply(&mut self.mcp, on_invalid, &rejection, data)
            .map(|(id, error)| Outbound::Error { id, error });
        if on_invalid == OnInvalid::KeepOpen {
            if let Some(answer) = answer {
                self.write(answer, effects);
            }
            return;
        }
        let reason = CloseReason {
            line,
            stage: rejection.stage,
            code: rejection.code,
            reason: rejection.reason,
        };
        self.end(
            Ending {
                last: answer,
                reason,
            },
            effects,
        );
    }

    /// Record a call refused at the schema or authz stage; it is answered as
    /// a tool error so the model can correct itself.
    pub(super) fn refuse_call(
        &mut self,
        line: u64,
        frame: &[u8],
        stage: Stage,
        (id, revision): (Id, Revision),
        text: String,
        effects: &mut Vec<Effect>,
    ) {
        let record = RejectionRecord {
            line,
            stage,
            code: INVALID_PARAMS,
            fingerprint: portcullis_wire::Fingerprint::of(frame),
        };
        self.record(record, effects);
        let answer = Outbound::Response {
            id,
            result: reply::call_tool(revision, &text, true),
        };
        // The frame was well formed and the peer is in step: the refusal is
        // an answer the model can act on, not a reason to end the session,
        // unless the policy opts in.
        if self.config.on_denied == OnDenied::ToolError {
            return self.write(answer, effects);
        }
        let reason = CloseReason {
            line,
            stage,
            code: INVALID_PARAMS,
            reason: text,
        };
        self.end(
            Ending {
                last: Some(answer),
                reason,
            },
            effects,
        );
    }
}

/// The error that answers a frame refused at the framing..mcp stages, and
/// the id it echoes (`None`: the member is omitted), or `None` when
/// nothing may be written. `data` defaults to the stage and the frame's
/// fingerprint. An id echoed here is used up in `state`.
pub fn error_reply(
    state: &mut SessionState,
    on_invalid: OnInvalid,
    rejection: &Rejection,
    data: Option<Value>,
) -> Option<(Option<Id>, ErrorObject)> {
    let may_omit_id = on_invalid == OnInvalid::Close
        && state
            .revision()
            .is_some_and(Revision::allows_error_without_id);
    // A readable id is echoed only once per session (see
    // `SessionState::claim_id_for_error`); otherwise the error is written
    // as if no id could be read.
    let echoed = rejection
        .id
        .clone()
        .filter(|id| rejection.stage == Stage::Mcp || state.claim_id_for_error(id));
    // `Core::refuse_read` relies on this: under keep-open, no id, no reply.
    if echoed.is_none() && !may_omit_id {
        return None;
    }
    let data = data.unwrap_or_else(|| {
        json!({ "stage": rejection.stage.as_str(), "fingerprint": rejection.fingerprint.to_hex() })
    });
    let error = ErrorObject {
        code: rejection.code,
        message: rejection.reason.clone(),
        data: Some(data),
    };
    Some((echoed, error))
}
