//! The journal writers held to failing closed: a [`Sink`] that fails at
//! one chosen write or sync (and takes every later one, as a disk that
//! freed space would), a stepped clock, and the judge of a session run
//! over them ([`fails_closed`]). Shared by the tests of the file writer,
//! `mcp`'s journal and `wrap`'s journal.
//!
//! The judge runs the session once on a sink that never fails, then once
//! for every operation `k` of that run on a sink whose operation `k`
//! fails, and holds each run to the journal's promise (docs/audit.md):
//! the appends before the failure report success, the one it hits and
//! every later one report failure, nothing is written or synced after it,
//! what landed is the clean run's bytes up to the failure, and it verifies
//! as a session cut short (its last line cut in its write at most).

use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use super::verify::verify_stream;
use super::{Clock, Sink};

/// How the chosen operation fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A write or sync returns an error (a full disk, an I/O error).
    Error,
    /// A write takes no byte (`Ok(0)`); a sync chosen fails with an error.
    Zero,
}

/// When and how a sink fails.
#[derive(Debug, Clone, Copy)]
pub struct Script {
    /// Bytes one write takes at most: a line then takes several writes,
    /// and a failure may cut it.
    pub chunk: usize,
    /// The operation (writes and syncs counted together, from 0) that
    /// fails; `None`: none does.
    pub fail_at: Option<usize>,
    pub failure: Failure,
}

/// What reached a sink, shared with the test that made it.
#[derive(Debug, Default, Clone)]
pub struct Tape {
    /// The bytes written, in order.
    pub bytes: Vec<u8>,
    /// Operations (writes and syncs) asked of the sink.
    pub ops: usize,
    /// Bytes written when the last sync succeeded.
    pub synced: usize,
}

/// A sink that fails as its [`Script`] says.
#[derive(Debug)]
pub struct FlakySink {
    script: Script,
    tape: Arc<Mutex<Tape>>,
}

impl FlakySink {
    /// A sink and the tape to read it by.
    pub fn new(script: Script) -> (Self, Arc<Mutex<Tape>>) {
        let tape = Arc::new(Mutex::new(Tape::default()));
        let sink = Self {
            script,
            tape: Arc::clone(&tape),
        };
        (sink, tape)
    }

    /// Count one operation; whether it is the one to fail.
    fn fails(&self, tape: &mut Tape) -> bool {
        let this = tape.ops;
        tape.ops += 1;
        self.script.fail_at == Some(this)
    }
}

fn read(tape: &Mutex<Tape>) -> std::sync::MutexGuard<'_, Tape> {
    tape.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Write for FlakySink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut tape = read(&self.tape);
        if self.fails(&mut tape) {
            return match self.script.failure {
                Failure::Error => Err(io::Error::from(io::ErrorKind::StorageFull)),
                Failure::Zero => Ok(0),
            };
        }
        let n = buf.len().min(self.script.chunk);
        tape.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink for FlakySink {
    fn sync_data(&mut self) -> io::Result<()> {
        let mut tape = read(&self.tape);
        if self.fails(&mut tape) {
            return Err(io::Error::other("an I/O error on sync"));
        }
        tape.synced = tape.bytes.len();
        Ok(())
    }
}

/// A clock that starts at `start` and moves by each of `steps_ms` in turn
/// (back when negative), then stays; and every reading it gave.
pub fn stepped(start: SystemTime, steps_ms: &[i64]) -> (Clock, Arc<Mutex<Vec<SystemTime>>>) {
    let readings = Arc::new(Mutex::new(Vec::new()));
    let given = Arc::clone(&readings);
    let mut now = start;
    let mut steps = Vec::from(steps_ms).into_iter();
    let clock = Box::new(move || {
        let reading = now;
        given
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(reading);
        if let Some(step) = steps.next() {
            let by = Duration::from_millis(step.unsigned_abs());
            now = if step < 0 { now - by } else { now + by };
        }
        reading
    });
    (clock, readings)
}

/// One append as the session saw it.
#[derive(Debug, Clone)]
pub struct Step {
    /// What the append returned (`None`: it returns nothing, as `mcp`'s
    /// close).
    pub ok: Option<bool>,
    /// Whether its record must be on disk when it returns (a start, an
    /// intent, an end).
    pub synced: bool,
    /// The tape right after it returned.
    pub after: Tape,
}

/// Notes each append of a session run on a [`FlakySink`].
#[derive(Debug)]
pub struct Recorder {
    tape: Arc<Mutex<Tape>>,
    pub steps: Vec<Step>,
}

