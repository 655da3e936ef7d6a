//! The policy the authorization tests share, and a call run through the
//! tool's schema and authorization as a session runs it.

use std::path::Path;

use portcullis_gateway::authz::{Denial, authorize};
use portcullis_gateway::schema::{self, CheckedCall, SchemaError};
use portcullis_gateway::{AuthorizedAction, BoundPolicy, Policy, Secret, SecretStore};
use serde_json::Value;

/// Tools for the authorization tests: `get` (templated path segment and
/// query values, credential `tok`), `probe` (templated host, literal
/// addresses allowed), `probe_names` (templated host, host names allowed),
/// `run` (templated SSH argv), `put` (every HTTP setting the policy has),
/// `plain` (no placeholder, no credential, defaults) and `logs` (every SSH
/// setting, credential `key`).
pub const POLICY: &str = r#"
[server]
name = "t"

[credentials.tok]
env = "UNUSED"

[credentials.key]
file = "/unused/id_ed25519"

[[tools]]
name = "get"
[tools.http]
method = "GET"
url = "https://api.internal:8443/v1/{path}/items?q={term}&fixed=1"
allow = ["api.internal:8443"]
credential = "tok"
[tools.input_schema]
type = "object"
required = ["path", "term"]
properties.path = { type = "string" }
properties.term = { type = "string" }

[[tools]]
name = "probe"
[tools.http]
method = "HEAD"
url = "http://{host}:8080/"
allow = ["127.0.0.1:8080", "[::1]:8080"]
[tools.input_schema]
type = "object"
required = ["host"]
properties.host = { type = "string" }

[[tools]]
name = "probe_names"
[tools.http]
method = "GET"
url = "http://{host}:8080/"
allow = ["api.internal:8080", "localhost:8080"]
[tools.input_schema]
type = "object"
required = ["host"]
properties.host = { type = "string" }

[[tools]]
name = "run"
[tools.ssh]
host = "127.0.0.1"
user = "ops"
argv = ["journalctl", "-u", "{unit}", "--lines={n}"]
allow = ["127.0.0.1:22"]
[tools.input_schema]
type = "object"
required = ["unit", "n"]
properties.unit = { type = "string" }
properties.n = { type = "integer" }

[[tools]]
name = "put"
timeout_ms = 1500
[tools.http]
method = "PUT"
url = "https://api.internal:8443/v1/{item}?mode={mode}"
allow = ["api.internal:8443"]
credential = "tok"
max_response_bytes = 4096
[tools.input_schema]
type = "object"
required = ["item", "mode"]
properties.item = { type = "string" }
properties.mode = { type = "string" }

[[tools]]
name = "plain"
[tools.http]
method = "GET"
url = "http://127.0.0.1:8080/x"
allow = ["127.0.0.1:8080"]
[tools.input_schema]
type = "object"

[[tools]]
name = "logs"
[tools.ssh]
host = "db.internal"
port = 2222
user = "ops"
argv = ["journalctl", "-u", "{unit}", "-n", "{n}"]
allow = ["db.internal:2222"]
credential = "key"
known_hosts = "/etc/portcullis/known_hosts"
max_output_bytes = 777
[tools.input_schema]
type = "object"
required = ["unit", "n"]
properties.unit = { type = "string" }
properties.n = { type = "integer" }
"#;

/// [`POLICY`] with `secrets` (credential name, value) bound.
pub fn policy(secrets: &[(&str, &str)]) -> BoundPolicy {
    bind(POLICY, secrets)
}

/// The policy `text` with `secrets` (credential name, value) bound.
pub fn bind(text: &str, secrets: &[(&str, &str)]) -> BoundPolicy {
    let policy = Policy::from_toml(text, Path::new("test.toml")).expect("the test policy loads");
    let mut store = SecretStore::default();
    for (name, value) in secrets {
        store.insert(*name, Secret::new(*value));
    }
    policy.bind_secrets(store)
}

/// `args` (a JSON object) checked against `tool`'s schema.
pub fn checked<'p>(
    policy: &'p BoundPolicy,
    tool: &str,
    args: Value,
) -> Result<CheckedCall<'p, 'static>, SchemaError> {
    let Value::Object(args) = args else {
        panic!("arguments are an object: {args}")
    };
    schema::check(policy.tool(tool).expect("the tool exists"), args)
}

/// `args` for `tool` authorized, after passing its schema (they must).
pub fn authorize_call(
    policy: &BoundPolicy,
    tool: &str,
    args: Value,
) -> Result<AuthorizedAction, Denial> {
    let checked = checked(policy, tool, args).expect("the arguments pass the schema");
    authorize(&checked, policy.secrets())
}
