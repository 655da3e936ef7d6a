//! Removing a tool's credential from everything an executor returns.
//!
//! An upstream can reflect the credential it was sent: an echo service puts
//! the request headers into its body, an error page quotes them, a redirect
//! carries the token in its `Location`, a debugging endpoint returns them as
//! JSON or base64. Whatever the executor hands back (the result text, which
//! holds the body, the status line and the reported headers) passes through
//! a [`Scrubber`] made from the tool's credential, at the executor's single
//! exit; every match becomes [`REDACTED`].
//!
//! # What is matched
//!
//! The credential `s` (surrounding whitespace trimmed) is turned into a few
//! *patterns*:
//!
//! - `s` itself (so `Bearer <s>` becomes `Bearer [redacted]`);
//! - for each of the three alignments a value can have inside a base64
//!   stream (it starts at a byte offset ≡ 0, 1 or 2 mod 3: `base64(s)`,
//!   `base64("Bearer " + s)`, `base64("user:" + s)` …), in both the
//!   standard and the URL-safe alphabet, the run of base64 characters that
//!   encode bits of `s` only. Padding never matters (it lies outside that
//!   run). Where the alignment leaves a character at either end that mixes
//!   bits of `s` with bits of its neighbour, that one adjacent base64
//!   character is redacted too, so no bit of the secret is left;
//! - `s` as lowercase and as uppercase hex of its UTF-8 bytes.
//!
//! Each pattern is matched *character by character*, where each character
//! may appear in the text in any of these spellings (mixed freely within
//! one occurrence, since encoders differ in which characters they escape):
//!
//! - literally;
//! - percent-encoded, each UTF-8 byte as `%XX` with either hex case, and a
//!   space also as `+` (form encoding);
//! - JSON-escaped: `\"`, `\\`, `\/`, `\b` `\f` `\n` `\r` `\t`, `\uXXXX`
//!   with either hex case (a surrogate pair for characters outside the
//!   BMP);
//! - HTML-escaped: `&amp;` `&lt;` `&gt;` `&quot;` `&apos;`, `&#N;` and
//!   `&#xH;`.
//!
//! So a JSON echo of headers that writes `/` as `\/`, a percent-encoded
//! token in a `Location`, `base64(user:token)` in a reflected `Basic`
//! header, or a URL-encoded base64 token (`%2B`, `%2F`) are all caught.
//!
//! # Text cut at a size cap
//!
//! An executor that keeps only the first `N` bytes of a body may cut it in
//! the middle of the credential. [`Scrubber::scrub_cut`] treats the end of
//! its text as such a cut: a pattern prefix of at least [`MIN_CUT_PREFIX`]
//! characters that runs into the end (possibly ending in an incomplete
//! escape such as `%4`) is redacted as well. A shorter prefix at the cut
//! (1 to 3 characters of the credential) is left as it is: too short to
//! tell apart from ordinary text.
//!
//! # Short credentials
//!
//! A credential shorter than [`MIN_SECRET_BYTES`] bytes (after trimming) is
//! not scrubbed at all: redacting every `a` or `ab` in a result would
//! destroy it without protecting anything (such a credential can be
//! guessed). The policy should refuse such credentials.
//!
//! # Not covered
//!
//! Encodings stacked on one another (the base64 of a percent-encoded token,
//! a JSON string inside a JSON string), base64 broken across lines (MIME
//! wrapping), a credential split into pieces, reversed, case-changed or
//! compressed by the upstream. Bodies that are not UTF-8 never reach the
//! client as bytes (see `output`), so they need no scrubbing.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use portcullis_gateway::Outcome;

/// What replaces every occurrence of the credential.
pub const REDACTED: &str = "[redacted]";

/// Credentials shorter than this (in bytes, after trimming) are not
/// scrubbed; see the module docs.
pub const MIN_SECRET_BYTES: usize = 4;

/// The shortest prefix of a pattern (in characters) that is redacted when
/// it runs into the end of a cut text.
pub const MIN_CUT_PREFIX: usize = 4;

