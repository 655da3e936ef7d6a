//! Credential canaries: recognisable values bound where real credentials
//! would be, and the check that none of them surfaces anywhere a session
//! writes (stdout, ledgers, journal, reports).
//!
//! A credential can leak in more spellings than its raw bytes: as a bearer
//! header value, percent-encoded (a URL or a form), or base64 (a basic-auth
//! header, a dumped blob). [`forms`] lists them all, base64 at every byte
//! alignment, so a leak embedded in a longer encoded string is still found.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

/// Every canary starts with this, so a partial leak in a log is still
/// recognisable by eye.
pub const PREFIX: &str = "CANARY-7f3a";

/// The canary bound to credential `name`: unique per credential and long
/// enough that no protocol text contains it by chance.
pub fn value(name: &str) -> String {
    format!("{PREFIX}91c4e2b85d06-{name}-0be1d94b27")
}

/// The spellings of `secret` to look for: raw, `Bearer <v>`,
/// percent-encoded (each of those), and base64 (standard and URL-safe) of
/// each, at all three byte alignments.
pub fn forms(secret: &str) -> Vec<String> {
    let plain = [secret.to_owned(), format!("Bearer {secret}")];
    let mut out = Vec::new();
    for text in &plain {
        out.push(text.clone());
        out.push(utf8_percent_encode(text, NON_ALPHANUMERIC).to_string());
        out.extend(base64_cores(text.as_bytes()));
    }
    out.sort();
    out.dedup();
    out
}

/// The base64 characters that depend only on `bytes`, wherever `bytes` sit
/// in a longer encoded string: for each alignment, encode after `pad` filler
/// bytes and keep only the characters no filler or following byte touches.
fn base64_cores(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for pad in 0..3usize {
        let mut buf = vec![0u8; pad];
        buf.extend_from_slice(bytes);
        // Characters fully determined by the leading fillers (or mixing a
        // filler with the first byte) come first; the last two characters
        // may mix in whatever follows the secret.
        let skip = match pad {
            0 => 0,
            1 => 2,
            _ => 3,
        };
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&buf);
            let end = encoded.len().saturating_sub(2);
            if end > skip {
                out.push(encoded[skip..end].to_owned());
            }
        }
    }
    out
}

/// The first form of any of `secrets` found in one of `places` (name,
/// bytes) that none of `sources` could have supplied, as
/// `(place, form)`. A source supplies a form when its bytes contain it, or
/// when a line of it, read as JSON and written back, does (a `\u0043`
/// escape in an input string decodes to the raw text the gateway may
/// legitimately echo, e.g. as an unknown method's name).
pub fn find_leak<'a>(
    secrets: impl IntoIterator<Item = &'a str>,
    places: &[(&str, &[u8])],
    sources: &[&[u8]],
) -> Option<(String, String)> {
    let secrets: Vec<&str> = secrets.into_iter().filter(|s| !s.is_empty()).collect();
    if secrets.is_empty() {
        return None;
    }
    let searcher = Searcher::for_secrets(&secrets);
    // The sources' JSON round trip is costly and only needed to excuse a
    // form actually found in a place, so it is built on first use.
    let decoded: std::cell::OnceCell<Vec<Vec<u8>>> = std::cell::OnceCell::new();
    let supplied = |form: &[u8]| {
        let decoded = decoded.get_or_init(|| {
            sources
                .iter()
                .flat_map(|s| s.split(|&b| b == b'\n'))
                .filter_map(|line| serde_json::from_slice::<serde_json::Value>(line).ok())
                .filter_map(|v| serde_json::to_vec(&v).ok())
                .collect()
        });
        sources
            .iter()
            .copied()
            .chain(decoded.iter().map(Vec::as_slice))
            .any(|s| contains(s, form))
    };
    for (place, bytes) in places {
        // Overlapping: a form the sources excuse must not hide another
        // that starts inside it.
        for found in searcher.automaton.find_overlapping_iter(*bytes) {
            let form = &searcher.forms[found.pattern().as_usize()];
            if !supplied(form.as_bytes()) {
                return Some(((*place).to_owned(), form.clone()));
            }
        }
    }
    None
}

/// Every form of a set of secrets in one automaton, so a place is scanned
/// once whatever the number of forms. Built once per thread for the
/// secrets it was last asked for (a fuzz target or a test binary binds the
/// same canaries in every session).
#[derive(Debug)]
struct Searcher {
    secrets: Vec<String>,
    forms: Vec<String>,
    automaton: aho_corasick::AhoCorasick,
}

