//! An HTTP tool's URL template: scheme, host, port, path segments and
//! query values, each a [`Template`], with literal pieces restricted to
//! characters that need no escaping.

use crate::host::normalize_host;
use crate::template::{Piece, Template};

pub(super) struct UrlTemplate {
    pub(super) scheme: String,
    pub(super) host: Template,
    pub(super) port: Option<u16>,
    pub(super) path: Vec<Template>,
    pub(super) query: Vec<(String, Template)>,
}

/// Characters a literal path or query piece may hold as-is: RFC 3986
/// unreserved and sub-delims plus ':' and '@'. No '%', so nothing in a
/// literal is ever decoded or double-encoded.
pub(super) fn literal_ok(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~!$'()*+,;:@".contains(&b))
}

/// A port written as ASCII digits only, 1..=65535. `u16::from_str` also
/// takes a leading `+`, which no URL parser does: `http://h:+80/` would load
/// as port 80 from a template that is not a URL.
pub(super) fn port_number(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u16>().ok().filter(|p| *p != 0)
}

pub(super) fn parse_url_template(text: &str) -> Result<UrlTemplate, String> {
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
        // A bracketed IPv6 host holds colons of its own: only a colon after
        // its closing bracket starts a port ("[::1]" has none).
        Some((h, p)) if !authority.starts_with('[') || h.ends_with(']') => {
            let port = port_number(p).ok_or("port must be a literal number 1..=65535")?;
            (h, Some(port))
        }
        _ => (authority, None),
    };
    let host = Template::parse(host_text).map_err(|e| e.to_string())?;
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
            // A literal numeric last label ("{s}.8") makes URL parsers read
            // the whole host as IPv4, so no host name could ever fill the
            // placeholder; the same goes for literal labels IDNA refuses.
            let with_names: String = host
                .0
                .iter()
                .map(|piece| match piece {
                    Piece::Lit(l) => l.as_str(),
                    Piece::Arg(_) => "x",
                })
                .collect();
            if normalize_host(&with_names).is_none() {
                return Err(format!(
                    "templated host {host_text:?} is not a host name when its placeholders are names (\"{with_names}\"); a literal last label must not be a number"
                ));
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
            let t = Template::parse(segment).map_err(|e| e.to_string())?;
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
            let t = Template::parse(v).map_err(|e| e.to_string())?;
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

pub(super) fn check_literals(t: &Template, part: &str) -> Result<(), String> {
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
