//! The scrubber's spelling oracle: an encoder, written apart from the
//! scrubber, of every spelling `portcullis_exec::scrub` promises to catch
//! (its module docs), one character at a time, and of the forms it
//! matches (the credential itself, its hex, the base64 of a stream that
//! holds it). Tests spell a credential with it, scrub, and compare with
//! what must be left.

/// A small deterministic generator (SplitMix64): a failing case is
/// reproduced from its seed, which every assertion message carries.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The case of hex digits: all lower, all upper, or each digit its own
/// (bit `i` of the mask makes digit `i` upper case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    Lower,
    Upper,
    Mixed(u64),
}

/// The most digits of an HTML numeric reference, leading zeros
/// included, that the scrubber promises to read.
pub const MAX_REFERENCE_DIGITS: usize = 9;

/// One way to write one character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    Literal,
    /// Every UTF-8 byte as `%XX`.
    Percent(Case),
    /// `+` for a space (form encoding).
    Plus,
    /// `\"` `\\` `\/` `\b` `\f` `\n` `\r` `\t`.
    JsonShort,
    /// `\uXXXX`, a surrogate pair outside the BMP.
    JsonUnicode(Case),
    /// `&amp;` `&lt;` `&gt;` `&quot;` `&apos;`.
    HtmlNamed,
    /// `&#N;` after `zeros` leading zeros.
    HtmlDecimal {
        zeros: usize,
    },
    /// `&#xH;` (`&#XH;` with `big_x`) after `zeros` leading zeros.
    HtmlHex {
        big_x: bool,
        case: Case,
        zeros: usize,
    },
}

fn cased(digits: &str, case: Case) -> String {
    digits
        .chars()
        .enumerate()
        .map(|(i, d)| {
            let upper = match case {
                Case::Lower => false,
                Case::Upper => true,
                Case::Mixed(mask) => mask >> (i % 64) & 1 == 1,
            };
            if upper {
                d.to_ascii_uppercase()
            } else {
                d.to_ascii_lowercase()
            }
        })
        .collect()
}

fn utf16_units(c: char) -> Vec<u32> {
    let v = u32::from(c);
    if v < 0x1_0000 {
        vec![v]
    } else {
        let w = v - 0x1_0000;
        vec![0xD800 + (w >> 10), 0xDC00 + (w & 0x3FF)]
    }
}

fn utf8_bytes(c: char) -> Vec<u8> {
    let v = u32::from(c);
    match v {
        0..=0x7F => vec![v as u8],
        0x80..=0x7FF => vec![0xC0 | (v >> 6) as u8, 0x80 | (v & 0x3F) as u8],
        0x800..=0xFFFF => vec![
            0xE0 | (v >> 12) as u8,
            0x80 | ((v >> 6) & 0x3F) as u8,
            0x80 | (v & 0x3F) as u8,
        ],
        _ => vec![
            0xF0 | (v >> 18) as u8,
            0x80 | ((v >> 12) & 0x3F) as u8,
            0x80 | ((v >> 6) & 0x3F) as u8,
            0x80 | (v & 0x3F) as u8,
        ],
    }
}

/// `c` written as `spelling`, or `None` where that spelling does not
/// exist for `c` (a named reference for `a`, `+` for anything but a
/// space, too many leading zeros).
pub fn spell(c: char, spelling: Spelling) -> Option<String> {
    match spelling {
        Spelling::Literal => Some(c.to_string()),
        Spelling::Percent(case) => Some(
            utf8_bytes(c)
                .iter()
                .map(|b| format!("%{}", cased(&format!("{b:02x}"), case)))
                .collect(),
        ),
        Spelling::Plus => (c == ' ').then(|| "+".to_owned()),
        Spelling::JsonShort => {
            let e = match c {
                '"' => '"',
                '\\' => '\\',
                '/' => '/',
                '\u{8}' => 'b',
                '\u{c}' => 'f',
                '\n' => 'n',
                '\r' => 'r',
                '\t' => 't',
                _ => return None,
            };
            Some(format!("\\{e}"))
        }
        Spelling::JsonUnicode(case) => Some(
            utf16_units(c)
                .iter()
                .enumerate()
                .map(|(i, u)| {
                    let case = match case {
                        Case::Mixed(mask) => Case::Mixed(mask >> (4 * i)),
                        other => other,
                    };
                    format!("\\u{}", cased(&format!("{u:04x}"), case))
                })
                .collect(),
        ),
        Spelling::HtmlNamed => Some(
            match c {
                '&' => "&amp;",
                '<' => "&lt;",
                '>' => "&gt;",
                '"' => "&quot;",
                '\'' => "&apos;",
                _ => return None,
            }
            .to_owned(),
        ),
        Spelling::HtmlDecimal { zeros } => {
            let digits = format!("{}{}", "0".repeat(zeros), u32::from(c));
            (digits.len() <= MAX_REFERENCE_DIGITS).then(|| format!("&#{digits};"))
        }
        Spelling::HtmlHex { big_x, case, zeros } => {
            let digits = format!("{}{:x}", "0".repeat(zeros), u32::from(c));
            let x = if big_x { 'X' } else { 'x' };
            (digits.len() <= MAX_REFERENCE_DIGITS)
                .then(|| format!("&#{x}{};", cased(&digits, case)))
        }
    }
}

