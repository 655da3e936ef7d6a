//! Finding one spelling of the credential in a text: the match that
//! follows every spelling of each character, and the base64 patterns.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

use super::spellings::spellings;
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

/// `[start, end)` widened by the base64 characters at either side that
/// also carry bits of the credential.
pub(super) fn widen(pattern: &Pattern, t: &[u8], start: usize, end: usize) -> (usize, usize) {
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

pub(super) fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}
