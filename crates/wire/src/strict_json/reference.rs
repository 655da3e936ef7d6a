//! The reference reading of the strict profile: serde_json tokenizes, and
//! visitors apply the rules ([`super`] lists them). It is the reading the
//! boundary used before the hand-written [`super::reader`], kept as its
//! second opinion: the differential property tests, the JSONTestSuite
//! conformance test and the `strict_json` fuzz target hold the reader to
//! the same verdict and the same value on every input, and a refusal is
//! worded by this reading (serde_json's messages, with line and column).
//!
//! How the rules are applied here, where serde_json's defaults are not
//! strict:
//!
//! - duplicate keys are found by the visitors, after unescaping;
//! - depth is counted by the visitors and refused past the limit before
//!   recursing further;
//! - values are counted by the visitors, each scalar, array and object as
//!   serde_json hands it over, and the first past the limit is refused;
//! - trailing content is refused by `Deserializer::end`;
//! - without `arbitrary_precision` serde_json hands integer-syntax numbers
//!   beyond 64 bits to the visitors as floats, indistinguishable from
//!   `1e22`; such a float (integral, beyond the safe range) marks the
//!   frame, and only a marked frame is scanned for its integer-syntax
//!   tokens;
//! - lone surrogate escapes are refused by serde_json when strings are
//!   decoded, which these visitors always do.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::{MAX_SAFE_INTEGER, display_name};
use crate::codes::PARSE_ERROR;
use crate::limits::Limits;
use crate::rejection::{Rejection, Stage};

/// Parse `text` as exactly one strict JSON value, through serde_json.
pub fn parse_value(text: &str, limits: &Limits) -> Result<Value, Rejection> {
    let budget = Budget::new(limits.max_values);
    let value = parse_with(text, StrictValue::<true>::new(limits, &budget))?;
    Ok(value.expect("a kept reading has a value"))
}

/// The verdict [`parse_value`] gives `text`, worded alike, without building
/// the value.
pub fn verdict(text: &str, limits: &Limits) -> Result<(), Rejection> {
    let budget = Budget::new(limits.max_values);
    parse_with(text, StrictValue::<false>::new(limits, &budget)).map(drop)
}

/// The values one reading may still see, out of `limit`.
#[derive(Debug)]
struct Budget {
    limit: usize,
    seen: Cell<usize>,
}

impl Budget {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            seen: Cell::new(0),
        }
    }

    /// One more value; refused once there are more than the limit.
    fn take<E: de::Error>(&self) -> Result<(), E> {
        let seen = self.seen.get() + 1;
        self.seen.set(seen);
        if seen > self.limit {
            Err(E::custom(format_args!(
                "frame exceeds max_frame_values ({})",
                self.limit
            )))
        } else {
            Ok(())
        }
    }
}

/// Run `seed` over the whole of `text`, which must hold one value and
/// nothing but whitespace after it.
fn parse_with<'a, S>(text: &'a str, seed: S) -> Result<S::Value, Rejection>
where
    S: DeserializeSeed<'a>,
{
    BIG_INTEGRAL_FLOAT.set(false);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = seed
        .deserialize(&mut de)
        .and_then(|value| de.end().map(|()| value))
        .map_err(|err| json_rejection(&err, text.as_bytes()))?;
    if BIG_INTEGRAL_FLOAT.replace(false) && has_unsafe_integer_token(text) {
        return Err(Rejection::new(
            Stage::Json,
            PARSE_ERROR,
            "integer beyond ±(2^53−1) cannot be represented exactly",
            text.as_bytes(),
        ));
    }
    Ok(value)
}

thread_local! {
    /// Set when a visitor saw an integral float beyond the safe range: it
    /// came from either `1e22` (fine) or an integer-syntax token too long for
    /// 64 bits (refused), and only the text can tell which. A thread-local
    /// rather than state in every seed, because the seeds are `Copy` and
    /// shared by the envelope visitors in `rpc`.
    static BIG_INTEGRAL_FLOAT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether `text` holds a number token in integer syntax (no fraction, no
/// exponent) whose magnitude exceeds ±(2^53−1). Strings are skipped.
fn has_unsafe_integer_token(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while let Some(&b) = bytes.get(i).filter(|&&b| b != b'"') {
                    i += if b == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let token = &bytes[start..i];
                let integer_syntax = !token.iter().any(|b| matches!(b, b'.' | b'e' | b'E'));
                let digits = token.strip_prefix(b"-").unwrap_or(token);
                if integer_syntax && digits.len() >= 16 {
                    let magnitude = std::str::from_utf8(digits)
                        .ok()
                        .and_then(|d| d.parse::<u128>().ok());
                    if magnitude.is_none_or(|m| m > MAX_SAFE_INTEGER as u128) {
                        return true;
                    }
                }
            }
            _ => i += 1,
        }
    }
    false
}

