//! The policy file: what tools exist, what they may reach, with which
//! credential. Loaded and fully validated at startup; every error names the
//! file, the tool and the field.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use crate::schema::ToolSchema;
use crate::secrets::SecretStore;
use crate::template::{Piece, Template};

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
    /// The tool name clients call.
    pub name: String,
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
    /// Credential values bound for this run.
    pub secrets: SecretStore,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    server: RawServer,
    #[serde(default)]
    credentials: BTreeMap<String, RawCredential>,
    #[serde(default)]
    tools: Vec<RawTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    name: String,
    version: Option<String>,
    instructions: Option<String>,
    #[serde(default)]
    on_invalid: OnInvalid,
    #[serde(default)]
    on_denied: OnDenied,
    max_frame_bytes: Option<u64>,
    max_depth: Option<u64>,
    max_id_bytes: Option<u64>,
    max_session_ids: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCredential {
    env: Option<String>,
    file: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    title: Option<String>,
    description: Option<String>,
    timeout_ms: Option<u64>,
    http: Option<RawHttp>,
    ssh: Option<RawSsh>,
    input_schema: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    method: String,
    url: String,
    allow: Vec<String>,
    credential: Option<String>,
    max_response_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSsh {
    host: String,
    port: Option<u16>,
    user: String,
    argv: Vec<String>,
    allow: Vec<String>,
    credential: Option<String>,
    known_hosts: Option<PathBuf>,
    max_output_bytes: Option<u64>,
}

/// Default `max_id_bytes`: longer string request ids are refused.
pub const DEFAULT_MAX_ID_BYTES: usize = 1024;
/// Default `max_session_ids`: about 4 MiB of id memory at most.
pub const DEFAULT_MAX_SESSION_IDS: usize = 100_000;

/// Largest `max_frame_bytes` a policy may set: 64 MiB.
pub const MAX_FRAME_BYTES_CEILING: u64 = 64 * 1024 * 1024;

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
        let raw: RawPolicy = toml::from_str(text).map_err(|err| PolicyError::Syntax {
            file: file.to_owned(),
            message: err.to_string().trim_end().to_owned(),
        })?;
        Validator { file }.policy(raw)
    }

    /// Bind credential values for this run.
    pub fn bind_secrets(mut self, secrets: SecretStore) -> Self {
        self.secrets = secrets;
        self
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }
}

struct Validator<'a> {
    file: &'a Path,
}

