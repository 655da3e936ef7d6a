//! Authorization: the only place an [`AuthorizedAction`] can be made.
//!
//! Order matters and is the point of this module: the call names a policy
//! tool (the schema stage resolved it), its templates are expanded into
//! plain strings, the target is checked against the allowlist, the
//! credential must be bound and present — and only then is anything built
//! that an executor could use to touch a network or a process (a parsed
//! `Url`, an argv vector).

use std::fmt;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use url::Url;

use crate::host::{default_port, normalize_host};
use crate::policy::{HostPort, HttpSpec, SshSpec, TargetSpec, ToolSpec};
use crate::schema::CheckedCall;
use crate::secrets::{Secret, SecretStore};
use crate::template::{ExpandError, Template};

mod action;

pub use action::{ActionTarget, AuthorizedAction, HttpRequest, SshCommand};

/// Which part of an action a value was expanded into. Indexes count from 0.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Component {
    /// The URL's host.
    Host,
    /// A URL path segment.
    PathSegment(usize),
    /// A URL query value, by key.
    QueryValue(String),
    /// An SSH argv element.
    Argv(usize),
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Host => f.write_str("the host"),
            Self::PathSegment(i) => write!(f, "path segment {}", i + 1),
            Self::QueryValue(key) => write!(f, "query value {key}"),
            Self::Argv(i) => write!(f, "argv element {i}"),
        }
    }
}

/// Why a schema-checked call was refused. Reasons never hold argument
/// values, only names from the policy and fixed text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Denial {
    /// The tool's credential is not bound or could not be loaded.
    #[error("credential {0} is not present")]
    CredentialMissing(String),
    /// A template names an argument the call does not carry.
    #[error("argument {0} is missing")]
    ArgumentMissing(String),
    /// A template names an argument that is not a string or an integer.
    #[error("argument {0} is not a string or integer")]
    ArgumentNotScalar(String),
    /// A value built from a placeholder is empty.
    #[error("{0} would be empty")]
    Empty(Component),
    /// A value built from a placeholder holds a C0 control or DEL, which
    /// URL parsers drop or rewrite and remote shells split on.
    #[error("{0} would hold a control character")]
    ControlCharacter(Component),
    /// A path segment would be `.` or `..` (decoded), which servers resolve.
    #[error("{0} would be a dot segment ('.' or '..')")]
    DotSegment(Component),
    /// The expanded host is not a plain host name or IP address.
    #[error("the expanded host is not a plain host name or IP address")]
    HostNotPlain,
    /// The expanded `host:port` is not in the tool's allowlist.
    #[error("the expanded host:port is not in the tool's allowlist")]
    HostNotAllowed,
    /// An argv element that begins with a placeholder would start with `-`.
    #[error("{0} would start with '-' and be read as an option")]
    OptionLike(Component),
    /// The built URL is longer than an HTTP client will send; denied here so
    /// that the call never queues for an executor that must refuse it.
    #[error("the built URL would exceed {0} bytes")]
    UrlTooLong(usize),
    /// The built request, parsed back, is not exactly what the template and
    /// the arguments describe. Checks made before a URL builder rewrites its
    /// input prove nothing; this is the check on the built thing.
    #[error("the built request is not a faithful expansion of the template: {0}")]
    Unfaithful(&'static str),
}

