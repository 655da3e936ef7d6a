//! The prediction: the session's state as the spec describes it (era,
//! handshake, used ids, closed or not) and what each operation must do to
//! it, written from the spec rather than from the gateway's code.

use portcullis_gateway::OnInvalid;
use portcullis_wire::{Limits, Stage};

use super::observe::Predicted;
use super::ops::{BadId, Op, Service};
use super::render::{Ids, render};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    Legacy,
    Modern,
}

/// The session as the spec describes it, and everything predicted so far.
pub(super) struct Model {
    mode: OnInvalid,
    limits: Limits,
    closed: bool,
    era: Option<Era>,
    initialized: bool,
    next_id: i64,
    used: Vec<i64>,
    pub(super) input: Vec<u8>,
    pub(super) expected: Vec<Predicted>,
    pub(super) rejections: Vec<Stage>,
    pub(super) tool_errors: Vec<i64>,
    /// Requests served (not refused as invalid): each is owed one answer.
    pub(super) answered: Vec<i64>,
    /// Calls that executed and were not cancelled: in flight for the rest
    /// of the input (it is fed in one read).
    running: Vec<i64>,
    /// Calls cancelled while they ran: those get no answer.
    pub(super) cancelled: Vec<i64>,
}

impl Model {
    pub(super) fn new(mode: OnInvalid, limits: Limits) -> Self {
        Self {
            mode,
            limits,
            closed: false,
            era: None,
            initialized: false,
            next_id: 0,
            used: Vec::new(),
            input: Vec::new(),
            expected: Vec::new(),
            rejections: Vec::new(),
            tool_errors: Vec::new(),
            answered: Vec::new(),
            running: Vec::new(),
            cancelled: Vec::new(),
        }
    }

    /// Whether the session must end closed.
    pub(super) fn closed(&self) -> bool {
        self.closed
    }

    /// Appends `op`'s bytes to the input and applies its prediction; false
    /// once nothing after it can be read (closed, or a truncated frame).
    pub(super) fn apply(&mut self, op: &Op) -> bool {
        if self.closed {
            return false;
        }
        let ids = self.assign_ids(op);
        self.input.extend(render(op, ids, &self.limits));
        self.predict(op, ids);
        !matches!(op, Op::Truncate)
    }

    fn fresh_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// The ids `op` sends. A frame that is refused before its id is read
    /// (too long, truncated) takes one no request has used, without using it.
    fn assign_ids(&mut self, op: &Op) -> Ids {
        let first = match op {
            Op::Initialized
            | Op::DebugLine
            | Op::Banner
            | Op::BadUtf8
            | Op::WrongId(_)
            | Op::NotificationCall
            | Op::Cancel(_)
            | Op::EmptyLine => 0,
            Op::OverLong => self.next_id + 1000,
            Op::Truncate => self.next_id + 1,
            Op::ReusedId => self.used.last().copied().unwrap_or_else(|| self.fresh_id()),
            _ => self.fresh_id(),
        };
        let second = if matches!(op, Op::Concatenated) {
            self.fresh_id()
        } else {
            0
        };
        Ids { first, second }
    }

    /// An invalid frame, refused at `stage`: closes under `close`, is
    /// skipped under keep-open.
    fn invalid(&mut self, stage: Stage) {
        self.rejections.push(stage);
        if self.mode == OnInvalid::Close {
            self.closed = true;
        }
    }

