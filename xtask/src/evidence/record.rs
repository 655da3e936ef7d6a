//! One line of `docs/evidence/history.jsonl`: a run's key figures with the
//! date, commit and machine they were measured at.
//!
//! ```json
//! {"kind":"fuzz","date":"YYYY-MM-DD","commit":"<short hash>","machine":"…","source_sha256":"…","figures":{…}}
//! ```
//!
//! The keys are written in that order (`note`, when present, comes before
//! `figures`) so that a line's text is a function of the record alone. A
//! record made from a file names it by `source_sha256`; one written down by
//! hand names where its figures were read instead (`source`).

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};

/// What a record measures; the page has a section per kind, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Coverage,
    Fuzz,
    Mutants,
    Bugbench,
    Bench,
    Memory,
}

impl Kind {
    pub const ALL: [Self; 6] = [
        Self::Coverage,
        Self::Fuzz,
        Self::Mutants,
        Self::Bugbench,
        Self::Bench,
        Self::Memory,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Coverage => "coverage",
            Self::Fuzz => "fuzz",
            Self::Mutants => "mutants",
            Self::Bugbench => "bugbench",
            Self::Bench => "bench",
            Self::Memory => "memory",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// Where a record's figures come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// SHA-256 (lowercase hex) of the JSON file the record was made from:
    /// the same file is never recorded twice.
    Sha256(String),
    /// Figures written down by hand, and where they were read.
    Source(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub kind: Kind,
    /// `YYYY-MM-DD` (UTC) of the run.
    pub date: String,
    /// Short hash of the commit that was measured.
    pub commit: String,
    /// Cores, CPU and memory of the machine, and how busy it was when known.
    pub machine: String,
    pub origin: Origin,
    /// Conditions of the run worth reading beside its figures.
    pub note: Option<String>,
    pub figures: Map<String, Value>,
}

const KEYS: [&str; 8] = [
    "kind",
    "date",
    "commit",
    "machine",
    "source_sha256",
    "source",
    "note",
    "figures",
];

impl Record {
    /// The record as one JSON line (without the newline).
    pub fn to_line(&self) -> String {
        let mut fields: Vec<(&str, Value)> = vec![
            ("kind", self.kind.as_str().into()),
            ("date", self.date.clone().into()),
            ("commit", self.commit.clone().into()),
            ("machine", self.machine.clone().into()),
        ];
        fields.push(match &self.origin {
            Origin::Sha256(sha) => ("source_sha256", sha.clone().into()),
            Origin::Source(source) => ("source", source.clone().into()),
        });
        if let Some(note) = &self.note {
            fields.push(("note", note.clone().into()));
        }
        fields.push(("figures", Value::Object(self.figures.clone())));
        let body: Vec<String> = fields
            .iter()
            .map(|(key, value)| format!("{}:{value}", Value::from(*key)))
            .collect();
        format!("{{{}}}", body.join(","))
    }

    /// Parses one line, refusing what `to_line` would not write.
    pub fn parse_line(line: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(line).context("not JSON")?;
        let Value::Object(mut object) = value else {
            bail!("not a JSON object");
        };
        if let Some(unknown) = object.keys().find(|k| !KEYS.contains(&k.as_str())) {
            bail!("unknown key {unknown:?} (a record has {})", KEYS.join(", "));
        }
        let mut text = |key: &str| -> Result<Option<String>> {
            match object.remove(key) {
                None => Ok(None),
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s)),
                Some(other) => bail!("`{key}` is {other}, not a non-empty string"),
            }
        };
        let kind = text("kind")?.context("no `kind`")?;
        let kind = Kind::parse(&kind).with_context(|| {
            let kinds: Vec<_> = Kind::ALL.iter().map(|k| k.as_str()).collect();
            format!("unknown kind {kind:?} (one of {})", kinds.join(", "))
        })?;
        let date = text("date")?.context("no `date`")?;
        if !is_iso_date(&date) {
            bail!("`date` {date:?} is not YYYY-MM-DD");
        }
        let commit = text("commit")?.context("no `commit`")?;
        let machine = text("machine")?.context("no `machine`")?;
        let origin = match (text("source_sha256")?, text("source")?) {
            (Some(sha), None) if is_sha256(&sha) => Origin::Sha256(sha),
            (Some(sha), None) => bail!("`source_sha256` {sha:?} is not 64 lowercase hex digits"),
            (None, Some(source)) => Origin::Source(source),
            _ => bail!("a record has exactly one of `source_sha256` and `source`"),
        };
        let note = text("note")?;
        let figures = match object.remove("figures") {
            Some(Value::Object(figures)) => figures,
            Some(other) => bail!("`figures` is {other}, not an object"),
            None => bail!("no `figures`"),
        };
        Ok(Self {
            kind,
            date,
            commit,
            machine,
            origin,
            note,
            figures,
        })
    }
}

