//! Every tool's raw template, read from the policy's TOML text
//! independently of the gateway's loader, and the entry point that checks
//! an authorized action against its tool's template.

use std::collections::HashMap;

use portcullis_gateway::{ActionTarget, AuthorizedAction};
use serde_json::{Map, Value};

use super::http::check_http;
use super::ssh::check_ssh;
use super::template::Template;
use super::url::split_host_port;

/// An HTTP tool's raw template.
#[derive(Debug, Clone)]
pub struct HttpTemplate {
    /// The URL template as written.
    pub url: String,
    /// Method, upper case.
    pub method: String,
    /// `http` or `https`.
    pub scheme: String,
    /// Host template.
    pub host: Template,
    /// Explicit port.
    pub port: Option<u16>,
    /// Path segment templates (none when the URL has no path at all).
    pub path: Vec<Template>,
    /// Query keys and value templates, in order.
    pub query: Vec<(String, Template)>,
    /// The allowlist, as `(lowercase host, port)`.
    pub allow: Vec<(String, u16)>,
}

/// An SSH tool's raw template.
#[derive(Debug, Clone)]
pub struct SshTemplate {
    /// Host.
    pub host: String,
    /// Port (22 when unset).
    pub port: u16,
    /// Remote user.
    pub user: String,
    /// Argv templates.
    pub argv: Vec<Template>,
    /// The allowlist, as `(lowercase host, port)`.
    pub allow: Vec<(String, u16)>,
}

/// What one tool may do, as written in the policy.
#[derive(Debug, Clone)]
pub enum ToolTemplate {
    /// `[tools.http]`.
    Http(HttpTemplate),
    /// `[tools.ssh]`.
    Ssh(SshTemplate),
}

/// Every tool's raw template, by name.
#[derive(Debug, Clone, Default)]
pub struct Templates {
    pub(super) tools: HashMap<String, ToolTemplate>,
}

impl Templates {
    /// Read the templates from policy text (TOML), independently of the
    /// gateway's loader.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut tools = HashMap::new();
        let entries = table
            .get("tools")
            .and_then(toml::Value::as_array)
            .cloned()
            .unwrap_or_default();
        for tool in &entries {
            let name = str_field(tool, "name")?;
            let template = if let Some(http) = tool.get("http") {
                ToolTemplate::Http(http_template(http)?)
            } else if let Some(ssh) = tool.get("ssh") {
                ToolTemplate::Ssh(ssh_template(ssh)?)
            } else {
                return Err(format!("tool {name}: neither http nor ssh"));
            };
            tools.insert(name.to_owned(), template);
        }
        Ok(Self { tools })
    }

    /// The template of `tool`.
    pub fn tool(&self, tool: &str) -> Option<&ToolTemplate> {
        self.tools.get(tool)
    }

    /// Whether `action`, authorized for a call with `args`, is a faithful
    /// expansion of its tool's template. The error explains the first
    /// difference.
    pub fn check(
        &self,
        args: &Map<String, Value>,
        action: &AuthorizedAction,
    ) -> Result<(), String> {
        let tool = action.tool();
        let template = self
            .tool(tool)
            .ok_or_else(|| format!("tool {tool} is not in the policy text"))?;
        let result = match (template, action.target()) {
            (ToolTemplate::Http(t), ActionTarget::Http(request)) => check_http(t, args, request),
            (ToolTemplate::Ssh(t), ActionTarget::Ssh(command)) => check_ssh(t, args, command),
            _ => Err("the action's kind is not the tool's".to_owned()),
        };
        result.map_err(|why| {
            format!(
                "tool {tool}: authorized `{}` for arguments {} is not a faithful expansion: {why}",
                action.describe_target().escape_debug(),
                Value::Object(args.clone())
            )
        })
    }
}

fn str_field<'a>(table: &'a toml::Value, key: &str) -> Result<&'a str, String> {
    table
        .get(key)
        .and_then(toml::Value::as_str)
        .ok_or_else(|| format!("missing string field {key}"))
}

fn allow_list(table: &toml::Value) -> Result<Vec<(String, u16)>, String> {
    let entries = table
        .get("allow")
        .and_then(toml::Value::as_array)
        .ok_or("missing allow")?;
    entries
        .iter()
        .map(|e| {
            let text = e.as_str().ok_or("allow entries are strings")?;
            let (host, port) = text.rsplit_once(':').ok_or("allow entries are host:port")?;
            let port = port.parse().map_err(|_| "allow port is a number")?;
            Ok((host.to_ascii_lowercase(), port))
        })
        .collect()
}

fn http_template(http: &toml::Value) -> Result<HttpTemplate, String> {
    let url = str_field(http, "url")?;
    let (scheme, rest) = url.split_once("://").ok_or("url has no scheme")?;
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, rest) = rest.split_at(authority_end);
    let (host, port) = split_host_port(authority);
    let port = port
        .map(|p| p.parse::<u16>().map_err(|_| format!("port {p:?}")))
        .transpose()?;
    let (path_text, query_text) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let path = match path_text.strip_prefix('/') {
        Some(p) => p
            .split('/')
            .map(Template::parse)
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let query = match query_text {
        Some(q) => q
            .split('&')
            .map(|pair| {
                let (k, v) = pair.split_once('=').ok_or("query pair without '='")?;
                Ok((k.to_owned(), Template::parse(v)?))
            })
            .collect::<Result<_, String>>()?,
        None => Vec::new(),
    };
    Ok(HttpTemplate {
        url: url.to_owned(),
        method: str_field(http, "method")?.to_ascii_uppercase(),
        scheme: scheme.to_ascii_lowercase(),
        host: Template::parse(host)?,
        port,
        path,
        query,
        allow: allow_list(http)?,
    })
}

fn ssh_template(ssh: &toml::Value) -> Result<SshTemplate, String> {
    let port = match ssh.get("port") {
        None => 22,
        Some(p) => p
            .as_integer()
            .and_then(|p| u16::try_from(p).ok())
            .ok_or("ssh port")?,
    };
    let argv = ssh
        .get("argv")
        .and_then(toml::Value::as_array)
        .ok_or("missing argv")?
        .iter()
        .map(|a| Template::parse(a.as_str().ok_or("argv elements are strings")?))
        .collect::<Result<_, _>>()?;
    Ok(SshTemplate {
        host: str_field(ssh, "host")?.to_owned(),
        port,
        user: str_field(ssh, "user")?.to_owned(),
        argv,
        allow: allow_list(ssh)?,
    })
}
