//! Faithful expansion: an independent judge of whether an authorized action
//! is exactly what its tool's template allows for the call's arguments.
//!
//! It shares no code with the gateway's template, policy or URL handling:
//! templates are parsed here from the policy's raw TOML text, and the
//! authorized URL is split by hand and percent-decoded with
//! `percent-encoding` (never `url::Url`'s path or query accessors), so a
//! rewrite inside the gateway's URL builder cannot hide from it.
//!
//! The rule, for HTTP: the method, scheme, host and port are the template's
//! (the host in the allowlist); no userinfo, no fragment; the path has
//! exactly the template's segments, literal segments unchanged, each
//! templated segment percent-decoding to exactly its expansion; the query
//! has exactly the template's keys in order, each value form-decoding to
//! exactly its expansion. For SSH: user, host and port are the policy's and
//! each argv element equals its expansion. In both, a call whose expansion
//! is empty, is a dot segment, or carries a C0 control or DEL must have been
//! denied.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::Ipv6Addr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use percent_encoding::percent_decode_str;
use portcullis_gateway::{ActionTarget, AuthorizedAction, HttpRequest, Policy, SshCommand};
use serde_json::{Map, Value};

use crate::session::SessionReport;

/// One piece of a template, as this module reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text (braces already unescaped).
    Lit(String),
    /// A placeholder's argument name.
    Arg(String),
}

/// A template: `{name}` placeholders, `{{`/`}}` literal braces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(pub Vec<Piece>);

impl Template {
    /// Parse template text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("{{") {
                lit.push('{');
                rest = after;
            } else if let Some(after) = rest.strip_prefix("}}") {
                lit.push('}');
                rest = after;
            } else if let Some(after) = rest.strip_prefix('{') {
                let end = after
                    .find('}')
                    .ok_or_else(|| format!("unclosed placeholder in {text:?}"))?;
                if !lit.is_empty() {
                    pieces.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                pieces.push(Piece::Arg(after[..end].to_owned()));
                rest = &after[end + 1..];
            } else {
                lit.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
        if !lit.is_empty() {
            pieces.push(Piece::Lit(lit));
        }
        Ok(Self(pieces))
    }

    fn has_arg(&self) -> bool {
        self.0.iter().any(|p| matches!(p, Piece::Arg(_)))
    }

    fn starts_with_arg(&self) -> bool {
        matches!(self.0.first(), Some(Piece::Arg(_)))
    }

    /// Expand with the call's arguments: the text, and the argument values
    /// that went into it. An argument that is missing or neither a string
    /// nor an integer cannot expand (such a call must have been denied).
    fn expand(&self, args: &Map<String, Value>) -> Result<(String, Vec<String>), String> {
        let mut out = String::new();
        let mut values = Vec::new();
        for piece in &self.0 {
            match piece {
                Piece::Lit(s) => out.push_str(s),
                Piece::Arg(name) => {
                    let value = match args.get(name) {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
                        other => {
                            return Err(format!(
                                "argument {name} is {other:?}, which cannot expand"
                            ));
                        }
                    };
                    out.push_str(&value);
                    values.push(value);
                }
            }
        }
        Ok((out, values))
    }
}

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
    tools: HashMap<String, ToolTemplate>,
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

/// `host[:port]`, with a bracketed IPv6 host kept whole.
fn split_host_port(authority: &str) -> (&str, Option<&str>) {
    if authority.starts_with('[') {
        if let Some(end) = authority.find(']') {
            let (host, rest) = authority.split_at(end + 1);
            return (host, rest.strip_prefix(':'));
        }
        return (authority, None);
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    }
}

fn is_control(c: char) -> bool {
    c <= '\u{1f}' || c == '\u{7f}'
}

/// A templated component must expand to something, and nothing an
/// argument brings in may be a control character: such a call must have
/// been denied.
fn check_expansion(
    what: &str,
    template: &Template,
    text: &str,
    values: &[String],
) -> Result<(), String> {
    if !template.has_arg() {
        return Ok(());
    }
    if text.is_empty() {
        return Err(format!("{what} expands to nothing"));
    }
    if values.iter().any(|v| v.chars().any(is_control)) {
        return Err(format!(
            "{what} takes an argument holding a C0 control or DEL ({:?})",
            text
        ));
    }
    Ok(())
}

