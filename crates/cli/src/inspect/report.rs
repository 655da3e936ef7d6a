//! The report: one human line or one JSON object per input line, then (in
//! the human report) a summary.

use std::io::{self, Write};

use portcullis_wire::{Id, Rejection, RpcMessage};
use serde::Serialize;

use super::Failure;

/// Hex digits of a fingerprint shown in the human report (the JSON report
/// carries all 64).
const SHORT_FINGERPRINT: usize = 16;

/// The judgement on one input line.
#[derive(Debug)]
pub(super) enum Verdict<'a> {
    /// A client line the wire layer accepts.
    Accepted {
        kind: &'static str,
        method: &'a str,
        id: Option<&'a Id>,
    },
    /// A client line the wire layer refuses.
    Rejected(&'a Rejection),
    /// A server line that is a permitted protocol frame.
    Clean,
    /// A server line that is not; `raw` is the rendered bytes and `human`
    /// the full report line.
    NonProtocol {
        code: i64,
        reason: String,
        raw: String,
        human: String,
    },
}

impl<'a> Verdict<'a> {
    pub(super) fn accepted(message: &'a RpcMessage<'_>) -> Self {
        let method = match message {
            RpcMessage::Request { method, .. } | RpcMessage::Notification { method, .. } => method,
            // judge_client_frame lets only requests and notifications through.
            RpcMessage::Response { .. } | RpcMessage::Error { .. } => "",
        };
        Verdict::Accepted {
            kind: message.kind(),
            method,
            id: message.id(),
        }
    }

    fn is_ok(&self) -> bool {
        matches!(self, Verdict::Accepted { .. } | Verdict::Clean)
    }
}

/// One `--json` output object. `stage`, `code` and `reason` are present on
/// every object (null on accepted lines); the rest only when they apply.
#[derive(Debug, Serialize)]
struct JsonLine<'a> {
    line: u64,
    ok: bool,
    stage: Option<&'a str>,
    code: Option<i64>,
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Id>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fingerprint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a str>,
}

impl<'a> JsonLine<'a> {
    fn new(line: u64, verdict: &'a Verdict<'a>) -> Self {
        let mut out = JsonLine {
            line,
            ok: verdict.is_ok(),
            stage: None,
            code: None,
            reason: None,
            kind: None,
            method: None,
            id: None,
            fingerprint: None,
            raw: None,
        };
        match verdict {
            Verdict::Accepted { kind, method, id } => {
                out.kind = Some(kind);
                out.method = Some(method);
                out.id = *id;
            }
            Verdict::Rejected(rejection) => {
                out.stage = Some(rejection.stage.as_str());
                out.code = Some(rejection.code);
                out.reason = Some(&rejection.reason);
                out.id = rejection.id.as_ref();
                out.fingerprint = Some(rejection.fingerprint.to_hex());
            }
            Verdict::Clean => {}
            Verdict::NonProtocol {
                code, reason, raw, ..
            } => {
                out.stage = Some("transcript");
                out.code = Some(*code);
                out.reason = Some(reason);
                out.raw = Some(raw);
            }
        }
        out
    }
}

/// Writes the per-line report and counts verdicts. The frame reader's
/// callback cannot return an error, so the first write error is kept and
/// surfaced by [`Report::check`] after each chunk.
#[derive(Debug)]
pub(super) struct Report<W: Write> {
    out: W,
    json: bool,
    accepted: u64,
    pub(super) rejected: u64,
    error: Option<io::Error>,
}

impl<W: Write> Report<W> {
    pub(super) fn new(out: W, json: bool) -> Self {
        Self {
            out,
            json,
            accepted: 0,
            rejected: 0,
            error: None,
        }
    }

    pub(super) fn record(&mut self, line: u64, verdict: &Verdict<'_>) {
        if verdict.is_ok() {
            self.accepted += 1;
        } else {
            self.rejected += 1;
        }
        if self.error.is_some() {
            return;
        }
        let written = if self.json {
            self.write_json(line, verdict)
        } else {
            self.write_human(line, verdict)
        };
        if let Err(err) = written {
            self.error = Some(err);
        }
    }

    fn write_json(&mut self, line: u64, verdict: &Verdict<'_>) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, &JsonLine::new(line, verdict))?;
        self.out.write_all(b"\n")
    }

    fn write_human(&mut self, line: u64, verdict: &Verdict<'_>) -> io::Result<()> {
        let out = &mut self.out;
        match verdict {
            Verdict::Accepted { kind, method, id } => {
                // Debug formatting quotes the method and escapes control
                // characters, so no input can drive the terminal.
                write!(out, "line {line}: ok {kind} {method:?}")?;
                if let Some(id) = id {
                    write!(out, " id={id}")?;
                }
                writeln!(out)
            }
            Verdict::Rejected(rejection) => {
                write!(
                    out,
                    "line {line}: rejected [{} {}] {} (",
                    rejection.stage, rejection.code, rejection.reason
                )?;
                if let Some(id) = &rejection.id {
                    write!(out, "id={id}, ")?;
                }
                let hex = rejection.fingerprint.to_hex();
                writeln!(out, "fingerprint {})", &hex[..SHORT_FINGERPRINT])
            }
            Verdict::Clean => writeln!(out, "line {line}: ok"),
            Verdict::NonProtocol { human, .. } => writeln!(out, "{human}"),
        }
    }

    /// The first write error, if any.
    pub(super) fn check(&mut self) -> Result<(), Failure> {
        self.error
            .take()
            .map_or(Ok(()), |err| Err(Failure::Write(err)))
    }

    /// The summary line (human report only) and the final flush.
    pub(super) fn finish(&mut self) -> Result<(), Failure> {
        if !self.json {
            let total = self.accepted + self.rejected;
            writeln!(
                self.out,
                "{total} lines: {} accepted, {} rejected",
                self.accepted, self.rejected
            )
            .map_err(Failure::Write)?;
        }
        self.out.flush().map_err(Failure::Write)
    }
}