/// Decide whether `call` may run, and if so build its action, with the
/// credential its tool names taken from `secrets`.
pub fn authorize(
    call: &CheckedCall<'_>,
    secrets: &SecretStore,
) -> Result<AuthorizedAction, Denial> {
    let tool = call.tool();
    let credential = match tool.credential() {
        None => None,
        Some(name) => Some(
            secrets
                .get(name)
                .cloned()
                .ok_or_else(|| Denial::CredentialMissing(name.to_owned()))?,
        ),
    };
    let target = match &tool.target {
        TargetSpec::Http(spec) => ActionTarget::Http(http(spec, call)?),
        TargetSpec::Ssh(spec) => ActionTarget::Ssh(ssh(spec, call)?),
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

/// Expand `t` into the text of `component`. A value that a placeholder
/// contributes to must be non-empty and free of C0 controls and DEL: URL
/// parsers drop tab, LF and CR, and remote shells split on them, so such a
/// value would not arrive as written.
fn expand(t: &Template, call: &CheckedCall<'_>, component: Component) -> Result<String, Denial> {
    let text = t.expand(call.arguments())?;
    if t.literal().is_none() {
        if text.is_empty() {
            return Err(Denial::Empty(component));
        }
        if text.chars().any(|c| c.is_ascii_control()) {
            return Err(Denial::ControlCharacter(component));
        }
    }
    Ok(text)
}

fn escaped(t: &Template, call: &CheckedCall<'_>) -> Result<String, Denial> {
    Ok(t.expand_escaped(call.arguments(), |text, out| {
        out.extend(utf8_percent_encode(text, COMPONENT));
    })?)
}

impl From<ExpandError> for Denial {
    fn from(e: ExpandError) -> Self {
        match e {
            ExpandError::Missing(name) => Denial::ArgumentMissing(name),
            ExpandError::NotScalar(name) => Denial::ArgumentNotScalar(name),
        }
    }
}

/// The longest URL the HTTP executor's request line accepts (the `http`
/// crate refuses longer URIs).
pub const MAX_URL_BYTES: usize = 65_534;

/// Bytes a built path segment or query value keeps as is: RFC 3986
/// unreserved. Everything else is percent-encoded, so the built URL holds
/// no character a parser could reinterpret.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn http(spec: &HttpSpec, call: &CheckedCall<'_>) -> Result<HttpRequest, Denial> {
    let expanded_host = expand(&spec.host, call, Component::Host)?;
    let host = normalize_host(&expanded_host).ok_or(Denial::HostNotPlain)?;
    let port = spec.port.unwrap_or(default_port(&spec.scheme));
    let target = HostPort { host, port };
    if !spec.allow.contains(&target) {
        return Err(Denial::HostNotAllowed);
    }
    // Only once every check has passed is a URL built: literal pieces as
    // the policy wrote them, every argument fully percent-encoded, so the
    // parser has nothing left to normalize. Then it is parsed back and
    // compared with what was checked.
    let mut text = format!("{}://{}:{}", spec.scheme, target.host, port);
    let mut segments = Vec::with_capacity(spec.path.len());
    for (i, t) in spec.path.iter().enumerate() {
        let segment = expand(t, call, Component::PathSegment(i))?;
        if segment == "." || segment == ".." {
            return Err(Denial::DotSegment(Component::PathSegment(i)));
        }
        text.push('/');
        text.push_str(&escaped(t, call)?);
        segments.push(segment);
    }
    if segments.is_empty() {
        text.push('/');
    }
    let mut query = Vec::with_capacity(spec.query.len());
    for (i, (key, t)) in spec.query.iter().enumerate() {
        let value = expand(t, call, Component::QueryValue(key.clone()))?;
        // Form decoding, which servers apply to queries, reads '+' as a
        // space; a '+' the policy wrote in a literal is sent as %2B so it
        // arrives as '+'. Encoded arguments hold no raw '+'.
        text.push(if i == 0 { '?' } else { '&' });
        text.push_str(&key.replace('+', "%2B"));
        text.push('=');
        text.push_str(&escaped(t, call)?.replace('+', "%2B"));
        query.push((key.as_str(), value));
    }
    if text.len() > MAX_URL_BYTES {
        return Err(Denial::UrlTooLong(MAX_URL_BYTES));
    }
    let url = Url::parse(&text).map_err(|_| Denial::Unfaithful("the URL does not parse"))?;
    faithful(&url, &spec.scheme, &target, &segments, &query)?;
    Ok(HttpRequest {
        method: spec.method,
        url,
        max_response_bytes: spec.max_response_bytes,
    })
}

/// Parse the URL the executor will use back into its components, with our
/// own splitting and decoding, and require each to be exactly what was
/// authorized: scheme, allowlisted host and port, no userinfo or fragment,
/// the template's segment count with each segment decoding to its
/// expansion, the template's query keys in order with each value decoding
/// to its expansion.
fn faithful(
    url: &Url,
    scheme: &str,
    target: &HostPort,
    segments: &[String],
    query: &[(&str, String)],
) -> Result<(), Denial> {
    let text = url.as_str();
    let rest = text
        .strip_prefix(scheme)
        .and_then(|r| r.strip_prefix("://"))
        .ok_or(Denial::Unfaithful("the scheme changed"))?;
    if text.contains('#') || url.fragment().is_some() {
        return Err(Denial::Unfaithful("the URL has a fragment"));
    }
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, rest) = rest.split_at(authority_end);
    if authority.contains('@') || !url.username().is_empty() || url.password().is_some() {
        return Err(Denial::Unfaithful("the URL has user info"));
    }
    // The parser drops a scheme's default port; the authority is then the
    // bare host.
    let expected_authority = format!("{}:{}", target.host, target.port);
    let default_authority = (target.port == default_port(scheme)).then(|| target.host.clone());
    if authority != expected_authority && Some(authority) != default_authority.as_deref() {
        return Err(Denial::Unfaithful("the host or port changed"));
    }
    if url.host_str() != Some(target.host.as_str())
        || url.port_or_known_default() != Some(target.port)
    {
        return Err(Denial::Unfaithful("the host or port changed"));
    }
    let (path, query_text) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let built: Vec<&str> = path
        .strip_prefix('/')
        .ok_or(Denial::Unfaithful("the path lost its root"))?
        .split('/')
        .collect();
    let expected_count = segments.len().max(1);
    if built.len() != expected_count {
        return Err(Denial::Unfaithful("the path has a different segment count"));
    }
    for (got, want) in built.iter().zip(segments) {
        if decode(got)? != *want {
            return Err(Denial::Unfaithful("a path segment changed"));
        }
    }
    let pairs: Vec<&str> = match query_text {
        None => Vec::new(),
        Some(q) => q.split('&').collect(),
    };
    if pairs.len() != query.len() {
        return Err(Denial::Unfaithful("the query has different keys"));
    }
    for (pair, (key, value)) in pairs.iter().zip(query) {
        let (k, v) = pair
            .split_once('=')
            .ok_or(Denial::Unfaithful("a query pair lost its value"))?;
        if decode_form(k)? != *key {
            return Err(Denial::Unfaithful("the query has different keys"));
        }
        if decode_form(v)? != *value {
            return Err(Denial::Unfaithful("a query value changed"));
        }
    }
    Ok(())
}