/// Every record of a history, in the order of its lines (blank lines are
/// skipped; any other line must be a record).
pub fn parse_history(text: &str) -> Result<Vec<Record>> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| Record::parse_line(line).with_context(|| format!("line {}", i + 1)))
        .collect()
}

/// `YYYY-MM-DD` with a month and day in range.
pub fn is_iso_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    if !(digits(0..4) && digits(5..7) && digits(8..10)) {
        return false;
    }
    let month: u8 = text[5..7].parse().unwrap_or(0);
    let day: u8 = text[8..10].parse().unwrap_or(0);
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

fn is_sha256(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample(origin: Origin, note: Option<&str>) -> Record {
        let Value::Object(figures) = json!({"pipeline_vs_serde_value": 1.25, "rows": []}) else {
            unreachable!()
        };
        Record {
            kind: Kind::Bench,
            date: "2001-02-03".into(),
            commit: "abc1234".into(),
            machine: "2 cores, Example CPU, 8 GiB".into(),
            origin,
            note: note.map(str::to_owned),
            figures,
        }
    }

    #[test]
    fn a_line_has_its_keys_in_a_fixed_order_and_reads_back() {
        let record = sample(Origin::Sha256("ab".repeat(32)), None);
        let line = record.to_line();
        assert_eq!(
            line,
            format!(
                r#"{{"kind":"bench","date":"2001-02-03","commit":"abc1234","machine":"2 cores, Example CPU, 8 GiB","source_sha256":"{}","figures":{{"pipeline_vs_serde_value":1.25,"rows":[]}}}}"#,
                "ab".repeat(32)
            )
        );
        assert_eq!(Record::parse_line(&line).unwrap(), record);

        let noted = sample(Origin::Source("README notebook".into()), Some("idle"));
        let line = noted.to_line();
        assert!(
            line.contains(r#""source":"README notebook","note":"idle","figures":"#),
            "{line}"
        );
        assert_eq!(Record::parse_line(&line).unwrap(), noted);
    }

    #[test]
    fn a_line_that_is_not_a_record_says_what_is_wrong() {
        let good = sample(Origin::Source("x".into()), None).to_line();
        for (line, expected) in [
            ("{", "not JSON"),
            ("[]", "not a JSON object"),
            (&good.replace("\"bench\"", "\"speed\""), "unknown kind"),
            (&good.replace("2001-02-03", "2001-2-3"), "not YYYY-MM-DD"),
            (&good.replace("\"source\"", "\"origin\""), "unknown key"),
            (&good.replace(",\"source\":\"x\"", ""), "exactly one of"),
            (
                &good.replace("\"commit\":\"abc1234\"", "\"commit\":\"\""),
                "commit",
            ),
            (
                &good.replace("{\"pipeline_vs_serde_value\":1.25,\"rows\":[]}", "[]"),
                "figures",
            ),
        ] {
            let err = format!("{:#}", Record::parse_line(line).unwrap_err());
            assert!(err.contains(expected), "{line}: {err}");
        }
        let err = format!(
            "{:#}",
            parse_history(&format!("{good}\n\n{{\n")).unwrap_err()
        );
        assert!(err.starts_with("line 3: "), "{err}");
    }

    #[test]
    fn dates_are_checked_for_shape_and_range() {
        assert!(is_iso_date("2001-12-31"));
        for bad in [
            "2001-13-01",
            "2001-00-10",
            "2001-01-32",
            "01-01-2001",
            "2001-01-0x",
        ] {
            assert!(!is_iso_date(bad), "{bad}");
        }
    }
}
