//! Host normalization shared by policy validation (allowlist entries) and
//! authorization (expanded targets): both must see a host as the URL
//! parser will.

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
