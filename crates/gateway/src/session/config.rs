//! Session settings, from the policy's `[server]` section.

use portcullis_wire::Limits;

use crate::policy::{OnDenied, OnInvalid, Policy};

/// Session settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// What to do after an invalid frame.
    pub on_invalid: OnInvalid,
    /// What to do after a refused well-formed call.
    pub on_denied: OnDenied,
    /// Frame and nesting limits.
    pub limits: Limits,
    /// Longest accepted string request id, in bytes.
    pub max_id_bytes: usize,
    /// Request-id memory entries per session (see [`crate::id`]).
    pub max_session_ids: usize,
}

impl Config {
    /// The settings a policy's `[server]` section asks for.
    pub fn from_policy(policy: &Policy) -> Self {
        Self {
            on_invalid: policy.server.on_invalid,
            on_denied: policy.server.on_denied,
            limits: Limits {
                max_frame_bytes: policy.server.max_frame_bytes,
                max_depth: policy.server.max_depth,
                max_values: policy.server.max_frame_values,
            },
            max_id_bytes: policy.server.max_id_bytes,
            max_session_ids: policy.server.max_session_ids,
        }
    }
}
