//! Session settings: the policy's `[server]` limits and `[wrap]` lists, and
//! the pins the session starts with.

use std::collections::BTreeSet;
use std::time::Duration;

use portcullis_gateway::policy::{DEFAULT_WRAP_REQUEST_TIMEOUT, ServerSettings, WrapSettings};
use portcullis_gateway::schema::ToolSchema;
use portcullis_gateway::{OnInvalid, Policy};
use portcullis_wire::Limits;
use serde_json::Value;

use crate::pin::Pins;

/// Requests in flight per direction (client → upstream, upstream →
/// client); one more is refused rather than remembered.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;
/// Tools a session pins or trusts at most.
pub const DEFAULT_MAX_TOOLS: usize = 1024;
/// After an invalid client frame (under `on_invalid = "close"`), how long
/// the upstream has to answer the requests in flight, in milliseconds
/// (`--grace-ms`).
pub const DEFAULT_GRACE_MS: u64 = 5_000;
/// The input schemas the tool gate keeps compiled total at most this many
/// times `max_frame_bytes` (serialized): one complete `tools/list` is one
/// frame, so every honest listing fits.
pub const SCHEMA_BYTES_PER_FRAME: usize = 2;

/// How the tool gate compiles a tool's input schema.
pub type SchemaCompiler = fn(Value) -> Result<ToolSchema, String>;

/// Settings of one wrap session.
#[derive(Debug, Clone)]
pub struct Config {
    /// Frame, nesting and value limits, applied to both directions.
    pub limits: Limits,
    /// What to do after an invalid client frame.
    pub on_invalid: OnInvalid,
    /// Longest string request id, in bytes (both directions).
    pub max_id_bytes: usize,
    /// Request-id memory entries for the client's ids.
    pub max_session_ids: usize,
    /// Tools the client may call when they are not pinned (pinned on first
    /// sight); `None`: pinned tools only.
    pub allowed_tools: Option<BTreeSet<String>>,
    /// Client methods forwarded beyond the fixed set.
    pub methods: BTreeSet<String>,
    /// How long the upstream has to answer one request, in milliseconds.
    pub request_timeout_ms: u64,
    /// The pins from `--pins FILE`; `None`: trust on first use (the tools
    /// of the first complete `tools/list` are pinned).
    pub pins: Option<Pins>,
    /// Requests in flight per direction.
    pub max_in_flight: usize,
    /// Tools pinned or trusted at most.
    pub max_tools: usize,
    /// After an invalid client frame under `on_invalid = "close"`, how long
    /// the upstream has to answer the requests accepted before it, in
    /// milliseconds.
    pub grace_ms: u64,
    /// How the tool gate compiles an input schema:
    /// [`ToolSchema::compile_untrusted`]. A fuzz harness running thousands
    /// of sessions a second passes one that reuses its earlier compilations
    /// of the same schema, with the same outcome.
    pub compile_schema: SchemaCompiler,
}

impl Default for Config {
    fn default() -> Self {
        let server = default_server();
        Self::from_parts(&server, &WrapSettings::default(), None)
    }
}

fn default_server() -> ServerSettings {
    ServerSettings {
        name: String::new(),
        version: String::new(),
        instructions: None,
        on_invalid: OnInvalid::Close,
        on_denied: portcullis_gateway::OnDenied::ToolError,
        max_frame_bytes: portcullis_wire::limits::DEFAULT_MAX_FRAME_BYTES,
        max_depth: portcullis_wire::limits::DEFAULT_MAX_DEPTH,
        max_frame_values: portcullis_wire::limits::DEFAULT_MAX_VALUES,
        max_id_bytes: portcullis_gateway::policy::DEFAULT_MAX_ID_BYTES,
        max_session_ids: portcullis_gateway::policy::DEFAULT_MAX_SESSION_IDS,
    }
}

impl Config {
    /// The settings a policy asks for, with `pins` from a pins file.
    pub fn from_policy(policy: &Policy, pins: Option<Pins>) -> Self {
        Self::from_parts(&policy.server, &policy.wrap, pins)
    }

    /// Defaults (no policy), with `pins` from a pins file.
    pub fn with_pins(pins: Option<Pins>) -> Self {
        Self {
            pins,
            ..Self::default()
        }
    }

    fn from_parts(server: &ServerSettings, wrap: &WrapSettings, pins: Option<Pins>) -> Self {
        Self {
            limits: Limits {
                max_frame_bytes: server.max_frame_bytes,
                max_depth: server.max_depth,
                max_values: server.max_frame_values,
            },
            on_invalid: server.on_invalid,
            max_id_bytes: server.max_id_bytes,
            max_session_ids: server.max_session_ids,
            allowed_tools: wrap.tools.as_ref().map(|t| t.iter().cloned().collect()),
            methods: wrap.methods.iter().cloned().collect(),
            request_timeout_ms: millis(wrap.request_timeout),
            pins,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_tools: DEFAULT_MAX_TOOLS,
            grace_ms: DEFAULT_GRACE_MS,
            compile_schema: ToolSchema::compile_untrusted,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or_else(|_| millis(DEFAULT_WRAP_REQUEST_TIMEOUT))
}
