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
//! stage of every rejection.

use arbitrary::{Arbitrary, Unstructured};
use portcullis_gateway::{ActionTarget, AuthorizedAction, OnInvalid};
use portcullis_wire::{Limits, Stage};
use serde_json::{Value, json};

use crate::fixtures::{self, frame};

/// The arguments of a call to a `{service}` tool (HTTP `service_status`
/// or SSH `restart_service`), valid or not.
#[derive(Debug, Clone, Copy, Arbitrary, PartialEq, Eq)]
pub enum Service {
    /// `api`
    Api,
    /// `web-1`
    Web1,
    /// `Uppercase` (fails the pattern)
    BadCase,
    /// `../etc` (fails the pattern)
    Traversal,
    /// `api web` (two remote words if it ever reached a shell; fails the
    /// pattern)
    Spaced,
    /// `-api` (an option to the remote command; fails the pattern)
    LeadingDash,
    /// 33 letters (longer than the pattern allows)
    TooLong,
    /// `7` (an integer where the schema asks for a string)
    WrongType,
    /// `api` plus a property the schema does not name (closed by default)
    ExtraProperty,
    /// `{}` (the required property missing)
    Missing,
}

impl Service {
    fn text(self) -> &'static str {
        match self {
            Service::Api | Service::ExtraProperty => "api",
            Service::Web1 => "web-1",
            Service::BadCase => "Uppercase",
            Service::Traversal => "../etc",
            Service::Spaced => "api web",
            Service::LeadingDash => "-api",
            Service::TooLong => "abcdefghijklmnopqrstuvwxyzabcdefg",
            Service::WrongType | Service::Missing => "",
        }
    }
    fn arguments(self) -> Value {
        match self {
            Service::WrongType => json!({ "service": 7 }),
            Service::ExtraProperty => json!({ "service": "api", "unit": "x" }),
            Service::Missing => json!({}),
            _ => json!({ "service": self.text() }),
        }
    }
    fn valid(self) -> bool {
        matches!(self, Service::Api | Service::Web1)
    }
}

/// A wrong id.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum BadId {
    /// `true`
    Bool,
    /// `null`
    Null,
    /// `1.5`
    Float,
    /// `{}`
    Object,
    /// `9007199254740992`
    Huge,
}

/// One thing a client (or something pretending to be one) does.
#[derive(Debug, Clone, Arbitrary)]
pub enum Op {
    /// Legacy `initialize`.
    Initialize,
    /// `notifications/initialized`.
    Initialized,
    /// Legacy `ping`.
    Ping,
    /// Legacy `tools/list`.
    ToolsList,
    /// Legacy `tools/call service_status`.
    Call(Service),
    /// The same, with CRLF line ending.
    CallCrlf(Service),
    /// Modern `tools/call service_status` with `_meta`.
    ModernCall(Service),
    /// Legacy `tools/call restart_service` (the SSH tool).
    Restart(Service),
    /// Modern `tools/call restart_service` with `_meta`.
    ModernRestart(Service),
    /// A `service_status` call whose arguments carry an array nested so the
    /// frame is exactly at the depth limit (`false`: refused by the schema,
    /// which names no `deep` property) or one past it (`true`: refused as
    /// JSON, before anything reads the request).
    DeepArguments(bool),
    /// Modern `server/discover`.
    Discover,
    /// Modern call with an unsupported protocol version.
    ModernBadVersion,
    /// `region_probe` to 127.0.0.1 (allowed) or localhost (denied).
    Probe(bool),
    /// A debug line.
    DebugLine,
    /// A startup banner line.
    Banner,
    /// A valid call followed by a banner on the same line.
    SameLineBanner,
    /// Two valid calls on one line.
    Concatenated,
    /// A line longer than `max_frame_bytes`.
    OverLong,
    /// A frame with invalid UTF-8.
    BadUtf8,
    /// A call with a duplicate `name` key.
    DuplicateName,
    /// A call with a wrong id type.
    WrongId(BadId),
    /// A call with an argument the schema does not name.
    UnknownArgument,
    /// `tools/call` without an id.
    NotificationCall,
    /// A call reusing the previous request id.
    ReusedId,
    /// A call to a tool that does not exist.
    UnknownTool,
    /// A request for a method the gateway does not serve.
    UnknownMethod,
    /// `notifications/cancelled` for some id.
    Cancel(u8),
    /// An empty line.
    EmptyLine,
    /// `"params":"run"`.
    ParamsString,
    /// A truncated frame; nothing after it is sent.
    Truncate,
}