fn default_port(scheme: &str) -> u16 {
    if scheme == "https" { 443 } else { 80 }
}

/// An IPv4 address in any notation the WHATWG host parser accepts
/// (`127.1`, `0x7f.0.0.1`, `2130706433`, a trailing dot), so that a host
/// argument written in another notation of the same address is not taken
/// for a rewrite.
fn ipv4(text: &str) -> Option<u32> {
    let text = text.strip_suffix('.').unwrap_or(text);
    let parts: Vec<&str> = text.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        let (digits, radix) =
            if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
                (hex, 16)
            } else if part.len() > 1 && part.starts_with('0') {
                (&part[1..], 8)
            } else {
                (*part, 10)
            };
        if part.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        let n = if digits.is_empty() {
            0
        } else {
            u64::from_str_radix(digits, radix).ok()?
        };
        numbers.push(n);
    }
    let last = numbers.pop()?;
    if numbers.iter().any(|&n| n > 255) {
        return None;
    }
    let last_bits = 8 * (4 - numbers.len()) as u32;
    if last >= 1u64 << last_bits {
        return None;
    }
    let mut address = last;
    for (i, n) in numbers.iter().enumerate() {
        address |= n << (24 - 8 * i as u32);
    }
    u32::try_from(address).ok()
}

fn ipv6(text: &str) -> Option<Ipv6Addr> {
    text.strip_prefix('[')?.strip_suffix(']')?.parse().ok()
}

/// Whether two host texts name the same host: equal up to ASCII case, or
/// the same IP address in different notations.
fn same_host(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
        || matches!((ipv4(a), ipv4(b)), (Some(x), Some(y)) if x == y)
        || matches!((ipv6(a), ipv6(b)), (Some(x), Some(y)) if x == y)
}

