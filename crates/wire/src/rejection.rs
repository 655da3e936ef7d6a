//! The typed failure every stage returns.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::rpc::Id;

/// The pipeline stage at which a frame was refused, in data-flow order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Stage {
    /// Line splitting: over-long, truncated at end of input, empty.
    Framing,
    /// The frame is not valid UTF-8.
    Utf8,
    /// The frame is not exactly one strictly valid JSON value.
    Json,
    /// The value is not a well-formed JSON-RPC 2.0 message.
    Rpc,
    /// The message is not valid MCP for this session (era, lifecycle,
    /// method, params, id reuse).
    Mcp,
    /// Tool arguments do not match the tool's input schema.
    Schema,
    /// The call is not authorized (unknown target, host not allowed,
    /// credential missing).
    Authz,
}

impl Stage {
    /// All stages, in data-flow order.
    pub const ALL: [Stage; 7] = [
        Stage::Framing,
        Stage::Utf8,
        Stage::Json,
        Stage::Rpc,
        Stage::Mcp,
        Stage::Schema,
        Stage::Authz,
    ];

    /// Stable lowercase name used in JSON reports and ledgers.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Framing => "framing",
            Stage::Utf8 => "utf8",
            Stage::Json => "json",
            Stage::Rpc => "rpc",
            Stage::Mcp => "mcp",
            Stage::Schema => "schema",
            Stage::Authz => "authz",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// SHA-256 of a frame's bytes, for logs and audit records that must be able
/// to correlate a rejection without ever holding the bytes themselves.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// Fingerprint of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// Fingerprint of `value`'s text, hashed as it is formatted: the text
    /// is never built.
    pub fn of_display(value: &impl fmt::Display) -> Self {
        struct Hashing(Sha256);
        impl fmt::Write for Hashing {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                self.0.update(s.as_bytes());
                Ok(())
            }
        }
        let mut hashing = Hashing(Sha256::new());
        // Writing into a hasher cannot fail.
        let _ = fmt::write(&mut hashing, format_args!("{value}"));
        Self::from_hasher(hashing.0)
    }

    /// Fingerprint of data that arrived in pieces (an over-long line is
    /// never held whole, so it is hashed as it streams past).
    pub fn from_hasher(hasher: Sha256) -> Self {
        Self(hasher.finalize().into())
    }

    /// Lowercase hex, 64 characters.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }
}

// Both forms hex-encode on the stack: the fuzz harnesses' leak check
// formats every rejection record of every session, so an allocation per
// fingerprint showed up in their profiles.
impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut hex = [0u8; 16];
        f.write_str("Fingerprint(")?;
        f.write_str(hex_of(&self.0[..8], &mut hex))?;
        f.write_str(")")
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut hex = [0u8; 64];
        f.write_str(hex_of(&self.0, &mut hex))
    }
}

/// `bytes` as lowercase hex in `out`, which must be twice as long.
fn hex_of<'a>(bytes: &[u8], out: &'a mut [u8]) -> &'a str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (pair, byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0x0f)];
    }
    // Only ASCII digits were written.
    std::str::from_utf8(out).unwrap_or_default()
}

/// Why a frame was refused. It never holds the frame: only the stage, the
/// JSON-RPC code the failure maps to, a reason written by Portcullis (not
/// echoing input content), the request id when one could be read, and a
/// fingerprint of the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Where in the pipeline the frame was refused.
    pub stage: Stage,
    /// The JSON-RPC error code this failure maps to.
    pub code: i64,
    /// Human-readable reason; never contains argument values.
    pub reason: String,
    /// The request id, when the frame got far enough for one to be read.
    pub id: Option<Id>,
    /// SHA-256 of the frame's bytes.
    pub fingerprint: Fingerprint,
}

impl Rejection {
    /// A rejection of `frame` at `stage`.
    pub fn new(stage: Stage, code: i64, reason: impl Into<String>, frame: &[u8]) -> Self {
        Self {
            stage,
            code,
            reason: reason.into(),
            id: None,
            fingerprint: Fingerprint::of(frame),
        }
    }

    /// The same rejection, carrying the request id that could be read.
    pub fn with_id(mut self, id: Option<Id>) -> Self {
        self.id = id;
        self
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} stage rejected frame ({}): {}",
            self.stage, self.code, self.reason
        )
    }
}

impl std::error::Error for Rejection {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Formats itself in many small writes.
    struct Pieces(&'static [&'static str]);

    impl fmt::Display for Pieces {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.iter().try_for_each(|piece| f.write_str(piece))
        }
    }

    #[test]
    fn a_display_is_fingerprinted_as_the_text_it_writes() {
        let pieces = Pieces(&["deploy", "@", "127.0.0.1", ":", "2222", " ", "systemctl é"]);
        assert_eq!(
            Fingerprint::of_display(&pieces),
            Fingerprint::of("deploy@127.0.0.1:2222 systemctl é".as_bytes())
        );
        assert_ne!(
            Fingerprint::of_display(&Pieces(&["GET"])),
            Fingerprint::of(b"GET ")
        );
    }
}