    /// A request with a readable id: reuse is invalid; era mixing invalid.
    /// Returns false when the request was refused before its method ran.
    fn admit(&mut self, id: i64, era: Era) -> bool {
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

    fn legacy_ready(&mut self) -> bool {
        if !self.initialized {
            self.invalid(Stage::Mcp);
            return false;
        }
        true
    }

    /// A well-formed call refused by the schema or authorization: a tool
    /// error answering `id` and a rejection at `stage`; the session goes on
    /// in both modes (`on_denied` defaults to a tool error).
    fn refused_call(&mut self, id: i64, stage: Stage) {
        self.tool_errors.push(id);
        self.rejections.push(stage);
        self.answered.push(id);
    }

    /// A valid call that runs: answered once, with its outcome.
    fn runs(&mut self, id: i64, action: Predicted) {
        self.expected.push(action);
        self.answered.push(id);
        self.running.push(id);
    }

    /// A call to `tool`, one of the tools whose only argument is a
    /// `service` name (HTTP `service_status`, SSH `restart_service`).
    fn call(&mut self, id: i64, tool: &str, service: Service, modern: bool) {
        let era = if modern { Era::Modern } else { Era::Legacy };
        if self.admit(id, era) && (modern || self.legacy_ready()) {
            if modern {
                self.era = Some(Era::Modern);
            }
            if service.valid() {
                self.runs(id, (tool.into(), service.text().into()));
            } else {
                self.refused_call(id, Stage::Schema);
            }
        }
    }

    /// What `op`, sent with `ids`, must do to the session.
    fn predict(&mut self, op: &Op, ids: Ids) {
        let id = ids.first;
        match *op {
            Op::Initialize => {
                if self.admit(id, Era::Legacy) {
                    if self.initialized {
                        self.invalid(Stage::Mcp);
                    } else {
                        self.initialized = true;
                        self.era = Some(Era::Legacy);
                        self.answered.push(id);
                    }
                }
            }
            Op::Initialized => {
                if !self.initialized && self.era != Some(Era::Modern) {
                    self.invalid(Stage::Mcp);
                }
            }
            Op::Ping => {
                if self.admit(id, Era::Legacy) {
                    self.era = Some(Era::Legacy);
                    self.answered.push(id);
                }
            }
            Op::ToolsList | Op::UnknownMethod => {
                if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    self.answered.push(id);
                }
            }
            Op::Call(service) | Op::CallCrlf(service) => {
                self.call(id, "service_status", service, false);
            }
            Op::ModernCall(service) => self.call(id, "service_status", service, true),
            Op::Restart(service) => self.call(id, "restart_service", service, false),
            Op::ModernRestart(service) => self.call(id, "restart_service", service, true),
            Op::DeepArguments(over) => {
                if over {
                    self.invalid(Stage::Json);
                } else if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    self.refused_call(id, Stage::Schema);
                }
            }
            Op::Discover => {
                if self.admit(id, Era::Modern) {
                    self.era = Some(Era::Modern);
                    self.answered.push(id);
                }
            }
            Op::ModernBadVersion => {
                if self.admit(id, Era::Modern) {
                    self.invalid(Stage::Mcp);
                }
            }
            Op::Probe(allowed) => {
                if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    if allowed {
                        self.runs(id, ("region_probe".into(), "127.0.0.1".into()));
                    } else {
                        self.refused_call(id, Stage::Authz);
                    }
                }
            }
            Op::DebugLine
            | Op::Banner
            | Op::SameLineBanner
            | Op::Concatenated
            | Op::DuplicateName => self.invalid(Stage::Json),
            Op::OverLong | Op::EmptyLine | Op::Truncate => self.invalid(Stage::Framing),
            Op::BadUtf8 => self.invalid(Stage::Utf8),
            // 2^53 is refused as JSON (the I-JSON integer range holds
            // wherever a number appears); the other ids parse and are
            // refused by JSON-RPC.
            Op::WrongId(BadId::Huge) => self.invalid(Stage::Json),
            Op::WrongId(_) | Op::ParamsString => self.invalid(Stage::Rpc),
            Op::UnknownArgument => {
                if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    self.refused_call(id, Stage::Schema);
                }
            }
            Op::NotificationCall => self.invalid(Stage::Mcp),
            Op::ReusedId => self.call(id, "service_status", Service::Api, false),
            Op::UnknownTool => {
                if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    self.invalid(Stage::Mcp);
                }
            }
            // Stops the answer of a call still running.
            Op::Cancel(n) => {
                let n = i64::from(n);
                if let Some(at) = self.running.iter().position(|&r| r == n) {
                    self.running.remove(at);
                    self.cancelled.push(n);
                }
            }
        }
    }
}