/// The two base64 alphabets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alphabet {
    Standard,
    UrlSafe,
}

impl Alphabet {
    fn contains(self, b: u8) -> bool {
        b.is_ascii_alphanumeric()
            || match self {
                Alphabet::Standard => b == b'+' || b == b'/',
                Alphabet::UrlSafe => b == b'-' || b == b'_',
            }
    }
}

/// One spelling of the credential, matched character by character.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    chars: Vec<char>,
    /// The base64 character just before a match also carries bits of the
    /// credential (alignment 1 or 2).
    edge_before: Option<Alphabet>,
    /// The base64 character just after a match also carries bits of it.
    edge_after: Option<Alphabet>,
}

impl Pattern {
    fn plain(text: &str) -> Self {
        Self {
            chars: text.chars().collect(),
            edge_before: None,
            edge_after: None,
        }
    }
}

/// Replaces one credential, in every spelling listed in the module docs,
/// by [`REDACTED`].
#[derive(Clone)]
pub struct Scrubber {
    patterns: Vec<Pattern>,
    /// Bytes at which some pattern can start (a literal first character,
    /// or the first byte of an escape).
    starts: [bool; 256],
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The patterns are the secret.
        f.debug_struct("Scrubber")
            .field("patterns", &self.patterns.len())
            .finish_non_exhaustive()
    }
}

impl Scrubber {
    /// A scrubber for `secret`; with `None`, or a credential shorter than
    /// [`MIN_SECRET_BYTES`], it changes nothing.
    pub fn new(secret: Option<&str>) -> Self {
        let mut patterns = Vec::new();
        if let Some(secret) = secret.map(str::trim)
            && secret.len() >= MIN_SECRET_BYTES
        {
            patterns.push(Pattern::plain(secret));
            for alignment in 0..3 {
                for alphabet in [Alphabet::Standard, Alphabet::UrlSafe] {
                    patterns.push(base64_core(secret.as_bytes(), alignment, alphabet));
                }
            }
            let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
            patterns.push(Pattern::plain(&hex.to_ascii_uppercase()));
            patterns.push(Pattern::plain(&hex));
        }
        let mut unique: Vec<Pattern> = Vec::with_capacity(patterns.len());
        for p in patterns {
            if !unique.contains(&p) {
                unique.push(p);
            }
        }
        let mut starts = [false; 256];
        for p in &unique {
            let mut buf = [0u8; 4];
            starts[usize::from(p.chars[0].encode_utf8(&mut buf).as_bytes()[0])] = true;
            for b in [b'%', b'\\', b'&'] {
                starts[usize::from(b)] = true;
            }
            if p.chars[0] == ' ' {
                starts[usize::from(b'+')] = true;
            }
        }
        Self {
            patterns: unique,
            starts,
        }
    }

    /// Whether this scrubber can change anything.
    pub fn is_active(&self) -> bool {
        !self.patterns.is_empty()
    }

    /// `text` with every occurrence of the credential replaced.
    pub fn scrub(&self, text: &str) -> String {
        self.replace(text, false)
    }

    /// Like [`Self::scrub`], for a text whose end is where a size cap cut
    /// it: a prefix of the credential running into the end is replaced
    /// too (see the module docs).
    pub fn scrub_cut(&self, text: &str) -> String {
        self.replace(text, true)
    }

    /// `outcome` with its text scrubbed.
    pub fn scrub_outcome(&self, outcome: Outcome) -> Outcome {
        Outcome {
            text: self.scrub(&outcome.text),
            is_error: outcome.is_error,
        }
    }

