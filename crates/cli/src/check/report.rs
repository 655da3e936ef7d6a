//! The three report formats: human, JSON and JUnit XML.

use std::io::{self, Write};
use std::path::PathBuf;

use portcullis_wire::transcript::render_bytes;
use serde_json::{Value, json};

use super::judge::Failure;

/// One condition's result.
#[derive(Debug)]
pub struct CaseReport {
    pub name: String,
    pub description: String,
    pub failures: Vec<Failure>,
    /// Exit status as text (`0`, `3`, `signal 9`, `killed`), when it ran.
    pub status: String,
    pub millis: u128,
    pub stdout: Option<PathBuf>,
    pub stderr: Option<PathBuf>,
    /// Set when the server wrote more to stderr than is kept.
    pub stderr_cut: Option<StderrCut>,
    /// Extra lines for the human report (fuzz figures, saved scripts).
    pub notes: Vec<String>,
}

impl CaseReport {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// The line that says stderr was cut, when it was.
    fn stderr_cut_line(&self) -> Option<String> {
        let cut = self.stderr_cut.as_ref()?;
        let kept = match &self.stderr {
            Some(path) => format!(" in {}", path.display()),
            None => String::new(),
        };
        Some(format!(
            "stderr cut: {} of {} bytes dropped (the first {} and the last {} kept{kept})",
            cut.dropped, cut.total, cut.head, cut.tail
        ))
    }
}

/// stderr beyond what is kept: the server wrote `total` bytes, the first
/// `head` and the last `tail` were kept, `dropped` in between were not.
#[derive(Debug, Clone, Copy)]
pub struct StderrCut {
    pub total: u64,
    pub dropped: u64,
    pub head: usize,
    pub tail: usize,
}

/// Output format of `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    Junit,
}

/// Write the report of every case.
pub fn write(
    format: Format,
    command: &str,
    cases: &[CaseReport],
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Human => human(command, cases, out),
        Format::Json => {
            let value = json!({
                "command": command,
                "passed": cases.iter().all(CaseReport::passed),
                "cases": cases.iter().map(case_json).collect::<Vec<_>>(),
            });
            writeln!(out, "{value}")
        }
        Format::Junit => junit(command, cases, out),
    }?;
    out.flush()
}

fn human(command: &str, cases: &[CaseReport], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "portcullis check: {command}")?;
    for case in cases {
        let verdict = if case.passed() { "PASS" } else { "FAIL" };
        writeln!(
            out,
            "{verdict} {} — {} (exit {}, {} ms)",
            case.name, case.description, case.status, case.millis
        )?;
        for failure in &case.failures {
            writeln!(out, "  [{}] {}", failure.check, failure.message)?;
            if let Some((line, raw)) = &failure.line
                && !failure.message.contains(&render_bytes(raw))
            {
                writeln!(
                    out,
                    "    first offending bytes (line {line}): {}",
                    render_bytes(raw)
                )?;
            }
        }
        for note in &case.notes {
            writeln!(out, "  {note}")?;
        }
        if let Some(line) = case.stderr_cut_line() {
            writeln!(out, "  {line}")?;
        }
        if !case.passed() {
            if let Some(path) = &case.stdout {
                writeln!(out, "  stdout transcript: {}", path.display())?;
            }
            if let Some(path) = &case.stderr {
                writeln!(out, "  stderr transcript: {}", path.display())?;
            }
        }
    }
    let passed = cases.iter().filter(|c| c.passed()).count();
    writeln!(out, "{passed} of {} conditions passed", cases.len())
}

fn case_json(case: &CaseReport) -> Value {
    json!({
        "name": case.name,
        "description": case.description,
        "passed": case.passed(),
        "status": case.status,
        "millis": u64::try_from(case.millis).unwrap_or(u64::MAX),
        "stdout": case.stdout.as_ref().map(|p| p.display().to_string()),
        "stderr": case.stderr.as_ref().map(|p| p.display().to_string()),
        "stderr_cut": case.stderr_cut.map(|cut| json!({
            "total_bytes": cut.total,
            "dropped_bytes": cut.dropped,
            "kept_head_bytes": cut.head,
            "kept_tail_bytes": cut.tail,
        })),
        "notes": case.notes,
        "failures": case.failures.iter().map(|f| json!({
            "check": f.check,
            "message": f.message,
            "line": f.line.as_ref().map(|(n, _)| n),
            "bytes": f.line.as_ref().map(|(_, raw)| render_bytes(raw)),
        })).collect::<Vec<_>>(),
    })
}

fn junit(command: &str, cases: &[CaseReport], out: &mut dyn Write) -> io::Result<()> {
    let failures = cases.iter().filter(|c| !c.passed()).count();
    let seconds: u128 = cases.iter().map(|c| c.millis).sum();
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="portcullis check" tests="{}" failures="{failures}">"#,
        cases.len()
    )?;
    writeln!(
        out,
        r#"  <testsuite name="{}" tests="{}" failures="{failures}" time="{}.{:03}">"#,
        xml(command),
        cases.len(),
        seconds / 1000,
        seconds % 1000
    )?;
    for case in cases {
        write!(
            out,
            r#"    <testcase classname="portcullis.check" name="{}" time="{}.{:03}""#,
            xml(&case.name),
            case.millis / 1000,
            case.millis % 1000
        )?;
        let cut = case.stderr_cut_line();
        if case.passed() && cut.is_none() {
            writeln!(out, "/>")?;
            continue;
        }
        writeln!(out, ">")?;
        if let Some(first) = case.failures.first() {
            let mut body = format!("{}\n", case.description);
            for f in &case.failures {
                body.push_str(&format!("[{}] {}\n", f.check, f.message));
                if let Some((line, raw)) = &f.line {
                    body.push_str(&format!(
                        "first offending bytes (line {line}): {}\n",
                        render_bytes(raw)
                    ));
                }
            }
            for (what, path) in [("stdout", &case.stdout), ("stderr", &case.stderr)] {
                if let Some(path) = path {
                    body.push_str(&format!("{what} transcript: {}\n", path.display()));
                }
            }
            writeln!(
                out,
                r#"      <failure type="{}" message="{}">{}</failure>"#,
                first.check,
                xml(&first.message),
                xml(&body)
            )?;
        }
        if let Some(line) = cut {
            writeln!(out, "      <system-err>{}</system-err>", xml(&line))?;
        }
        writeln!(out, "    </testcase>")?;
    }
    writeln!(out, "  </testsuite>")?;
    writeln!(out, "</testsuites>")
}

/// Escape for XML text and attributes; control characters (which XML 1.0
/// cannot carry) become `\xNN`.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
