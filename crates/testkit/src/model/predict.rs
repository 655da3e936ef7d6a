//! The prediction: the session's state as the spec describes it (era,
//! handshake, used ids, closed or not) and the rules every request passes
//! through, written from the spec rather than from the gateway's code.

use portcullis_gateway::OnInvalid;
use portcullis_wire::{Limits, Stage};

use super::observe::Predicted;
use super::ops::Service;
use crate::fixtures;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Era {
    Legacy,
    Modern,
}

pub(super) struct Model {
    pub(super) mode: OnInvalid,
    pub(super) input: Vec<u8>,
    pub(super) expected: Vec<Predicted>,
    pub(super) closed: bool,
    pub(super) era: Option<Era>,
    pub(super) initialized: bool,
    pub(super) next_id: i64,
    pub(super) used: Vec<i64>,
    pub(super) limits: Limits,
    pub(super) rejections: Vec<Stage>,
    pub(super) tool_errors: Vec<i64>,
}

impl Model {
    pub(super) fn fresh_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// An invalid frame, refused at `stage`: closes under `close`, is
    /// skipped under keep-open.
    pub(super) fn invalid(&mut self, stage: Stage) {
        self.rejections.push(stage);
        if self.mode == OnInvalid::Close {
            self.closed = true;
        }
    }

    /// A request with a readable id: reuse is invalid; era mixing invalid.
    /// Returns false when the request was refused before its method ran.
    pub(super) fn admit(&mut self, id: i64, era: Era) -> bool {
        if self.used.contains(&id) {
            self.invalid(Stage::Mcp);
            return false;
        }
        self.used.push(id);
        if self.era.is_some_and(|e| e != era) {
            self.invalid(Stage::Mcp);
            return false;
        }
        true
    }

    pub(super) fn legacy_ready(&mut self) -> bool {
        if !self.initialized {
            self.invalid(Stage::Mcp);
            return false;
        }
        true
    }

    /// A well-formed call refused by the schema or authorization: a tool
    /// error answering `id` and a rejection at `stage`; the session goes on
    /// in both modes (`on_denied` defaults to a tool error).
    pub(super) fn refused_call(&mut self, id: i64, stage: Stage) {
        self.tool_errors.push(id);
        self.rejections.push(stage);
    }

    /// A call to `tool`, one of the tools whose only argument is a
    /// `service` name (HTTP `service_status`, SSH `restart_service`).
    pub(super) fn call(&mut self, id: i64, tool: &str, service: Service, modern: bool) -> Vec<u8> {
        let args = service.arguments();
        let bytes = if modern {
            fixtures::modern_call(id, tool, args, "2026-07-28")
        } else {
            fixtures::call(id, tool, args)
        };
        let era = if modern { Era::Modern } else { Era::Legacy };
        if self.admit(id, era) && (modern || self.legacy_ready()) {
            if modern {
                self.era = Some(Era::Modern);
            }
            if service.valid() {
                self.expected.push((tool.into(), service.text().into()));
            } else {
                self.refused_call(id, Stage::Schema);
            }
        }
        bytes
    }
}
