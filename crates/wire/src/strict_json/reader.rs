//! The strict reader: one pass over the frame text, applying every rule of
//! [`super`] as it goes, building a [`Json`] whose strings and keys borrow
//! from the text unless they held escapes.
//!
//! It is hand-written because it is the boundary itself: serde_json's
//! visitor machinery cost more than the rest of the pipeline put together,
//! and the rules (duplicates, depth, exact integers) are checked where the
//! tokens are, not reconstructed afterwards. Numbers written with a
//! fraction or an exponent are the one thing it does not convert itself:
//! their token goes to serde_json's own number reader, so a double is the
//! double serde_json reads, to the last bit.
//!
//! The input is a `&str`: every position the reader stops at to slice is
//! an ASCII byte (a quote, a backslash, the byte after an escape), so each
//! slice is on a character boundary.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde_json::Number;
use smallvec::SmallVec;

use super::MAX_SAFE_INTEGER;
use crate::json::{Json, Object};

/// Why the reader refused a text, and at which byte. A refusal is worded by
/// the reference reading; this is its fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fault {
    what: &'static str,
    at: usize,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

const UNSAFE_INTEGER: &str = "integer beyond ±(2^53−1) cannot be represented exactly";

const TOO_MANY_VALUES: &str = "frame exceeds max_frame_values";

/// Objects with more members than this find duplicates through a hash set
/// rather than by scanning the members read so far, so a frame full of keys
/// costs linear time.
const LINEAR_DUPLICATE_SCAN: usize = 16;

/// Which member of an object [`Reader::skimmed`] reads for a few of its
/// members only, and which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skim {
    /// The member read shallowly (MCP's `_meta`).
    pub member: &'static str,
    /// Its members that are kept; every other is checked and dropped.
    pub keep: &'static [&'static str],
}

/// The keys of one object read so far, for the duplicate rule when the
/// members themselves are not kept: scanned while few, hashed after.
#[derive(Default)]
struct Keys<'a> {
    few: SmallVec<[Cow<'a, str>; 8]>,
    many: Option<HashSet<Cow<'a, str>>>,
}

impl<'a> Keys<'a> {
    /// Record `key`; false if it was already there.
    fn insert(&mut self, key: Cow<'a, str>) -> bool {
        if let Some(many) = &mut self.many {
            return many.insert(key);
        }
        if self.few.contains(&key) {
            return false;
        }
        if self.few.len() < LINEAR_DUPLICATE_SCAN {
            self.few.push(key);
        } else {
            let mut many: HashSet<_> = self.few.drain(..).collect();
            many.insert(key);
            self.many = Some(many);
        }
        true
    }
}

/// A cursor over one text.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    text: &'a str,
    pos: usize,
    /// How many more values the text may hold ([`crate::Limits::max_values`]).
    values_left: usize,
}

impl<'a> Reader<'a> {
    /// Run `read` over the whole of `text`, which must hold one value and
    /// nothing but whitespace after it, and at most `max_values` values in
    /// all.
    pub(crate) fn read_whole<T>(
        text: &'a str,
        max_values: usize,
        read: impl FnOnce(&mut Self) -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        let mut reader = Reader {
            text,
            pos: 0,
            values_left: max_values,
        };
        let value = read(&mut reader)?;
        reader.skip_whitespace();
        if reader.pos != text.len() {
            return Err(reader.fault("trailing characters"));
        }
        Ok(value)
    }

