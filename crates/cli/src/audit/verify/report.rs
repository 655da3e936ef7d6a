//! The report of `audit verify`: text or one JSON object on stdout, and
//! the problems on stderr. Nothing a record holds is printed but what its
//! shape was checked to be (session ids, tool names, numbers).

use std::io::{self, Write};
use std::path::Path;

use serde_json::{Map, Value, json};

use super::{Interrupted, Session, Verdict};

/// Problems shown in the text report and on stderr; the rest are counted.
pub(in crate::audit) const SHOWN_PROBLEMS: usize = 20;

pub(in crate::audit) fn text(out: impl Write, path: &Path, verdict: &Verdict) -> io::Result<()> {
    let v = &verdict.verifier;
    let mut out = io::BufWriter::new(out);
    writeln!(
        out,
        "{}: {} lines, {} records, {} sessions",
        path.display(),
        v.lines,
        v.records,
        v.sessions.len()
    )?;
    writeln!(out, "records by kind:")?;
    for (kind, count) in v.kind_counts() {
        if count > 0 {
            writeln!(out, "  {kind}: {count}")?;
        }
    }
    writeln!(out, "sessions: {}", v.sessions.len())?;
    for s in &v.sessions {
        writeln!(
            out,
            "  session {}: {}, {}, lines {} to {}, {} records, {}",
            s.id,
            s.command.map_or("no session_start", |c| c.as_str()),
            match s.keyed {
                Some(true) => "keyed",
                Some(false) => "not keyed",
                None => "keyed unknown",
            },
            s.first_line,
            s.last_line,
            s.records,
            if s.closed_at.is_some() {
                "closed"
            } else {
                "cut short"
            }
        )?;
    }
    if v.keyed() {
        writeln!(out, "macs: {} checked under the key", v.macs)?;
    } else if v.macs > 0 {
        writeln!(out, "macs: {} present, not checked (no --key-env)", v.macs)?;
    } else {
        writeln!(out, "macs: none")?;
    }
    let interrupted: Vec<(&Session, &Interrupted)> = v
        .sessions
        .iter()
        .flat_map(|s| s.interrupted.iter().map(move |i| (s, i)))
        .collect();
    writeln!(out, "interrupted: {}", interrupted.len())?;
    for (s, i) in interrupted {
        writeln!(
            out,
            "  line {}: session {} {} {} tool {:?}: no outcome (interrupted)",
            i.line, s.id, i.id_name, i.id, i.tool
        )?;
    }
    let problems = &verdict.problems;
    writeln!(out, "problems: {}", problems.total)?;
    for p in problems.kept.iter().take(SHOWN_PROBLEMS) {
        writeln!(out, "  line {}: {}", p.line, p.problem)?;
    }
    if problems.total > SHOWN_PROBLEMS as u64 {
        writeln!(
            out,
            "  ... and {} more",
            problems.total - SHOWN_PROBLEMS as u64
        )?;
    }
    out.flush()
}

/// The `--json` report: one object, one line.
pub(in crate::audit) fn json(out: impl Write, path: &Path, verdict: &Verdict) -> io::Result<()> {
    let v = &verdict.verifier;
    let kinds: Map<String, Value> = v
        .kind_counts()
        .into_iter()
        .map(|(kind, count)| (kind.to_owned(), count.into()))
        .collect();
    let sessions: Vec<Value> = v
        .sessions
        .iter()
        .map(|s| {
            let interrupted: Vec<Value> = s
                .interrupted
                .iter()
                .map(|i| {
                    let mut entry = Map::new();
                    entry.insert("line".into(), i.line.into());
                    entry.insert(i.id_name.into(), i.id.into());
                    entry.insert("tool".into(), i.tool.clone().into());
                    Value::Object(entry)
                })
                .collect();
            json!({
                "session": s.id,
                "command": s.command.map(|c| c.as_str()),
                "keyed": s.keyed,
                "first_line": s.first_line,
                "last_line": s.last_line,
                "records": s.records,
                "closed": s.closed_at.is_some(),
                "interrupted": interrupted,
            })
        })
        .collect();
    let problems: Vec<Value> = verdict
        .problems
        .kept
        .iter()
        .map(|p| json!({"line": p.line, "problem": p.problem}))
        .collect();
    let report = json!({
        "file": path.display().to_string(),
        "lines": v.lines,
        "records": v.records,
        "kinds": kinds,
        "sessions": sessions,
        "macs_checked": v.keyed(),
        "problems": problems,
        "problems_total": verdict.problems.total,
        "ok": verdict.ok(),
    });
    let mut out = io::BufWriter::new(out);
    serde_json::to_writer(&mut out, &report)?;
    writeln!(out)?;
    out.flush()
}

/// The verdict for whoever reads only stderr (a script checking the exit
/// status): each problem by line number, the first [`SHOWN_PROBLEMS`].
pub(in crate::audit) fn stderr(
    mut err: impl Write,
    path: &Path,
    verdict: &Verdict,
) -> io::Result<()> {
    let problems = &verdict.problems;
    for p in problems.kept.iter().take(SHOWN_PROBLEMS) {
        writeln!(
            err,
            "portcullis: {}: line {}: {}",
            path.display(),
            p.line,
            p.problem
        )?;
    }
    if problems.total > SHOWN_PROBLEMS as u64 {
        writeln!(
            err,
            "portcullis: {}: ... and {} more problems",
            path.display(),
            problems.total - SHOWN_PROBLEMS as u64
        )?;
    }
    Ok(())
}
