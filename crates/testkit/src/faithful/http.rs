//! The HTTP rule: method, scheme, host and port are the template's (the
//! host in the allowlist); no userinfo, no fragment; the path and query
//! have exactly the template's shape, each templated part decoding to
//! exactly its expansion.

use portcullis_gateway::HttpRequest;
use serde_json::{Map, Value};

use super::template::check_expansion;
use super::tools::HttpTemplate;
use super::url::{default_port, percent_decoded, same_host, split_host_port};

pub(super) fn check_http(
    t: &HttpTemplate,
    args: &Map<String, Value>,
    request: &HttpRequest,
) -> Result<(), String> {
    let sent = request.url();
    let url = sent.as_str();
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
