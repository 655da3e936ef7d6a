//! Shared helpers: authorized actions from policy text.

#![allow(dead_code)]

use std::path::Path;

use portcullis_gateway::{AuthorizedAction, Policy, SecretStore};
use serde_json::Value;

/// Load `policy_text`, bind `store`, check `args` against `tool`'s schema
/// and authorize the call.
pub fn authorize(
    policy_text: &str,
    store: SecretStore,
    tool: &str,
    args: Value,
) -> AuthorizedAction {
    let policy = Policy::from_toml(policy_text, Path::new("test.toml"))
        .unwrap_or_else(|e| panic!("policy: {e}\n{policy_text}"))
        .bind_secrets(store);
    authorize_with(&policy, tool, args)
}

/// Authorize against an already loaded policy.
pub fn authorize_with(policy: &Policy, tool: &str, args: Value) -> AuthorizedAction {
    let spec = policy.tool(tool).expect("tool in policy");
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    let checked = spec
        .schema
        .check(tool, map)
        .unwrap_or_else(|e| panic!("schema: {e:?}"));
    portcullis_gateway::authz::authorize(policy, checked).unwrap_or_else(|d| panic!("denied: {d}"))
}

/// A unique suffix for file names.
pub fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}
