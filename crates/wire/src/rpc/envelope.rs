//! The typed, borrowed envelope reader: the strict reader reads the
//! top-level object member by member into [`Members`] without judging the
//! members' types, so the JSON stage is decided first and the id can be
//! echoed when the shape is wrong.

use std::borrow::Cow;

use super::{Envelope, IdField, Members, Text};
use crate::id::Id;
use crate::json::Json;
use crate::strict_json::{Fault, Reader, Skim};

/// Read `text` as one strict JSON value into an envelope; `depth` levels of
/// arrays and objects may open, the top level included, and `max_values`
/// values may be read, the top level included. With `skim`, `params` is
/// read as [`Reader::skimmed`] reads it.
pub(super) fn read<'a>(
    text: &'a str,
    depth: usize,
    max_values: usize,
    skim: Option<&Skim>,
) -> Result<Envelope<'a>, Fault> {
    Reader::read_whole(text, max_values, |reader| {
        if !reader.open_object()? {
            return Ok(match reader.value(depth)? {
                Json::Array(_) => Envelope::Array,
                scalar => Envelope::Scalar(scalar.kind()),
            });
        }
        // `effective_depth` is at least 1: the top-level object always opens.
        let child = depth.saturating_sub(1);
        let mut m = Members::default();
        reader.members(|reader, key| {
            let value = match skim {
                Some(skim) if key == "params" => reader.skimmed(child, skim)?,
                _ => reader.value(child)?,
            };
            let fresh = match &*key {
                "jsonrpc" => set(&mut m.jsonrpc, text_of(value)),
                "id" => set(&mut m.id, id_of(&value)),
                "method" => set(&mut m.method, text_of(value)),
                "params" => set(&mut m.params, value),
                "result" => set(&mut m.result, value.into_value()),
                "error" => set(&mut m.error, value.into_value()),
                _ => {
                    let fresh = !m.unknown.contains(&key);
                    if fresh {
                        m.unknown.push(key);
                    }
                    fresh
                }
            };
            if fresh {
                Ok(())
            } else {
                Err(reader.fault("duplicate object key"))
            }
        })?;
        Ok(Envelope::Object(m))
    })
}

/// Store `value` in `slot`; false if the member was already there.
fn set<T>(slot: &mut Option<T>, value: T) -> bool {
    let fresh = slot.is_none();
    if fresh {
        *slot = Some(value);
    }
    fresh
}

fn text_of(value: Json<'_>) -> Text<'_> {
    match value {
        Json::String(s) => Text::Str(s),
        other => Text::Other(other.kind()),
    }
}

/// An id is a string or an integer; integers beyond ±(2^53−1) were refused
/// by the JSON stage, as anywhere else in a frame.
fn id_of(value: &Json<'_>) -> IdField {
    match value {
        Json::String(s) => IdField::Valid(Id::Str(Cow::clone(s).into_owned())),
        // A number read from integer syntax is an `i64` or `u64` (and
        // within the safe range); a fraction, an exponent or `-0` made a
        // double, which has no `i64`: a number, but not an id.
        Json::Number(n) => match n.as_i64() {
            Some(int) => IdField::Valid(Id::Int(int)),
            None => IdField::Invalid("a number in fraction or exponent form"),
        },
        other => IdField::Invalid(other.kind()),
    }
}