impl Searcher {
    fn for_secrets(secrets: &[&str]) -> std::rc::Rc<Self> {
        thread_local! {
            static LAST: std::cell::RefCell<Option<std::rc::Rc<Searcher>>> =
                const { std::cell::RefCell::new(None) };
        }
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            if let Some(searcher) = last.as_ref()
                && searcher
                    .secrets
                    .iter()
                    .map(String::as_str)
                    .eq(secrets.iter().copied())
            {
                return std::rc::Rc::clone(searcher);
            }
            let mut forms: Vec<String> = secrets.iter().flat_map(|s| self::forms(s)).collect();
            forms.sort();
            forms.dedup();
            let automaton = aho_corasick::AhoCorasick::new(&forms)
                .expect("a few dozen short canary forms fit an automaton");
            let searcher = std::rc::Rc::new(Searcher {
                secrets: secrets.iter().map(|s| (*s).to_owned()).collect(),
                forms,
                automaton,
            });
            *last = Some(std::rc::Rc::clone(&searcher));
            searcher
        })
    }
}

/// Panic if [`find_leak`] finds anything.
pub fn assert_no_leak<'a>(
    secrets: impl IntoIterator<Item = &'a str>,
    places: &[(&str, &[u8])],
    sources: &[&[u8]],
) {
    if let Some((place, form)) = find_leak(secrets, places, sources) {
        panic!("a credential leaked into {place} (as {form:?})");
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && memchr::memmem::find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaks(secret: &str, place: &[u8]) -> bool {
        find_leak([secret], &[("place", place)], &[]).is_some()
    }

    #[test]
    fn every_spelling_of_a_canary_is_found() {
        let secret = value("status_token");
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        for place in [
            secret.clone(),
            format!("Authorization: Bearer {secret}\r\n"),
            format!("GET /?t={}", utf8_percent_encode(&secret, NON_ALPHANUMERIC)),
            format!("Basic {}", b64(&format!("user:{secret}"))),
            format!("Basic {}", b64(&format!("us:{secret}"))),
            format!("Basic {}", b64(&format!("u:{secret}"))),
            format!("x{}y", b64(&format!("Bearer {secret}"))),
            URL_SAFE_NO_PAD.encode(format!("ab{secret}cd")),
        ] {
            assert!(leaks(&secret, place.as_bytes()), "missed: {place}");
        }
    }

    #[test]
    fn a_spelling_the_input_excuses_does_not_hide_another_in_the_same_place() {
        let secret = value("status_token");
        let encoded = utf8_percent_encode(&secret, NON_ALPHANUMERIC).to_string();
        // The raw value was sent (so echoing it is no leak); its
        // percent-encoded form was not, and follows it in stdout.
        let stdout = format!("unknown method {secret}; fetched /?t={encoded}");
        let found = find_leak(
            [secret.as_str()],
            &[("stdout", stdout.as_bytes())],
            &[format!(r#"{{"method":"{secret}"}}"#).as_bytes()],
        );
        assert_eq!(found, Some(("stdout".to_owned(), encoded)));
        // Two secrets: the second's leak is found whichever comes first.
        let other = value("deploy_key");
        assert!(
            find_leak(
                [secret.as_str(), other.as_str()],
                &[("report", other.as_bytes())],
                &[]
            )
            .is_some()
        );
    }

    #[test]
    fn unrelated_text_and_other_credentials_are_not_leaks() {
        let secret = value("status_token");
        assert!(!leaks(&secret, value("deploy_key").as_bytes()));
        assert!(!leaks(&secret, b"Secret(<redacted>) stand-in [redacted]"));
    }

    #[test]
    fn text_the_input_supplied_is_not_a_leak() {
        let secret = value("status_token");
        let echoed = format!("method not found: {secret}");
        let raw = format!(r#"{{"method":"{secret}"}}"#);
        let escaped = raw.replacen("CANARY", "\\u0043ANARY", 1);
        for input in [raw, escaped] {
            assert!(
                find_leak(
                    [secret.as_str()],
                    &[("stdout", echoed.as_bytes())],
                    &[input.as_bytes()]
                )
                .is_none(),
                "{input}"
            );
        }
        assert!(
            find_leak(
                [secret.as_str()],
                &[("stdout", echoed.as_bytes())],
                &[b"{}"]
            )
            .is_some()
        );
    }
}
