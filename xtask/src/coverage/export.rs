//! Reading `llvm-cov export -format=text` (the JSON export): which lines and
//! which code regions of each file are mapped, and whether they ran.
//!
//! Lines follow llvm-cov's own rule (`LineCoverageStats`): a line is mapped
//! when a counted region starts on it or a counted region wraps over it,
//! except where a skipped region starts; it ran when the largest of those
//! counts is nonzero. Each line counts once, as in llvm-cov's per-line view
//! (lcov `DA`); llvm-cov's totals count a line once per function mapping it,
//! so a closure's line counts twice there. Regions are the distinct code-region spans of every
//! function record; a span ran when any record (any generic instantiation,
//! any test binary) ran it. Keeping the per-line and per-span facts, rather
//! than llvm-cov's totals, lets separate runs be united exactly (a line or
//! region runs in a combined run iff it runs in one of them) and lets test
//! modules be left out of the figures.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;

/// Start line, start column, end line, end column.
pub type Span = (u32, u32, u32, u32);

/// What one file's coverage is made of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileCoverage {
    /// Each line that carries code, and whether it ran.
    pub lines: BTreeMap<u32, bool>,
    /// Each code region, and whether it ran.
    pub regions: BTreeMap<Span, bool>,
}

/// Covered out of total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub covered: u64,
    pub total: u64,
}

impl Counts {
    fn of<'a>(ran: impl Iterator<Item = &'a bool>) -> Self {
        ran.fold(Self::default(), |acc, &ran| Self {
            covered: acc.covered + u64::from(ran),
            total: acc.total + 1,
        })
    }

    pub fn add(self, other: Self) -> Self {
        Self {
            covered: self.covered + other.covered,
            total: self.total + other.total,
        }
    }

    /// Percent covered; an empty set counts as fully covered.
    pub fn percent(self) -> f64 {
        if self.total == 0 {
            return 100.0;
        }
        #[expect(
            clippy::cast_precision_loss,
            reason = "line and region counts are far below 2^52"
        )]
        let ratio = self.covered as f64 / self.total as f64;
        100.0 * ratio
    }
}

impl FileCoverage {
    pub fn line_counts(&self) -> Counts {
        Counts::of(self.lines.values())
    }

    pub fn region_counts(&self) -> Counts {
        Counts::of(self.regions.values())
    }

    /// Both runs together: a line or region ran if it ran in either.
    pub fn unite(&mut self, other: &Self) {
        for (line, ran) in &other.lines {
            *self.lines.entry(*line).or_default() |= ran;
        }
        for (span, ran) in &other.regions {
            *self.regions.entry(*span).or_default() |= ran;
        }
    }

    /// The same coverage without the lines for which `excluded` holds, and
    /// without the regions that start on them.
    pub fn without(&self, excluded: impl Fn(u32) -> bool) -> Self {
        Self {
            lines: self
                .lines
                .iter()
                .filter(|(line, _)| !excluded(**line))
                .map(|(l, r)| (*l, *r))
                .collect(),
            regions: self
                .regions
                .iter()
                .filter(|(span, _)| !excluded(span.0))
                .map(|(s, r)| (*s, *r))
                .collect(),
        }
    }
}

#[derive(Deserialize)]
struct Export {
    #[serde(rename = "type")]
    kind: String,
    data: Vec<ExportData>,
}

#[derive(Deserialize)]
struct ExportData {
    files: Vec<ExportFile>,
    #[serde(default)]
    functions: Vec<ExportFunction>,
}

#[derive(Deserialize)]
struct ExportFile {
    filename: String,
    #[serde(default)]
    segments: Vec<Vec<Value>>,
}

#[derive(Deserialize)]
struct ExportFunction {
    regions: Vec<Vec<Value>>,
    filenames: Vec<String>,
}

/// `[line, col, count, has_count, is_region_entry, is_gap_region]`.
#[derive(Debug, Clone, Copy)]
struct Segment {
    line: u32,
    count: u64,
    has_count: bool,
    is_region_entry: bool,
    is_gap_region: bool,
}

/// A region of this kind is code; the others (expansion, skipped, gap,
/// branch, MC/DC) are not counted as regions by llvm-cov either.
const CODE_REGION: u64 = 0;

fn number(row: &[Value], at: usize) -> Result<u64> {
    row.get(at)
        .and_then(Value::as_u64)
        .with_context(|| format!("field {at} of {row:?} is not a count"))
}

fn line_number(row: &[Value], at: usize) -> Result<u32> {
    u32::try_from(number(row, at)?).with_context(|| format!("line/column out of range in {row:?}"))
}

fn flag(row: &[Value], at: usize) -> Result<bool> {
    row.get(at)
        .and_then(Value::as_bool)
        .with_context(|| format!("field {at} of {row:?} is not a flag"))
}