    pub(crate) fn fault(&self, what: &'static str) -> Fault {
        Fault { what, at: self.pos }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// The next non-whitespace byte, not consumed.
    pub(crate) fn peek_token(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.peek()
    }

    /// One more level of nesting, from `remaining` levels allowed.
    fn enter(&self, remaining: usize) -> Result<usize, Fault> {
        remaining
            .checked_sub(1)
            .ok_or(self.fault("nesting exceeds the depth limit"))
    }

    /// One more value, counted before it is read: every value, kept or
    /// skipped, scalar or not, so no frame builds or walks more than the
    /// limit allows.
    fn count_value(&mut self) -> Result<(), Fault> {
        match self.values_left.checked_sub(1) {
            Some(left) => {
                self.values_left = left;
                Ok(())
            }
            None => Err(self.fault(TOO_MANY_VALUES)),
        }
    }

    /// Any value; `remaining` is how many more levels of arrays or objects
    /// may open.
    pub(crate) fn value(&mut self, remaining: usize) -> Result<Json<'a>, Fault> {
        let first = self.peek_token();
        if first.is_some_and(starts_value) {
            self.count_value()?;
        }
        match first {
            Some(b'"') => {
                self.pos += 1;
                self.string().map(Json::String)
            }
            Some(b'{') => {
                let child = self.enter(remaining)?;
                self.pos += 1;
                self.object(child).map(Json::Object)
            }
            Some(b'[') => {
                let child = self.enter(remaining)?;
                self.pos += 1;
                self.array(child).map(Json::Array)
            }
            Some(b'-' | b'0'..=b'9') => self.number().map(Json::Number),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            _ => Err(self.fault("expected value")),
        }
    }

