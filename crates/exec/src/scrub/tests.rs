use base64::Engine as _;

use super::*;

const TOKEN: &str = "s3cr/t+T0k=n\"x";

fn scrub(text: &str) -> String {
    Scrubber::new(Some(TOKEN)).scrub(text)
}

fn percent(s: &str, upper: bool) -> String {
    s.bytes()
        .map(|b| {
            if upper {
                format!("%{b:02X}")
            } else {
                format!("%{b:02x}")
            }
        })
        .collect()
}

#[test]
fn raw_and_bearer_forms_are_redacted() {
    assert_eq!(scrub(TOKEN), REDACTED);
    assert_eq!(
        scrub(&format!("Authorization: Bearer {TOKEN}\n")),
        "Authorization: Bearer [redacted]\n"
    );
    assert_eq!(scrub(&format!("{TOKEN}{TOKEN}")), "[redacted][redacted]");
    assert_eq!(scrub("nothing here"), "nothing here");
}

#[test]
fn percent_encodings_in_either_case_and_mixed_are_redacted() {
    for form in [
        percent(TOKEN, true),
        percent(TOKEN, false),
        // What encodeURIComponent / form encoding leave alone stays
        // literal; the rest is escaped.
        "s3cr%2Ft%2BT0k%3Dn%22x".to_owned(),
        "s3cr%2ft%2bT0k%3dn%22x".to_owned(),
    ] {
        let got = scrub(&format!("Location: /cb?t={form}&x=1"));
        assert_eq!(got, "Location: /cb?t=[redacted]&x=1", "{form}");
    }
    let spaced = Scrubber::new(Some("tok en 1234"));
    assert_eq!(spaced.scrub("q=tok+en%201234"), "q=[redacted]");
}

