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
//!   character is redacted too, in whichever spelling below it has, so no
//!   bit of the secret is left;
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
//!   `&#xH;` (`x` or `X`, either hex case; at most 9 digits, leading zeros
//!   included).
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
//! escape such as `%4`, `%C3%A` or `\ud83d\ude`) is redacted as well,
//! with the base64 character before it that mixes in bits of the
//! credential. A shorter prefix at the cut (1 to 3 characters of the
//! credential) is left as it is: too short to tell apart from ordinary
//! text.
//!
//! # Short credentials
//!
//! A credential shorter than [`MIN_SECRET_BYTES`] bytes (after trimming) is
//! not scrubbed at all: redacting every `a` or `ab` in a result would
//! destroy it without protecting anything (such a credential can be
//! guessed). The gateway therefore treats a shorter credential as not
//! available at load (`portcullis_gateway::secrets`): no tool runs with it.
//!
//! # Not covered
//!
//! Encodings stacked on one another (the base64 of a percent-encoded token,
//! a JSON string inside a JSON string), base64 broken across lines (MIME
//! wrapping), a credential split into pieces, reversed, case-changed or
//! compressed by the upstream. Bodies that are not UTF-8 never reach the
//! client as bytes (see `output`), so they need no scrubbing.

mod matching;
mod spellings;
#[cfg(test)]
mod tests;

use portcullis_gateway::Outcome;

use self::matching::{Found, base64_core, is_continuation, match_at, widen};

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
            // No pattern starts with a space (the credential is trimmed;
            // hex and base64 hold none), so no match starts at a `+`.
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
                    Found::CutPrefix => ranges.push(widen(pattern, t, i, t.len())),
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
