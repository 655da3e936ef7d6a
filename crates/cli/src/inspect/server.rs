//! The server direction: each line of a captured stdout is held to the
//! transcript checker.

use std::io::{Read, Write};

use portcullis_wire::codes::{INVALID_REQUEST, PARSE_ERROR};
use portcullis_wire::transcript::render_bytes;
use portcullis_wire::{TranscriptViolation, Violation, check_line};

use super::report::{Report, Verdict};
use super::server_lines::{LineSplitter, ServerLine};
use super::{CHUNK_BYTES, Failure, read_chunk};

/// Check a server's stdout line by line with the transcript checker.
pub(super) fn inspect_server<W: Write>(
    input: &mut dyn Read,
    max_frame_bytes: usize,
    report: &mut Report<W>,
) -> Result<(), Failure> {
    let mut splitter = LineSplitter::new(max_frame_bytes);
    let mut buf = vec![0; CHUNK_BYTES];
    loop {
        let n = read_chunk(input, &mut buf)?;
        if n == 0 {
            break;
        }
        splitter.feed(&buf[..n], |line, event| {
            server_event(line, event, max_frame_bytes, report);
        });
        report.check()?;
    }
    splitter.finish(|line, event| server_event(line, event, max_frame_bytes, report));
    report.check()
}

fn server_event<W: Write>(
    line: u64,
    event: ServerLine<'_>,
    max_frame_bytes: usize,
    report: &mut Report<W>,
) {
    let as_violation = |raw: &[u8], violation: Violation| TranscriptViolation {
        line: usize::try_from(line).unwrap_or(usize::MAX),
        raw: raw.to_vec(),
        violation,
    };
    let violation = match event {
        ServerLine::Complete(raw) => match check_line(&raw[..raw.len() - 1]) {
            Ok(()) => return report.record(line, &Verdict::Clean),
            Err(violation) => as_violation(raw, violation),
        },
        ServerLine::Unterminated(raw) => as_violation(raw, Violation::MissingFinalNewline),
        ServerLine::OverLong {
            prefix,
            total,
            terminated,
        } => {
            let mut raw = render_bytes(prefix);
            if total > prefix.len() as u64 {
                raw.push_str(&format!("... ({total} bytes in all)"));
            }
            let mut reason = format!("line exceeds max_frame_bytes ({max_frame_bytes})");
            if !terminated {
                reason.push_str(" and has no final newline");
            }
            let human = format!("non-protocol stdout on line {line}: {raw}: {reason}");
            return report.record(
                line,
                &Verdict::NonProtocol {
                    code: PARSE_ERROR,
                    reason,
                    raw,
                    human,
                },
            );
        }
    };
    let code = match violation.violation {
        Violation::NotUtf8
        | Violation::NotJson(_)
        | Violation::EmptyLine
        | Violation::MissingFinalNewline => PARSE_ERROR,
        _ => INVALID_REQUEST,
    };
    report.record(
        line,
        &Verdict::NonProtocol {
            code,
            reason: violation.violation.to_string(),
            raw: render_bytes(&violation.raw),
            human: violation.to_string(),
        },
    );
}