/// `%` must start a `%XX` escape, so that decoding is unambiguous.
fn well_escaped(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().all(|(i, &b)| {
        b != b'%'
            || (bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

fn percent_decoded(text: &str, plus_is_space: bool) -> Result<String, String> {
    if !well_escaped(text) {
        return Err(format!("{text:?} has a '%' that starts no escape"));
    }
    let spaced;
    let text = if plus_is_space {
        spaced = text.replace('+', " ");
        spaced.as_str()
    } else {
        text
    };
    percent_decode_str(text)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| format!("{text:?} does not decode to UTF-8"))
}

fn check_http(
    t: &HttpTemplate,
    args: &Map<String, Value>,
    request: &HttpRequest,
) -> Result<(), String> {
    let url = request.url().as_str();
    if request.method().as_str() != t.method {
        return Err(format!(
            "method {} is not the template's {}",
            request.method().as_str(),
            t.method
        ));
    }
    if let Some(c) = url.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!("the URL holds {c:?} unescaped"));
    }
    if url.contains('#') {
        return Err("the URL has a fragment".into());
    }
    let (scheme, rest) = url.split_once("://").ok_or("the URL has no scheme")?;
    if scheme != t.scheme {
        return Err(format!(
            "scheme {scheme} is not the template's {}",
            t.scheme
        ));
    }
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, rest) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Err("the URL carries userinfo".into());
    }
    let (host, port) = split_host_port(authority);
    let port = match port {
        Some(p) => p.parse::<u16>().map_err(|_| format!("port {p:?}"))?,
        None => default_port(scheme),
    };
    let (expected_host, host_values) = t.host.expand(args)?;
    if !same_host(host, &expected_host) {
        return Err(format!(
            "host {host:?} is not the expansion {expected_host:?}"
        ));
    }
    // A rewrite is reported before a value that should have been denied,
    // so a finding names what the builder changed.
    let mut deny = vec![("the host".to_owned(), &t.host, expected_host, host_values)];
    let expected_port = t.port.unwrap_or(default_port(&t.scheme));
    if port != expected_port {
        return Err(format!("port {port} is not the template's {expected_port}"));
    }
    if !t
        .allow
        .iter()
        .any(|(h, p)| *p == port && same_host(h, host))
    {
        return Err(format!("{host}:{port} is not in the allowlist"));
    }

    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let segments: Vec<&str> = path
        .strip_prefix('/')
        .ok_or_else(|| format!("path {path:?} does not start with '/'"))?
        .split('/')
        .collect();
    // No template path and a lone empty segment are both the bare "/".
    let expected_count = t.path.len().max(1);
    if segments.len() != expected_count {
        return Err(format!(
            "path {path:?} has {} segment(s), the template {}",
            segments.len(),
            t.path.len()
        ));
    }
    if t.path.is_empty() && segments != [""] {
        return Err(format!("the template has no path, the URL has {path:?}"));
    }
    for (i, (template, actual)) in t.path.iter().zip(&segments).enumerate() {
        let (expected, values) = template.expand(args)?;
        let what = format!("path segment {}", i + 1);
        if template.has_arg() {
            let decoded = percent_decoded(actual, false).map_err(|e| format!("{what}: {e}"))?;
            if decoded != expected {
                return Err(format!(
                    "{what} is {actual:?}, decoding to {decoded:?}, not the expansion {expected:?}"
                ));
            }
            if expected == "." || expected == ".." {
                return Err(format!("{what} expands to the dot segment {expected:?}"));
            }
        } else if *actual != expected {
            return Err(format!("literal {what} {expected:?} became {actual:?}"));
        }
        deny.push((what, template, expected, values));
    }

    match (query, t.query.is_empty()) {
        (None, true) => {}
        (Some(q), true) => return Err(format!("the template has no query, the URL has {q:?}")),
        (None, false) => return Err("the template's query is missing".into()),
        (Some(q), false) => {
            let pairs: Vec<&str> = q.split('&').collect();
            if pairs.len() != t.query.len() {
                return Err(format!(
                    "query {q:?} has {} pair(s), the template {}",
                    pairs.len(),
                    t.query.len()
                ));
            }
            for ((key, template), pair) in t.query.iter().zip(pairs) {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                let k = percent_decoded(k, true)?;
                if k != *key {
                    return Err(format!("query key {k:?} is not the template's {key:?}"));
                }
                let (expected, values) = template.expand(args)?;
                let what = format!("query value {key}");
                let decoded = percent_decoded(v, true).map_err(|e| format!("{what}: {e}"))?;
                if decoded != expected {
                    return Err(format!(
                        "{what} is {v:?}, decoding to {decoded:?}, not the expansion {expected:?}"
                    ));
                }
                deny.push((what, template, expected, values));
            }
        }
    }
    for (what, template, expected, values) in &deny {
        check_expansion(what, template, expected, values)?;
    }
    Ok(())
}

fn check_ssh(
    t: &SshTemplate,
    args: &Map<String, Value>,
    command: &SshCommand,
) -> Result<(), String> {
    if !same_host(command.host(), &t.host) || command.port() != t.port {
        return Err(format!(
            "{}:{} is not the policy's {}:{}",
            command.host(),
            command.port(),
            t.host,
            t.port
        ));
    }
    if !t
        .allow
        .iter()
        .any(|(h, p)| *p == command.port() && same_host(h, command.host()))
    {
        return Err("host:port is not in the allowlist".into());
    }
    if command.user() != t.user {
        return Err(format!(
            "user {:?} is not the policy's {:?}",
            command.user(),
            t.user
        ));
    }
    let argv = command.argv();
    if argv.len() != t.argv.len() {
        return Err(format!(
            "argv has {} element(s), the template {}",
            argv.len(),
            t.argv.len()
        ));
    }
    for (i, (template, actual)) in t.argv.iter().zip(argv).enumerate() {
        let (expected, values) = template.expand(args)?;
        let what = format!("argv[{i}]");
        if *actual != expected {
            return Err(format!(
                "{what} is {actual:?}, not the expansion {expected:?}"
            ));
        }
        check_expansion(&what, template, &expected, &values)?;
        if template.starts_with_arg() && expected.starts_with('-') {
            return Err(format!("{what} {expected:?} would be read as an option"));
        }
    }
    Ok(())
}