/// A predicted action: tool and its key argument.
pub type Predicted = (String, String);

/// The key of a recorded action, comparable with a prediction.
pub fn key_of(action: &AuthorizedAction) -> Predicted {
    let key = match action.target() {
        ActionTarget::Http(h) if action.tool() == "region_probe" => {
            h.url().host_str().unwrap_or_default().to_owned()
        }
        ActionTarget::Http(h) => h
            .url()
            .path_segments()
            .and_then(|mut s| s.next_back())
            .unwrap_or_default()
            .to_owned(),
        ActionTarget::Ssh(s) => s.argv().last().cloned().unwrap_or_default(),
    };
    (action.tool().to_owned(), key)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    Legacy,
    Modern,
}

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
}

struct Model {
    mode: OnInvalid,
    input: Vec<u8>,
    expected: Vec<Predicted>,
    closed: bool,
    era: Option<Era>,
    initialized: bool,
    next_id: i64,
    used: Vec<i64>,
    limits: Limits,
    rejections: Vec<Stage>,
    tool_errors: Vec<i64>,
}

impl Model {
    fn fresh_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
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
    }

    /// A call to `tool`, one of the tools whose only argument is a
    /// `service` name (HTTP `service_status`, SSH `restart_service`).
    fn call(&mut self, id: i64, tool: &str, service: Service, modern: bool) -> Vec<u8> {
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

    fn apply(&mut self, op: &Op) -> bool {
        if self.closed {
            return false;
        }
        let bytes = match *op {
            Op::Initialize => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) {
                    if self.initialized {
                        self.invalid(Stage::Mcp);
                    } else {
                        self.initialized = true;
                        self.era = Some(Era::Legacy);
                    }
                }
                fixtures::initialize(id, "2025-11-25")
            }
            Op::Initialized => {
                if !self.initialized && self.era != Some(Era::Modern) {
                    self.invalid(Stage::Mcp);
                }
                fixtures::initialized()
            }
            Op::Ping => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) {
                    self.era = Some(Era::Legacy);
                }
                frame(&json!({"jsonrpc":"2.0","id":id,"method":"ping"}))
            }
            Op::ToolsList => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) {
                    self.legacy_ready();
                }
                frame(&json!({"jsonrpc":"2.0","id":id,"method":"tools/list"}))
            }
            Op::Call(service) => {
                let id = self.fresh_id();
                self.call(id, "service_status", service, false)
            }
            Op::CallCrlf(service) => {
                let id = self.fresh_id();
                let mut bytes = self.call(id, "service_status", service, false);
                bytes.pop();
                bytes.extend_from_slice(b"\r\n");
                bytes
            }
            Op::ModernCall(service) => {
                let id = self.fresh_id();
                self.call(id, "service_status", service, true)
            }
            Op::Restart(service) => {
                let id = self.fresh_id();
                self.call(id, "restart_service", service, false)
            }
            Op::ModernRestart(service) => {
                let id = self.fresh_id();
                self.call(id, "restart_service", service, true)
            }
            Op::DeepArguments(over) => {
                let id = self.fresh_id();
                // The frame's own object, `params` and `arguments` are three
                // levels; the array fills the rest up to the limit.
                let depth = self.limits.effective_depth() - 3 + usize::from(over);
                let deep: Value =
                    serde_json::from_str(&format!("{}{}", "[".repeat(depth), "]".repeat(depth)))
                        .expect("nested arrays");
                if over {
                    self.invalid(Stage::Json);
                } else if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    self.refused_call(id, Stage::Schema);
                }
                fixtures::call(
                    id,
                    "service_status",
                    json!({"service": "api", "deep": deep}),
                )
            }
            Op::Discover => {
                let id = self.fresh_id();
                if self.admit(id, Era::Modern) {
                    self.era = Some(Era::Modern);
                }
                frame(&json!({"jsonrpc":"2.0","id":id,"method":"server/discover",
                    "params":{"_meta": fixtures::modern_meta("2026-07-28")}}))
            }
            Op::ModernBadVersion => {
                let id = self.fresh_id();
                if self.admit(id, Era::Modern) {
                    self.invalid(Stage::Mcp);
                }
                fixtures::modern_call(id, "service_status", json!({"service":"api"}), "2099-01-01")
            }
            Op::Probe(allowed) => {
                let id = self.fresh_id();
                let host = if allowed { "127.0.0.1" } else { "localhost" };
                if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    if allowed {
                        self.expected.push(("region_probe".into(), host.into()));
                    } else {
                        self.refused_call(id, Stage::Authz);
                    }
                }
                fixtures::call(id, "region_probe", json!({ "host": host }))
            }
            Op::DebugLine => {
                self.invalid(Stage::Json);
                b"debug: entering tool handler\n".to_vec()
            }
            Op::Banner => {
                self.invalid(Stage::Json);
                b"server v1.2 ready, loading optional extension\n".to_vec()
            }
            Op::SameLineBanner => {
                self.invalid(Stage::Json);
                let id = self.fresh_id();
                let mut bytes = fixtures::call(id, "service_status", json!({"service":"api"}));
                bytes.pop();
                bytes.extend_from_slice(b" server ready\n");
                bytes
            }
            Op::Concatenated => {
                self.invalid(Stage::Json);
                let a = self.fresh_id();
                let b = self.fresh_id();
                let mut bytes = fixtures::call(a, "service_status", json!({"service":"api"}));
                bytes.pop();
                bytes.extend(fixtures::call(
                    b,
                    "service_status",
                    json!({"service":"web-1"}),
                ));
                bytes
            }
            Op::OverLong => {
                self.invalid(Stage::Framing);
                let mut bytes = vec![b' '; self.limits.max_frame_bytes + 16];
                let call = fixtures::call(
                    self.next_id + 1000,
                    "service_status",
                    json!({"service":"api"}),
                );
                bytes.extend_from_slice(&call);
                bytes
            }
            Op::BadUtf8 => {
                self.invalid(Stage::Utf8);
                let mut bytes = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"service_status\",\"arguments\":{\"service\":\"ap\xffi\"}}}".to_vec();
                bytes.push(b'\n');
                bytes
            }
            Op::DuplicateName => {
                self.invalid(Stage::Json);
                let id = self.fresh_id();
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"service_status\",\"name\":\"restart_service\",\"arguments\":{{\"service\":\"api\"}}}}}}\n").into_bytes()
            }
            Op::WrongId(bad) => {
                // 2^53 is refused as JSON (the I-JSON integer range holds
                // wherever a number appears); the other ids parse and are
                // refused by JSON-RPC.
                self.invalid(match bad {
                    BadId::Huge => Stage::Json,
                    _ => Stage::Rpc,
                });
                let id = match bad {
                    BadId::Bool => "true",
                    BadId::Null => "null",
                    BadId::Float => "1.5",
                    BadId::Object => "{}",
                    BadId::Huge => "9007199254740992",
                };
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"service_status\",\"arguments\":{{\"service\":\"api\"}}}}}}\n").into_bytes()
            }
            Op::UnknownArgument => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    self.refused_call(id, Stage::Schema);
                }
                fixtures::call(
                    id,
                    "service_status",
                    json!({"service":"api","verbose":true}),
                )
            }
            Op::NotificationCall => {
                self.invalid(Stage::Mcp);
                frame(
                    &json!({"jsonrpc":"2.0","method":"tools/call","params":{"name":"service_status","arguments":{"service":"api"}}}),
                )
            }
            Op::ReusedId => {
                let id = self.used.last().copied().unwrap_or_else(|| self.fresh_id());
                self.call(id, "service_status", Service::Api, false)
            }
            Op::UnknownTool => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) && self.legacy_ready() {
                    self.invalid(Stage::Mcp);
                }
                fixtures::call(id, "deploy_everything", json!({}))
            }
            Op::UnknownMethod => {
                let id = self.fresh_id();
                if self.admit(id, Era::Legacy) {
                    self.legacy_ready();
                }
                frame(&json!({"jsonrpc":"2.0","id":id,"method":"resources/list"}))
            }
            Op::Cancel(n) => frame(
                &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": n}}),
            ),
            Op::EmptyLine => {
                self.invalid(Stage::Framing);
                b"\n".to_vec()
            }
            Op::ParamsString => {
                self.invalid(Stage::Rpc);
                let id = self.fresh_id();
                frame(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":"run"}))
            }
            Op::Truncate => {
                self.invalid(Stage::Framing);
                let mut bytes =
                    fixtures::call(self.next_id + 1, "service_status", json!({"service":"api"}));
                bytes.truncate(bytes.len() / 2);
                self.input.extend(bytes);
                return false;
            }
        };
        self.input.extend(bytes);
        true
    }
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
    let mut model = Model {
        mode,
        input: Vec::new(),
        expected: Vec::new(),
        closed: false,
        era: None,
        initialized: false,
        next_id: 0,
        used: Vec::new(),
        limits,
        rejections: Vec::new(),
        tool_errors: Vec::new(),
    };
    for op in ops {
        let keep_going = model.apply(op);
        if !keep_going && (model.closed || matches!(op, Op::Truncate)) {
            break;
        }
    }
    Scenario {
        input: model.input,
        expected: model.expected,
        closes: model.closed,
        rejections: model.rejections,
        tool_errors: model.tool_errors,
    }
}

