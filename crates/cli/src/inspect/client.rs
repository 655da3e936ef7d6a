//! The client direction: each line is an inbound frame, judged by the
//! gateway's own stages.

use std::io::{Read, Write};

use portcullis_gateway::mcp::REQUEST_METHODS;
use portcullis_wire::codes::INVALID_REQUEST;
use portcullis_wire::{
    FrameEvent, FrameReader, Limits, Rejection, RpcMessage, Stage, parse_message, utf8,
};

use super::report::{Report, Verdict};
use super::{CHUNK_BYTES, Failure, read_chunk};

/// Check inbound frames exactly as the gateway's wire stages would.
pub(super) fn inspect_client<W: Write>(
    input: &mut dyn Read,
    limits: &Limits,
    report: &mut Report<W>,
) -> Result<(), Failure> {
    let mut reader = FrameReader::new(limits.max_frame_bytes);
    let mut buf = vec![0; CHUNK_BYTES];
    loop {
        let n = read_chunk(input, &mut buf)?;
        if n == 0 {
            break;
        }
        reader.feed(&buf[..n], |line, event| {
            client_event(line, event, limits, report);
        });
        report.check()?;
    }
    reader.finish(|line, event| client_event(line, event, limits, report));
    report.check()
}

fn client_event<W: Write>(
    line: u64,
    event: FrameEvent<'_>,
    limits: &Limits,
    report: &mut Report<W>,
) {
    match event {
        FrameEvent::Frame(frame) => match judge_client_frame(frame, limits) {
            Ok(message) => report.record(line, &Verdict::accepted(&message)),
            Err(rejection) => report.record(line, &Verdict::Rejected(&rejection)),
        },
        FrameEvent::Rejected(rejection) => report.record(line, &Verdict::Rejected(&rejection)),
    }
}

/// The gateway's stages for one frame from the client, up to the point
/// where session state matters: UTF-8, strict JSON, JSON-RPC, then the MCP
/// stage's rules on the message's shape (with the gateway's reasons).
fn judge_client_frame<'a>(frame: &'a [u8], limits: &Limits) -> Result<RpcMessage<'a>, Rejection> {
    let text = utf8::decode(frame)?;
    let message = parse_message(text, limits)?;
    let reason = match &message {
        RpcMessage::Request { .. } => return Ok(message),
        RpcMessage::Notification { method, .. } if !REQUEST_METHODS.contains(&&**method) => {
            return Ok(message);
        }
        RpcMessage::Notification { method, .. } => format!(
            "{method} sent as a notification (no id): requests need an id and are never executed without one"
        ),
        RpcMessage::Response { .. } | RpcMessage::Error { .. } => {
            "a response from the client is invalid: the gateway sends no requests".to_owned()
        }
    };
    Err(Rejection::new(Stage::Mcp, INVALID_REQUEST, reason, frame).with_id(message.id().cloned()))
}
