//! The lowest layer of Portcullis: bytes in, JSON-RPC messages out, and the
//! reverse for stdout.
//!
//! The modules follow the inbound data flow. [`frame`] splits a byte stream
//! into newline-terminated frames under a hard size cap; [`utf8`] refuses
//! anything that is not UTF-8; [`strict_json`] parses exactly one JSON value
//! per frame under an I-JSON profile (no duplicate keys, bounded depth and
//! count of values, exact integers), as a `serde_json::Value` or as a
//! [`json::Json`] that borrows its strings from the frame; [`rpc`] classifies the value as a JSON-RPC request,
//! notification or response (its typed [`id`] read as the envelope is). Every failure is a [`Rejection`] that names its
//! [`Stage`], carries the JSON-RPC error code it maps to and a fingerprint of
//! the frame, never the frame itself.
//!
//! Outbound, [`encode`] turns a message into exactly one compact line, and
//! [`transcript`] checks captured stdout bytes line by line. The checker is
//! written independently of the encoder so that it can serve as its oracle.

#![forbid(unsafe_code)]

pub mod encode;
pub mod frame;
pub mod id;
pub mod json;
pub mod limits;
pub mod rejection;
pub mod rpc;
pub mod strict_json;
pub mod transcript;
pub mod utf8;

pub use encode::{EncodeError, Outbound, encode};
pub use frame::{FrameEvent, FrameReader};
pub use json::{Json, Object};
pub use limits::Limits;
pub use rejection::{Fingerprint, Rejection, Stage};
pub use rpc::{
    ErrorObject, Id, RpcMessage, Unworded, parse_message, parse_message_borrowed,
    parse_message_skimmed,
};
pub use strict_json::Skim;
pub use transcript::{TranscriptViolation, Violation, check_line, check_transcript};

/// JSON-RPC 2.0 error codes used at the boundary.
pub mod codes {
    /// Invalid JSON was received (framing, UTF-8 and JSON stages).
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
}
