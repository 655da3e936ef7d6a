//! Strict JSON: one value per frame under an I-JSON profile (RFC 7493).
//!
//! serde_json does the tokenizing; this module supplies the visitors that
//! make it strict, because its defaults are not:
//!
//! - **Duplicate keys** are rejected at every depth. `serde_json::Value`
//!   silently keeps the last one, also when the key is spelled with escapes
//!   (`"met\u0068od"`); keys are compared after unescaping here.
//! - **Depth** is counted by the visitors and refused past the limit before
//!   recursing further, so no input can exhaust the stack.
//! - **Trailing content**: exactly one value, then only whitespace
//!   (`{}{}` is refused; serde_json's `StreamDeserializer` would accept it).
//! - **Numbers**: a number written in integer syntax must lie within
//!   ±(2^53−1), the range every I-JSON peer reads exactly. A finite number
//!   written with a fraction or an exponent (`0.1`, `1.5e300`, `1E22`) is a
//!   double, and every peer reads it as the same double, so it is accepted.
//!   Without `arbitrary_precision` serde_json hands integer-syntax numbers
//!   beyond 64 bits to the visitors as floats, indistinguishable from
//!   `1e22`; such a float (integral, beyond the safe range) marks the frame,
//!   and only a marked frame is scanned for its integer-syntax tokens.
//!   Values that overflow a double (`1e400`) are refused by serde_json.
//! - **Strings**: lone surrogate escapes (`"\ud800"`) are refused (serde_json
//!   refuses them when strings are decoded, which these visitors always do).
//!   A byte-order mark before the value is refused as unexpected input; a
//!   U+FEFF character inside a string is ordinary text and is kept.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::codes::PARSE_ERROR;
use crate::json::{Json, StrictJson};
use crate::limits::Limits;
use crate::rejection::{Rejection, Stage};

/// Largest integer magnitude every I-JSON peer can represent exactly.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Parse `text` as exactly one strict JSON value of any type.
pub fn parse_value(text: &str, limits: &Limits) -> Result<Value, Rejection> {
    parse_with(text, StrictValue::new(limits.effective_depth()))
}

/// Parse `text` as exactly one strict JSON value under the same rules as
/// [`parse_value`], borrowing its strings from `text` where they hold no
/// escapes.
pub fn parse_json<'a>(text: &'a str, limits: &Limits) -> Result<Json<'a>, Rejection> {
    parse_with(
        text,
        StrictJson {
            remaining: limits.effective_depth(),
        },
    )
}

/// Run `seed` over the whole of `text`, which must hold one value and
/// nothing but whitespace after it.
pub(crate) fn parse_with<'a, S>(text: &'a str, seed: S) -> Result<S::Value, Rejection>
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
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
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

/// A name from the input, shown in a reason only when it looks like an
/// identifier; anything else may be data and is withheld.
pub fn display_name(name: &str) -> Cow<'_, str> {
    let looks_like_name = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_$./-:@".contains(&b));
    if looks_like_name {
        Cow::Owned(format!("\"{name}\""))
    } else {
        Cow::Borrowed("(name withheld)")
    }
}

/// Seed for any strict JSON value; `remaining` is how many more levels of
/// arrays or objects may open.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StrictValue {
    pub(crate) remaining: usize,
}

impl StrictValue {
    pub(crate) fn new(remaining: usize) -> Self {
        Self { remaining }
    }

    fn child(self) -> Self {
        Self {
            remaining: self.remaining - 1,
        }
    }

    fn enter<E: de::Error>(self) -> Result<Self, E> {
        if self.remaining == 0 {
            Err(E::custom("nesting exceeds the depth limit"))
        } else {
            Ok(self.child())
        }
    }
}

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

pub(crate) fn check_integer<E: de::Error>(v: i128) -> Result<(), E> {
    if v.unsigned_abs() > MAX_SAFE_INTEGER as u128 {
        Err(E::custom(
            "integer beyond ±(2^53−1) cannot be represented exactly",
        ))
    } else {
        Ok(())
    }
}

pub(crate) fn check_float<E: de::Error>(v: f64) -> Result<Number, E> {
    if v.fract() == 0.0 && v.abs() > MAX_SAFE_INTEGER as f64 {
        BIG_INTEGRAL_FLOAT.set(true);
    }
    Number::from_f64(v).ok_or_else(|| E::custom("number is not finite"))
}

impl<'de> Visitor<'de> for StrictValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        check_integer(v.into())?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        check_integer(v.into())?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        check_float(v).map(Value::Number)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let child = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(child)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let child = self.enter()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "duplicate object key {}",
                    display_name(&key)
                )));
            }
            let value = map.next_value_seed(child)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}