/// Argument values the model sends only in calls that must be refused
/// (schema or authorization). None may appear anywhere in stdout: refusals
/// name the location and keyword, never the value.
pub const REFUSED_VALUES: [&str; 6] = [
    "Uppercase",
    "../etc",
    "api web",
    "-api",
    "abcdefghijklmnopqrstuvwxyzabcdefg",
    "localhost",
];

/// The refusals in `stdout` (error responses and `isError` tool results),
/// each as its frame's text.
pub fn refusals(stdout: &[u8]) -> Vec<String> {
    stdout
        .split(|&b| b == b'\n')
        .filter(|line| {
            serde_json::from_slice::<Value>(line).is_ok_and(|frame| {
                frame.get("error").is_some() || frame["result"]["isError"] == json!(true)
            })
        })
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect()
}

/// The ids of the `isError: true` tool results in `stdout`, in order.
pub fn tool_error_ids(stdout: &[u8]) -> Vec<i64> {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|frame| frame["result"]["isError"] == json!(true))
        .filter_map(|frame| frame["id"].as_i64())
        .collect()
}

/// Decode a scenario from fuzzer bytes: a mode byte, then ops.
pub fn from_fuzz(data: &[u8]) -> Option<(OnInvalid, Vec<Op>)> {
    let mut u = Unstructured::new(data);
    let mode = if bool::arbitrary(&mut u).ok()? {
        OnInvalid::KeepOpen
    } else {
        OnInvalid::Close
    };
    let ops: Vec<Op> = Vec::arbitrary(&mut u).ok()?;
    Some((mode, ops.into_iter().take(64).collect()))
}

/// A value only for docs and tests: the ops of a complete valid session.
pub fn valid_session() -> Vec<Op> {
    vec![
        Op::Initialize,
        Op::Initialized,
        Op::ToolsList,
        Op::Call(Service::Api),
    ]
}