fn decode(text: &str) -> Result<String, Denial> {
    percent_decode_str(text)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| Denial::Unfaithful("a component does not decode to UTF-8"))
}

/// Query components as a server reads them: `+` is a space.
fn decode_form(text: &str) -> Result<String, Denial> {
    decode(&text.replace('+', " "))
}

fn ssh(spec: &SshSpec, call: &CheckedCall<'_>) -> Result<SshCommand, Denial> {
    let target = HostPort {
        host: spec.host.clone(),
        port: spec.port,
    };
    if !spec.allow.contains(&target) {
        return Err(Denial::HostNotAllowed);
    }
    let mut argv = Vec::with_capacity(spec.argv.len());
    for (i, t) in spec.argv.iter().enumerate() {
        let arg = expand(t, call, Component::Argv(i))?;
        if t.starts_with_arg() && arg.starts_with('-') {
            return Err(Denial::OptionLike(Component::Argv(i)));
        }
        argv.push(arg);
    }
    // Each element is sent as one quoted remote word by the executor; the
    // control-character rule above is what keeps that true (a remote shell
    // splits words only on what quoting does not cover).
    Ok(SshCommand {
        host: spec.host.clone(),
        port: spec.port,
        user: spec.user.clone(),
        argv,
        known_hosts: spec.known_hosts.clone(),
        max_output_bytes: spec.max_output_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(url: &str, segments: &[&str], query: &[(&str, &str)]) -> Result<(), Denial> {
        let target = HostPort {
            host: "127.0.0.1".into(),
            port: 8080,
        };
        let segments: Vec<String> = segments.iter().map(|s| (*s).to_owned()).collect();
        let query: Vec<(&str, String)> = query.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        faithful(
            &Url::parse(url).unwrap(),
            "http",
            &target,
            &segments,
            &query,
        )
    }

    #[test]
    fn the_parse_back_accepts_only_the_exact_expansion() {
        let ok = check(
            "http://127.0.0.1:8080/a/b%20c?k=v%2F",
            &["a", "b c"],
            &[("k", "v/")],
        );
        assert_eq!(ok, Ok(()));
        type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
        let cases: [Case<'_>; 9] = [
            (
                "http://127.0.0.1:8080/a",
                &["a", "b"],
                &[],
                "the path has a different segment count",
            ),
            (
                "http://127.0.0.1:8080/a/x",
                &["a", "b"],
                &[],
                "a path segment changed",
            ),
            (
                "http://127.0.0.1:8081/a",
                &["a"],
                &[],
                "the host or port changed",
            ),
            (
                "http://127.0.0.2:8080/a",
                &["a"],
                &[],
                "the host or port changed",
            ),
            (
                "https://127.0.0.1:8080/a",
                &["a"],
                &[],
                "the scheme changed",
            ),
            (
                "http://u@127.0.0.1:8080/a",
                &["a"],
                &[],
                "the URL has user info",
            ),
            (
                "http://127.0.0.1:8080/a#f",
                &["a"],
                &[],
                "the URL has a fragment",
            ),
            (
                "http://127.0.0.1:8080/a?k=v&j=w",
                &["a"],
                &[("k", "v")],
                "the query has different keys",
            ),
            (
                "http://127.0.0.1:8080/a?k=x",
                &["a"],
                &[("k", "v")],
                "a query value changed",
            ),
        ];
        for (url, segments, query, why) in cases {
            assert_eq!(
                check(url, segments, query),
                Err(Denial::Unfaithful(why)),
                "{url}"
            );
        }
        assert_eq!(
            check("http://127.0.0.1:8080/%FF", &["x"], &[]),
            Err(Denial::Unfaithful("a component does not decode to UTF-8"))
        );
        assert_eq!(
            check("http://127.0.0.1:8080/a?k", &["a"], &[("k", "")]),
            Err(Denial::Unfaithful("a query pair lost its value"))
        );
    }
}
