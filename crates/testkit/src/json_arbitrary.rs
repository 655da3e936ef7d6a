//! A depth-capped `Arbitrary` JSON value (the derive has no depth limit, so
//! fuzzer input could recurse without bound).

use arbitrary::{Arbitrary, Result, Unstructured};
use serde_json::{Map, Number, Value};

/// Deepest nesting generated.
pub const MAX_DEPTH: usize = 8;

/// A JSON value whose numbers the strict profile accepts (integers within
/// ±(2^53−1), any finite double, which serde_json writes with a fraction or
/// an exponent).
#[derive(Debug, Clone, PartialEq)]
pub struct ArbitraryJson(pub Value);

impl<'a> Arbitrary<'a> for ArbitraryJson {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        value(u, MAX_DEPTH).map(ArbitraryJson)
    }
}

/// An arbitrary JSON object.
pub fn object(u: &mut Unstructured<'_>, depth: usize) -> Result<Map<String, Value>> {
    let mut map = Map::new();
    let n = u.int_in_range(0..=4)?;
    for _ in 0..n {
        let key = String::arbitrary(u)?;
        let v = value(u, depth.saturating_sub(1))?;
        map.insert(key, v);
    }
    Ok(map)
}

/// An arbitrary JSON value at most `depth` levels deep.
pub fn value(u: &mut Unstructured<'_>, depth: usize) -> Result<Value> {
    let kinds = if depth == 0 { 5 } else { 7 };
    Ok(match u.int_in_range(0..=kinds - 1)? {
        0 => Value::Null,
        1 => Value::Bool(bool::arbitrary(u)?),
        2 => {
            let n = i64::arbitrary(u)? % (1 << 53);
            Value::Number(n.into())
        }
        3 => {
            // Any finite double: serde_json writes it with a fraction or an
            // exponent, which the strict profile accepts at any magnitude.
            let f = f64::arbitrary(u)?;
            match Number::from_f64(f) {
                Some(n) => Value::Number(n),
                None => Value::Number(0.into()),
            }
        }
        4 => Value::String(String::arbitrary(u)?),
        5 => {
            let n = u.int_in_range(0..=4)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(value(u, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => Value::Object(object(u, depth)?),
    })
}
