//! `portcullis audit verify`: every line held to its record's shape, then
//! intents paired with outcomes per session and ticket.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use portcullis_wire::Limits;
use serde_json::Value;

use super::shape::problems;

/// Malformed lines shown in full; the rest are counted.
const SHOWN_PROBLEMS: usize = 20;

#[derive(Debug, Default)]
pub(super) struct Tally {
    pub(super) records: u64,
    pub(super) rejections: u64,
    pub(super) intents: u64,
    pub(super) outcomes: u64,
    /// (session, ticket) → (line, tool, time) of intents awaiting an outcome.
    pub(super) open: BTreeMap<(String, u64), (usize, String, String)>,
    pub(super) malformed: Vec<(usize, String)>,
}

pub(super) fn verify(path: &Path, out: impl Write) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut tally = Tally::default();
    let mut rest = &bytes[..];
    let mut number = 0;
    while !rest.is_empty() {
        number += 1;
        let (line, next, terminated) = match memchr::memchr(b'\n', rest) {
            Some(end) => (&rest[..end], &rest[end + 1..], true),
            None => (rest, &rest[rest.len()..], false),
        };
        rest = next;
        if !terminated {
            tally
                .malformed
                .push((number, "truncated final line (no newline)".into()));
            continue;
        }
        if let Err(why) = tally.record(number, line) {
            tally.malformed.push((number, why));
        }
    }
    let mut out = io::BufWriter::new(out);
    writeln!(out, "{}: {} records", path.display(), tally.records)?;
    writeln!(out, "rejections: {}", tally.rejections)?;
    writeln!(out, "intents: {}", tally.intents)?;
    writeln!(out, "outcomes: {}", tally.outcomes)?;
    writeln!(out, "interrupted: {}", tally.open.len())?;
    for ((session, ticket), (line, tool, time)) in &tally.open {
        writeln!(
            out,
            "  line {line}: session {session} ticket {ticket} tool {tool:?} at {time}: no outcome (interrupted)"
        )?;
    }
    writeln!(out, "malformed: {}", tally.malformed.len())?;
    for (line, why) in tally.malformed.iter().take(SHOWN_PROBLEMS) {
        writeln!(out, "  line {line}: {why}")?;
    }
    if tally.malformed.len() > SHOWN_PROBLEMS {
        writeln!(
            out,
            "  ... and {} more",
            tally.malformed.len() - SHOWN_PROBLEMS
        )?;
    }
    out.flush()?;
    // The verdict, for whoever reads only stderr (a script checking the
    // exit status): each malformed line, by number, and what is wrong.
    let mut err = io::stderr().lock();
    for (line, why) in tally.malformed.iter().take(SHOWN_PROBLEMS) {
        writeln!(err, "portcullis: {}: line {line}: {why}", path.display())?;
    }
    if tally.malformed.len() > SHOWN_PROBLEMS {
        writeln!(
            err,
            "portcullis: {}: ... and {} more malformed lines",
            path.display(),
            tally.malformed.len() - SHOWN_PROBLEMS
        )?;
    }
    Ok(if tally.malformed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

impl Tally {
    pub(super) fn record(&mut self, number: usize, line: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_owned())?;
        let value = portcullis_wire::strict_json::parse_value(text, &Limits::default())
            .map_err(|r| format!("not one strict JSON value ({})", r.reason))?;
        let Value::Object(record) = value else {
            return Err("not a JSON object".into());
        };
        let found = problems(&record);
        if !found.is_empty() {
            return Err(found.join("; "));
        }
        // Every member is present and well-typed past this point.
        let string = |key: &str| record.get(key).and_then(Value::as_str).unwrap_or_default();
        let ticket = record
            .get("ticket")
            .and_then(Value::as_u64)
            .unwrap_or_default();
        let session = string("session");
        match string("kind") {
            "rejection" => self.rejections += 1,
            "intent" => {
                let key = (session.to_owned(), ticket);
                if self.open.contains_key(&key) {
                    return Err(format!(
                        "ticket {ticket} has a second intent in session {session}"
                    ));
                }
                self.open.insert(
                    key,
                    (number, string("tool").to_owned(), string("time").to_owned()),
                );
                self.intents += 1;
            }
            _ => {
                if self.open.remove(&(session.to_owned(), ticket)).is_none() {
                    return Err(format!(
                        "outcome for ticket {ticket} in session {session} has no open intent before it"
                    ));
                }
                self.outcomes += 1;
            }
        }
        self.records += 1;
        Ok(())
    }
}
