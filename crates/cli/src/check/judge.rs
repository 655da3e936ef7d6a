//! Run one script against a fresh server process and judge what it wrote:
//! framing, ids, silence, exit, and (optionally) the official schema.

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt as _;
use std::time::Duration;

use portcullis_wire::check_transcript;
use portcullis_wire::transcript::render_bytes;
use serde_json::Value;

use super::launch::{Answer, Ended, Launch, Session};
use super::schema::Schemas;
use super::script::{Sent, Step, classify};

/// Bounds and options shared by every run.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// How long to wait for each awaited response.
    pub response: Duration,
    /// How long the process may take to exit after stdin closes.
    pub exit: Duration,
}

/// One failed check.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Short name of the check (`framing`, `ids`, `silent`, `exit`, `crash`, `schema`).
    pub check: &'static str,
    pub message: String,
    /// 1-based stdout line the failure is about, with its raw bytes.
    pub line: Option<(usize, Vec<u8>)>,
}

impl Failure {
    fn plain(check: &'static str, message: String) -> Self {
        Self {
            check,
            message,
            line: None,
        }
    }
}

/// Which requests the runner waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A client script: every request must be answered.
    Script,
    /// Hostile input: only the handshake and the final liveness `ping`
    /// are awaited; the server may answer the rest or close, never hang or
    /// crash.
    Hostile,
}

/// What one run produced.
#[derive(Debug)]
pub struct Outcome {
    pub ended: Ended,
    pub failures: Vec<Failure>,
    /// The revision the server negotiated, when it said.
    pub revision: Option<String>,
}

/// The id of the liveness `ping` of hostile runs.
pub const LIVENESS_ID: &str = "900001";

/// Launch, run `steps`, close stdin and judge. `Err` only when the command
/// cannot be launched.
pub fn run(
    launch: &Launch,
    steps: &[Step],
    mode: Mode,
    bounds: &Bounds,
    schemas: Option<&Schemas>,
) -> std::io::Result<Outcome> {
    let mut session = Session::start(launch)?;
    let mut sent: Vec<(u128, Sent)> = Vec::new();
    let mut failures = Vec::new();
    let mut hostile_from: Option<usize> = None;
    let mut liveness = None;
    for step in steps {
        let bytes = match step {
            Step::Delay(d) => {
                std::thread::sleep(*d);
                continue;
            }
            Step::Send(bytes) => bytes,
        };
        let what = classify(bytes);
        let awaited = match (&what, mode) {
            (Sent::Request { .. }, Mode::Script) => true,
            (Sent::Request { id, method }, Mode::Hostile) => {
                id == LIVENESS_ID || method == "initialize" || method == "server/discover"
            }
            _ => false,
        };
        if mode == Mode::Hostile && !awaited && hostile_from.is_none() {
            hostile_from = Some(session.stdout_len());
        }
        sent.push((session.elapsed_ms(), what.clone()));
        if !session.send(bytes) {
            break;
        }
        let Sent::Request { id, method } = &what else {
            continue;
        };
        if !awaited {
            continue;
        }
        let answer = session.wait_for_answer(id, bounds.response);
        if id == LIVENESS_ID {
            liveness = Some(answer);
        }
        match (answer, mode) {
            (Answer::Answered, _) => {}
            (Answer::TimedOut, _) => {
                failures.push(Failure::plain(
                    "silent",
                    format!(
                        "no response to request id {id} (`{method}`) within {} ms",
                        bounds.response.as_millis()
                    ),
                ));
                break;
            }
            (Answer::Closed, Mode::Script) => {
                failures.push(Failure::plain(
                    "silent",
                    format!("stdout closed before the response to request id {id} (`{method}`)"),
                ));
                break;
            }
            (Answer::Closed, Mode::Hostile) => break,
        }
    }
    let ended = session.finish(bounds.exit);
    judge_exit(&ended, bounds, &mut failures);
    if mode == Mode::Hostile && liveness == Some(Answer::Closed) {
        judge_close(&ended, hostile_from.unwrap_or(0), &mut failures);
    }
    if ended.stdout.truncated {
        failures.push(Failure::plain(
            "volume",
            format!(
                "wrote more than {} bytes to stdout; the rest was not kept",
                super::launch::MAX_CAPTURE
            ),
        ));
    }
    let framing = check_transcript(&ended.stdout.bytes);
    if let Err(v) = &framing {
        // The headline: the first stdout bytes that are not a frame.
        failures.insert(
            0,
            Failure {
                check: "framing",
                message: v.to_string(),
                line: Some((v.line, v.raw.clone())),
            },
        );
    }
    judge_ids(&ended, &sent, mode, &mut failures);
    let revision = negotiated(&ended.stdout.bytes);
    if let (Some(schemas), Some(rev)) = (schemas, revision.as_deref()) {
        let requests: HashMap<String, String> = sent
            .iter()
            .filter_map(|(_, s)| match s {
                Sent::Request { id, method } => Some((id.clone(), method.clone())),
                _ => None,
            })
            .collect();
        if let Err(f) = schemas.check(&ended.stdout.bytes, rev, &requests) {
            failures.push(f);
        }
    }
    Ok(Outcome {
        ended,
        failures,
        revision,
    })
}

