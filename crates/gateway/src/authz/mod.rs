//! Authorization: the only place an [`AuthorizedAction`] can be made.
//!
//! Order matters and is the point of this module: the call names a policy
//! tool (the schema stage resolved it), its templates are expanded into
//! plain strings, the target is checked against the allowlist, the
//! credential must be bound and present — and only then is anything built
//! that an executor could use to touch a network or a process (a parsed
//! `http::Uri`, an argv vector).
//!
//! The URI is the executor's own type: the `http` crate's parser, which the
//! HTTP client sends through, reads the built text once, here, and the
//! parse-back compares what it read with what was checked. No second
//! parser stands between the check and the request line.

use std::borrow::Cow;
use std::fmt;
use std::fmt::Write as _;

use http::Uri;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use smallvec::SmallVec;

use crate::host::{default_port, normalize_host};
use crate::policy::{HttpSpec, SshSpec, TargetSpec, ToolSpec};
use crate::schema::CheckedCall;
use crate::secrets::{Secret, SecretStore};
use crate::template::{ExpandError, Template};

mod action;

pub use action::{ActionTarget, AuthorizedAction, HttpRequest, SshCommand, TargetDisplay};

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
    call: &CheckedCall<'_, '_>,
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
/// value would not arrive as written. (C0 and DEL are single bytes in
/// UTF-8 and no other character's bytes fall in their range.)
fn expand<'c>(
    t: &'c Template,
    call: &'c CheckedCall<'_, '_>,
    component: Component,
) -> Result<Cow<'c, str>, Denial> {
    let text = t.expand_cow(call.arguments())?;
    if t.literal().is_none() {
        if text.is_empty() {
            return Err(Denial::Empty(component));
        }
        if has_control(text.as_bytes()) {
            return Err(Denial::ControlCharacter(component));
        }
    }
    Ok(text)
}

/// Whether `bytes` hold a C0 control or DEL. Whole blocks are folded
/// without an early exit, which the compiler vectorizes (arguments may be
/// megabytes long).
fn has_control(bytes: &[u8]) -> bool {
    bytes.chunks(64).any(|block| {
        block
            .iter()
            .fold(false, |seen, &b| seen | matches!(b, 0x00..=0x1f | 0x7f))
    })
}

/// Append `t`'s expansion to `out`, every argument fully percent-encoded.
/// In a query (`form`), a '+' the policy wrote in a literal is sent as
/// %2B: form decoding, which servers apply to queries, reads '+' as a
/// space. Encoded arguments hold no raw '+'.
fn push_escaped(
    t: &Template,
    call: &CheckedCall<'_, '_>,
    out: &mut String,
    form: bool,
) -> Result<(), Denial> {
    let start = out.len();
    t.expand_escaped_into(call.arguments(), out, |text, out| {
        out.extend(utf8_percent_encode(text, COMPONENT));
    })?;
    if form && out[start..].contains('+') {
        let sent = out[start..].replace('+', "%2B");
        out.truncate(start);
        out.push_str(&sent);
    }
    Ok(())
}