impl Validator<'_> {
    fn err(&self, tool: Option<&str>, field: &str, message: impl Into<String>) -> PolicyError {
        PolicyError::Invalid {
            file: self.file.to_owned(),
            location: Location {
                tool: tool.map(str::to_owned),
                field: field.to_owned(),
            },
            message: message.into(),
        }
    }

    fn policy(&self, raw: RawPolicy) -> Result<Policy, PolicyError> {
        let server = self.server(raw.server)?;
        let mut credentials = BTreeMap::new();
        for (name, c) in raw.credentials {
            let field = format!("credentials.{name}");
            let source = match (c.env, c.file) {
                (Some(env), None) if !env.is_empty() => CredentialSource::Env(env),
                (None, Some(file)) if !file.as_os_str().is_empty() => CredentialSource::File(file),
                _ => {
                    return Err(self.err(
                        None,
                        &field,
                        "set exactly one of `env = \"VAR\"` or `file = \"/path\"`",
                    ));
                }
            };
            credentials.insert(name, source);
        }
        let mut tools: Vec<ToolSpec> = Vec::new();
        for (index, raw_tool) in raw.tools.into_iter().enumerate() {
            let tool = self.tool(raw_tool, index, &credentials)?;
            if tools.iter().any(|t| t.name == tool.name) {
                return Err(self.err(Some(&tool.name), "tools.name", "duplicate tool name"));
            }
            tools.push(tool);
        }
        Ok(Policy {
            source: self.file.to_owned(),
            server,
            credentials,
            tools,
            secrets: SecretStore::default(),
        })
    }

    fn server(&self, raw: RawServer) -> Result<ServerSettings, PolicyError> {
        if raw.name.trim().is_empty() {
            return Err(self.err(None, "server.name", "must not be empty"));
        }
        let max_frame_bytes = raw
            .max_frame_bytes
            .unwrap_or(portcullis_wire::limits::DEFAULT_MAX_FRAME_BYTES as u64);
        if !(256..=MAX_FRAME_BYTES_CEILING).contains(&max_frame_bytes) {
            return Err(self.err(
                None,
                "server.max_frame_bytes",
                format!("must be between 256 and {MAX_FRAME_BYTES_CEILING}"),
            ));
        }
        let max_depth = raw
            .max_depth
            .unwrap_or(portcullis_wire::limits::DEFAULT_MAX_DEPTH as u64);
        if !(4..=portcullis_wire::limits::HARD_MAX_DEPTH as u64).contains(&max_depth) {
            return Err(self.err(
                None,
                "server.max_depth",
                format!(
                    "must be between 4 and {}",
                    portcullis_wire::limits::HARD_MAX_DEPTH
                ),
            ));
        }
        let max_id_bytes = raw.max_id_bytes.unwrap_or(DEFAULT_MAX_ID_BYTES as u64);
        if !(16..=65_536).contains(&max_id_bytes) {
            return Err(self.err(None, "server.max_id_bytes", "must be between 16 and 65536"));
        }
        let max_session_ids = raw
            .max_session_ids
            .unwrap_or(DEFAULT_MAX_SESSION_IDS as u64);
        if !(1..=100_000_000).contains(&max_session_ids) {
            return Err(self.err(
                None,
                "server.max_session_ids",
                "must be between 1 and 100000000",
            ));
        }
        Ok(ServerSettings {
            name: raw.name,
            version: raw
                .version
                .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
            instructions: raw.instructions,
            on_invalid: raw.on_invalid,
            on_denied: raw.on_denied,
            max_frame_bytes: max_frame_bytes as usize,
            max_depth: max_depth as usize,
            max_id_bytes: max_id_bytes as usize,
            max_session_ids: max_session_ids as usize,
        })
    }

    fn tool(
        &self,
        raw: RawTool,
        index: usize,
        credentials: &BTreeMap<String, CredentialSource>,
    ) -> Result<ToolSpec, PolicyError> {
        let label = if raw.name.is_empty() {
            format!("#{}", index + 1)
        } else {
            raw.name.clone()
        };
        let tool = Some(label.as_str());
        let valid_name = (1..=128).contains(&raw.name.len())
            && raw
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if !valid_name {
            return Err(self.err(
                tool,
                "tools.name",
                "must be 1-128 characters of A-Z, a-z, 0-9, '_', '-', '.'",
            ));
        }
        let timeout = match raw.timeout_ms {
            None => DEFAULT_TIMEOUT,
            Some(ms @ 1..=600_000) => Duration::from_millis(ms),
            Some(_) => {
                return Err(self.err(tool, "tools.timeout_ms", "must be 1..=600000"));
            }
        };
        let schema_value = raw.input_schema.ok_or_else(|| {
            self.err(
                tool,
                "tools.input_schema",
                "missing: every tool declares the arguments it accepts",
            )
        })?;
        let schema = ToolSchema::compile(schema_value)
            .map_err(|message| self.err(tool, "tools.input_schema", message))?;
        let target = match (raw.http, raw.ssh) {
            (Some(http), None) => TargetSpec::Http(self.http(http, tool)?),
            (None, Some(ssh)) => TargetSpec::Ssh(self.ssh(ssh, tool)?),
            _ => {
                return Err(self.err(
                    tool,
                    "tools",
                    "declare exactly one of [tools.http] or [tools.ssh]",
                ));
            }
        };
        let (section, templates, credential): (&str, Vec<&Template>, Option<&String>) =
            match &target {
                TargetSpec::Http(h) => (
                    "tools.http",
                    std::iter::once(&h.host)
                        .chain(&h.path)
                        .chain(h.query.iter().map(|(_, v)| v))
                        .collect(),
                    h.credential.as_ref(),
                ),
                TargetSpec::Ssh(s) => ("tools.ssh", s.argv.iter().collect(), s.credential.as_ref()),
            };
        for name in crate::template::used_args(templates) {
            schema.check_placeholder(&name).map_err(|message| {
                self.err(tool, &format!("{section} placeholder {{{name}}}"), message)
            })?;
        }
        if let Some(credential) = credential
            && !credentials.contains_key(credential)
        {
            return Err(self.err(
                tool,
                &format!("{section}.credential"),
                format!("no [credentials.{credential}] section defines it"),
            ));
        }
        Ok(ToolSpec {
            name: raw.name,
            title: raw.title,
            description: raw.description,
            timeout,
            schema,
            target,
        })
    }

    fn allow(
        &self,
        raw: &[String],
        tool: Option<&str>,
        field: &str,
    ) -> Result<Vec<HostPort>, PolicyError> {
        if raw.is_empty() {
            return Err(self.err(tool, field, "must list at least one host:port"));
        }
        let mut out = BTreeSet::new();
        for entry in raw {
            let parsed = entry.rsplit_once(':').and_then(|(host, port)| {
                let port = port.parse::<u16>().ok().filter(|p| *p != 0)?;
                let host = normalize_host(host)?;
                Some(HostPort { host, port })
            });
            match parsed {
                Some(hp) => {
                    out.insert(hp);
                }
                None => {
                    return Err(self.err(
                        tool,
                        field,
                        format!("{entry:?} is not host:port (e.g. \"127.0.0.1:8080\")"),
                    ));
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    fn http(&self, raw: RawHttp, tool: Option<&str>) -> Result<HttpSpec, PolicyError> {
        let method = match raw.method.to_ascii_uppercase().as_str() {
            "GET" => HttpMethod::Get,
            "HEAD" => HttpMethod::Head,
            "POST" => HttpMethod::Post,
            "PUT" => HttpMethod::Put,
            "PATCH" => HttpMethod::Patch,
            "DELETE" => HttpMethod::Delete,
            _ => {
                return Err(self.err(
                    tool,
                    "tools.http.method",
                    "must be one of GET, HEAD, POST, PUT, PATCH, DELETE",
                ));
            }
        };
        let allow = self.allow(&raw.allow, tool, "tools.http.allow")?;
        let url = parse_url_template(&raw.url)
            .map_err(|message| self.err(tool, "tools.http.url", message))?;
        if let Some(host) = url.host.literal() {
            let port = url.port.unwrap_or(default_port(&url.scheme));
            let normalized = normalize_host(host).unwrap_or_default();
            if !allow.iter().any(|a| a.host == normalized && a.port == port) {
                return Err(self.err(
                    tool,
                    "tools.http.allow",
                    format!("the url's host {normalized}:{port} is not in allow, so the tool could never run"),
                ));
            }
        }
        let max_response_bytes = output_cap(raw.max_response_bytes).ok_or_else(|| {
            self.err(
                tool,
                "tools.http.max_response_bytes",
                "must be 1..=67108864",
            )
        })?;
        Ok(HttpSpec {
            method,
            scheme: url.scheme,
            host: url.host,
            port: url.port,
            path: url.path,
            query: url.query,
            url_template: raw.url,
            allow,
            credential: raw.credential,
            max_response_bytes,
        })
    }

    fn ssh(&self, raw: RawSsh, tool: Option<&str>) -> Result<SshSpec, PolicyError> {
        let host = normalize_host(&raw.host)
            .ok_or_else(|| self.err(tool, "tools.ssh.host", "must be a host name or IP address"))?;
        let port = raw.port.unwrap_or(22);
        if port == 0 {
            return Err(self.err(tool, "tools.ssh.port", "must be 1..=65535"));
        }
        let user_ok = !raw.user.is_empty()
            && !raw.user.starts_with('-')
            && raw
                .user
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if !user_ok {
            return Err(self.err(tool, "tools.ssh.user", "must be a plain user name"));
        }
        let allow = self.allow(&raw.allow, tool, "tools.ssh.allow")?;
        if !allow.iter().any(|a| a.host == host && a.port == port) {
            return Err(self.err(
                tool,
                "tools.ssh.allow",
                format!("{host}:{port} is not in allow, so the tool could never run"),
            ));
        }
        if raw.argv.is_empty() {
            return Err(self.err(tool, "tools.ssh.argv", "must name at least the command"));
        }
        let mut argv = Vec::new();
        for (i, arg) in raw.argv.iter().enumerate() {
            let t = Template::parse(arg)
                .map_err(|e| self.err(tool, &format!("tools.ssh.argv[{i}]"), e.0))?;
            if i == 0 && t.literal().is_none() {
                return Err(self.err(
                    tool,
                    "tools.ssh.argv[0]",
                    "the command itself must be literal, not a placeholder",
                ));
            }
            argv.push(t);
        }
        let max_output_bytes = output_cap(raw.max_output_bytes)
            .ok_or_else(|| self.err(tool, "tools.ssh.max_output_bytes", "must be 1..=67108864"))?;
        Ok(SshSpec {
            host,
            port,
            user: raw.user,
            argv,
            allow,
            credential: raw.credential,
            known_hosts: raw.known_hosts,
            max_output_bytes,
        })
    }
}

fn output_cap(raw: Option<u64>) -> Option<usize> {
    match raw {
        None => Some(DEFAULT_MAX_OUTPUT_BYTES),
        Some(n @ 1..=67_108_864) => Some(n as usize),
        Some(_) => None,
    }
}

/// The default port of `scheme`.
pub fn default_port(scheme: &str) -> u16 {
    if scheme == "https" { 443 } else { 80 }
}

/// Normalize a host the way the URL parser will (lowercase names, IPv4 in
/// dotted form, IPv6 bracketed), or `None` if it is not a plain host.
pub fn normalize_host(host: &str) -> Option<String> {
    if host.is_empty() || host.len() > 253 {
        return None;
    }
    let parsed = url::Host::parse(host).ok()?;
    let text = match parsed {
        url::Host::Domain(d) => {
            let plain = d
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
            if !plain {
                return None;
            }
            d.to_ascii_lowercase()
        }
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => format!("[{ip}]"),
    };
    Some(text)
}

struct UrlTemplate {
    scheme: String,
    host: Template,
    port: Option<u16>,
    path: Vec<Template>,
    query: Vec<(String, Template)>,
}

/// Characters a literal path or query piece may hold as-is: RFC 3986
/// unreserved and sub-delims plus ':' and '@'. No '%', so nothing in a
/// literal is ever decoded or double-encoded.
fn literal_ok(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~!$'()*+,;:@".contains(&b))
}

fn parse_url_template(text: &str) -> Result<UrlTemplate, String> {
    let (scheme, rest) = text
        .split_once("://")
        .ok_or("must start with http:// or https://")?;
    if scheme != "http" && scheme != "https" {
        return Err("scheme must be http or https".into());
    }
    if rest.contains('#') {
        return Err("must not contain a fragment ('#')".into());
    }
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, rest) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Err("must not carry user info ('@'); use a credential".into());
    }
    let (host_text, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            let port = p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or("port must be a literal number 1..=65535")?;
            (h, Some(port))
        }
        _ => (authority, None),
    };
    let host = Template::parse(host_text).map_err(|e| e.0)?;
    match host.literal() {
        Some(h) if normalize_host(h).is_none() => {
            return Err(format!("host {h:?} is not a plain host name or IP address"));
        }
        Some(_) => {}
        None => {
            for piece in &host.0 {
                if let Piece::Lit(l) = piece
                    && !l
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
                {
                    return Err("literal parts of a templated host may hold only letters, digits, '.' and '-'".into());
                }
            }
        }
    }
    let (path_text, query_text) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let mut path = Vec::new();
    if let Some(stripped) = path_text.strip_prefix('/') {
        for segment in stripped.split('/') {
            let t = Template::parse(segment).map_err(|e| e.0)?;
            if matches!(t.literal(), Some("." | "..")) {
                return Err("path segments '.' and '..' are resolved by URL parsers; write the path they stand for".into());
            }
            check_literals(&t, "path")?;
            path.push(t);
        }
    }
    let mut query = Vec::new();
    if let Some(q) = query_text {
        for pair in q.split('&') {
            let (k, v) = pair
                .split_once('=')
                .ok_or("query pairs must be key=value")?;
            if k.is_empty() || !literal_ok(k) {
                return Err("query keys must be literal".into());
            }
            let t = Template::parse(v).map_err(|e| e.0)?;
            check_literals(&t, "query")?;
            query.push((k.to_owned(), t));
        }
    }
    Ok(UrlTemplate {
        scheme: scheme.to_owned(),
        host,
        port,
        path,
        query,
    })
}

fn check_literals(t: &Template, part: &str) -> Result<(), String> {
    for piece in &t.0 {
        if let Piece::Lit(l) = piece
            && !literal_ok(l)
        {
            return Err(format!(
                "{part} literal {l:?} holds characters that need escaping; write them unescaped-safe (no '%', spaces or quotes)"
            ));
        }
    }
    Ok(())
}
