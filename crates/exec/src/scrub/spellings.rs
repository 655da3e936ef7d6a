//! The spellings of one character that an upstream may use when it
//! reflects a credential: literal, percent-encoded, a JSON escape or an
//! HTML character reference.

/// The most digits of a numeric character reference that are read,
/// leading zeros included (no character needs more than 7).
pub(super) const REFERENCE_DIGITS: usize = 9;

/// The longest spelling of one character, in bytes: `&#x`, the most
/// digits and `;` (a percent-encoded four-byte character and a JSON
/// surrogate pair take 12).
pub(super) const LONGEST_SPELLING: usize = "&#x".len() + REFERENCE_DIGITS + 1;

/// Push the end offset of every spelling of `c` found at `t[p..]`.
pub(super) fn spellings(c: char, t: &[u8], p: usize, out: &mut Vec<usize>) {
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
    let mut end = 0;
    for &u in c.encode_utf16(&mut units).iter() {
        if unit(end)? != u32::from(u) {
            return None;
        }
        end += 6;
    }
    Some(end)
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
        .take(REFERENCE_DIGITS)
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
