//! Strict JSON: one value per frame under an I-JSON profile (RFC 7493).
//!
//! The rules, stricter than RFC 8259 and than serde_json's defaults:
//!
//! - **Duplicate keys** are rejected at every depth, compared after
//!   unescaping (`"met\u0068od"` repeats `"method"`); `serde_json::Value`
//!   silently keeps the last one.
//! - **Depth**: arrays and objects nest at most [`Limits::max_depth`]
//!   levels (the top-level value is level 1), refused before recursing
//!   further, so no input can exhaust the stack.
//! - **Values**: a frame holds at most [`Limits::max_values`] values
//!   (scalars, arrays and objects alike, at any depth, also where nothing
//!   is kept), refused at the first one past the limit before it is read,
//!   so no frame builds a tree larger than the limit however dense its
//!   text.
//! - **Trailing content**: exactly one value, then only whitespace (`{}{}`
//!   is refused).
//! - **Numbers**: a number written in integer syntax must lie within
//!   ±(2^53−1), the range every I-JSON peer reads exactly. A finite number
//!   written with a fraction or an exponent (`0.1`, `1.5e300`, `1E22`) is a
//!   double, and every peer reads it as the same double, so it is accepted;
//!   one that overflows a double (`1e400`) is refused.
//! - **Strings**: lone surrogate escapes (`"\ud800"`) and raw control
//!   characters are refused. A byte-order mark before the value is refused
//!   as unexpected input; a U+FEFF character inside a string is ordinary
//!   text and is kept.
//!
//! [`reader`] is the hand-written reader every frame goes through: one pass,
//! strings and keys borrowed from the frame unless they hold escapes.
//! [`reference`] reads the same profile through serde_json's tokenizer; it
//! is the reader's second opinion in the differential tests and fuzz
//! targets, and it words refusals (serde_json's messages, with line and
//! column).

use std::borrow::Cow;

use serde_json::Value;

use crate::codes::PARSE_ERROR;
use crate::json::Json;
use crate::limits::Limits;
use crate::rejection::{Rejection, Stage};

pub(crate) mod reader;
pub mod reference;

pub use reader::Skim;
pub(crate) use reader::{Fault, Reader};

/// Largest integer magnitude every I-JSON peer can represent exactly.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Parse `text` as exactly one strict JSON value of any type.
pub fn parse_value(text: &str, limits: &Limits) -> Result<Value, Rejection> {
    parse_json(text, limits).map(Json::into_value)
}

/// Parse `text` as exactly one strict JSON value under the same rules as
/// [`parse_value`], borrowing its strings from `text` where they hold no
/// escapes.
pub fn parse_json<'a>(text: &'a str, limits: &Limits) -> Result<Json<'a>, Rejection> {
    let depth = limits.effective_depth();
    Reader::read_whole(text, limits.max_values, |reader| reader.value(depth))
        .map_err(|fault| refusal(text, limits, fault))
}

/// The JSON-stage rejection of `text`, which the reader refused with
/// `fault`. The reason is the reference reading's, which refuses every text
/// the reader refuses; if it ever accepted one, the frame is refused all
/// the same, with the reader's own account of why.
pub(crate) fn refusal(text: &str, limits: &Limits, fault: Fault) -> Rejection {
    match reference::verdict(text, limits) {
        Err(rejection) => rejection,
        Ok(()) => Rejection::new(Stage::Json, PARSE_ERROR, fault.to_string(), text.as_bytes()),
    }
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