    fn replace(&self, text: &str, cut: bool) -> String {
        if !self.is_active() {
            return text.to_owned();
        }
        let t = text.as_bytes();
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        let mut frontier = Vec::new();
        let mut next = Vec::new();
        for (i, &b) in t.iter().enumerate() {
            // Every spelling starts on a character boundary.
            if !self.starts[usize::from(b)] || is_continuation(b) {
                continue;
            }
            for pattern in &self.patterns {
                match match_at(pattern, t, i, cut, &mut frontier, &mut next) {
                    Found::Nothing => {}
                    Found::Whole(end) => ranges.push(widen(pattern, t, i, end)),
                    Found::CutPrefix => ranges.push((i, t.len())),
                }
            }
        }
        if ranges.is_empty() {
            return text.to_owned();
        }
        ranges.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut written = 0;
        let mut current: Option<(usize, usize)> = None;
        for (start, end) in ranges {
            match &mut current {
                Some((_, cur_end)) if start < *cur_end => *cur_end = (*cur_end).max(end),
                _ => {
                    if let Some((s, e)) = current.take() {
                        out.push_str(&text[written..s]);
                        out.push_str(REDACTED);
                        written = e;
                    }
                    current = Some((start, end));
                }
            }
        }
        if let Some((s, e)) = current {
            out.push_str(&text[written..s]);
            out.push_str(REDACTED);
            written = e;
        }
        out.push_str(&text[written..]);
        out
    }
}

/// The base64 characters that encode bits of `secret` only, when it starts
/// at a byte offset ≡ `alignment` (mod 3) of the encoded stream.
fn base64_core(secret: &[u8], alignment: usize, alphabet: Alphabet) -> Pattern {
    let mut stream = vec![0u8; alignment];
    stream.extend_from_slice(secret);
    // Trailing bytes make the last character that holds only secret bits a
    // full character of the encoding.
    stream.extend_from_slice(&[0, 0]);
    let encoded = match alphabet {
        Alphabet::Standard => STANDARD_NO_PAD.encode(&stream),
        Alphabet::UrlSafe => URL_SAFE_NO_PAD.encode(&stream),
    };
    let first_bit = 8 * alignment;
    let end_bit = 8 * (alignment + secret.len());
    // Character k holds bits [6k, 6k + 6) of the stream.
    let start = first_bit.div_ceil(6);
    let end = end_bit / 6;
    Pattern {
        chars: encoded[start..end].chars().collect(),
        edge_before: (!first_bit.is_multiple_of(6)).then_some(alphabet),
        edge_after: (!end_bit.is_multiple_of(6)).then_some(alphabet),
    }
}

enum Found {
    Nothing,
    /// The whole pattern, ending at this byte offset.
    Whole(usize),
    /// A prefix of at least [`MIN_CUT_PREFIX`] characters running into the
    /// end of the text.
    CutPrefix,
}

/// Match `pattern` at byte offset `start` of `t`. Several spellings of one
/// character can match at once (`%` literally or as `%25`), so the match
/// follows every one of them: `frontier` holds the offsets reachable after
/// the characters matched so far.
fn match_at(
    pattern: &Pattern,
    t: &[u8],
    start: usize,
    cut: bool,
    frontier: &mut Vec<usize>,
    next: &mut Vec<usize>,
) -> Found {
    frontier.clear();
    frontier.push(start);
    for (matched, &c) in pattern.chars.iter().enumerate() {
        next.clear();
        for &p in frontier.iter() {
            if cut && matched >= MIN_CUT_PREFIX && at_cut(&t[p..]) {
                return Found::CutPrefix;
            }
            spellings(c, t, p, next);
        }
        if next.is_empty() {
            return Found::Nothing;
        }
        next.sort_unstable();
        next.dedup();
        std::mem::swap(frontier, next);
    }
    frontier
        .iter()
        .max()
        .map_or(Found::Nothing, |&end| Found::Whole(end))
}

/// `[start, end)` widened by the base64 characters at either side that
/// also carry bits of the credential.
fn widen(pattern: &Pattern, t: &[u8], start: usize, end: usize) -> (usize, usize) {
    let start = match pattern.edge_before {
        Some(a) if start > 0 && a.contains(t[start - 1]) => start - 1,
        _ => start,
    };
    let end = match pattern.edge_after {
        Some(a) if end < t.len() && a.contains(t[end]) => end + 1,
        _ => end,
    };
    (start, end)
}