    fn literal(&mut self, word: &'static str, value: Json<'a>) -> Result<Json<'a>, Fault> {
        if self.text.as_bytes()[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.fault("expected ident"))
        }
    }

    /// An object whose `{` was consumed; `child` levels remain below it.
    fn object(&mut self, child: usize) -> Result<Object<'a>, Fault> {
        self.object_with(child, |reader, _, child| reader.value(child))
    }

    /// An object whose `{` was consumed, each member's value read by
    /// `read` (given the key and the levels that remain below the object).
    fn object_with(
        &mut self,
        child: usize,
        mut read: impl FnMut(&mut Self, &str, usize) -> Result<Json<'a>, Fault>,
    ) -> Result<Object<'a>, Fault> {
        let mut members: Vec<(Cow<'a, str>, Json<'a>)> = Vec::new();
        let mut seen: Option<HashSet<Cow<'a, str>>> = None;
        self.members(|reader, key| {
            let duplicate = match &mut seen {
                Some(seen) => !seen.insert(key.clone()),
                None if members.len() < LINEAR_DUPLICATE_SCAN => {
                    members.iter().any(|(k, _)| *k == key)
                }
                None => {
                    let set = seen.insert(members.iter().map(|(k, _)| k.clone()).collect());
                    !set.insert(key.clone())
                }
            };
            if duplicate {
                return Err(reader.fault("duplicate object key"));
            }
            let value = read(reader, &key, child)?;
            members.push((key, value));
            Ok(())
        })?;
        Ok(Object::from_members(members))
    }

    /// An object read as [`Reader::value`] reads one, except that member
    /// `skim.member`, when it is an object, keeps only the members
    /// `skim.keep` names: the rest of it is checked by every rule and
    /// dropped ([`Reader::skip`]). `remaining` as for `value`.
    pub(crate) fn skimmed(&mut self, remaining: usize, skim: &Skim) -> Result<Json<'a>, Fault> {
        if self.peek_token() != Some(b'{') {
            return self.value(remaining);
        }
        self.count_value()?;
        let child = self.enter(remaining)?;
        self.pos += 1;
        self.object_with(child, |reader, key, child| {
            if key == skim.member && reader.peek_token() == Some(b'{') {
                reader.count_value()?;
                let grandchild = reader.enter(child)?;
                reader.pos += 1;
                reader.kept_members(grandchild, skim.keep).map(Json::Object)
            } else {
                reader.value(child)
            }
        })
        .map(Json::Object)
    }

    /// An object whose `{` was consumed, keeping the members `keep` names.
    fn kept_members(&mut self, child: usize, keep: &[&str]) -> Result<Object<'a>, Fault> {
        let mut members = Vec::new();
        let mut keys = Keys::default();
        self.members(|reader, key| {
            if !keys.insert(key.clone()) {
                return Err(reader.fault("duplicate object key"));
            }
            if keep.contains(&&*key) {
                let value = reader.value(child)?;
                members.push((key, value));
                Ok(())
            } else {
                reader.skip(child)
            }
        })?;
        Ok(Object::from_members(members))
    }

    /// Check a value by every rule [`Reader::value`] applies (the same
    /// string, number and literal readings; the same depth and duplicate
    /// rules), keeping nothing of it.
    fn skip(&mut self, remaining: usize) -> Result<(), Fault> {
        match self.peek_token() {
            Some(b'{') => {
                self.count_value()?;
                let child = self.enter(remaining)?;
                self.pos += 1;
                let mut keys = Keys::default();
                self.members(|reader, key| {
                    if !keys.insert(key) {
                        return Err(reader.fault("duplicate object key"));
                    }
                    reader.skip(child)
                })
            }
            Some(b'[') => {
                self.count_value()?;
                let child = self.enter(remaining)?;
                self.pos += 1;
                self.elements(|reader| reader.skip(child))
            }
            // Scalars build no tree; a string with escapes is unescaped
            // (that is where an escape is judged) and dropped. They are
            // counted there.
            _ => self.value(remaining).map(drop),
        }
    }

    /// The members of an object whose `{` was consumed: each key goes to
    /// `member`, which must read the value (and refuse a repeated key).
    pub(crate) fn members(
        &mut self,
        mut member: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        if self.peek_token() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            if self.peek_token() != Some(b'"') {
                return Err(self.fault("key must be a string"));
            }
            self.pos += 1;
            let key = self.string()?;
            if self.peek_token() != Some(b':') {
                return Err(self.fault("expected `:`"));
            }
            self.pos += 1;
            member(self, key)?;
            match self.peek_token() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.fault("expected `,` or `}`")),
            }
        }
    }

    /// Consume a `{` if one comes next, counting it as a value.
    pub(crate) fn open_object(&mut self) -> Result<bool, Fault> {
        let open = self.peek_token() == Some(b'{');
        if open {
            self.count_value()?;
            self.pos += 1;
        }
        Ok(open)
    }

    /// An array whose `[` was consumed; `child` levels remain below it.
    fn array(&mut self, child: usize) -> Result<Vec<Json<'a>>, Fault> {
        let mut items = Vec::new();
        self.elements(|reader| {
            items.push(reader.value(child)?);
            Ok(())
        })?;
        Ok(items)
    }

    /// The elements of an array whose `[` was consumed: `element` reads
    /// each one.
    fn elements(
        &mut self,
        mut element: impl FnMut(&mut Self) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        if self.peek_token() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            element(self)?;
            match self.peek_token() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.fault("expected `,` or `]`")),
            }
        }
    }

    /// A string whose opening quote was consumed: borrowed from the text
    /// unless it holds escapes.
    #[inline(always)]
    fn string(&mut self) -> Result<Cow<'a, str>, Fault> {
        let start = self.pos;
        let end = next_special(self.text.as_bytes(), start);
        match self.text.as_bytes().get(end) {
            Some(b'"') => {
                self.pos = end + 1;
                Ok(Cow::Borrowed(self.slice(start, end)?))
            }
            Some(b'\\') => self.unescape(start, end).map(Cow::Owned),
            Some(_) => {
                self.pos = end;
                Err(self.fault("control character (\\u0000-\\u001F) found while parsing a string"))
            }
            None => {
                self.pos = end;
                Err(self.fault("EOF while parsing a string"))
            }
        }
    }

    fn slice(&self, start: usize, end: usize) -> Result<&'a str, Fault> {
        self.text
            .get(start..end)
            .ok_or(self.fault("string split inside a character"))
    }

    /// The rest of a string that holds escapes; `start` is its first byte,
    /// `at` the first backslash.
    fn unescape(&mut self, start: usize, mut at: usize) -> Result<String, Fault> {
        let bytes = self.text.as_bytes();
        let mut out = String::with_capacity(at - start + 16);
        let mut run = start;
        loop {
            match bytes.get(at) {
                Some(b'"') => {
                    out.push_str(self.slice(run, at)?);
                    self.pos = at + 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    out.push_str(self.slice(run, at)?);
                    self.pos = at + 1;
                    let simple = match self.peek() {
                        Some(b'"') => Some('"'),
                        Some(b'\\') => Some('\\'),
                        Some(b'/') => Some('/'),
                        Some(b'b') => Some('\u{8}'),
                        Some(b'f') => Some('\u{c}'),
                        Some(b'n') => Some('\n'),
                        Some(b'r') => Some('\r'),
                        Some(b't') => Some('\t'),
                        Some(b'u') => None,
                        _ => return Err(self.fault("invalid escape")),
                    };
                    self.pos += 1;
                    let escaped = match simple {
                        Some(c) => c,
                        None => self.unicode_escape()?,
                    };
                    out.push(escaped);
                    run = self.pos;
                    at = next_special(bytes, run);
                }
                Some(_) => {
                    self.pos = at;
                    return Err(self.fault(
                        "control character (\\u0000-\\u001F) found while parsing a string",
                    ));
                }
                None => {
                    self.pos = at;
                    return Err(self.fault("EOF while parsing a string"));
                }
            }
        }
    }

    /// The character of a `\u` escape whose `\u` was consumed: a UTF-16
    /// code unit, or a surrogate pair written as two escapes. A lone
    /// surrogate is refused.
    fn unicode_escape(&mut self) -> Result<char, Fault> {
        let first = self.hex4()?;
        let code = match first {
            0xDC00..=0xDFFF => return Err(self.fault("lone leading surrogate in hex escape")),
            0xD800..=0xDBFF => {
                if !self.text.as_bytes()[self.pos..].starts_with(b"\\u") {
                    return Err(self.fault("unexpected end of hex escape"));
                }
                self.pos += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.fault("lone leading surrogate in hex escape"));
                }
                0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00)
            }
            other => u32::from(other),
        };
        char::from_u32(code).ok_or(self.fault("invalid unicode code point"))
    }

    /// Four hex digits.
    fn hex4(&mut self) -> Result<u16, Fault> {
        let mut value = 0u16;
        for _ in 0..4 {
            let digit = match self.peek() {
                Some(b @ b'0'..=b'9') => b - b'0',
                Some(b @ b'a'..=b'f') => b - b'a' + 10,
                Some(b @ b'A'..=b'F') => b - b'A' + 10,
                _ => return Err(self.fault("invalid escape")),
            };
            value = value * 16 + u16::from(digit);
            self.pos += 1;
        }
        Ok(value)
    }

    /// A number. Integer syntax must lie within ±(2^53−1); a fraction or
    /// an exponent makes a double, read by serde_json.
    fn number(&mut self) -> Result<Number, Fault> {
        let bytes = self.text.as_bytes();
        let start = self.pos;
        let negative = bytes[start] == b'-';
        let digits_start = start + usize::from(negative);
        let mut at = digits_start;
        match bytes.get(at) {
            Some(b'0') => at += 1,
            Some(b'1'..=b'9') => at = skip_digits(bytes, at),
            _ => {
                self.pos = at;
                return Err(self.fault("invalid number"));
            }
        }
        let integer_end = at;
        let mut double = false;
        if bytes.get(at) == Some(&b'.') {
            double = true;
            at = self.some_digits(at + 1)?;
        }
        if let Some(b'e' | b'E') = bytes.get(at) {
            double = true;
            at += 1;
            if let Some(b'+' | b'-') = bytes.get(at) {
                at += 1;
            }
            at = self.some_digits(at)?;
        }
        self.pos = at;
        if double {
            return self.text[start..at]
                .parse::<Number>()
                .map_err(|_| self.fault("number out of range"));
        }
        let digits = &bytes[digits_start..integer_end];
        // Nineteen digits always fit a u64; more are beyond any safe value.
        let magnitude = (digits.len() <= 19)
            .then(|| {
                digits
                    .iter()
                    .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'))
            })
            .ok_or(self.fault(UNSAFE_INTEGER))?;
        if magnitude > MAX_SAFE_INTEGER as u64 {
            return Err(self.fault(UNSAFE_INTEGER));
        }
        Ok(match (negative, magnitude) {
            (false, m) => Number::from(m),
            // `-0` is read as the double -0.0, as serde_json reads it.
            (true, 0) => Number::from_f64(-0.0).ok_or(self.fault("invalid number"))?,
            (true, m) => Number::from(-(m as i64)),
        })
    }

    /// At least one digit from `at`; the position after the last.
    fn some_digits(&mut self, at: usize) -> Result<usize, Fault> {
        let end = skip_digits(self.text.as_bytes(), at);
        if end == at {
            self.pos = at;
            return Err(self.fault("invalid number"));
        }
        Ok(end)
    }
}

