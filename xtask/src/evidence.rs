//! `cargo xtask evidence`: every measurement as data, and the page made
//! from it.
//!
//! The measuring commands (`nightly`, `coverage`, `mutants`, `bugbench`,
//! `bench`) write JSON under `target/nightly/`, which is not kept. This
//! command reduces each such file to one record of its key figures, with
//! the date, commit and machine of the run, and appends it to
//! `docs/evidence/history.jsonl` unless that file (by its SHA-256) is
//! recorded already. It then renders `docs/evidence.md` from the history
//! alone, so the page holds nothing the history does not, and
//! `--check` (and a test) can hold the committed page to it.
//!
//! [`record`] is the history's line format, [`ingest`] reads a source file
//! into figures, [`machine`] supplies what a file does not record, and
//! [`render`] turns the history into the page, [`sections`] writing each
//! kind's part of it.

mod ingest;
mod machine;
mod record;
mod render;
mod sections;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use sha2::{Digest, Sha256};

use crate::project::Project;

use machine::{Local, ThisMachine};
pub use machine::{short_head, this_machine};
use record::{Origin, Record, parse_history};

/// The history, relative to the repository root.
pub const HISTORY: &str = "docs/evidence/history.jsonl";
/// The page rendered from it.
pub const PAGE: &str = "docs/evidence.md";

/// Options of `cargo xtask evidence`.
#[derive(Debug, Args)]
pub struct Options {
    /// Only check that docs/evidence.md is what the history renders to;
    /// read no measurement and write nothing.
    #[arg(long, conflicts_with = "no_ingest")]
    pub check: bool,
    /// Render docs/evidence.md from the history as it is, without reading
    /// the measurements' JSON.
    #[arg(long)]
    pub no_ingest: bool,
    /// Directory the measuring commands wrote their JSON to.
    #[arg(long, default_value = "target/nightly")]
    pub from: PathBuf,
}

pub fn run(project: &Project, opts: &Options) -> Result<()> {
    let history = project.root.join(HISTORY);
    let page = project.root.join(PAGE);
    if opts.check {
        check(&history, &page)?;
        println!("{PAGE} is what {HISTORY} renders to");
        return Ok(());
    }
    if !opts.no_ingest {
        let local = ThisMachine {
            root: project.root.clone(),
        };
        let from = project.root.join(&opts.from);
        for (path, outcome) in ingest_dir(&from, &history, &local)? {
            let path = project.display(&path);
            match outcome {
                Ingestion::Added(record) => println!(
                    "{path}: recorded ({} of {} at {})",
                    record.kind.as_str(),
                    record.date,
                    record.commit
                ),
                Ingestion::Known => println!("{path}: recorded already"),
            }
        }
    }
    let text = read_history(&history)?;
    let rendered =
        render::render(&text).with_context(|| format!("in {}", project.display(&history)))?;
    if fs::read_to_string(&page).ok().as_deref() != Some(rendered.as_str()) {
        fs::write(&page, &rendered).with_context(|| format!("writing {}", page.display()))?;
        println!("{PAGE}: written");
    } else {
        println!("{PAGE}: unchanged");
    }
    Ok(())
}

/// The history's text; none yet is an empty history.
fn read_history(path: &Path) -> Result<String> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Fails unless `page` holds exactly what `history` renders to.
pub fn check(history: &Path, page: &Path) -> Result<()> {
    let text = read_history(history)?;
    let rendered = render::render(&text).with_context(|| format!("in {}", history.display()))?;
    let committed = fs::read_to_string(page).with_context(|| {
        format!(
            "reading {}: run `cargo xtask evidence` to generate it",
            page.display()
        )
    })?;
    if committed != rendered {
        let line = committed
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(rendered.lines().count()))
            + 1;
        bail!(
            "{} is not what {} renders to (first difference at line {line}): it is generated, \
             not edited by hand; run `cargo xtask evidence` (or `--no-ingest`) and commit the result",
            page.display(),
            history.display()
        );
    }
    Ok(())
}

/// What became of one source file.
#[derive(Debug)]
pub enum Ingestion {
    Added(Record),
    /// Its SHA-256 is in the history already.
    Known,
}

/// Reads each source file present in `dir` and appends a record for each
/// one the history does not hold yet.
pub fn ingest_dir(
    dir: &Path,
    history: &Path,
    local: &dyn Local,
) -> Result<Vec<(PathBuf, Ingestion)>> {
    let text = read_history(history)?;
    let records = parse_history(&text).with_context(|| format!("in {}", history.display()))?;
    let mut known: Vec<String> = records
        .iter()
        .filter_map(|r| match &r.origin {
            Origin::Sha256(sha) => Some(sha.clone()),
            Origin::Source(_) => None,
        })
        .collect();
    let mut outcomes = Vec::new();
    let mut lines = String::new();
    for (kind, name) in ingest::SOURCES {
        let path = dir.join(name);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let sha = hex::encode(Sha256::digest(&bytes));
        if known.contains(&sha) {
            outcomes.push((path, Ingestion::Known));
            continue;
        }
        let record = (|| -> Result<Record> {
            let text = std::str::from_utf8(&bytes).context("not UTF-8")?;
            let ingested = ingest::ingest(kind, text)?;
            Ok(Record {
                kind,
                date: match ingested.date {
                    Some(date) => date,
                    None => local.date_of(&path)?,
                },
                commit: match ingested.commit {
                    Some(commit) => commit,
                    None => local.commit()?,
                },
                machine: ingested.machine.unwrap_or_else(|| local.machine()),
                origin: Origin::Sha256(sha.clone()),
                note: None,
                figures: ingested.figures,
            })
        })()
        .with_context(|| {
            format!(
                "{}: not a {name} as `cargo xtask {}` writes it",
                path.display(),
                writer(kind)
            )
        })?;
        lines.push_str(&record.to_line());
        lines.push('\n');
        known.push(sha);
        outcomes.push((path, Ingestion::Added(record)));
    }
    if !lines.is_empty() {
        let mut text = text;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&lines);
        if let Some(parent) = history.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        fs::write(history, text).with_context(|| format!("writing {}", history.display()))?;
    }
    Ok(outcomes)
}

/// The command that writes a kind's source file.
fn writer(kind: record::Kind) -> &'static str {
    match kind {
        record::Kind::Coverage => "coverage",
        record::Kind::Fuzz => "nightly",
        record::Kind::Mutants => "mutants",
        record::Kind::Bugbench => "bugbench",
        record::Kind::Bench => "bench",
        record::Kind::Memory => "evidence",
    }
}

#[cfg(test)]
mod tests;
