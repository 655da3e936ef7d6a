//! A strict JSON value that borrows its strings from the frame text.
//!
//! [`Json`] is what [`crate::strict_json`]'s reader builds: `params` in the
//! envelope, and any value [`crate::strict_json::parse_json`] reads. It
//! holds the same value a `serde_json::Value` would, under the same I-JSON
//! rules (duplicate keys compared after unescaping, the depth limit, exact
//! integers, finite numbers), but strings and keys are borrowed unless
//! they held escapes, and objects are member lists in input order rather
//! than `BTreeMap`s: a `tools/call` costs a few vectors instead of a node
//! and two strings per member. [`Json::into_value`] gives the `Value` where
//! one is needed (the schema validator), [`Object::into_map`] the `Map`.

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

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

    /// A copy of the value as a `serde_json::Value`.
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(o) => Value::Object(o.to_map()),
        }
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

impl Json<'static> {
    /// A `serde_json::Value` as a `Json` that owns its strings.
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(b),
            Value::Number(n) => Json::Number(n),
            Value::String(s) => Json::String(Cow::Owned(s)),
            Value::Array(items) => Json::Array(items.into_iter().map(Json::from_value).collect()),
            Value::Object(map) => Json::Object(Object::from_map(map)),
        }
    }
}

impl Object<'static> {
    /// A `serde_json::Map` as an [`Object`] that owns its strings (members
    /// in the map's order).
    pub fn from_map(map: Map<String, Value>) -> Self {
        let members = map
            .into_iter()
            .map(|(k, v)| (Cow::Owned(k), Json::from_value(v)))
            .collect();
        Self { members }
    }
}

impl<'a> IntoIterator for Object<'a> {
    type Item = (Cow<'a, str>, Json<'a>);
    type IntoIter = std::vec::IntoIter<(Cow<'a, str>, Json<'a>)>;

    /// The members, in input order, taken out.
    fn into_iter(self) -> Self::IntoIter {
        self.members.into_iter()
    }
}

impl<'a> Object<'a> {
    /// An object of these members; the reader has refused duplicates.
    pub(crate) fn from_members(members: Vec<(Cow<'a, str>, Json<'a>)>) -> Self {
        Self { members }
    }

    /// The value of member `key`.
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
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

    /// A copy of the object as a `serde_json::Map`.
    pub fn to_map(&self) -> Map<String, Value> {
        self.members
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_value()))
            .collect()
    }

    /// The same object as a `serde_json::Map`.
    pub fn into_map(self) -> Map<String, Value> {
        self.members
            .into_iter()
            .map(|(k, v)| (k.into_owned(), v.into_value()))
            .collect()
    }
}