/// The leading zeros that fill a numeric reference of `c` to the most
/// digits promised.
fn most_zeros(c: char, radix: u32) -> usize {
    let digits = match radix {
        16 => format!("{:x}", u32::from(c)).len(),
        _ => u32::from(c).to_string().len(),
    };
    MAX_REFERENCE_DIGITS - digits
}

/// Every spelling of `c`: each kind, each hex case (lower, upper and one
/// mix), references without and with the most leading zeros.
pub fn every_spelling(c: char) -> Vec<(Spelling, String)> {
    let cases = [Case::Lower, Case::Upper, Case::Mixed(0b0101_1010_0110)];
    let mut kinds = vec![
        Spelling::Literal,
        Spelling::Plus,
        Spelling::JsonShort,
        Spelling::HtmlNamed,
    ];
    for case in cases {
        kinds.push(Spelling::Percent(case));
        kinds.push(Spelling::JsonUnicode(case));
    }
    for zeros in [0, 1, most_zeros(c, 10)] {
        kinds.push(Spelling::HtmlDecimal { zeros });
    }
    for zeros in [0, 1, most_zeros(c, 16)] {
        for big_x in [false, true] {
            for case in cases {
                kinds.push(Spelling::HtmlHex { big_x, case, zeros });
            }
        }
    }
    let mut out: Vec<(Spelling, String)> = Vec::new();
    for kind in kinds {
        if let Some(text) = spell(c, kind)
            && !out.iter().any(|(_, t)| *t == text)
        {
            out.push((kind, text));
        }
    }
    out
}

/// One spelling of `c` chosen at random: literal half of the time (what
/// encoders leave alone), any other at random otherwise.
pub fn random_spelling(c: char, rng: &mut Rng) -> String {
    if rng.coin() {
        return c.to_string();
    }
    let mask = rng.next_u64();
    let case = *rng.pick(&[Case::Lower, Case::Upper, Case::Mixed(mask)]);
    let kinds = [
        Spelling::Percent(case),
        Spelling::Plus,
        Spelling::JsonShort,
        Spelling::JsonUnicode(case),
        Spelling::HtmlNamed,
        Spelling::HtmlDecimal {
            zeros: rng.below(most_zeros(c, 10) + 1),
        },
        Spelling::HtmlHex {
            big_x: rng.coin(),
            case,
            zeros: rng.below(most_zeros(c, 16) + 1),
        },
    ];
    loop {
        if let Some(text) = spell(c, *rng.pick(&kinds)) {
            return text;
        }
    }
}

/// Characters a credential is made of: letters and digits, every
/// character an encoder escapes, controls with short JSON escapes, and
/// characters of two, three and four UTF-8 bytes.
pub const CREDENTIAL_CHARS: &[char] = &[
    'a', 'Z', 'k', 'Q', '0', '7', '9', 'x', 'F', '/', '+', '=', '"', '\\', '&', '<', '>', '\'',
    '%', '#', ';', '-', '_', '.', '~', ':', '?', '!', ' ', '\u{8}', '\u{c}', '\n', '\r', '\t',
    '\u{1}', '\u{7f}', 'é', 'ß', '中', '€', '😀', '𝄞',
];

/// A credential of 4 to 24 characters (at least four bytes, nothing the
/// scrubber would trim off its ends).
pub fn credential(rng: &mut Rng) -> String {
    loop {
        let len = 4 + rng.below(21);
        let s: String = (0..len).map(|_| *rng.pick(CREDENTIAL_CHARS)).collect();
        if s.trim() == s && s.len() >= 4 {
            return s;
        }
    }
}

/// Characters that can stand next to a spelled credential without
/// becoming part of a match: no letter or digit (hex and base64 are made
/// of them), nothing that starts an escape, nothing of either base64
/// alphabet, nothing the credential holds.
pub fn filler(credential: &str, rng: &mut Rng, len: usize) -> String {
    let pool: Vec<char> = " ,;:!?*()[]{}|~^@$.\n\t<>\"'#"
        .chars()
        .filter(|c| !credential.contains(*c))
        .collect();
    (0..len).map(|_| *rng.pick(&pool)).collect()
}

/// Base64 of `bytes`, standard or URL-safe alphabet, padded or not.
pub fn base64(bytes: &[u8], url_safe: bool, pad: bool) -> String {
    let alphabet: &[u8; 64] = if url_safe {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | u32::from(b) << (16 - 8 * i));
        let chars = group.len() + 1;
        for k in 0..4 {
            if k < chars {
                out.push(char::from(alphabet[(n >> (18 - 6 * k) & 63) as usize]));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// Lower-case hex of the UTF-8 bytes of `s`.
pub fn hex(s: &str) -> String {
    s.chars()
        .flat_map(utf8_bytes)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// How many whole units of `units` lie in the first `len` bytes of their
/// concatenation.
pub fn whole_units(units: &[String], len: usize) -> usize {
    let mut end = 0;
    units
        .iter()
        .take_while(|u| {
            end += u.len();
            end <= len
        })
        .count()
}

/// `text` cut after `at` bytes the way a capped read shows it: a
/// character the cut split is dropped.
pub fn cut(text: &str, at: usize) -> &str {
    let mut end = at.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