fn json_rejection(err: &serde_json::Error, frame: &[u8]) -> Rejection {
    // serde_json's own messages name positions and categories, never input
    // content; the visitors' messages below are written the same way.
    Rejection::new(Stage::Json, PARSE_ERROR, err.to_string(), frame)
}

/// Seed for any strict JSON value; `remaining` is how many more levels of
/// arrays or objects may open, `budget` the values the whole reading may
/// still see. With `KEEP` it builds the value; without, it applies the
/// same rules to the same tokens and builds nothing (a refusal needs only
/// the verdict and its wording, and a refused frame may be a fuzzer's
/// 8 KiB of nested garbage).
#[derive(Debug, Clone, Copy)]
struct StrictValue<'b, const KEEP: bool> {
    remaining: usize,
    budget: &'b Budget,
}

impl<'b, const KEEP: bool> StrictValue<'b, KEEP> {
    fn new(limits: &Limits, budget: &'b Budget) -> Self {
        Self {
            remaining: limits.effective_depth(),
            budget,
        }
    }

    fn child(self) -> Self {
        Self {
            remaining: self.remaining - 1,
            ..self
        }
    }

    fn enter<E: de::Error>(self) -> Result<Self, E> {
        if self.remaining == 0 {
            Err(E::custom("nesting exceeds the depth limit"))
        } else {
            Ok(self.child())
        }
    }

    /// `value` when the seed keeps what it reads.
    fn keep(value: impl FnOnce() -> Value) -> Option<Value> {
        KEEP.then(value)
    }
}

impl<'de, const KEEP: bool> DeserializeSeed<'de> for StrictValue<'_, KEEP> {
    type Value = Option<Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Option<Value>, D::Error> {
        de.deserialize_any(self)
    }
}

fn check_integer<E: de::Error>(v: i128) -> Result<(), E> {
    if v.unsigned_abs() > MAX_SAFE_INTEGER as u128 {
        Err(E::custom(
            "integer beyond ±(2^53−1) cannot be represented exactly",
        ))
    } else {
        Ok(())
    }
}

fn check_float<E: de::Error>(v: f64) -> Result<Number, E> {
    if v.fract() == 0.0 && v.abs() > MAX_SAFE_INTEGER as f64 {
        BIG_INTEGRAL_FLOAT.set(true);
    }
    Number::from_f64(v).ok_or_else(|| E::custom("number is not finite"))
}

impl<'de, const KEEP: bool> Visitor<'de> for StrictValue<'_, KEEP> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Option<Value>, E> {
        self.budget.take()?;
        Ok(Self::keep(|| Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<Value>, E> {
        self.budget.take()?;
        check_integer(v.into())?;
        Ok(Self::keep(|| Value::Number(v.into())))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<Value>, E> {
        self.budget.take()?;
        check_integer(v.into())?;
        Ok(Self::keep(|| Value::Number(v.into())))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<Value>, E> {
        self.budget.take()?;
        let number = check_float(v)?;
        Ok(Self::keep(|| Value::Number(number)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<Value>, E> {
        self.budget.take()?;
        Ok(Self::keep(|| Value::String(v.to_owned())))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<Value>, E> {
        self.budget.take()?;
        Ok(Self::keep(|| Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Value>, A::Error> {
        self.budget.take()?;
        let child = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(child)? {
            items.extend(item);
        }
        Ok(Self::keep(|| Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        self.budget.take()?;
        let child = self.enter()?;
        let mut object = Map::new();
        // Without `KEEP` the keys seen so far, borrowed from the text unless
        // they held escapes.
        let mut seen: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(key) = map.next_key_seed(Key)? {
            let fresh = if KEEP {
                !object.contains_key(&*key)
            } else {
                seen.insert(key.clone())
            };
            if !fresh {
                return Err(de::Error::custom(format_args!(
                    "duplicate object key {}",
                    display_name(&key)
                )));
            }
            let value = map.next_value_seed(child)?;
            if let Some(value) = value {
                object.insert(key.into_owned(), value);
            }
        }
        Ok(Self::keep(|| Value::Object(object)))
    }
}

/// Seed for an object key: the string serde_json decoded, borrowed from the
/// text when it held no escape.
#[derive(Debug, Clone, Copy)]
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Cow<'de, str>, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}