impl Segment {
    fn parse(row: &[Value]) -> Result<Self> {
        Ok(Self {
            line: line_number(row, 0)?,
            count: number(row, 2)?,
            has_count: flag(row, 3)?,
            is_region_entry: flag(row, 4)?,
            is_gap_region: flag(row, 5)?,
        })
    }

    fn starts_region(self) -> bool {
        !self.is_gap_region && self.has_count && self.is_region_entry
    }
}

/// llvm-cov's `LineCoverageStats` for one line: `None` when unmapped, else
/// whether it ran.
fn line_status(on_line: &[Segment], wrapped: Option<Segment>) -> Option<bool> {
    let starts = on_line.iter().filter(|s| s.starts_region()).count();
    let starts_skipped = on_line
        .first()
        .is_some_and(|s| !s.has_count && s.is_region_entry);
    let mapped = (!starts_skipped && (wrapped.is_some_and(|w| w.has_count) || starts > 0))
        || on_line.iter().any(|s| s.is_region_entry && s.has_count);
    if !mapped {
        return None;
    }
    let mut count = wrapped.map_or(0, |w| w.count);
    if starts > 0 {
        for s in on_line.iter().filter(|s| s.starts_region()) {
            count = count.max(s.count);
        }
    }
    Some(count > 0)
}

/// Mapped lines of a file from its (line, column)-ordered segments.
fn lines_of(segments: &[Segment]) -> BTreeMap<u32, bool> {
    let mut lines = BTreeMap::new();
    let (Some(first), Some(last)) = (segments.first(), segments.last()) else {
        return lines;
    };
    let mut wrapped: Option<Segment> = None;
    let mut next = 0;
    for line in first.line..=last.line {
        let begin = next;
        while next < segments.len() && segments[next].line == line {
            next += 1;
        }
        let on_line = &segments[begin..next];
        if let Some(ran) = line_status(on_line, wrapped) {
            lines.insert(line, ran);
        }
        if let Some(last) = on_line.last() {
            wrapped = Some(*last);
        }
    }
    lines
}

