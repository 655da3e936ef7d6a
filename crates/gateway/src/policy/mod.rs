//! The policy file: what tools exist, what they may reach, with which
//! credential. Loaded and fully validated at startup; every error names the
//! file, the tool and the field.
//!
//! This module is the validated model. [`raw`] is the TOML as written,
//! [`validate`] turns it into the model and [`url_template`] parses an HTTP
//! tool's URL template; hosts are normalized by [`crate::host`], as
//! authorization normalizes them.

mod raw;
mod url_template;
mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use thiserror::Error;

use crate::schema::ToolSchema;
use crate::secrets::SecretStore;
use crate::template::Template;

pub use crate::host::{default_port, normalize_host};

/// Default per-tool timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default cap on an HTTP response body or SSH output.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// A policy that cannot be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The file could not be read.
    #[error("{file}: cannot read policy: {source}")]
    Io {
        /// The policy file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML for the policy format.
    #[error("{file}: {message}")]
    Syntax {
        /// The policy file.
        file: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A field has a value the gateway cannot use.
    #[error("{file}: {location}: {message}")]
    Invalid {
        /// The policy file.
        file: PathBuf,
        /// Which tool (if any) and field.
        location: Location,
        /// What is wrong and what to do.
        message: String,
    },
}

/// Where in the policy an error is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The tool's name (or index when unnamed), if the field is in a tool.
    pub tool: Option<String>,
    /// The dotted field path, e.g. `tools.http.url`.
    pub field: String,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tool {
            Some(tool) => write!(f, "tool {tool}: field {}", self.field),
            None => write!(f, "field {}", self.field),
        }
    }
}

/// What to do after an invalid inbound frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnInvalid {
    /// Write at most one error frame, then close the session.
    #[default]
    Close,
    /// Answer framed invalid requests and go on.
    KeepOpen,
}

/// What to do after a well-formed `tools/call` is refused by the schema or
/// by authorization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnDenied {
    /// Answer with a tool error (`isError: true`) and go on: a model's typo
    /// must not take every tool away.
    #[default]
    ToolError,
    /// Answer with the tool error, then close the session (under either
    /// `on_invalid` mode).
    Close,
}

/// `[server]`.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// Name reported to clients.
    pub name: String,
    /// Version reported to clients.
    pub version: String,
    /// Instructions for the client's model, if any.
    pub instructions: Option<String>,
    /// Session policy after an invalid frame.
    pub on_invalid: OnInvalid,
    /// Session policy after a refused well-formed call.
    pub on_denied: OnDenied,
    /// Largest accepted frame.
    pub max_frame_bytes: usize,
    /// Deepest accepted JSON nesting.
    pub max_depth: usize,
    /// Most JSON values one frame may hold.
    pub max_frame_values: usize,
    /// Longest accepted string request id, in bytes.
    pub max_id_bytes: usize,
    /// Request ids one session remembers (for reuse detection): each
    /// string id is one entry, each run of consecutive integer ids is one.
    pub max_session_ids: usize,
}

/// Where a credential's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// An environment variable.
    Env(String),
    /// A file (for SSH: the identity file itself).
    File(PathBuf),
}

/// An HTTP method the gateway may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// GET
    Get,
    /// HEAD
    Head,
    /// POST
    Post,
    /// PUT
    Put,
    /// PATCH
    Patch,
    /// DELETE
    Delete,
}

impl HttpMethod {
    /// The method token.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Head => "HEAD",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
        }
    }
}

/// A `host:port` allowlist entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HostPort {
    /// Lowercase host (name, IPv4, or bracketed IPv6).
    pub host: String,
    /// Port.
    pub port: u16,
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// An HTTP tool's target, as parsed template pieces.
#[derive(Debug, Clone)]
pub struct HttpSpec {
    /// The method.
    pub method: HttpMethod,
    /// `http` or `https`.
    pub scheme: String,
    /// The host, possibly with placeholders.
    pub host: Template,
    /// The origin prepared once at load when the template's host is
    /// literal (it is then in the allowlist): authorization never
    /// normalizes or parses that host again.
    pub literal_origin: Option<LiteralOrigin>,
    /// Explicit port, else the scheme's default.
    pub port: Option<u16>,
    /// Path segments; each placeholder becomes (part of) one segment.
    pub path: Vec<Template>,
    /// Query pairs; values may hold placeholders.
    pub query: Vec<(String, Template)>,
    /// The original template, for display.
    pub url_template: String,
    /// Where it may connect.
    pub allow: Vec<HostPort>,
    /// The credential sent as a bearer token.
    pub credential: Option<String>,
    /// Response body cap.
    pub max_response_bytes: usize,
}

/// A literal URL host, normalized, and the origin built from it.
#[derive(Debug, Clone)]
pub struct LiteralOrigin {
    /// The normalized host (as in the allowlist).
    pub host: String,
    /// `scheme://host:port`, the text a built URL starts with.
    pub text: String,
    /// That origin as the executor's URI parser read it at load, when it
    /// read exactly `scheme`, `host` and `port` (the same origin checks a
    /// whole built URL gets per call): a built URL then takes these parts
    /// and only its path and query are parsed, and held to the template,
    /// per call. `None` leaves every call to parse and check the whole
    /// text, and to be refused as that decides.
    pub parsed: Option<(http::uri::Scheme, http::uri::Authority)>,
}

impl LiteralOrigin {
    /// The origin `scheme://host:port` of a normalized literal host.
    pub fn new(scheme: &str, host: String, port: u16) -> Self {
        let text = format!("{scheme}://{host}:{port}");
        let parsed = text
            .parse::<http::Uri>()
            .ok()
            .filter(|uri| crate::authz::origin_is_faithful(uri, scheme, &host, port))
            .and_then(|uri| {
                let parts = uri.into_parts();
                Some((parts.scheme?, parts.authority?))
            });
        Self { host, text, parsed }
    }
}