/// Append path segment `t`, whose expansion is `segment`: a literal as
/// written, a lone placeholder as its expansion percent-encoded (what
/// [`push_escaped`] writes for it, without expanding it again), anything
/// else through [`push_escaped`].
fn push_segment(
    t: &Template,
    segment: &str,
    call: &CheckedCall<'_, '_>,
    out: &mut String,
) -> Result<(), Denial> {
    if let Some(literal) = t.literal() {
        out.push_str(literal);
    } else if t.is_one_arg() {
        out.extend(utf8_percent_encode(segment, COMPONENT));
    } else {
        push_escaped(t, call, out, false)?;
    }
    Ok(())
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

fn http(spec: &HttpSpec, call: &CheckedCall<'_, '_>) -> Result<HttpRequest, Denial> {
    // A literal host was normalized, and found in the allowlist, at load.
    let host: Cow<'_, str> = match &spec.literal_origin {
        Some(origin) => Cow::Borrowed(&origin.host),
        None => {
            let expanded_host = expand(&spec.host, call, Component::Host)?;
            // IDNA mapping deletes default-ignorable characters (U+2060 and
            // the like), so a non-ASCII argument could name an allowlisted
            // host it does not spell: hosts from arguments are ASCII (IDNs
            // as xn-- labels). The URL parser also percent-decodes a host
            // before reading it ("127%2E1" is 127.0.0.1), so no '%' either.
            if !expanded_host.is_ascii() || expanded_host.contains('%') {
                return Err(Denial::HostNotPlain);
            }
            Cow::Owned(normalize_host(&expanded_host).ok_or(Denial::HostNotPlain)?)
        }
    };
    let port = spec.port.unwrap_or(default_port(&spec.scheme));
    if !spec.allow.iter().any(|a| a.host == *host && a.port == port) {
        return Err(Denial::HostNotAllowed);
    }
    let target = Authority { host: &host, port };
    // An origin the URI parser read at load lends the URI its scheme and
    // authority; otherwise its text is parsed with the rest.
    let parsed_origin = spec.literal_origin.as_ref().and_then(|o| o.parsed.as_ref());
    URL_TEXT.with_borrow_mut(|text| {
        text.clear();
        let built = build_url(spec, call, &host, port, parsed_origin.is_none(), text);
        let uri = built.and_then(|(segments, query)| {
            let uri = match (&spec.literal_origin, parsed_origin) {
                // The origin's parts passed the origin checks at load.
                (Some(origin), Some((scheme, authority))) => {
                    if origin.text.len() + text.len() > MAX_URL_BYTES {
                        return Err(Denial::UrlTooLong(MAX_URL_BYTES));
                    }
                    parse_path_back(scheme, authority, text)?
                }
                _ => {
                    if text.len() > MAX_URL_BYTES {
                        return Err(Denial::UrlTooLong(MAX_URL_BYTES));
                    }
                    let uri = parse_whole_back(text)?;
                    faithful_origin(&uri, &spec.scheme, target)?;
                    uri
                }
            };
            faithful_path(&uri, &segments, &query)?;
            Ok(uri)
        });
        keep_small(text);
        Ok(HttpRequest {
            method: spec.method,
            uri: uri?,
            max_response_bytes: spec.max_response_bytes,
        })
    })
}

thread_local! {
    /// The text of the URL being built, reused call after call: the URI
    /// parser copies what it keeps.
    static URL_TEXT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// The most [`URL_TEXT`] keeps allocated between calls.
const URL_TEXT_KEPT: usize = 8192;

/// A refused call may have built megabytes; the buffer kept for the next
/// call stays small.
fn keep_small(text: &mut String) {
    if text.capacity() > URL_TEXT_KEPT {
        *text = String::new();
    }
}

/// Expansions of the path segments, and of the query values by key (held
/// inline for the usual few).
type Expanded<'c> = (
    SmallVec<[Cow<'c, str>; 4]>,
    SmallVec<[(&'c str, Cow<'c, str>); 2]>,
);

/// Only once every check has passed is a URL built: literal pieces as the
/// policy wrote them, every argument fully percent-encoded, so the parser
/// has nothing left to normalize. `with_origin`: the text starts with
/// `scheme://host:port`; otherwise it is the path and query alone. Returns
/// what each segment and query value expanded to, for the parse-back.
fn build_url<'c>(
    spec: &'c HttpSpec,
    call: &'c CheckedCall<'_, '_>,
    host: &str,
    port: u16,
    with_origin: bool,
    text: &mut String,
) -> Result<Expanded<'c>, Denial> {
    if with_origin {
        match &spec.literal_origin {
            Some(origin) => text.push_str(&origin.text),
            None => {
                let _ = write!(text, "{}://{}:{}", spec.scheme, host, port);
            }
        }
    }
    let mut segments = SmallVec::new();
    for (i, t) in spec.path.iter().enumerate() {
        let segment = expand(t, call, Component::PathSegment(i))?;
        if segment == "." || segment == ".." {
            return Err(Denial::DotSegment(Component::PathSegment(i)));
        }
        text.push('/');
        push_segment(t, &segment, call, text)?;
        segments.push(segment);
    }
    if segments.is_empty() {
        text.push('/');
    }
    let mut query = SmallVec::new();
    for (i, (key, t)) in spec.query.iter().enumerate() {
        let value = expand(t, call, Component::QueryValue(key.clone()))?;
        text.push(if i == 0 { '?' } else { '&' });
        if key.contains('+') {
            text.push_str(&key.replace('+', "%2B"));
        } else {
            text.push_str(key);
        }
        text.push('=');
        push_escaped(t, call, text, true)?;
        query.push((key.as_str(), value));
    }
    Ok((segments, query))
}