/// Every file of an export, by the path llvm-cov names it with.
pub fn parse(json: &str) -> Result<BTreeMap<String, FileCoverage>> {
    let export: Export = serde_json::from_str(json).context("not an llvm-cov JSON export")?;
    if export.kind != "llvm.coverage.json.export" {
        bail!("not an llvm-cov JSON export (type {:?})", export.kind);
    }
    let mut files: BTreeMap<String, FileCoverage> = BTreeMap::new();
    for data in export.data {
        for file in data.files {
            let segments = file
                .segments
                .iter()
                .map(|row| Segment::parse(row))
                .collect::<Result<Vec<_>>>()
                .with_context(|| format!("segments of {}", file.filename))?;
            let entry = files.entry(file.filename).or_default();
            entry.unite(&FileCoverage {
                lines: lines_of(&segments),
                regions: BTreeMap::new(),
            });
        }
        for function in data.functions {
            for row in &function.regions {
                // [line_start, col_start, line_end, col_end, count, file_id, expanded_file_id, kind]
                if number(row, 7)? != CODE_REGION {
                    continue;
                }
                let file_id = usize::try_from(number(row, 5)?)?;
                let Some(filename) = function.filenames.get(file_id) else {
                    bail!(
                        "region {row:?} names file {file_id} of {:?}",
                        function.filenames
                    );
                };
                let span = (
                    line_number(row, 0)?,
                    line_number(row, 1)?,
                    line_number(row, 2)?,
                    line_number(row, 3)?,
                );
                let ran = number(row, 4)? > 0;
                *files
                    .entry(filename.clone())
                    .or_default()
                    .regions
                    .entry(span)
                    .or_default() |= ran;
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uncovered(file: &FileCoverage) -> Vec<u32> {
        file.lines
            .iter()
            .filter(|(_, ran)| !**ran)
            .map(|(line, _)| *line)
            .collect()
    }

    /// A real export (`cargo llvm-cov report --json`) of a small crate with
    /// a generic function used at two types, a closure, an `if` whose else
    /// arm never runs, a never-called function and a `#[cfg(test)]` module:
    /// see `testdata/coverage/sample.rs` (the path in both exports is rewritten
    /// to that copy).
    const SAMPLE: &str = include_str!("../../testdata/coverage/sample-export.json");

    /// llvm-cov's per-line view of the same profile (`DA:line,count` of
    /// `cargo llvm-cov report --lcov`).
    const SAMPLE_LCOV: &str = include_str!("../../testdata/coverage/sample.lcov");

    fn lcov_lines(lcov: &str) -> BTreeMap<u32, bool> {
        lcov.lines()
            .filter_map(|l| l.strip_prefix("DA:"))
            .map(|da| {
                let (line, count) = da.split_once(',').unwrap();
                (line.parse().unwrap(), count != "0")
            })
            .collect()
    }

    fn llvm_region_summary(json: &str) -> BTreeMap<String, Counts> {
        let value: Value = serde_json::from_str(json).unwrap();
        value["data"][0]["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|file| {
                let regions = &file["summary"]["regions"];
                let counts = Counts {
                    covered: regions["covered"].as_u64().unwrap(),
                    total: regions["count"].as_u64().unwrap(),
                };
                (file["filename"].as_str().unwrap().to_owned(), counts)
            })
            .collect()
    }

    #[test]
    fn lines_agree_with_llvm_cov_line_by_line() {
        let files = parse(SAMPLE).unwrap();
        assert_eq!(files.len(), 1);
        let sample = &files["xtask/testdata/coverage/sample.rs"];
        assert_eq!(sample.lines, lcov_lines(SAMPLE_LCOV));
    }

    #[test]
    fn a_line_shared_by_a_function_and_its_closure_counts_once() {
        // llvm-cov's own totals (`summary.lines`, lcov `LF`/`LH`) add up
        // per-function line counts, so line 23 (`doubled` and its closure)
        // is counted twice there.
        let files = parse(SAMPLE).unwrap();
        let lines = files["xtask/testdata/coverage/sample.rs"].line_counts();
        assert_eq!(
            lines,
            Counts {
                covered: 21,
                total: 26
            }
        );
        assert!(SAMPLE_LCOV.contains("LF:27\nLH:22\n"));
    }

    #[test]
    fn regions_agree_with_llvm_cov_and_unite_generic_instantiations() {
        let files = parse(SAMPLE).unwrap();
        for (name, counts) in llvm_region_summary(SAMPLE) {
            assert_eq!(files[&name].region_counts(), counts, "regions of {name}");
        }
        // `largest` runs at two types; its regions count once.
        let sample = &files["xtask/testdata/coverage/sample.rs"];
        assert_eq!(sample.regions.keys().filter(|s| s.0 == 12).count(), 1);
    }

    #[test]
    fn uncovered_lines_are_the_ones_that_never_ran() {
        let files = parse(SAMPLE).unwrap();
        let (_, sample) = files
            .iter()
            .find(|(name, _)| name.ends_with("sample.rs"))
            .unwrap();
        let source = include_str!("../../testdata/coverage/sample.rs");
        let marked: Vec<u32> = (1..)
            .zip(source.lines())
            .filter(|(_, text)| text.contains("// never runs"))
            .map(|(n, _)| n)
            .collect();
        assert!(!marked.is_empty());
        assert_eq!(uncovered(sample), marked);
    }

    #[test]
    fn a_united_run_covers_what_either_run_covered() {
        let run = |lines: &[(u32, bool)], regions: &[(Span, bool)]| FileCoverage {
            lines: lines.iter().copied().collect(),
            regions: regions.iter().copied().collect(),
        };
        let mut a = run(
            &[(1, true), (2, false), (3, false)],
            &[((1, 1, 3, 2), false)],
        );
        let b = run(
            &[(2, true), (3, false), (4, false)],
            &[((1, 1, 3, 2), true)],
        );
        a.unite(&b);
        assert_eq!(
            a,
            run(
                &[(1, true), (2, true), (3, false), (4, false)],
                &[((1, 1, 3, 2), true)]
            )
        );
        assert_eq!(
            a.line_counts(),
            Counts {
                covered: 2,
                total: 4
            }
        );
        assert_eq!(uncovered(&a), [3, 4]);
    }

    #[test]
    fn excluded_lines_take_their_regions_with_them() {
        let file = FileCoverage {
            lines: [(1, true), (5, false), (6, false)].into(),
            regions: [((1, 1, 2, 2), true), ((5, 1, 7, 2), false)].into(),
        };
        let kept = file.without(|line| line >= 5);
        assert_eq!(
            kept.line_counts(),
            Counts {
                covered: 1,
                total: 1
            }
        );
        assert_eq!(
            kept.region_counts(),
            Counts {
                covered: 1,
                total: 1
            }
        );
    }

    #[test]
    fn an_empty_set_is_fully_covered_and_percent_is_a_ratio() {
        assert!((Counts::default().percent() - 100.0).abs() < f64::EPSILON);
        let third = Counts {
            covered: 1,
            total: 3,
        };
        assert!((third.percent() - 33.333).abs() < 0.001);
    }

    #[test]
    fn other_json_is_refused() {
        assert!(parse("{}").is_err());
        assert!(parse(r#"{"type":"something.else","data":[]}"#).is_err());
    }
}
