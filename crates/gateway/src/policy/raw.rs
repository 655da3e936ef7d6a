//! The policy as written: TOML tables deserialized with unknown fields
//! refused, before any validation.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use super::{OnDenied, OnInvalid};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    pub(super) server: RawServer,
    #[serde(default)]
    pub(super) credentials: BTreeMap<String, RawCredential>,
    #[serde(default)]
    pub(super) tools: Vec<RawTool>,
    pub(super) wrap: Option<RawWrap>,
}

/// `[wrap]`: what `portcullis wrap` lets through to an upstream server
/// beyond its fixed set of methods.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWrap {
    pub(super) tools: Option<Vec<String>>,
    #[serde(default)]
    pub(super) methods: Vec<String>,
    pub(super) request_timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServer {
    pub(super) name: String,
    pub(super) version: Option<String>,
    pub(super) instructions: Option<String>,
    #[serde(default)]
    pub(super) on_invalid: OnInvalid,
    #[serde(default)]
    pub(super) on_denied: OnDenied,
    pub(super) max_frame_bytes: Option<u64>,
    pub(super) max_depth: Option<u64>,
    pub(super) max_frame_values: Option<u64>,
    pub(super) max_id_bytes: Option<u64>,
    pub(super) max_session_ids: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCredential {
    pub(super) env: Option<String>,
    pub(super) file: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTool {
    pub(super) name: String,
    pub(super) title: Option<String>,
    pub(super) description: Option<String>,
    pub(super) timeout_ms: Option<u64>,
    pub(super) http: Option<RawHttp>,
    pub(super) ssh: Option<RawSsh>,
    pub(super) input_schema: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHttp {
    pub(super) method: String,
    pub(super) url: String,
    pub(super) allow: Vec<String>,
    pub(super) credential: Option<String>,
    pub(super) max_response_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSsh {
    pub(super) host: String,
    pub(super) port: Option<u16>,
    pub(super) user: String,
    pub(super) argv: Vec<String>,
    pub(super) allow: Vec<String>,
    pub(super) credential: Option<String>,
    pub(super) known_hosts: Option<PathBuf>,
    pub(super) max_output_bytes: Option<u64>,
}