/// The URI parser drops a fragment rather than refusing it, so a `#` is
/// refused before it reads.
fn refuse_fragment(text: &str) -> Result<(), Denial> {
    if text.as_bytes().contains(&b'#') {
        return Err(Denial::Unfaithful("the URL has a fragment"));
    }
    Ok(())
}

/// A whole built URL, read by the executor's URI parser.
fn parse_whole_back(text: &str) -> Result<Uri, Denial> {
    refuse_fragment(text)?;
    Uri::try_from(text).map_err(|_| Denial::Unfaithful("the URL does not parse"))
}

/// A built path and query, read by the executor's URI parser (the same
/// reading it gives them after an authority), under an origin it read at
/// load.
fn parse_path_back(
    scheme: &http::uri::Scheme,
    authority: &http::uri::Authority,
    path_and_query: &str,
) -> Result<Uri, Denial> {
    refuse_fragment(path_and_query)?;
    let mut parts = http::uri::Parts::default();
    parts.scheme = Some(scheme.clone());
    parts.authority = Some(authority.clone());
    parts.path_and_query = Some(
        http::uri::PathAndQuery::try_from(path_and_query)
            .map_err(|_| Denial::Unfaithful("the URL does not parse"))?,
    );
    Uri::from_parts(parts).map_err(|_| Denial::Unfaithful("the URL does not parse"))
}

