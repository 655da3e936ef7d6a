//! The typed, borrowed envelope reader: serde seeds that read the five
//! JSON-RPC members without judging their types, so the JSON stage is
//! decided first and the id can be echoed when the shape is wrong.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::{Envelope, IdField, Members, Text};
use crate::id::Id;
use crate::json::StrictJson;
use crate::strict_json::{StrictValue, check_float, display_name};

pub(super) struct EnvelopeSeed {
    pub(super) remaining: usize,
}

impl<'de> DeserializeSeed<'de> for EnvelopeSeed {
    type Value = Envelope<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EnvelopeSeed {
    type Value = Envelope<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Envelope::Scalar("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        StrictValue::new(self.remaining).visit_i64::<E>(v)?;
        Ok(Envelope::Scalar("a number"))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        StrictValue::new(self.remaining).visit_u64::<E>(v)?;
        Ok(Envelope::Scalar("a number"))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        check_float::<E>(v)?;
        Ok(Envelope::Scalar("a number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Envelope::Scalar("a string"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Envelope::Scalar("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        StrictValue::new(self.remaining).visit_seq(seq)?;
        Ok(Envelope::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if self.remaining == 0 {
            return Err(de::Error::custom("nesting exceeds the depth limit"));
        }
        let child = StrictValue::new(self.remaining - 1);
        let mut m = Members::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let duplicate = match key {
                Key::Jsonrpc => set(
                    &mut m.jsonrpc,
                    map.next_value_seed(TextSeed(child))?,
                    "jsonrpc",
                ),
                Key::Id => set(&mut m.id, map.next_value_seed(IdSeed(child))?, "id"),
                Key::Method => set(
                    &mut m.method,
                    map.next_value_seed(TextSeed(child))?,
                    "method",
                ),
                Key::Params => set(
                    &mut m.params,
                    map.next_value_seed(StrictJson {
                        remaining: child.remaining,
                    })?,
                    "params",
                ),
                Key::Result => set(&mut m.result, map.next_value_seed(child)?, "result"),
                Key::Error => set(&mut m.error, map.next_value_seed(child)?, "error"),
                Key::Other(name) => {
                    let seen = m.unknown.contains(&name);
                    map.next_value_seed(child)?;
                    if seen {
                        Some(name)
                    } else {
                        m.unknown.push(name);
                        None
                    }
                }
            };
            if let Some(name) = duplicate {
                return Err(de::Error::custom(format_args!(
                    "duplicate object key {}",
                    display_name(&name)
                )));
            }
        }
        Ok(Envelope::Object(Box::new(m)))
    }
}

/// Store `value` in `slot`; on a repeat, return the member name.
fn set<T>(slot: &mut Option<T>, value: T, name: &str) -> Option<String> {
    if slot.is_some() {
        Some(name.to_owned())
    } else {
        *slot = Some(value);
        None
    }
}

enum Key {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other(String),
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Key, D::Error> {
        de.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(match v {
            "jsonrpc" => Key::Jsonrpc,
            "id" => Key::Id,
            "method" => Key::Method,
            "params" => Key::Params,
            "result" => Key::Result,
            "error" => Key::Error,
            other => Key::Other(other.to_owned()),
        })
    }
}

/// Consume a nested container strictly (so the JSON stage still sees its
/// duplicates, depth and numbers) and report its kind.
macro_rules! consume_containers {
    ($ok:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            self.0.visit_seq(seq)?;
            Ok($ok("an array"))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            self.0.visit_map(map)?;
            Ok($ok("an object"))
        }
    };
}

struct TextSeed(StrictValue);

impl<'de> DeserializeSeed<'de> for TextSeed {
    type Value = Text<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextSeed {
    type Value = Text<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Text::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Text::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Text::Other("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.0.visit_i64::<E>(v)?;
        Ok(Text::Other("a number"))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.0.visit_u64::<E>(v)?;
        Ok(Text::Other("a number"))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        check_float::<E>(v)?;
        Ok(Text::Other("a number"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Text::Other("null"))
    }
    consume_containers!(Text::Other);
}

struct IdSeed(StrictValue);

impl<'de> DeserializeSeed<'de> for IdSeed {
    type Value = IdField;
    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IdSeed {
    type Value = IdField;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(IdField::Valid(Id::Str(v.to_owned())))
    }
    // Integers beyond ±(2^53−1) are refused by the JSON stage, as anywhere
    // else in a frame; what is left here is always a valid integer id.
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.0.visit_i64::<E>(v)?;
        Ok(IdField::Valid(Id::Int(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.0.visit_u64::<E>(v)?;
        Ok(IdField::Valid(Id::Int(v as i64)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        check_float::<E>(v)?;
        // A fraction, an exponent or `-0`: a number, but not an id.
        Ok(IdField::Invalid("a number in fraction or exponent form"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(IdField::Invalid("a boolean"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(IdField::Invalid("null"))
    }
    consume_containers!(IdField::Invalid);
}