/// The text ends here, or with the beginning of an escape that the cut
/// left incomplete (`%4`, `\u00`, `&#x2`).
fn at_cut(rest: &[u8]) -> bool {
    match rest.first() {
        None => true,
        Some(b'%' | b'\\' | b'&') => {
            rest.len() < 12
                && rest[1..]
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'#' | b'\\'))
        }
        Some(_) => false,
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Push the end offset of every spelling of `c` found at `t[p..]`.
fn spellings(c: char, t: &[u8], p: usize, out: &mut Vec<usize>) {
    let rest = &t[p..];
    let mut buf = [0u8; 4];
    let literal = c.encode_utf8(&mut buf).as_bytes();
    if rest.starts_with(literal) {
        out.push(p + literal.len());
    }
    match rest.first() {
        Some(b'+') if c == ' ' => out.push(p + 1),
        Some(b'%') => {
            if let Some(n) = percent_encoded(rest, literal) {
                out.push(p + n);
            }
        }
        Some(b'\\') => {
            if let Some(n) = json_escaped(rest, c) {
                out.push(p + n);
            }
        }
        Some(b'&') => {
            if let Some(n) = html_escaped(rest, c) {
                out.push(p + n);
            }
        }
        _ => {}
    }
}

/// Every byte of `bytes` as `%XX` (either case).
fn percent_encoded(rest: &[u8], bytes: &[u8]) -> Option<usize> {
    for (i, &b) in bytes.iter().enumerate() {
        let at = 3 * i;
        if rest.get(at) != Some(&b'%') || hex_value(rest.get(at + 1..at + 3)?)? != u32::from(b) {
            return None;
        }
    }
    Some(3 * bytes.len())
}

/// A JSON string escape for `c` at the start of `rest` (which starts with
/// a backslash).
fn json_escaped(rest: &[u8], c: char) -> Option<usize> {
    let short = match c {
        '"' => Some(b'"'),
        '\\' => Some(b'\\'),
        '/' => Some(b'/'),
        '\u{8}' => Some(b'b'),
        '\u{c}' => Some(b'f'),
        '\n' => Some(b'n'),
        '\r' => Some(b'r'),
        '\t' => Some(b't'),
        _ => None,
    };
    if short.is_some() && rest.get(1).copied() == short {
        return Some(2);
    }
    let unit = |at: usize| -> Option<u32> {
        if rest.get(at..at + 2)? != b"\\u" {
            return None;
        }
        hex_value(rest.get(at + 2..at + 6)?)
    };
    let mut units = [0u16; 2];
    match c.encode_utf16(&mut units) {
        [single] => (unit(0)? == u32::from(*single)).then_some(6),
        [high, low] => (unit(0)? == u32::from(*high) && unit(6)? == u32::from(*low)).then_some(12),
        _ => None,
    }
}

/// An HTML character reference for `c` at the start of `rest` (which
/// starts with `&`).
fn html_escaped(rest: &[u8], c: char) -> Option<usize> {
    let named: &[u8] = match c {
        '&' => b"&amp;",
        '<' => b"&lt;",
        '>' => b"&gt;",
        '"' => b"&quot;",
        '\'' => b"&apos;",
        _ => b"",
    };
    if !named.is_empty() && rest.starts_with(named) {
        return Some(named.len());
    }
    if rest.get(1) != Some(&b'#') {
        return None;
    }
    let (digits_at, radix) = match rest.get(2) {
        Some(b'x' | b'X') => (3, 16),
        _ => (2, 10),
    };
    let digits = rest[digits_at..]
        .iter()
        .take(9)
        .take_while(|b| char::from(**b).is_digit(radix))
        .count();
    if digits == 0 || rest.get(digits_at + digits) != Some(&b';') {
        return None;
    }
    let text = std::str::from_utf8(&rest[digits_at..digits_at + digits]).ok()?;
    let value = u32::from_str_radix(text, radix).ok()?;
    (value == u32::from(c)).then_some(digits_at + digits + 1)
}

/// The value of ASCII hex digits (either case).
fn hex_value(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &d| {
        char::from(d).to_digit(16).map(|v| acc * 16 + v)
    })
}

#[cfg(test)]
mod tests {
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
}