/// Read the built `text` with the executor's URI parser and hold what it
/// read to what was authorized ([`faithful_origin`], [`faithful_path`]).
#[cfg(test)]
fn parse_back(
    text: String,
    scheme: &str,
    target: Authority<'_>,
    segments: &[Cow<'_, str>],
    query: &[(&str, Cow<'_, str>)],
) -> Result<Uri, Denial> {
    let uri = parse_whole_back(&text)?;
    faithful_origin(&uri, scheme, target)?;
    faithful_path(&uri, segments, query)?;
    Ok(uri)
}

/// Take the origin of the URI the executor will send apart, with our own
/// splitting, and require it to be exactly what was authorized: the
/// scheme, the allowlisted host and port, no userinfo.
fn faithful_origin(uri: &Uri, scheme: &str, target: Authority<'_>) -> Result<(), Denial> {
    if uri.scheme_str() != Some(scheme) {
        return Err(Denial::Unfaithful("the scheme changed"));
    }
    let authority = uri.authority().map_or("", |a| a.as_str());
    if authority.as_bytes().contains(&b'@') {
        return Err(Denial::Unfaithful("the URL has user info"));
    }
    if !authority_is(authority, scheme, target) {
        return Err(Denial::Unfaithful("the host or port changed"));
    }
    if !parser_agrees(uri, scheme, target) {
        return Err(Denial::Unfaithful(
            "the URI parser reads another host or port",
        ));
    }
    Ok(())
}

/// Whether a literal origin, read by the URI parser at policy load, passes
/// [`faithful_origin`] for `scheme://host:port`: a URL built on its parts
/// then needs only [`faithful_path`] per call.
pub(crate) fn origin_is_faithful(uri: &Uri, scheme: &str, host: &str, port: u16) -> bool {
    faithful_origin(uri, scheme, Authority { host, port }).is_ok()
}

/// Take the path and query of the URI the executor will send apart, with
/// our own splitting and decoding, and require them to be exactly what
/// was authorized: the template's segment count with each segment
/// decoding to its expansion, the template's query keys in order with
/// each value decoding to its expansion.
fn faithful_path(
    uri: &Uri,
    segments: &[Cow<'_, str>],
    query: &[(&str, Cow<'_, str>)],
) -> Result<(), Denial> {
    let (path, query_text) = (uri.path(), uri.query());
    let built = path
        .strip_prefix('/')
        .ok_or(Denial::Unfaithful("the path lost its root"))?;
    let expected_count = segments.len().max(1);
    if pieces(built, b'/') != expected_count {
        return Err(Denial::Unfaithful("the path has a different segment count"));
    }
    for (got, want) in built.split('/').zip(segments) {
        if !decodes_to(got, want, false) {
            decode(got)?;
            return Err(Denial::Unfaithful("a path segment changed"));
        }
    }
    let pair_count = query_text.map_or(0, |q| pieces(q, b'&'));
    if pair_count != query.len() {
        return Err(Denial::Unfaithful("the query has different keys"));
    }
    let pairs = query_text.into_iter().flat_map(|q| q.split('&'));
    for (pair, (key, value)) in pairs.zip(query) {
        let (k, v) = pair
            .split_once('=')
            .ok_or(Denial::Unfaithful("a query pair lost its value"))?;
        if !decodes_to(k, key, true) {
            decode_form(k)?;
            return Err(Denial::Unfaithful("the query has different keys"));
        }
        if !decodes_to(v, value, true) {
            decode_form(v)?;
            return Err(Denial::Unfaithful("a query value changed"));
        }
    }
    Ok(())
}

/// Whether a URL's authority text is exactly `target`: `host:port`, or
/// the bare host when the port is the scheme's default (which the parser
/// drops).
fn authority_is(authority: &str, scheme: &str, target: Authority<'_>) -> bool {
    let explicit = authority
        .strip_prefix(target.host)
        .and_then(|rest| rest.strip_prefix(':'))
        .is_some_and(|port| port == PortText::of(target.port).as_str());
    let default = target.port == default_port(scheme) && authority == target.host;
    explicit || default
}

/// The same facts read through the URI's accessors, which the executor
/// connects by: the target's host and port. They derive from the authority
/// text [`authority_is`] reads, so no URI passes that and fails this (its
/// mutants are listed as equivalent in `.cargo/mutants.toml`); it stays
/// because the executor uses them.
fn parser_agrees(uri: &Uri, scheme: &str, target: Authority<'_>) -> bool {
    uri.host() == Some(target.host) && uri.port_u16().unwrap_or(default_port(scheme)) == target.port
}

/// How many pieces `text` splits into at `separator`.
fn pieces(text: &str, separator: u8) -> usize {
    text.bytes().filter(|&b| b == separator).count() + 1
}

/// Whether `encoded`, percent-decoded (and with `+` read as a space in a
/// query, `form`), is exactly `want`: the decoding [`decode`] and
/// [`decode_form`] do, compared as it goes instead of building the decoded
/// text. A `%` not followed by two hex digits stands for itself, as in
/// `percent_decode`.
fn decodes_to(encoded: &str, want: &str, form: bool) -> bool {
    let (encoded, want) = (encoded.as_bytes(), want.as_bytes());
    let hex = |b: Option<&u8>| b.and_then(|b| char::from(*b).to_digit(16));
    let (mut at, mut matched) = (0, 0);
    while let Some(&b) = encoded.get(at) {
        let (byte, width) = match b {
            b'%' => match (hex(encoded.get(at + 1)), hex(encoded.get(at + 2))) {
                (Some(high), Some(low)) => ((high * 16 + low) as u8, 3),
                _ => (b'%', 1),
            },
            b'+' if form => (b' ', 1),
            other => (other, 1),
        };
        if want.get(matched) != Some(&byte) {
            return false;
        }
        at += width;
        matched += 1;
    }
    matched == want.len()
}

/// The host and port a URL must carry.
#[derive(Debug, Clone, Copy)]
struct Authority<'a> {
    host: &'a str,
    port: u16,
}

/// A port's decimal text, without allocating.
struct PortText {
    digits: [u8; 5],
    start: usize,
}

impl PortText {
    fn of(port: u16) -> Self {
        let mut digits = [b'0'; 5];
        let mut start = 5;
        let mut n = port;
        loop {
            start -= 1;
            digits[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Self { digits, start }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.digits[self.start..]).expect("ASCII digits")
    }
}

fn decode(text: &str) -> Result<Cow<'_, str>, Denial> {
    percent_decode_str(text)
        .decode_utf8()
        .map_err(|_| Denial::Unfaithful("a component does not decode to UTF-8"))
}

/// Query components as a server reads them: `+` is a space.
fn decode_form(text: &str) -> Result<Cow<'_, str>, Denial> {
    if text.contains('+') {
        decode(&text.replace('+', " ")).map(|c| Cow::Owned(c.into_owned()))
    } else {
        decode(text)
    }
}

/// Whether the tool's own host:port is in its allowlist. The loader
/// refuses a policy where it is not; this re-states that at the point of
/// use.
fn ssh_target_allowed(spec: &SshSpec) -> bool {
    spec.allow
        .iter()
        .any(|a| a.host == spec.host && a.port == spec.port)
}

fn ssh(spec: &SshSpec, call: &CheckedCall<'_, '_>) -> Result<SshCommand, Denial> {
    if !ssh_target_allowed(spec) {
        return Err(Denial::HostNotAllowed);
    }
    let mut argv = Vec::with_capacity(spec.argv.len());
    for (i, t) in spec.argv.iter().enumerate() {
        let arg = expand(t, call, Component::Argv(i))?;
        if t.starts_with_arg() && arg.starts_with('-') {
            return Err(Denial::OptionLike(Component::Argv(i)));
        }
        argv.push(arg.into_owned());
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
        let target = Authority {
            host: "127.0.0.1",
            port: 8080,
        };
        let segments: Vec<Cow<'_, str>> = segments.iter().map(|s| Cow::Borrowed(*s)).collect();
        let query: Vec<(&str, Cow<'_, str>)> =
            query.iter().map(|(k, v)| (*k, Cow::Borrowed(*v))).collect();
        parse_back(url.to_owned(), "http", target, &segments, &query).map(|_| ())
    }

    #[test]
    fn comparing_while_decoding_agrees_with_decoding_then_comparing() {
        let encoded = [
            "", "a", "%", "%4", "%41", "%4a", "%zz", "%%41", "+", "%2B", "a+b", "a%20b", "%FF",
            "%C3%A9", "é", "%c3%a9x", "a/b", "%2F",
        ];
        let wanted = [
            "", "a", "%", "%4", "A", "J", "%zz", "%A", " ", "+", "a b", "a+b", "é", "éx", "a/b",
            "/",
        ];
        for e in encoded {
            for w in wanted {
                let path = decode(e).ok().is_some_and(|d| d == w);
                assert_eq!(
                    decodes_to(e, w, false),
                    path,
                    "{e:?} as a path segment, {w:?}"
                );
                let form = decode_form(e).ok().is_some_and(|d| d == w);
                assert_eq!(decodes_to(e, w, true), form, "{e:?} in a query, {w:?}");
            }
        }
    }

    #[test]
    fn the_authority_text_must_name_exactly_the_target() {
        let target = |host, port| Authority { host, port };
        let http = |authority, host, port| authority_is(authority, "http", target(host, port));
        assert!(http("127.0.0.1:8080", "127.0.0.1", 8080));
        assert!(
            http("127.0.0.1", "127.0.0.1", 80),
            "the default port may be dropped"
        );
        assert!(http("127.0.0.1:80", "127.0.0.1", 80), "or written");
        assert!(authority_is("h", "https", target("h", 443)));
        assert!(!authority_is("h", "https", target("h", 80)));
        for wrong in [
            "127.0.0.1",
            "127.0.0.1:",
            "127.0.0.1:08080",
            "127.0.0.1:8081",
            "127.0.0.2:8080",
            "127.0.0.1:8080x",
            "x127.0.0.1:8080",
            "",
        ] {
            assert!(!http(wrong, "127.0.0.1", 8080), "{wrong:?}");
        }
        assert!(!http("127.0.0.2", "127.0.0.1", 80));
    }

    #[test]
    fn the_uri_parser_drops_a_fragment_so_it_is_refused_before_it_reads() {
        // Why parse_back looks for '#' in the text: the URI it hands the
        // executor would not show one.
        let uri: Uri = "http://127.0.0.1:8080/a#f".parse().unwrap();
        assert_eq!(uri.to_string(), "http://127.0.0.1:8080/a");
        assert_eq!(
            check("http://127.0.0.1:8080/a?k=v#f", &["a"], &[("k", "v")]),
            Err(Denial::Unfaithful("the URL has a fragment"))
        );
    }

    #[test]
    fn the_uri_parser_refuses_what_it_cannot_send() {
        assert_eq!(
            check("http://127.0.0.1:8080/a b", &["a b"], &[]),
            Err(Denial::Unfaithful("the URL does not parse"))
        );
    }

    #[test]
    fn port_text_is_the_decimal_port() {
        for port in [0, 1, 9, 10, 80, 443, 8080, 9999, 10000, 65535] {
            assert_eq!(PortText::of(port).as_str(), port.to_string());
        }
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
