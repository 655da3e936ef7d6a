//! A strict JSON value that borrows its strings from the frame text.
//!
//! [`Json`] is what [`crate::strict_json`] builds where the gateway reads a
//! message rather than keeping it: `params` in the envelope. It holds the
//! same value a `serde_json::Value` would, under the same I-JSON rules
//! (the visitor below applies the checks [`crate::strict_json`] defines:
//! duplicate keys compared after unescaping, the depth limit, exact
//! integers, finite numbers), but strings and keys are borrowed unless
//! they held escapes, and objects are member lists in input order rather
//! than `BTreeMap`s: a `tools/call` costs a few vectors instead of a node
//! and two strings per member. [`Json::into_value`] gives the `Value` where
//! one is needed (the schema validator), [`Object::into_map`] the `Map`.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::strict_json::{check_float, check_integer, display_name};

/// One strict JSON value, strings borrowed from the text where they can be.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number within the I-JSON profile.
    Number(Number),
    /// A string.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Json<'a>>),
    /// An object.
    Object(Object<'a>),
}

/// An object's members in input order; keys are unique (the parser refused
/// duplicates).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object<'a> {
    members: Vec<(Cow<'a, str>, Json<'a>)>,
}

impl<'a> Json<'a> {
    /// Name of the value's JSON type, for reasons (as
    /// [`crate::rpc::value_kind`] names a `Value`'s).
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Json::Object(o) => Some(o),
            _ => None,
        }
    }

    /// Whether this is an object.
    pub fn is_object(&self) -> bool {
        matches!(self, Json::Object(_))
    }

    /// Whether this is a string.
    pub fn is_string(&self) -> bool {
        matches!(self, Json::String(_))
    }

    /// The same value as a `serde_json::Value`.
    pub fn into_value(self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(b),
            Json::Number(n) => Value::Number(n),
            Json::String(s) => Value::String(s.into_owned()),
            Json::Array(items) => Value::Array(items.into_iter().map(Json::into_value).collect()),
            Json::Object(o) => Value::Object(o.into_map()),
        }
    }
}

impl<'a> Object<'a> {
    /// The value of member `key`.
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Take member `key` out.
    pub fn remove(&mut self, key: &str) -> Option<Json<'a>> {
        let at = self.members.iter().position(|(k, _)| k == key)?;
        Some(self.members.remove(at).1)
    }

    /// Whether member `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The member names, in input order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(k, _)| &**k)
    }

    /// The members, in input order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Json<'a>)> {
        self.members.iter().map(|(k, v)| (&**k, v))
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The same object as a `serde_json::Map`.
    pub fn into_map(self) -> Map<String, Value> {
        self.members
            .into_iter()
            .map(|(k, v)| (k.into_owned(), v.into_value()))
            .collect()
    }
}

/// Objects with more members than this find duplicates through a hash set
/// rather than by scanning the members read so far, so a frame full of keys
/// costs linear time.
const LINEAR_DUPLICATE_SCAN: usize = 16;

/// Seed for any strict [`Json`]; `remaining` is how many more levels of
/// arrays or objects may open (as in [`crate::strict_json`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StrictJson {
    pub(crate) remaining: usize,
}

impl StrictJson {
    fn enter<E: de::Error>(self) -> Result<Self, E> {
        if self.remaining == 0 {
            Err(E::custom("nesting exceeds the depth limit"))
        } else {
            Ok(Self {
                remaining: self.remaining - 1,
            })
        }
    }
}

impl<'de> DeserializeSeed<'de> for StrictJson {
    type Value = Json<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Json<'de>, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictJson {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json<'de>, E> {
        check_integer(v.into())?;
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json<'de>, E> {
        check_integer(v.into())?;
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json<'de>, E> {
        check_float(v).map(Json::Number)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let child = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(child)? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let child = self.enter()?;
        let mut members: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
        let mut seen: Option<HashSet<Cow<'de, str>>> = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
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
                return Err(de::Error::custom(format_args!(
                    "duplicate object key {}",
                    display_name(&key)
                )));
            }
            let value = map.next_value_seed(child)?;
            members.push((key, value));
        }
        Ok(Json::Object(Object { members }))
    }
}

/// A member name, borrowed unless it held escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}