/// The `arguments` of the `tools/call` on 1-based input `line`, read with a
/// plain line split and lenient `serde_json` (as the reference check does).
pub fn line_arguments(input: &[u8], line: u64) -> Option<Map<String, Value>> {
    let index = usize::try_from(line).ok()?.checked_sub(1)?;
    let raw = input.split(|&b| b == b'\n').nth(index)?;
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let value: Value = serde_json::from_slice(raw).ok()?;
    match value.get("params")?.get("arguments") {
        None => Some(Map::new()),
        Some(Value::Object(args)) => Some(args.clone()),
        Some(_) => None,
    }
}

/// The templates of `policy`: from the policy text it was loaded from (its
/// source file, or the test policy), cached per source. A policy whose text
/// cannot be found (built from text under a made-up path) falls back to
/// the templates the policy kept: the raw URL text, and the SSH argv pieces
/// written back as template text.
pub fn templates_of(policy: &Policy) -> Arc<Templates> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<Templates>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = cache.get(&policy.source)
        && matches_policy(found, policy)
    {
        return Arc::clone(found);
    }
    let templates = Arc::new(resolve(policy));
    cache.insert(policy.source.clone(), Arc::clone(&templates));
    templates
}

fn resolve(policy: &Policy) -> Templates {
    let candidates = [
        read_text(&policy.source),
        Some(crate::fixtures::TEST_POLICY.to_owned()),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter_map(|text| Templates::from_toml(&text).ok())
        .find(|t| matches_policy(t, policy))
        .unwrap_or_else(|| from_loaded(policy))
}

fn read_text(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Whether `templates` describe exactly the tools of `policy` (same names,
/// same kinds, same URL text).
fn matches_policy(templates: &Templates, policy: &Policy) -> bool {
    use portcullis_gateway::policy::TargetSpec;
    templates.tools.len() == policy.tools.len()
        && policy
            .tools
            .iter()
            .all(|tool| match (templates.tool(&tool.name), &tool.target) {
                (Some(ToolTemplate::Http(t)), TargetSpec::Http(spec)) => t.url == spec.url_template,
                (Some(ToolTemplate::Ssh(t)), TargetSpec::Ssh(spec)) => {
                    t.argv.len() == spec.argv.len()
                }
                _ => false,
            })
}

fn write_template(t: &Template) -> String {
    let mut out = String::new();
    for piece in &t.0 {
        match piece {
            Piece::Lit(s) => out.push_str(&s.replace('{', "{{").replace('}', "}}")),
            Piece::Arg(name) => {
                let _ = write!(out, "{{{name}}}");
            }
        }
    }
    out
}

fn from_loaded(policy: &Policy) -> Templates {
    use portcullis_gateway::policy::TargetSpec;
    use portcullis_gateway::template::Piece as GatewayPiece;
    let mut text = String::new();
    for tool in &policy.tools {
        let quote = |s: &str| Value::String(s.to_owned()).to_string();
        let _ = writeln!(text, "[[tools]]\nname = {}", quote(&tool.name));
        match &tool.target {
            TargetSpec::Http(spec) => {
                let allow: Vec<String> = spec.allow.iter().map(|a| quote(&a.to_string())).collect();
                let _ = writeln!(
                    text,
                    "[tools.http]\nmethod = {}\nurl = {}\nallow = [{}]",
                    quote(spec.method.as_str()),
                    quote(&spec.url_template),
                    allow.join(",")
                );
            }
            TargetSpec::Ssh(spec) => {
                let allow: Vec<String> = spec.allow.iter().map(|a| quote(&a.to_string())).collect();
                let argv: Vec<String> = spec
                    .argv
                    .iter()
                    .map(|t| {
                        let pieces =
                            t.0.iter()
                                .map(|p| match p {
                                    GatewayPiece::Lit(s) => Piece::Lit(s.clone()),
                                    GatewayPiece::Arg(n) => Piece::Arg(n.clone()),
                                })
                                .collect();
                        quote(&write_template(&Template(pieces)))
                    })
                    .collect();
                let _ = writeln!(
                    text,
                    "[tools.ssh]\nhost = {}\nport = {}\nuser = {}\nargv = [{}]\nallow = [{}]",
                    quote(&spec.host),
                    spec.port,
                    quote(&spec.user),
                    argv.join(","),
                    allow.join(",")
                );
            }
        }
    }
    Templates::from_toml(&text).unwrap_or_default()
}

/// Check every recorded action of a session against its tool's template,
/// with the arguments read back from the input line that produced it.
pub fn check_report(policy: &Policy, input: &[u8], report: &SessionReport) -> Result<(), String> {
    if report.actions.is_empty() {
        return Ok(());
    }
    let templates = templates_of(policy);
    for (entry, action) in report.journal.iter().zip(&report.actions) {
        if entry.tool != action.tool() {
            return Err(format!(
                "journal entry for line {} names {}, the executor saw {}",
                entry.line,
                entry.tool,
                action.tool()
            ));
        }
        let args = line_arguments(input, entry.line).ok_or_else(|| {
            format!(
                "line {} executed {} but holds no readable tools/call arguments",
                entry.line,
                action.tool()
            )
        })?;
        templates.check(&args, action)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notations_of_one_ip_address_name_the_same_host() {
        for other in [
            "127.1",
            "0x7f.0.0.1",
            "0177.0.0.1",
            "2130706433",
            "127.0.0.1.",
        ] {
            assert!(same_host("127.0.0.1", other), "{other}");
        }
        assert!(same_host("[::1]", "[0:0::1]"));
        assert!(same_host("LocalHost", "localhost"));
        for other in [
            "127.0.0.2",
            "+127.0.0.1",
            "127.0.0.1.1",
            "127\u{3002}0\u{3002}0\u{3002}1",
        ] {
            assert!(!same_host("127.0.0.1", other), "{other}");
        }
    }

    #[test]
    fn a_percent_sign_must_start_an_escape() {
        assert_eq!(percent_decoded("a%2Fb", false).unwrap(), "a/b");
        assert_eq!(percent_decoded("a+b", true).unwrap(), "a b");
        assert_eq!(percent_decoded("a+b", false).unwrap(), "a+b");
        assert!(percent_decoded("a%2", false).is_err());
        assert!(percent_decoded("%zz", false).is_err());
        assert!(percent_decoded("%ff", false).is_err());
    }

    #[test]
    fn a_templated_value_with_a_control_character_or_nothing_must_be_denied() {
        let templated = Template::parse("x{a}").unwrap();
        for bad in ["\t", "\n", "\r", "\0", "\u{7f}", "a\u{1f}"] {
            let err = check_expansion("v", &templated, &format!("x{bad}"), &[bad.to_owned()])
                .unwrap_err();
            assert!(err.contains("C0 control"), "{bad:?}: {err}");
        }
        let bare = Template::parse("{a}").unwrap();
        assert!(
            check_expansion("v", &bare, "", &[String::new()])
                .unwrap_err()
                .contains("expands to nothing")
        );
        assert!(check_expansion("v", &templated, "x\u{85}", &["\u{85}".to_owned()]).is_ok());
        let literal = Template::parse("").unwrap();
        assert!(check_expansion("v", &literal, "", &[]).is_ok());
    }

    #[test]
    fn templates_parse_placeholders_and_escaped_braces() {
        assert_eq!(
            Template::parse("{{a}}-{b}c").unwrap().0,
            [
                Piece::Lit("{a}-".into()),
                Piece::Arg("b".into()),
                Piece::Lit("c".into())
            ]
        );
        assert!(Template::parse("{open").is_err());
    }
}