fn judge_exit(ended: &Ended, bounds: &Bounds, failures: &mut Vec<Failure>) {
    match ended.status {
        None => failures.push(Failure::plain(
            "exit",
            format!(
                "did not exit within {} ms after stdin closed (killed)",
                bounds.exit.as_millis()
            ),
        )),
        Some(status) => {
            if let Some(signal) = status.signal() {
                failures.push(Failure::plain(
                    "crash",
                    format!("killed by signal {signal}"),
                ));
            }
        }
    }
}

/// What runtimes print when a program dies of an unhandled error.
const CRASH_SIGNATURES: [&str; 9] = [
    "Traceback (most recent call last)",
    "panicked at",
    "Uncaught",
    "uncaught exception",
    "UnhandledPromiseRejection",
    "Exception in thread",
    "goroutine 1 [",
    "Segmentation fault",
    "core dumped",
];

/// The liveness ping went unanswered because stdout closed. That is a
/// clean close when the server exited 0, or exited with a failure status
/// after answering the hostile input and without a crash report on
/// stderr; it is a crash when it died in silence or printed one. A crash
/// report is looked for in stderr's head and in its tail, which is where
/// it lands after a flood of logs.
fn judge_close(ended: &Ended, hostile_from: usize, failures: &mut Vec<Failure>) {
    let Some(status) = ended.status else { return };
    let Some(code) = status.code() else { return };
    if code == 0 {
        return;
    }
    let kept: Vec<String> = ended
        .stderr
        .kept()
        .iter()
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect();
    let signature = CRASH_SIGNATURES
        .iter()
        .find(|s| kept.iter().any(|part| part.contains(*s)));
    let answered = ended.stdout.bytes.len() > hostile_from;
    if answered && signature.is_none() {
        return;
    }
    let last = kept
        .iter()
        .rev()
        .find_map(|part| part.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("");
    let how = match signature {
        Some(s) => format!("with a crash report on stderr ({s:?})"),
        None => "without answering it".to_owned(),
    };
    failures.push(Failure::plain(
        "crash",
        format!(
            "exited with status {code} on hostile input {how} (last stderr line: {})",
            render_bytes(last.as_bytes())
        ),
    ));
}

/// Every response answers exactly one sent request, once; nothing answers
/// a notification. Hostile input may carry ids a strict reader cannot
/// see (invalid UTF-8, lone surrogates), so there only a second response to
/// a known request counts.
fn judge_ids(ended: &Ended, sent: &[(u128, Sent)], mode: Mode, failures: &mut Vec<Failure>) {
    // A script may reuse an id: each request with it may be answered once.
    let mut open: HashMap<&str, usize> = HashMap::new();
    for (_, s) in sent {
        if let Sent::Request { id, .. } = s {
            *open.entry(id).or_default() += 1;
        }
    }
    // id → line of its latest response.
    let mut answered: HashMap<String, usize> = HashMap::new();
    let bytes = &ended.stdout.bytes;
    let mut offset = 0;
    for (n, raw) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let at = ended.stdout.arrival_ms(offset);
        offset += raw.len();
        let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(raw) else {
            continue;
        };
        if message.contains_key("method") {
            continue;
        }
        let Some(id) = message.get("id").filter(|v| !v.is_null()) else {
            continue;
        };
        let id = id.to_string();
        let line = Some((n + 1, raw.to_vec()));
        if let Some(left) = open.get_mut(id.as_str())
            && *left > 0
        {
            *left -= 1;
            answered.insert(id, n + 1);
            continue;
        }
        if mode == Mode::Hostile && !answered.contains_key(&id) {
            continue;
        }
        // A response that answers nothing open, arriving after a
        // notification was sent, is most likely the reply to it.
        let after_notification = sent
            .iter()
            .rev()
            .filter(|(t, _)| *t <= at)
            .find_map(|(_, s)| match s {
                Sent::Notification { method } => Some(method.as_str()),
                _ => None,
            });
        let why = match (answered.get(&id), after_notification) {
            (_, Some(method)) => format!(
                "a reply to the notification `{method}`: response id {id} answers no outstanding request"
            ),
            (Some(first), None) => format!("a second response to id {id} (first on line {first})"),
            (None, None) => format!("response id {id} matches no sent request"),
        };
        failures.push(Failure {
            check: "ids",
            message: format!("{why} on line {}: {}", n + 1, render_bytes(raw)),
            line,
        });
        return;
    }
}

/// The revision from the initialize result, else the modern one when the
/// server answered `server/discover`.
fn negotiated(stdout: &[u8]) -> Option<String> {
    for line in stdout.split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let Some(result) = value.get("result") else {
            continue;
        };
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            return Some(v.to_owned());
        }
        if let Some(v) = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().filter_map(Value::as_str).max())
        {
            return Some(v.to_owned());
        }
    }
    None
}
