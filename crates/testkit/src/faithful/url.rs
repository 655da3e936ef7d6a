//! Taking an authorized URL apart by hand: host and port, every notation of
//! an IP address, and strict percent-decoding (with `percent-encoding`,
//! never `url::Url`'s accessors, so the gateway's URL handling cannot hide
//! a rewrite from the oracle).

use std::net::Ipv6Addr;

use percent_encoding::percent_decode_str;

/// `host[:port]`, with a bracketed IPv6 host kept whole.
pub(super) fn split_host_port(authority: &str) -> (&str, Option<&str>) {
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

pub(super) fn default_port(scheme: &str) -> u16 {
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
pub(super) fn same_host(a: &str, b: &str) -> bool {
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

pub(super) fn percent_decoded(text: &str, plus_is_space: bool) -> Result<String, String> {
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
}
