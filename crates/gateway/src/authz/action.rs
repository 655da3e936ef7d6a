//! The action types authorization builds. Their fields are visible to
//! [`super`] only: nothing outside `authz` can make or change one.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use http::Uri;

use crate::policy::HttpMethod;
use crate::secrets::Secret;

/// An HTTP request the executor may send, exactly as authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub(super) method: HttpMethod,
    pub(super) uri: Uri,
    pub(super) max_response_bytes: usize,
}

impl HttpRequest {
    /// The method.
    pub fn method(&self) -> HttpMethod {
        self.method
    }
    /// The request URI, parsed once by authorization and held to the
    /// authorized target there. Executors send it as is.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }
    /// The URI's text, as the request line carries it.
    pub fn url(&self) -> String {
        self.uri.to_string()
    }
    /// The allowlisted host the request connects to.
    pub fn host(&self) -> &str {
        self.uri.host().unwrap_or_default()
    }
    /// The port the request connects to (the scheme's default when the
    /// URI names none).
    pub fn port(&self) -> u16 {
        let scheme = self.uri.scheme_str().unwrap_or_default();
        self.uri
            .port_u16()
            .unwrap_or(crate::host::default_port(scheme))
    }
    /// Response body cap.
    pub fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }
}

/// A remote command the executor may run over SSH, exactly as authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshCommand {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) user: String,
    pub(super) argv: Vec<String>,
    pub(super) known_hosts: Option<PathBuf>,
    pub(super) max_output_bytes: usize,
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
    pub(super) tool: Arc<str>,
    pub(super) target: ActionTarget,
    pub(super) credential: Option<Secret>,
    pub(super) timeout: Duration,
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
        self.target_display().to_string()
    }

    /// [`AuthorizedAction::describe_target`], formatted only when it is
    /// written (a journal hashes it as it is formatted).
    pub fn target_display(&self) -> TargetDisplay<'_> {
        TargetDisplay(&self.target)
    }
}

/// The one-line description of an action's target, formatted lazily.
#[derive(Debug, Clone, Copy)]
pub struct TargetDisplay<'a>(&'a ActionTarget);

impl fmt::Display for TargetDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            ActionTarget::Http(h) => write!(f, "{} {}", h.method.as_str(), h.uri),
            ActionTarget::Ssh(s) => {
                write!(f, "{}@{}:{} ", s.user, s.host, s.port)?;
                for (i, arg) in s.argv.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    f.write_str(arg)?;
                }
                Ok(())
            }
        }
    }
}