/// An SSH tool's target.
#[derive(Debug, Clone)]
pub struct SshSpec {
    /// Host to connect to.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Remote user.
    pub user: String,
    /// The remote command as argv templates, never a shell string.
    pub argv: Vec<Template>,
    /// Where it may connect.
    pub allow: Vec<HostPort>,
    /// The credential holding the identity (private key).
    pub credential: Option<String>,
    /// known_hosts file for strict host key checking.
    pub known_hosts: Option<PathBuf>,
    /// Output cap (stdout and stderr each).
    pub max_output_bytes: usize,
}

/// What a tool does.
#[derive(Debug, Clone)]
pub enum TargetSpec {
    /// An HTTP request.
    Http(HttpSpec),
    /// A command over SSH.
    Ssh(SshSpec),
}

/// One `[[tools]]` entry.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// The tool name clients call (shared: every action of the tool names
    /// it without a copy).
    pub name: Arc<str>,
    /// Optional display title.
    pub title: Option<String>,
    /// Description for the model.
    pub description: Option<String>,
    /// Per-call timeout.
    pub timeout: Duration,
    /// The compiled input schema.
    pub schema: ToolSchema,
    /// What the tool does.
    pub target: TargetSpec,
}

impl ToolSpec {
    /// The credential name the tool uses, if any.
    pub fn credential(&self) -> Option<&str> {
        match &self.target {
            TargetSpec::Http(h) => h.credential.as_deref(),
            TargetSpec::Ssh(s) => s.credential.as_deref(),
        }
    }
}

/// A loaded, validated policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The file it came from.
    pub source: PathBuf,
    /// `[server]`.
    pub server: ServerSettings,
    /// `[credentials.*]`.
    pub credentials: BTreeMap<String, CredentialSource>,
    /// `[[tools]]`, in file order.
    pub tools: Vec<ToolSpec>,
    /// `[wrap]` (used by `portcullis wrap` only).
    pub wrap: WrapSettings,
}

/// Default time `portcullis wrap` waits for the upstream to answer one
/// request.
pub const DEFAULT_WRAP_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// `[wrap]`: what `portcullis wrap` forwards to an upstream server beyond
/// its fixed method set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrapSettings {
    /// Tools the client may call even when they are not pinned (they are
    /// pinned on first sight). `None`: only pinned tools.
    pub tools: Option<Vec<String>>,
    /// Further client methods forwarded (`resources/read`, `prompts/get`,
    /// ...); every other one is answered "method not found" by the wrapper.
    pub methods: Vec<String>,
    /// How long to wait for the upstream's answer to one request.
    pub request_timeout: Duration,
}

impl Default for WrapSettings {
    fn default() -> Self {
        Self {
            tools: None,
            methods: Vec::new(),
            request_timeout: DEFAULT_WRAP_REQUEST_TIMEOUT,
        }
    }
}

/// A policy with the credential values resolved for one run. The policy
/// itself never holds a secret: the pair is what a driver hands to
/// [`crate::Gateway::new`] (and what the replay driver takes), and the
/// secrets reach only authorization.
#[derive(Debug, Clone)]
pub struct BoundPolicy {
    policy: Arc<Policy>,
    secrets: Arc<SecretStore>,
}

impl BoundPolicy {
    /// Pair `policy` with the `secrets` bound for this run.
    pub fn new(policy: impl Into<Arc<Policy>>, secrets: impl Into<Arc<SecretStore>>) -> Self {
        Self {
            policy: policy.into(),
            secrets: secrets.into(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// The credential values.
    pub fn secrets(&self) -> &Arc<SecretStore> {
        &self.secrets
    }
}

impl std::ops::Deref for BoundPolicy {
    type Target = Policy;

    fn deref(&self) -> &Policy {
        &self.policy
    }
}

/// Default `max_id_bytes`: longer string request ids are refused.
pub const DEFAULT_MAX_ID_BYTES: usize = 1024;
/// Default `max_session_ids`: about 4 MiB of id memory at most.
pub const DEFAULT_MAX_SESSION_IDS: usize = 100_000;

/// Largest `max_frame_bytes` a policy may set: 64 MiB.
pub const MAX_FRAME_BYTES_CEILING: u64 = 64 * 1024 * 1024;
/// Smallest `max_frame_values` a policy may set: room for an
/// `initialize` with its capabilities and client info.
pub const MAX_FRAME_VALUES_FLOOR: u64 = 64;
/// Largest `max_frame_values` a policy may set: 2^20 values, about 900 MiB
/// of tree at the costliest shape.
pub const MAX_FRAME_VALUES_CEILING: u64 = 1024 * 1024;

impl Policy {
    /// Read and validate a policy file. Credentials are not resolved here;
    /// see [`Policy::bind_secrets`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self, PolicyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
            file: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text, path)
    }

    /// Validate policy text; `file` is used in error messages only.
    pub fn from_toml(text: &str, file: &Path) -> Result<Self, PolicyError> {
        let raw: raw::RawPolicy = toml::from_str(text).map_err(|err| PolicyError::Syntax {
            file: file.to_owned(),
            message: err.to_string().trim_end().to_owned(),
        })?;
        validate::Validator { file }.policy(raw)
    }

    /// Pair the policy with the credential values for this run (the
    /// policy is not changed: see [`BoundPolicy`]).
    pub fn bind_secrets(self, secrets: SecretStore) -> BoundPolicy {
        BoundPolicy::new(self, secrets)
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| *t.name == *name)
    }
}