impl Recorder {
    /// Note an append that returned `result` (or nothing); `synced`: its
    /// record must be synced when it returns.
    pub fn step(&mut self, result: Option<io::Result<()>>, synced: bool) {
        let after = read(&self.tape).clone();
        self.steps.push(Step {
            ok: result.map(|r| r.is_ok()),
            synced,
            after,
        });
    }
}

/// Run `session` on a sink scripted by `chunk`, `fail_at` and `failure`.
fn run(session: &mut dyn FnMut(Box<dyn Sink>, &mut Recorder), script: Script) -> (Vec<Step>, Tape) {
    let (sink, tape) = FlakySink::new(script);
    let mut recorder = Recorder {
        tape: Arc::clone(&tape),
        steps: Vec::new(),
    };
    session(Box::new(sink), &mut recorder);
    let tape = read(&tape).clone();
    (recorder.steps, tape)
}

/// Hold `session` (a whole session, start to end, written on the sink it
/// is given, each append noted) to failing closed at every operation,
/// each write cut into `chunk`-byte pieces, the failure of kind `failure`.
/// `key`: the session's key, for the verifier.
pub fn fails_closed(
    session: &mut dyn FnMut(Box<dyn Sink>, &mut Recorder),
    chunk: usize,
    failure: Failure,
    key: Option<&[u8]>,
) {
    let clean_script = Script {
        chunk,
        fail_at: None,
        failure,
    };
    let (clean_steps, clean) = run(session, clean_script);
    for (i, step) in clean_steps.iter().enumerate() {
        assert_eq!(
            step.ok,
            step.ok.map(|_| true),
            "append {i} failed on a sink that does not fail"
        );
        if step.synced && step.ok.is_some() {
            assert_eq!(
                step.after.synced,
                step.after.bytes.len(),
                "append {i} returned before its record was synced"
            );
        }
    }
    let verdict = verify_stream(clean.bytes.as_slice(), key.map(<[u8]>::to_vec), false)
        .expect("reading a slice");
    assert!(
        verdict.ok(),
        "the session written on a sink that does not fail: {:#?}",
        verdict.problems
    );

    for k in 0..clean.ops {
        let script = Script {
            fail_at: Some(k),
            ..clean_script
        };
        let (steps, tape) = run(session, script);
        assert_eq!(steps.len(), clean_steps.len(), "failing at operation {k}");
        let hit = steps
            .iter()
            .position(|s| s.after.ops > k)
            .unwrap_or_else(|| panic!("operation {k} was never asked for"));
        for (i, (step, clean_step)) in steps.iter().zip(&clean_steps).enumerate() {
            if i < hit {
                assert_eq!(
                    step.ok, clean_step.ok,
                    "operation {k} fails: append {i}, before it"
                );
                assert_eq!(
                    step.after.bytes, clean_step.after.bytes,
                    "operation {k} fails: append {i}, before it, wrote other bytes"
                );
            } else {
                assert_ne!(
                    step.ok,
                    Some(true),
                    "operation {k} failed in append {hit}, yet append {i} reports success (fail-open)"
                );
            }
        }
        assert_eq!(
            tape.ops,
            k + 1,
            "operation {k} failed, yet the sink was asked for {} more (appending after a failed write)",
            tape.ops - k - 1
        );
        let landed = tape.bytes.len();
        assert_eq!(
            tape.bytes,
            clean.bytes[..landed],
            "operation {k} fails: what landed is not the clean run's bytes up to the failure"
        );
        let verdict = verify_stream(tape.bytes.as_slice(), key.map(<[u8]>::to_vec), true)
            .expect("reading a slice");
        let lines = tape.bytes.split(|&b| b == b'\n').count() as u64;
        let cut = !tape.bytes.is_empty() && !tape.bytes.ends_with(b"\n");
        let problems: Vec<(u64, &str)> = verdict
            .problems
            .kept
            .iter()
            .map(|p| (p.line, p.problem.as_str()))
            .collect();
        let expected: Vec<(u64, &str)> = if cut {
            vec![(lines, "truncated final line (no newline)")]
        } else {
            Vec::new()
        };
        assert_eq!(
            problems, expected,
            "operation {k} fails: what landed does not verify as a session cut short"
        );
    }
}

/// The problems `audit verify` finds in `bytes` under `key` (a session cut
/// short is one).
pub fn verify_problems(bytes: &[u8], key: Option<&[u8]>) -> Vec<(u64, String)> {
    verify_stream(bytes, key.map(<[u8]>::to_vec), false)
        .expect("reading a slice")
        .problems
        .kept
        .into_iter()
        .map(|p| (p.line, p.problem))
        .collect()
}
