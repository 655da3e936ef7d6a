//! The JSON-RPC request id: a string or an exactly representable integer.

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;

/// A JSON-RPC request id: a string or an exactly representable integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    /// A string id.
    Str(String),
    /// An integer id within ±(2^53−1).
    Int(i64),
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Str(s) => write!(f, "{s:?}"),
            Id::Int(n) => write!(f, "{n}"),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Str(v) => s.serialize_str(v),
            Id::Int(v) => s.serialize_i64(*v),
        }
    }
}

impl From<Id> for Value {
    fn from(id: Id) -> Value {
        match id {
            Id::Str(s) => Value::String(s),
            Id::Int(n) => Value::Number(n.into()),
        }
    }
}
