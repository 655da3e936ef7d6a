//! Finding one spelling of the credential in a text: the match that
//! follows every spelling of each character, and the base64 patterns.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

use super::spellings::{LONGEST_SPELLING, spellings};
use super::{Alphabet, MIN_CUT_PREFIX, Pattern};

/// The base64 characters that encode bits of `secret` only, when it starts
/// at a byte offset ≡ `alignment` (mod 3) of the encoded stream.
pub(super) fn base64_core(secret: &[u8], alignment: usize, alphabet: Alphabet) -> Pattern {
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

pub(super) enum Found {
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
pub(super) fn match_at(
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

/// `[start, end)` widened by the base64 character at either side that
/// also carries bits of the credential, in whichever spelling it has there
/// (`%2B`, `\u0041`, `&#47;` hide bits as well as a literal does).
pub(super) fn widen(pattern: &Pattern, t: &[u8], start: usize, end: usize) -> (usize, usize) {
    let start = pattern
        .edge_before
        .and_then(|a| character_before(a, t, start))
        .unwrap_or(start);
    let end = pattern
        .edge_after
        .and_then(|a| character_after(a, t, end))
        .unwrap_or(end);
    (start, end)
}

/// The characters of `alphabet`.
fn characters(alphabet: Alphabet) -> impl Iterator<Item = char> {
    (0..=0x7F_u8)
        .filter(move |&b| alphabet.contains(b))
        .map(char::from)
}

/// The end of the longest spelling of one `alphabet` character that
/// starts at `at`.
fn character_after(alphabet: Alphabet, t: &[u8], at: usize) -> Option<usize> {
    let mut ends = Vec::new();
    for c in characters(alphabet) {
        spellings(c, t, at, &mut ends);
    }
    ends.into_iter().max()
}

/// The start of the longest spelling of one `alphabet` character that
/// ends at `at`.
fn character_before(alphabet: Alphabet, t: &[u8], at: usize) -> Option<usize> {
    let mut ends = Vec::new();
    (at.saturating_sub(LONGEST_SPELLING)..at).find(|&from| {
        characters(alphabet).any(|c| {
            ends.clear();
            spellings(c, t, from, &mut ends);
            ends.contains(&at)
        })
    })
}

/// The text ends here, or with the beginning of an escape that the cut
/// left incomplete (`%4`, `%C3%A`, `\u00`, `\ud83d\ude`, `&#x2`).
fn at_cut(rest: &[u8]) -> bool {
    match rest.first() {
        None => true,
        Some(b'%' | b'\\' | b'&') => {
            rest.len() < LONGEST_SPELLING
                && rest[1..]
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'#' | b'\\' | b'%'))
        }
        Some(_) => false,
    }
}

pub(super) fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}
