//! Policies and frames used across tests, fuzz targets and the corpus.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use portcullis_gateway::{BoundPolicy, OnInvalid, Policy, Secret, SecretStore};
use serde_json::{Value, json};

/// The test policy: examples/policy.toml's two tools, one whose host is
/// templated (for denied-after-expansion cases) and one whose path segment
/// takes any non-empty string (for the URL builder's rewrites), with canary
/// secrets. Its value limit ([`TEST_MAX_FRAME_VALUES`]) is one a 4 KiB
/// frame can cross, so fuzzed sessions reach it.
pub const TEST_POLICY: &str = r#"
[server]
name = "portcullis-test"
on_invalid = "close"
max_frame_bytes = 4096
max_frame_values = 1024

[credentials.status_token]
env = "STATUS_TOKEN"

[credentials.deploy_key]
file = "/nonexistent/deploy_key"

[[tools]]
name = "service_status"
description = "Read one service's status page"
[tools.http]
method = "GET"
url = "http://127.0.0.1:8080/status/{service}"
allow = ["127.0.0.1:8080"]
credential = "status_token"
[tools.input_schema]
type = "object"
required = ["service"]
additionalProperties = false
properties.service = { type = "string", pattern = "^[a-z][a-z0-9-]{0,31}$" }

[[tools]]
name = "restart_service"
[tools.ssh]
host = "127.0.0.1"
port = 2222
user = "deploy"
argv = ["systemctl", "restart", "{service}"]
allow = ["127.0.0.1:2222"]
credential = "deploy_key"
[tools.input_schema]
type = "object"
required = ["service"]
properties.service = { type = "string", pattern = "^[a-z][a-z0-9-]{0,31}$" }

[[tools]]
name = "region_probe"
description = "Probe a host by name; only localhost:8080 is allowed"
[tools.http]
method = "GET"
url = "http://{host}:8080/probe"
allow = ["127.0.0.1:8080"]
[tools.input_schema]
type = "object"
required = ["host"]
properties.host = { type = "string", maxLength = 64 }

[[tools]]
name = "avatar_delete"
description = "Delete one user's avatar; the schema only asks for a non-empty string"
[tools.http]
method = "DELETE"
url = "http://127.0.0.1:8080/users/{user}/avatar"
allow = ["127.0.0.1:8080"]
credential = "status_token"
[tools.input_schema]
type = "object"
required = ["user"]
properties.user = { type = "string", minLength = 1 }
"#;

/// The `max_frame_values` of [`TEST_POLICY`]: a frame of its 4096 bytes
/// may hold about twice as many (`[0,0,…]`).
pub const TEST_MAX_FRAME_VALUES: usize = 1024;

/// The test policy with `on_invalid` set, a canary bound to every
/// credential ([`canary_secrets`]).
pub fn test_policy(on_invalid: OnInvalid) -> Arc<BoundPolicy> {
    static CLOSE: OnceLock<Arc<BoundPolicy>> = OnceLock::new();
    static KEEP: OnceLock<Arc<BoundPolicy>> = OnceLock::new();
    let cell = match on_invalid {
        OnInvalid::Close => &CLOSE,
        OnInvalid::KeepOpen => &KEEP,
    };
    Arc::clone(
        cell.get_or_init(|| {
            bound_with_canaries(TEST_POLICY, "testkit/TEST_POLICY.toml", on_invalid)
        }),
    )
}

/// Policy `text` loaded as a file named `name` would be, with `on_invalid`
/// set and a canary bound to every credential.
fn bound_with_canaries(text: &str, name: &str, on_invalid: OnInvalid) -> Arc<BoundPolicy> {
    let mut policy = Policy::from_toml(text, Path::new(name))
        .unwrap_or_else(|e| panic!("{name} is a valid policy: {e}"));
    policy.server.on_invalid = on_invalid;
    let secrets = canary_secrets(&policy);
    Arc::new(policy.bind_secrets(secrets))
}

/// The smallest frame cap a policy may set: what [`small_cap_policy`] uses.
pub const SMALL_FRAME_CAP: usize = 256;

/// [`test_policy`] under `keep-open` with the smallest frame cap a policy
/// may set ([`SMALL_FRAME_CAP`]), loaded through the same validation. With
/// the test policy's 4 KiB cap a fuzzer input must grow past 4 KiB before a
/// line arriving in pieces crosses the cap; here a few hundred bytes do,
/// so the framing's cap accounting is tried on most inputs (a planted
/// off-by-a-chunk in it went unnoticed by `chunking` for 120 s).
pub fn small_cap_policy() -> Arc<BoundPolicy> {
    static SMALL: OnceLock<Arc<BoundPolicy>> = OnceLock::new();
    Arc::clone(SMALL.get_or_init(|| {
        let text = TEST_POLICY.replacen(
            "max_frame_bytes = 4096",
            &format!("max_frame_bytes = {SMALL_FRAME_CAP}"),
            1,
        );
        assert_ne!(
            text, TEST_POLICY,
            "the test policy sets max_frame_bytes = 4096"
        );
        bound_with_canaries(&text, "testkit/SMALL_CAP_POLICY.toml", OnInvalid::KeepOpen)
    }))
}

/// A store binding [`crate::canary::value`] to every credential of
/// `policy`: authorization decides as with credentials present, and every
/// session checks that no spelling of them surfaces.
pub fn canary_secrets(policy: &Policy) -> SecretStore {
    let mut store = SecretStore::default();
    for name in policy.credentials.keys() {
        store.insert(name.clone(), Secret::new(crate::canary::value(name)));
    }
    store
}

/// One frame: compact JSON plus `\n`.
pub fn frame(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).expect("values serialize");
    bytes.push(b'\n');
    bytes
}

/// A legacy `initialize` request.
pub fn initialize(id: i64, version: &str) -> Vec<u8> {
    frame(&json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": { "name": "portcullis-testkit", "version": "1" }
        }
    }))
}

/// `notifications/initialized`.
pub fn initialized() -> Vec<u8> {
    frame(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
}

/// A legacy `tools/call`.
pub fn call(id: i64, tool: &str, arguments: Value) -> Vec<u8> {
    frame(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments }
    }))
}

/// The modern per-request `_meta`.
pub fn modern_meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "portcullis-testkit", "version": "1" }
    })
}

/// A modern `tools/call` with `_meta`.
pub fn modern_call(id: i64, tool: &str, arguments: Value, version: &str) -> Vec<u8> {
    frame(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments, "_meta": modern_meta(version) }
    }))
}

/// A complete valid legacy session prefix: initialize + initialized.
pub fn legacy_handshake() -> Vec<u8> {
    let mut bytes = initialize(1, "2025-11-25");
    bytes.extend(initialized());
    bytes
}

/// The legacy handshake followed by `tail`.
pub fn with_handshake(tail: &[u8]) -> Vec<u8> {
    let mut bytes = legacy_handshake();
    bytes.extend_from_slice(tail);
    bytes
}
