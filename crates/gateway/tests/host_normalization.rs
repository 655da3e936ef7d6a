//! Hosts are compared as the URL parser will see them: lowercase names,
//! IPv4 in dotted form, IPv6 bracketed; anything that is not a plain host
//! (or longer than a DNS name can be) is no host at all.

use portcullis_gateway::host::{default_port, normalize_host};

#[test]
fn hosts_normalize_the_way_the_url_parser_reads_them() {
    let cases = [
        ("Example.COM", "example.com"),
        ("api-1.internal", "api-1.internal"),
        ("127.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("[::1]", "[::1]"),
        ("[0:0:0:0:0:0:0:1]", "[::1]"),
    ];
    for (host, want) in cases {
        assert_eq!(normalize_host(host).as_deref(), Some(want), "{host}");
    }
}

#[test]
fn what_is_not_a_plain_host_is_no_host() {
    for host in ["", "a b", "a_b", "a:b", "a/b", "[::1", "::1", "a@b"] {
        assert_eq!(normalize_host(host), None, "{host:?}");
    }
}

#[test]
fn a_host_name_may_be_up_to_253_characters() {
    let label = "a".repeat(63);
    let name = |len: usize| {
        let mut s = [label.as_str(); 4].join(".");
        s.truncate(len);
        s
    };
    let longest = name(253);
    assert_eq!(normalize_host(&longest).as_deref(), Some(longest.as_str()));
    let too_long = format!("{longest}a");
    assert_eq!(too_long.len(), 254);
    assert_eq!(normalize_host(&too_long), None);
}

#[test]
fn https_defaults_to_443_and_http_to_80() {
    assert_eq!(default_port("https"), 443);
    assert_eq!(default_port("http"), 80);
}