/// Whether a value starts with `byte` (it may still turn out malformed).
fn starts_value(byte: u8) -> bool {
    matches!(
        byte,
        b'"' | b'{' | b'[' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'
    )
}

fn skip_digits(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b'0'..=b'9') = bytes.get(at) {
        at += 1;
    }
    at
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// A mask with the high bit set in each byte of `word` that is a quote, a
/// backslash or a control character (below 0x20), exact up to and including
/// the lowest such byte: the "has a byte below n" idiom borrows only upward,
/// so bits above the first hit may be spurious, never those below it.
fn special_mask(word: u64) -> u64 {
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGHS;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    below(quote, 1) | below(backslash, 1) | below(word, 0x20)
}

/// Whether any byte of `word` is a quote, a backslash or a control
/// character.
#[cfg(test)]
fn word_has_special(word: u64) -> bool {
    special_mask(word) != 0
}

/// The position of the first quote, backslash or control character at or
/// after `at` (or the length), eight bytes at a time. The last partial
/// word is padded with NUL, a control byte, which stops the scan exactly at
/// the end.
fn next_special(bytes: &[u8], at: usize) -> usize {
    let rest = bytes.get(at..).unwrap_or_default();
    let mut chunks = rest.chunks_exact(8);
    let mut skipped = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let mask = special_mask(word);
        if mask != 0 {
            return at + skipped + (mask.trailing_zeros() / 8) as usize;
        }
        skipped += 8;
    }
    let tail = chunks.remainder();
    let mut padded = [0u8; 8];
    padded[..tail.len()].copy_from_slice(tail);
    let mask = special_mask(u64::from_le_bytes(padded));
    at + skipped + (mask.trailing_zeros() / 8) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_test_finds_exactly_the_special_bytes() {
        for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
            for at in 0..8 {
                let mut chunk = *b"abcdefgh";
                chunk[at] = special;
                assert!(
                    word_has_special(u64::from_le_bytes(chunk)),
                    "{special:#x} at {at}"
                );
            }
        }
        for plain in [b' ', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff] {
            assert!(
                !word_has_special(u64::from_le_bytes([plain; 8])),
                "{plain:#x}"
            );
        }
        assert_eq!(next_special(b"abcdefghijklmnop\"", 0), 16);
        assert_eq!(next_special(b"abcdefghij\\klmnop", 0), 10);
        assert_eq!(next_special(b"abc", 0), 3);
        // No special byte: the length, after whole words and a tail.
        assert_eq!(next_special(b"abcdefghijk", 0), 11);
        assert_eq!(next_special(b"\"abcdefghijk", 1), 12);
    }

    #[test]
    fn the_word_scan_stops_at_the_first_special_byte_of_every_length() {
        let naive = |bytes: &[u8], at: usize| {
            bytes[at..]
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .map_or(bytes.len(), |p| at + p)
        };
        // A special byte, and a second one after it (whose borrow must not
        // move the first), at every position of texts up to three words
        // long, from every start.
        let bytes_to_try = [
            b'"',
            b'\\',
            0x00,
            0x1f,
            0x20,
            0x21,
            0x5c + 1,
            0x7f,
            0x80,
            0xff,
        ];
        for len in 0..24 {
            for first in 0..=len {
                for &a in &bytes_to_try {
                    for &b in &[b'"', 0x01, b'a'] {
                        let mut text = vec![b'a'; len];
                        if first < len {
                            text[first] = a;
                        }
                        if first + 1 < len {
                            text[first + 1] = b;
                        }
                        for at in 0..=len {
                            assert_eq!(
                                next_special(&text, at),
                                naive(&text, at),
                                "{text:?} from {at}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The reader's own account, used only if the reference ever accepted
    /// a text the reader refused: the rule it applied and the byte where.
    fn fallback(text: &str) -> String {
        Reader::read_whole(text, 8, |reader| reader.value(4))
            .expect_err(text)
            .to_string()
    }

    #[test]
    fn a_fallback_refusal_names_the_rule_and_the_byte() {
        assert_eq!(fallback("[1,]"), "expected value at byte 3");
        assert_eq!(fallback("{} x"), "trailing characters at byte 3");
        assert_eq!(
            fallback("[1,2,3,4,5,6,7,8]"),
            "frame exceeds max_frame_values at byte 15"
        );
    }
}
