//! The coverage report: `coverage.json` for machines, `coverage.md` and a
//! summary table for people.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::export::{Counts, FileCoverage};
use super::scope::{CRATES, PARTS, crate_of};

/// The crates a goal or a summary column is about.
pub const WIRE_AND_GATEWAY: &str = "wire+gateway";

/// One run whose coverage was measured, reduced to the counted files.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// `tests`, `corpus` (all targets together) or `corpus:<target>`.
    pub id: String,
    /// What a person reads: `cargo test`, `corpus replay: chunking`.
    pub name: String,
    /// The command (or commands) that produced it.
    pub command: String,
    /// Whether the run itself succeeded (a failing test still leaves a
    /// profile, but the figures then describe a broken tree).
    pub ok: bool,
    pub secs: f64,
    /// Repository-relative path → coverage.
    pub files: BTreeMap<String, FileCoverage>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figure {
    pub covered: u64,
    pub total: u64,
    pub percent: f64,
}

impl From<Counts> for Figure {
    fn from(c: Counts) -> Self {
        Self {
            covered: c.covered,
            total: c.total,
            percent: round2(c.percent()),
        }
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    pub lines: Figure,
    pub regions: Figure,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub path: String,
    #[serde(rename = "crate")]
    pub krate: String,
    pub lines: Figure,
    pub regions: Figure,
    /// Lines that carry code and never ran, as ranges: `120-124, 210`. A
    /// range runs over lines without code (blank, comments) between them.
    pub uncovered_lines: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct MeasurementReport {
    pub id: String,
    pub name: String,
    pub command: String,
    pub ok: bool,
    pub secs: f64,
    /// Each crate of [`CRATES`], and `wire+gateway`.
    pub crates: BTreeMap<String, Figures>,
    /// Each part of [`PARTS`] (the scrubber, the audit code, the wrap driver).
    pub parts: BTreeMap<String, Figures>,
    pub files: Vec<FileReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Goal {
    pub measurement: String,
    /// A crate, `wire+gateway`, or a part.
    pub crates: String,
    pub metric: String,
    pub min_percent: f64,
    pub percent: Option<f64>,
    pub met: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// When the run started (UTC).
    pub started: String,
    /// Wall time of the whole run.
    pub total_secs: f64,
    /// Which llvm-cov was used and where it was found.
    pub llvm_cov: String,
    /// What is counted.
    pub scope: String,
    pub goals: Vec<Goal>,
    pub measurements: Vec<MeasurementReport>,
}

/// The goals, checked against whichever measurements ran: the boundary
/// crates, then the wrap core, the scrubber and the audit code, which a user
/// depends on just as much.
pub const GOALS: [(&str, &str, &str, f64); 6] = [
    ("tests", WIRE_AND_GATEWAY, "lines", 95.0),
    ("corpus", WIRE_AND_GATEWAY, "lines", 90.0),
    ("tests", "wrap", "lines", 95.0),
    ("tests", "scrubber", "lines", 95.0),
    ("tests", "audit", "lines", 95.0),
    ("corpus", "wrap", "lines", 85.0),
];

/// `120-124, 210`: uncovered lines grouped into runs with no covered line
/// between them.
pub fn uncovered_ranges(file: &FileCoverage) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    let mut open = false;
    for (&line, &ran) in &file.lines {
        match (ran, open, runs.last_mut()) {
            (true, _, _) => open = false,
            (false, true, Some(run)) => run.1 = line,
            (false, _, _) => {
                runs.push((line, line));
                open = true;
            }
        }
    }
    runs.iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The figures of the files whose repository-relative path `keep` accepts.
fn figures(files: &BTreeMap<String, FileCoverage>, keep: impl Fn(&str) -> bool) -> Figures {
    let (lines, regions) = files
        .iter()
        .filter(|(path, _)| keep(path))
        .fold((Counts::default(), Counts::default()), |(l, r), (_, f)| {
            (l.add(f.line_counts()), r.add(f.region_counts()))
        });
    Figures {
        lines: lines.into(),
        regions: regions.into(),
    }
}

impl Measurement {
    pub fn report(&self) -> MeasurementReport {
        let in_crates = |names: &'static [&'static str]| {
            move |path: &str| crate_of(path).is_some_and(|k| names.contains(&k))
        };
        let mut crates: BTreeMap<String, Figures> = CRATES
            .iter()
            .map(|c| {
                let one = std::slice::from_ref(c);
                (c.to_string(), figures(&self.files, in_crates(one)))
            })
            .collect();
        crates.insert(
            WIRE_AND_GATEWAY.to_owned(),
            figures(&self.files, in_crates(&["wire", "gateway"])),
        );
        let parts = PARTS
            .iter()
            .map(|p| (p.name.to_owned(), figures(&self.files, |f| p.contains(f))))
            .collect();
        let files = self
            .files
            .iter()
            .filter_map(|(path, f)| {
                Some(FileReport {
                    path: path.clone(),
                    krate: crate_of(path)?.to_owned(),
                    lines: f.line_counts().into(),
                    regions: f.region_counts().into(),
                    uncovered_lines: uncovered_ranges(f),
                })
            })
            .collect();
        MeasurementReport {
            id: self.id.clone(),
            name: self.name.clone(),
            command: self.command.clone(),
            ok: self.ok,
            secs: round2(self.secs),
            crates,
            parts,
            files,
        }
    }
}

/// The goals, each against its measurement when that one ran.
pub fn goals(measurements: &[MeasurementReport]) -> Vec<Goal> {
    GOALS
        .iter()
        .map(|&(id, crates, metric, min)| {
            let percent = measurements
                .iter()
                .find(|m| m.id == id)
                .and_then(|m| m.subject(crates))
                .map(|f| match metric {
                    "regions" => f.regions.percent,
                    _ => f.lines.percent,
                });
            Goal {
                measurement: id.to_owned(),
                crates: crates.to_owned(),
                metric: metric.to_owned(),
                min_percent: min,
                percent,
                met: percent.is_some_and(|p| p >= min),
            }
        })
        .collect()
}

impl MeasurementReport {
    /// The figures of a crate, `wire+gateway`, or a part.
    pub fn subject(&self, name: &str) -> Option<&Figures> {
        self.crates.get(name).or_else(|| self.parts.get(name))
    }
}

/// The overview's columns: a crate, `wire+gateway` or a part, and a metric.
const COLUMNS: [(&str, &str); 11] = [
    ("wire", "lines"),
    ("gateway", "lines"),
    (WIRE_AND_GATEWAY, "lines"),
    (WIRE_AND_GATEWAY, "regions"),
    ("wrap", "lines"),
    ("exec", "lines"),
    ("exec", "regions"),
    ("scrubber", "lines"),
    ("cli", "lines"),
    ("audit", "lines"),
    ("wrap-driver", "lines"),
];

fn cell(m: &MeasurementReport, krate: &str, metric: &str) -> String {
    let Some(f) = m.subject(krate) else {
        return "–".to_owned();
    };
    let figure = if metric == "regions" {
        f.regions
    } else {
        f.lines
    };
    format!("{:.1}%", figure.percent)
}

/// The summary table printed at the end of a run.
pub fn render_summary(report: &Report) -> String {
    let mut header: Vec<String> = vec!["measurement".to_owned()];
    header.extend(COLUMNS.iter().map(|(c, m)| format!("{c} {m}")));
    let mut rows = vec![header];
    for m in &report.measurements {
        let mut row = vec![if m.ok {
            m.name.clone()
        } else {
            format!("{} (FAILED)", m.name)
        }];
        row.extend(COLUMNS.iter().map(|(c, metric)| cell(m, c, metric)));
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (text, &w))| {
                if i == 0 {
                    format!("{text:<w$}")
                } else {
                    format!("{text:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    for goal in &report.goals {
        let _ = writeln!(out, "{}", goal_line(goal));
    }
    out
}

fn goal_line(goal: &Goal) -> String {
    let status = match (goal.percent, goal.met) {
        (None, _) => "not measured".to_owned(),
        (Some(p), true) => format!("met ({p:.2}%)"),
        (Some(p), false) => format!("NOT met ({p:.2}%)"),
    };
    format!(
        "goal: ≥ {}% {} of {} by {}: {status}",
        goal.min_percent, goal.metric, goal.crates, goal.measurement
    )
}

fn files_table(out: &mut String, m: &MeasurementReport) {
    let _ = writeln!(out, "| file | lines | regions | uncovered lines |");
    let _ = writeln!(out, "| --- | ---: | ---: | --- |");
    for f in &m.files {
        let _ = writeln!(
            out,
            "| `{}` | {:.1}% ({}/{}) | {:.1}% ({}/{}) | {} |",
            f.path,
            f.lines.percent,
            f.lines.covered,
            f.lines.total,
            f.regions.percent,
            f.regions.covered,
            f.regions.total,
            if f.uncovered_lines.is_empty() {
                "–"
            } else {
                &f.uncovered_lines
            }
        );
    }
}

fn figure_cell(f: Figure) -> String {
    format!("{:.1}% ({}/{})", f.percent, f.covered, f.total)
}

/// Every crate, then each part under its crate, with covered and total.
fn crates_table(out: &mut String, m: &MeasurementReport) {
    let _ = writeln!(out, "| crate or part | lines | regions |");
    let _ = writeln!(out, "| --- | ---: | ---: |");
    for krate in CRATES {
        let Some(f) = m.crates.get(krate) else {
            continue;
        };
        let _ = writeln!(
            out,
            "| `crates/{krate}` | {} | {} |",
            figure_cell(f.lines),
            figure_cell(f.regions)
        );
        for part in PARTS.iter().filter(|p| crate_of(p.paths[0]) == Some(krate)) {
            let Some(f) = m.parts.get(part.name) else {
                continue;
            };
            let _ = writeln!(
                out,
                "| ↳ {} ({}) | {} | {} |",
                part.name,
                part.what,
                figure_cell(f.lines),
                figure_cell(f.regions)
            );
        }
    }
}

/// Renders `coverage.md`.
pub fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Coverage\n");
    let _ = writeln!(
        out,
        "Started {}, {:.0} s in all; llvm-cov: {}. Counted: {}.\n",
        report.started, report.total_secs, report.llvm_cov, report.scope
    );
    let mut header = "| measurement |".to_owned();
    let mut rule = "| --- |".to_owned();
    for (c, metric) in COLUMNS {
        let _ = write!(header, " {c} {metric} |");
        rule.push_str(" ---: |");
    }
    header.push_str(" command |");
    rule.push_str(" --- |");
    let _ = writeln!(out, "{header}\n{rule}");
    for m in &report.measurements {
        let mut row = format!("| {}{} |", m.name, if m.ok { "" } else { " (**failed**)" });
        for (c, metric) in COLUMNS {
            let _ = write!(row, " {} |", cell(m, c, metric));
        }
        let _ = writeln!(row, " `{}` |", m.command);
        out.push_str(&row);
    }
    let _ = writeln!(out);
    for goal in &report.goals {
        let _ = writeln!(out, "- {}", goal_line(goal));
    }
    for m in report
        .measurements
        .iter()
        .filter(|m| !m.id.starts_with("corpus:"))
    {
        let _ = writeln!(out);
        let _ = writeln!(out, "## Per crate: {}\n", m.name);
        crates_table(&mut out, m);
    }
    for m in &report.measurements {
        let per_target = m.id.starts_with("corpus:");
        let _ = writeln!(out);
        if per_target {
            let _ = writeln!(
                out,
                "<details><summary>Uncovered lines: {}</summary>\n",
                m.name
            );
        } else {
            let _ = writeln!(out, "## Uncovered lines: {}\n", m.name);
        }
        files_table(&mut out, m);
        if per_target {
            let _ = writeln!(out, "\n</details>");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(lines: &[(u32, bool)]) -> FileCoverage {
        FileCoverage {
            lines: lines.iter().copied().collect(),
            regions: BTreeMap::new(),
        }
    }

    #[test]
    fn uncovered_lines_group_into_ranges_across_lines_without_code() {
        let f = file(&[
            (118, true),
            (120, false),
            (121, false),
            (123, false),
            (124, false),
            (130, true),
            (210, false),
            (300, true),
        ]);
        assert_eq!(uncovered_ranges(&f), "120-124, 210");
        assert_eq!(uncovered_ranges(&file(&[(1, true)])), "");
        assert_eq!(uncovered_ranges(&file(&[(5, false)])), "5");
    }

    fn sample() -> Measurement {
        let mut files = BTreeMap::new();
        files.insert(
            "crates/wire/src/frame.rs".to_owned(),
            file(&[(1, true), (2, true), (3, false), (4, true)]),
        );
        files.insert(
            "crates/gateway/src/lib.rs".to_owned(),
            file(&[(1, true), (2, true), (3, true), (4, true)]),
        );
        files.insert(
            "crates/exec/src/http.rs".to_owned(),
            file(&[(10, false), (11, false)]),
        );
        files.insert(
            "crates/exec/src/scrub/mod.rs".to_owned(),
            file(&[(1, true), (2, true), (3, true), (4, false)]),
        );
        files.insert(
            "crates/cli/src/audit/journal.rs".to_owned(),
            file(&[(1, true), (2, true)]),
        );
        files.insert(
            "crates/cli/src/wrap/journal.rs".to_owned(),
            file(&[(1, false), (2, true)]),
        );
        files.insert(
            "crates/cli/src/wrap/driver.rs".to_owned(),
            file(&[(1, false), (2, false), (3, false), (4, false)]),
        );
        Measurement {
            id: "tests".into(),
            name: "cargo test".into(),
            command: "cargo llvm-cov --workspace".into(),
            ok: true,
            secs: 1.0,
            files,
        }
    }

    #[test]
    fn crate_figures_add_up_their_files() {
        let m = sample().report();
        assert_eq!(
            m.crates["wire+gateway"].lines,
            Figure {
                covered: 7,
                total: 8,
                percent: 87.5
            }
        );
        assert_eq!(m.crates["wire"].lines.total, 4);
        assert_eq!(m.crates["exec"].lines.covered, 3);
        assert_eq!(m.crates["exec"].lines.total, 6);
        assert_eq!(m.crates["cli"].lines.covered, 3);
        assert_eq!(m.crates["cli"].lines.total, 8);
        assert_eq!(m.crates["wrap"].lines.total, 0);
        let http = m
            .files
            .iter()
            .find(|f| f.path.ends_with("http.rs"))
            .unwrap();
        assert_eq!(http.uncovered_lines, "10-11");
    }

    #[test]
    fn parts_add_up_their_own_files_only() {
        let m = sample().report();
        assert_eq!(
            m.parts["scrubber"].lines,
            Figure {
                covered: 3,
                total: 4,
                percent: 75.0
            }
        );
        assert_eq!(
            m.parts["audit"].lines,
            Figure {
                covered: 3,
                total: 4,
                percent: 75.0
            }
        );
        assert_eq!(m.parts["wrap-driver"].lines.covered, 1);
        assert_eq!(m.parts["wrap-driver"].lines.total, 6);
        assert_eq!(m.subject("scrubber"), Some(&m.parts["scrubber"]));
        assert_eq!(m.subject("wire"), Some(&m.crates["wire"]));
        assert_eq!(m.subject("testkit"), None);
    }

    #[test]
    fn goals_name_their_measurement_and_say_when_it_did_not_run() {
        let measured = vec![sample().report()];
        let goals = goals(&measured);
        assert_eq!(goals.len(), 6);
        assert_eq!(goals[0].percent, Some(87.5));
        assert!(!goals[0].met, "87.5% is below 95%");
        assert_eq!(goals[1].percent, None);
        assert!(!goals[1].met);
        let audit = goals.iter().find(|g| g.crates == "audit").unwrap();
        assert_eq!(
            (audit.measurement.as_str(), audit.percent),
            ("tests", Some(75.0))
        );
        assert!(!audit.met);
        let wrap = goals
            .iter()
            .find(|g| g.crates == "wrap" && g.measurement == "tests")
            .unwrap();
        assert_eq!(
            wrap.percent,
            Some(100.0),
            "no counted line is fully covered"
        );
        assert!(wrap.met);
        let replayed = goals
            .iter()
            .find(|g| g.crates == "wrap" && g.measurement == "corpus")
            .unwrap();
        assert_eq!((replayed.min_percent, replayed.percent), (85.0, None));
    }

    #[test]
    fn markdown_and_summary_carry_figures_goals_and_uncovered_lines() {
        let measurements = vec![sample().report()];
        let report = Report {
            started: "2026-12-01T00:00:00Z".into(),
            total_secs: 12.0,
            llvm_cov: "llvm-cov-22".into(),
            scope: "crates/{wire,gateway,exec}/src".into(),
            goals: goals(&measurements),
            measurements,
        };
        let md = render_markdown(&report);
        assert!(
            md.contains("| cargo test | 75.0% | 100.0% | 87.5% |"),
            "{md}"
        );
        assert!(
            md.contains("| `crates/wire/src/frame.rs` | 75.0% (3/4) |"),
            "{md}"
        );
        assert!(md.contains("| 3 |"), "{md}");
        assert!(md.contains("NOT met (87.50%)"), "{md}");
        assert!(md.contains("## Per crate: cargo test"), "{md}");
        assert!(md.contains("| `crates/exec` | 50.0% (3/6) |"), "{md}");
        assert!(
            md.contains("| ↳ scrubber (the credential scrubber) | 75.0% (3/4) |"),
            "{md}"
        );
        assert!(md.contains("| ↳ audit ("), "{md}");
        assert!(md.contains("| ↳ wrap-driver ("), "{md}");
        let scrubber_row = md.find("↳ scrubber").unwrap();
        let exec_row = md.find("| `crates/exec` |").unwrap();
        let wrap_row = md.find("| `crates/wrap` |").unwrap();
        assert!(exec_row < scrubber_row && scrubber_row < wrap_row, "{md}");
        let summary = render_summary(&report);
        assert!(
            summary.lines().nth(1).unwrap().starts_with("cargo test"),
            "{summary}"
        );
        assert!(summary.contains("87.5%"), "{summary}");
        assert!(summary.contains("by corpus: not measured"), "{summary}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json["measurements"][0]["crates"]["wire+gateway"]["lines"]["percent"],
            87.5
        );
        assert_eq!(json["measurements"][0]["files"][0]["crate"], "cli");
        assert_eq!(
            json["measurements"][0]["parts"]["scrubber"]["lines"]["covered"],
            3
        );
        assert_eq!(
            json["measurements"][0]["crates"]["cli"]["lines"]["total"],
            8
        );
    }
}
