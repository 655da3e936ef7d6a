//! UTF-8 stage: a frame is text or it is refused. Never decoded lossily.

use crate::codes::PARSE_ERROR;
use crate::rejection::{Rejection, Stage};

/// Borrow `frame` as text, or reject it at the UTF-8 stage. The verdict is
/// simdutf8's (several times faster than the standard library's on mostly
/// ASCII frames); a refused frame is read again by the standard library,
/// which says where it stops being UTF-8.
pub fn decode(frame: &[u8]) -> Result<&str, Rejection> {
    if let Ok(text) = simdutf8::basic::from_utf8(frame) {
        return Ok(text);
    }
    std::str::from_utf8(frame).map_err(|err| {
        Rejection::new(
            Stage::Utf8,
            PARSE_ERROR,
            format!("invalid UTF-8 at byte {}", err.valid_up_to()),
            frame,
        )
    })
}