#[test]
fn json_and_html_escapes_are_redacted() {
    let json = serde_json::to_string(TOKEN).unwrap();
    assert_eq!(scrub(&json), format!("\"{REDACTED}\""));
    // PHP escapes `/`; Python's ensure_ascii writes \uXXXX.
    assert_eq!(scrub(r#"s3cr\/t+T0k=n\"x"#), REDACTED);
    assert_eq!(scrub(r#"s3cr\u002Ft\u002bT0k=n\u0022x"#), REDACTED);
    let unicode = Scrubber::new(Some("clé-😀-secret"));
    assert_eq!(
        unicode.scrub(r#"["cl\u00e9-\ud83d\ude00-secret"]"#),
        r#"["[redacted]"]"#
    );
    assert_eq!(unicode.scrub("cl%C3%A9-%F0%9F%98%80-secret"), REDACTED);
    assert_eq!(scrub("<td>s3cr/t+T0k=n&quot;x</td>"), "<td>[redacted]</td>");
    assert_eq!(scrub("s3cr&#47;t&#x2B;T0k&#61;n&#34;x"), REDACTED);
}

#[test]
fn base64_at_every_alignment_and_in_both_alphabets_is_redacted() {
    let engines = [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    for engine in engines {
        for prefix in ["", "u", "us", "user:", "Bearer ", "ab:"] {
            for suffix in ["", "!", "!!", "and more text"] {
                let plain = format!("{prefix}{TOKEN}{suffix}");
                let encoded = engine.encode(plain.as_bytes());
                let text = format!("Authorization: Basic {encoded}\n");
                let got = scrub(&text);
                // Every base64 character holding a bit of the token is
                // inside the one redaction; the rest is untouched.
                let rest = &got["Authorization: Basic ".len()..got.len() - 1];
                let (before, after) = rest
                    .split_once(REDACTED)
                    .unwrap_or_else(|| panic!("{plain:?} → {encoded} → {got}"));
                let first_bit = 8 * prefix.len();
                let end_bit = 8 * (prefix.len() + TOKEN.len());
                assert!(encoded.starts_with(before), "{got}");
                assert!(before.len() <= first_bit / 6, "{plain:?} → {got}");
                assert!(encoded.ends_with(after), "{got}");
                assert!(
                    encoded.len() - after.len() >= end_bit.div_ceil(6),
                    "{plain:?} → {encoded} → {got}"
                );
            }
        }
    }
    // Percent-encoded base64 (a token in a query string).
    let b64 = base64::engine::general_purpose::STANDARD.encode(TOKEN);
    let url = b64
        .replace('+', "%2B")
        .replace('/', "%2F")
        .replace('=', "%3D");
    assert!(scrub(&format!("/cb?t={url}")).contains(REDACTED));
    assert!(!scrub(&format!("/cb?t={url}")).contains(&url[..8]));
}

#[test]
fn hex_of_the_credential_is_redacted() {
    let hex: String = TOKEN.bytes().map(|b| format!("{b:02x}")).collect();
    assert_eq!(scrub(&hex), REDACTED);
    assert_eq!(scrub(&hex.to_uppercase()), REDACTED);
}

#[test]
fn a_cut_in_the_middle_of_the_credential_redacts_the_prefix() {
    let s = Scrubber::new(Some(TOKEN));
    for keep in MIN_CUT_PREFIX..TOKEN.len() {
        let text = format!("echo: Bearer {}", &TOKEN[..keep]);
        assert_eq!(s.scrub_cut(&text), "echo: Bearer [redacted]", "{keep}");
        // Without the cut it is ordinary text.
        assert_eq!(s.scrub(&text), text);
    }
    // An escape the cut left incomplete.
    assert_eq!(s.scrub_cut("t=s3cr%2"), "t=[redacted]");
    assert_eq!(s.scrub_cut("t=s3cr\\u00"), "t=[redacted]");
    // Shorter prefixes are ordinary text.
    assert_eq!(s.scrub_cut("the s3c"), "the s3c");
    // A prefix that does not reach the end is not a cut.
    assert_eq!(s.scrub_cut("s3cr/t and more"), "s3cr/t and more");
}

#[test]
fn short_or_missing_credentials_change_nothing() {
    assert_eq!(Scrubber::new(None).scrub("a tok b"), "a tok b");
    assert_eq!(Scrubber::new(Some("")).scrub("a b"), "a b");
    assert_eq!(Scrubber::new(Some("abc")).scrub("abc abc"), "abc abc");
    assert_eq!(Scrubber::new(Some("  abc \n")).scrub("abc"), "abc");
    assert!(!Scrubber::new(Some("abc")).is_active());
    assert_eq!(
        Scrubber::new(Some("abcd")).scrub("x abcd y"),
        "x [redacted] y"
    );
}

#[test]
fn surrounding_whitespace_of_the_credential_is_not_required() {
    let key = "-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n";
    let s = Scrubber::new(Some(key));
    assert_eq!(
        s.scrub("key: -----BEGIN KEY-----\nAAAA\n-----END KEY-----"),
        "key: [redacted]"
    );
    assert_eq!(
        s.scrub(r#"{"key":"-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n"}"#),
        r#"{"key":"[redacted]\n"}"#
    );
}

#[test]
fn debug_does_not_show_the_credential() {
    let s = Scrubber::new(Some(TOKEN));
    assert!(!format!("{s:?}").contains("s3cr"));
}

#[test]
fn overlapping_matches_are_one_redaction_and_text_stays_utf8() {
    let s = Scrubber::new(Some("abab"));
    assert_eq!(s.scrub("xababab y"), "x[redacted] y");
    let s = Scrubber::new(Some("é-secret"));
    assert_eq!(s.scrub("ééé-secretéé"), "éé[redacted]éé");
}

#[test]
fn a_cut_inside_a_percent_encoded_multibyte_character_redacts_the_prefix() {
    let s = Scrubber::new(Some("pw12é-secret"));
    for shown in ["t=pw12%C3", "t=pw12%C3%", "t=pw12%C3%A", "t=pw12%c3%a"] {
        assert_eq!(s.scrub_cut(shown), "t=[redacted]", "{shown}");
    }
    let s = Scrubber::new(Some("keys😀-secret"));
    assert_eq!(s.scrub_cut("t=keys%F0%9F%98%8"), "t=[redacted]");
    assert_eq!(s.scrub_cut("t=keys\\ud83d\\ude0"), "t=[redacted]");
}

#[test]
fn a_cut_inside_the_longest_character_reference_redacts_the_prefix() {
    let s = Scrubber::new(Some(TOKEN));
    // `/` as a hex reference of 9 digits, cut before its `;`.
    let rest = &TOKEN[5..];
    assert_eq!(s.scrub(&format!("s3cr&#X00000002f;{rest}")), REDACTED);
    assert_eq!(s.scrub_cut("t=s3cr&#X00000002f"), "t=[redacted]");
    // Ten digits are more than a reference is read with.
    let ten = format!("s3cr&#x000000002f;{rest}");
    assert_eq!(s.scrub(&ten), ten);
}

/// `base64(prefix + TOKEN)` for a one-byte prefix, and the index of its
/// character that mixes a bit of the prefix with bits of the token.
fn base64_with_a_leading_edge() -> (String, usize) {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("u{TOKEN}"));
    (encoded, 1)
}

#[test]
fn base64_edge_characters_go_in_any_spelling() {
    let (encoded, edge) = base64_with_a_leading_edge();
    let c = encoded.as_bytes()[edge];
    for spelled in [
        format!("%{c:02X}"),
        format!("\\u{c:04x}"),
        format!("&#{c};"),
        format!("&#x{c:x};"),
    ] {
        let text = format!("<{}{spelled}{}>", &encoded[..edge], &encoded[edge + 1..]);
        assert_eq!(
            scrub(&text),
            format!("<{}{REDACTED}{}>", &encoded[..edge], tail_after(&encoded)),
            "{text}"
        );
    }
}

#[test]
fn a_cut_base64_prefix_takes_its_leading_edge_character() {
    let (encoded, edge) = base64_with_a_leading_edge();
    let text = format!("<{}", &encoded[..edge + 10]);
    assert_eq!(
        Scrubber::new(Some(TOKEN)).scrub_cut(&text),
        format!("<{}{REDACTED}", &encoded[..edge])
    );
}

/// What follows the last base64 character holding a bit of the token in
/// `base64("u" + TOKEN)`.
fn tail_after(encoded: &str) -> &str {
    let end_bit = 8 * (1 + TOKEN.len());
    &encoded[end_bit.div_ceil(6)..]
}

/// A credential may begin with any printable ASCII character, `@` and
/// the other characters that start no escape included.
#[test]
fn a_credential_starting_with_any_printable_ascii_character_is_redacted() {
    for c in '!'..='~' {
        let secret = format!("{c}k9Qz");
        assert_eq!(
            Scrubber::new(Some(&secret)).scrub(&format!("( {secret} )")),
            format!("( {REDACTED} )"),
            "{secret:?}"
        );
    }
}

/// Only the characters that hold bits of the credential go: where the
/// characters holding its bits only stand between two characters that
/// belong to neither base64 alphabet, those two stay.
#[test]
fn characters_outside_both_base64_alphabets_next_to_the_credential_stay() {
    let engines = [
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    // Credentials whose encodings use `+`, `/`, `-` or `_` at some
    // alignment, and one whose encodings are letters and digits only.
    for secret in [TOKEN, "???>>>~~~", "k9Qzk9Qz"] {
        let s = Scrubber::new(Some(secret));
        for engine in engines {
            for prefix in ["", "u", "us"] {
                let encoded = engine.encode(format!("{prefix}{secret}!!"));
                let first_bit = 8 * prefix.len();
                let end_bit = 8 * (prefix.len() + secret.len());
                let core = &encoded[first_bit.div_ceil(6)..end_bit / 6];
                for neighbour in [".", "!", "~", " ", "<"] {
                    let text = format!("<{neighbour}{core}{neighbour}>");
                    assert_eq!(
                        s.scrub(&text),
                        format!("<{neighbour}{REDACTED}{neighbour}>"),
                        "{secret:?} after {prefix:?}: {text}"
                    );
                }
            }
        }
    }
}

/// Text that looks like a spelling of a character of the credential but
/// is not one (a `+` for anything but a space, `%XX` of another byte, an
/// escape for another character, a reference without its `;`) does not
/// stand for that character.
#[test]
fn near_misses_of_a_spelling_are_not_the_credential() {
    let s = Scrubber::new(Some("ab1\"cd2"));
    for text in [
        "ab+\"cd2",
        "ab%32\"cd2",
        "ab%3\"cd2",
        "ab1\\ncd2",
        "ab1\\xcd2",
        "ab&#49x\"cd2",
        "ab&#50;\"cd2",
        "ab&#x31\"cd2",
        "ab1&quotcd2",
        "ab1&amp;cd2",
        "ab1\\u0023cd2",
        "ab1%23cd2",
    ] {
        assert_eq!(s.scrub(text), text, "{text}");
        assert_eq!(s.scrub(&format!("{text}!")), format!("{text}!"), "{text}");
    }
    // The same texts with the right spelling in place are redacted.
    for text in [
        "ab%31\"cd2",
        "ab1\\\"cd2",
        "ab&#49;\"cd2",
        "ab&#x31;\"cd2",
        "ab1&quot;cd2",
        "ab1\\u0022cd2",
        "ab1%22cd2",
    ] {
        assert_eq!(s.scrub(text), REDACTED, "{text}");
    }
}

/// At a cut, only what can still become a spelling counts as an escape
/// left incomplete: `%` before a character that no escape holds, or an
/// escape already longer than the longest spelling of one character
/// (13 bytes, `&#x`, nine digits and `;`), is not a cut inside the
/// credential.
#[test]
fn a_tail_that_no_spelling_can_complete_is_not_a_cut_escape() {
    let s = Scrubber::new(Some(TOKEN));
    for shown in [
        "t=s3cr%.",
        "t=s3cr& ",
        "t=s3cr\\ ",
        "t=s3cr&#x000000002f",
        "t=s3cr&#x0000000002f",
    ] {
        assert_eq!(s.scrub_cut(shown), shown, "{shown}");
    }
    // One byte shorter, the reference can still end in `;`.
    assert_eq!(s.scrub_cut("t=s3cr&#x00000002f"), "t=[redacted]");
}

#[test]
fn debug_names_the_scrubber_and_counts_its_patterns() {
    let s = Scrubber::new(Some("k9Qzk9Qz"));
    let shown = format!("{s:?}");
    assert!(shown.starts_with("Scrubber { patterns: "), "{shown}");
    assert!(!format!("{s:?}").contains("k9Qz"), "{shown}");
}
