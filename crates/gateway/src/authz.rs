//! Authorization: the only place an [`AuthorizedAction`] can be made.
//!
//! Order matters and is the point of this module: the tool must exist, its
//! templates are expanded into plain strings, the target is checked against
//! the allowlist, the credential must be bound and present — and only then
//! is anything built that an executor could use to touch a network or a
//! process (a parsed `Url`, an argv vector).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

use crate::policy::{
    HostPort, HttpMethod, HttpSpec, Policy, SshSpec, TargetSpec, ToolSpec, default_port,
    normalize_host,
};
use crate::schema::CheckedCall;
use crate::secrets::Secret;

/// Why a schema-checked call was refused. Reasons never hold argument
/// values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial(pub String);

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An HTTP request the executor may send, exactly as authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    method: HttpMethod,
    url: Url,
    max_response_bytes: usize,
}

impl HttpRequest {
    /// The method.
    pub fn method(&self) -> HttpMethod {
        self.method
    }
    /// The parsed, allowlisted URL. Executors use it as is.
    pub fn url(&self) -> &Url {
        &self.url
    }
    /// Response body cap.
    pub fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }
}

/// A remote command the executor may run over SSH, exactly as authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshCommand {
    host: String,
    port: u16,
    user: String,
    argv: Vec<String>,
    known_hosts: Option<PathBuf>,
    max_output_bytes: usize,
}

impl SshCommand {
    /// The host (allowlisted).
    pub fn host(&self) -> &str {
        &self.host
    }
    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }
    /// The remote user.
    pub fn user(&self) -> &str {
        &self.user
    }
    /// The remote argv; each element is one argument, never shell text.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }
    /// The known_hosts file to check the host key against.
    pub fn known_hosts(&self) -> Option<&Path> {
        self.known_hosts.as_deref()
    }
    /// Output cap for stdout and stderr each.
    pub fn max_output_bytes(&self) -> usize {
        self.max_output_bytes
    }
}

/// What an authorized action does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionTarget {
    /// Send one HTTP request.
    Http(HttpRequest),
    /// Run one command over SSH.
    Ssh(SshCommand),
}

/// A fully typed, schema-checked, authorized action. Its fields are private
/// and it has no public constructor: only [`authorize`] makes one, and the
/// `Executor` trait takes nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizedAction {
    tool: String,
    target: ActionTarget,
    credential: Option<Secret>,
    timeout: Duration,
}

impl AuthorizedAction {
    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.tool
    }
    /// What to do.
    pub fn target(&self) -> &ActionTarget {
        &self.target
    }
    /// The credential bound to the tool, if it uses one.
    pub fn credential(&self) -> Option<&Secret> {
        self.credential.as_ref()
    }
    /// How long the executor may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
    /// `"http"` or `"ssh"`.
    pub fn kind(&self) -> &'static str {
        match self.target {
            ActionTarget::Http(_) => "http",
            ActionTarget::Ssh(_) => "ssh",
        }
    }
    /// A one-line description of the target: the URL, or
    /// `user@host:port argv...`.
    pub fn describe_target(&self) -> String {
        match &self.target {
            ActionTarget::Http(h) => format!("{} {}", h.method.as_str(), h.url),
            ActionTarget::Ssh(s) => {
                format!("{}@{}:{} {}", s.user, s.host, s.port, s.argv.join(" "))
            }
        }
    }
}

/// Decide whether `call` may run, and if so build its action.
pub fn authorize(policy: &Policy, call: CheckedCall) -> Result<AuthorizedAction, Denial> {
    let tool = policy
        .tool(call.tool())
        .ok_or_else(|| Denial("tool is not in the policy".into()))?;
    let credential = match tool.credential() {
        None => None,
        Some(name) => Some(
            policy
                .secrets
                .get(name)
                .cloned()
                .ok_or_else(|| Denial(format!("credential {name} is not present")))?,
        ),
    };
    let target = match &tool.target {
        TargetSpec::Http(spec) => ActionTarget::Http(http(spec, &call)?),
        TargetSpec::Ssh(spec) => ActionTarget::Ssh(ssh(spec, &call)?),
    };
    Ok(make(tool, target, credential))
}

fn make(tool: &ToolSpec, target: ActionTarget, credential: Option<Secret>) -> AuthorizedAction {
    AuthorizedAction {
        tool: tool.name.clone(),
        target,
        credential,
        timeout: tool.timeout,
    }
}

fn expand(t: &crate::template::Template, call: &CheckedCall) -> Result<String, Denial> {
    t.expand(call.arguments()).map_err(Denial)
}

fn http(spec: &HttpSpec, call: &CheckedCall) -> Result<HttpRequest, Denial> {
    let host = normalize_host(&expand(&spec.host, call)?)
        .ok_or_else(|| Denial("expanded host is not a plain host name or IP address".into()))?;
    let port = spec.port.unwrap_or(default_port(&spec.scheme));
    let target = HostPort { host, port };
    if !spec.allow.contains(&target) {
        return Err(Denial(
            "expanded host:port is not in the tool's allowlist".into(),
        ));
    }
    let mut segments = Vec::with_capacity(spec.path.len());
    for t in &spec.path {
        let segment = expand(t, call)?;
        if segment == "." || segment == ".." {
            return Err(Denial("a path segment expands to '.' or '..'".into()));
        }
        segments.push(segment);
    }
    let mut query = Vec::with_capacity(spec.query.len());
    for (key, t) in &spec.query {
        query.push((key.as_str(), expand(t, call)?));
    }
    // Only now, with every check passed, is a URL built: from a constant
    // base and setters that take each component as data.
    let base = if spec.scheme == "https" {
        "https://authorized.invalid/"
    } else {
        "http://authorized.invalid/"
    };
    let mut url = Url::parse(base).map_err(|e| Denial(format!("internal: {e}")))?;
    url.set_host(Some(&target.host))
        .map_err(|_| Denial("expanded host is not a valid URL host".into()))?;
    url.set_port(Some(port))
        .map_err(|()| Denial("port cannot be set".into()))?;
    {
        let mut path = url
            .path_segments_mut()
            .map_err(|()| Denial("internal: URL cannot hold a path".into()))?;
        path.clear();
        for segment in &segments {
            path.push(segment);
        }
    }
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(query);
    }
    if url.host_str() != Some(target.host.as_str()) {
        return Err(Denial("URL host changed while building the request".into()));
    }
    Ok(HttpRequest {
        method: spec.method,
        url,
        max_response_bytes: spec.max_response_bytes,
    })
}

fn ssh(spec: &SshSpec, call: &CheckedCall) -> Result<SshCommand, Denial> {
    let target = HostPort {
        host: spec.host.clone(),
        port: spec.port,
    };
    if !spec.allow.contains(&target) {
        return Err(Denial("host:port is not in the tool's allowlist".into()));
    }
    let mut argv = Vec::with_capacity(spec.argv.len());
    for t in &spec.argv {
        let arg = expand(t, call)?;
        if t.starts_with_arg() && arg.starts_with('-') {
            return Err(Denial(
                "an argument starting with '-' would be read as an option".into(),
            ));
        }
        if arg.contains('\0') {
            return Err(Denial("an argument contains a NUL byte".into()));
        }
        argv.push(arg);
    }
    Ok(SshCommand {
        host: spec.host.clone(),
        port: spec.port,
        user: spec.user.clone(),
        argv,
        known_hosts: spec.known_hosts.clone(),
        max_output_bytes: spec.max_output_bytes,
    })
}
