//! Each kind's section of the evidence page: its goals, judged on the
//! latest run that measured them, its latest figures, and its earlier runs.
//! Figures are read loosely, as the history holds them: a run that did not
//! record a figure shows `–` in its place.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::record::Record;
use super::render::{
    Goal, earlier_heading, escape, fixed, int, note, sentence, stamp, stamp_after, thousands,
    verdict, when,
};
use crate::nightly::SanitizerPlan;

// ------------------------------------------------------------- coverage

const COVERAGE_GOALS: [(&str, &str, f64); 2] = [
    ("tests", "`cargo test`", 95.0),
    ("corpus", "corpus replay (all targets)", 90.0),
];

/// Goals on a crate or part beyond wire and gateway: measurement, its
/// label, the crate or part (a key of a measurement's `crates` or `parts`),
/// its label, and the minimum percent of lines. They are judged once the
/// history holds a run that measured every crate (older runs counted only
/// wire, gateway and exec, and the page they rendered stays as it was).
const CRATE_GOALS: [(&str, &str, &str, &str, f64); 4] = [
    ("tests", "`cargo test`", "wrap", "`crates/wrap`", 95.0),
    ("tests", "`cargo test`", "scrubber", "the scrubber", 95.0),
    ("tests", "`cargo test`", "audit", "the audit code", 95.0),
    (
        "corpus",
        "corpus replay (all targets)",
        "wrap",
        "`crates/wrap`",
        85.0,
    ),
];

/// The lines figure of a crate or part in a measurement of the newer kind.
fn crate_lines<'a>(m: &'a Value, name: &str) -> Option<&'a Value> {
    ["crates", "parts"]
        .iter()
        .map(|map| &m[map][name]["lines"])
        .find(|f| f.is_object())
}

/// Whether a coverage run measured every crate (it has `crates` per
/// measurement).
fn measures_every_crate(r: &Record) -> bool {
    r.figures
        .get("measurements")
        .and_then(Value::as_array)
        .is_some_and(|ms| ms.iter().any(|m| m["crates"].is_object()))
}

fn measurement<'a>(r: &'a Record, id: &str) -> Option<&'a Value> {
    r.figures
        .get("measurements")?
        .as_array()?
        .iter()
        .find(|m| m["id"] == id)
}

/// Covered over total when both are known, else the recorded percentage.
fn percent(figure: &Value) -> Option<f64> {
    match (figure["covered"].as_f64(), figure["total"].as_f64()) {
        (Some(covered), Some(total)) if total > 0.0 => Some(covered * 100.0 / total),
        _ => figure["percent"].as_f64(),
    }
}

/// `98.2% (3880/3950)`, or `91.0%` when only the percentage is known.
fn coverage_cell(figure: &Value) -> String {
    let Some(p) = figure["percent"].as_f64().or_else(|| percent(figure)) else {
        return "–".to_owned();
    };
    match (figure["covered"].as_u64(), figure["total"].as_u64()) {
        (Some(covered), Some(total)) => format!("{p:.1}% ({covered}/{total})"),
        _ => format!("{p:.1}%"),
    }
}

/// `98.2% (3880/3950); 3753 needed`.
fn goal_figure(figure: &Value, min: f64) -> String {
    let mut text = coverage_cell(figure);
    if let Some(total) = figure["total"].as_u64() {
        let needed = (total as f64 * min / 100.0).ceil() as u64;
        let _ = write!(text, "; {needed} needed");
    }
    text
}

pub(super) fn coverage_goals(runs: &[&Record]) -> Vec<Goal> {
    let mut goals = boundary_coverage_goals(runs);
    if runs.iter().any(|r| measures_every_crate(r)) {
        goals.extend(CRATE_GOALS.iter().map(|&(id, label, name, what, min)| {
            let what = format!("{label} covers ≥ {min:.0}% of {what} lines");
            let latest = runs.iter().find_map(|r| {
                let figure = crate_lines(measurement(r, id)?, name)?;
                Some((r, figure, percent(figure)?))
            });
            match latest {
                Some((r, figure, p)) => Goal {
                    what,
                    figure: goal_figure(figure, min),
                    run: when(r),
                    met: Some(p >= min),
                },
                None => Goal {
                    what,
                    figure: "not measured yet".into(),
                    run: "–".into(),
                    met: None,
                },
            }
        }));
    }
    goals
}

fn boundary_coverage_goals(runs: &[&Record]) -> Vec<Goal> {
    COVERAGE_GOALS
        .iter()
        .map(|&(id, label, min)| {
            let what = format!("{label} covers ≥ {min:.0}% of wire+gateway lines");
            let latest = runs.iter().find_map(|r| {
                let figure = &measurement(r, id)?["wire_gateway_lines"];
                Some((r, figure, percent(figure)?))
            });
            match latest {
                Some((r, figure, p)) => Goal {
                    what,
                    figure: goal_figure(figure, min),
                    run: when(r),
                    met: Some(p >= min),
                },
                None => Goal {
                    what,
                    figure: "not measured yet".into(),
                    run: "–".into(),
                    met: None,
                },
            }
        })
        .collect()
}

pub(super) fn coverage(runs: &[&Record]) -> String {
    let mut md = String::new();
    let latest = runs[0];
    let _ = writeln!(md, "### Latest run\n\n{}\n", stamp(latest));
    let measurements: &[Value] = latest
        .figures
        .get("measurements")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let name = |m: &Value| {
        m["name"]
            .as_str()
            .or_else(|| m["id"].as_str())
            .map(escape)
            .unwrap_or_default()
    };
    let (per_target, overall): (Vec<&Value>, Vec<&Value>) = measurements
        .iter()
        .partition(|m| m["id"].as_str().is_some_and(|id| id.starts_with("corpus:")));
    let _ = writeln!(
        md,
        "| measured by | wire+gateway lines | wire+gateway regions | exec lines | exec regions |"
    );
    let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: |");
    for m in &overall {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            name(m),
            coverage_cell(&m["wire_gateway_lines"]),
            coverage_cell(&m["wire_gateway_regions"]),
            coverage_cell(&m["exec_lines"]),
            coverage_cell(&m["exec_regions"]),
        );
    }
    let _ = writeln!(md);
    coverage_per_crate(&mut md, &overall);
    if !per_target.is_empty() {
        let _ = writeln!(md, "Corpus replay per fuzz target:\n");
        let _ = writeln!(md, "| target | wire+gateway lines | wire+gateway regions |");
        let _ = writeln!(md, "| --- | ---: | ---: |");
        for m in &per_target {
            let id = m["id"].as_str().unwrap_or_default();
            let _ = writeln!(
                md,
                "| `{}` | {} | {} |",
                escape(id.trim_start_matches("corpus:")),
                coverage_cell(&m["wire_gateway_lines"]),
                coverage_cell(&m["wire_gateway_regions"]),
            );
        }
        let _ = writeln!(md);
    }
    goals_of_latest(&mut md, &coverage_goals(&[latest]));

    if runs.len() > 1 {
        earlier_heading(&mut md);
        let _ = writeln!(
            md,
            "| date · commit | `cargo test`: wire+gateway lines | corpus replay: wire+gateway lines | note |"
        );
        let _ = writeln!(md, "| --- | ---: | ---: | --- |");
        for r in &runs[1..] {
            let cell = |id| {
                measurement(r, id).map_or_else(
                    || "–".to_owned(),
                    |m| coverage_cell(&m["wire_gateway_lines"]),
                )
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} |",
                when(r),
                cell("tests"),
                cell("corpus"),
                note(r)
            );
        }
        let _ = writeln!(md);
    }
    md
}

/// Every crate and part of the measurements that counted them, one column
/// pair per measurement (a run that counted only wire, gateway and exec
/// has no such table).
fn coverage_per_crate(md: &mut String, overall: &[&Value]) {
    let measured: Vec<&Value> = overall
        .iter()
        .copied()
        .filter(|m| m["crates"].is_object())
        .collect();
    if measured.is_empty() {
        return;
    }
    let mut rows: Vec<(String, String)> = Vec::new();
    for (map, label) in [("crates", "`crates/{}`"), ("parts", "part: {}")] {
        for m in &measured {
            for name in m[map].as_object().into_iter().flatten().map(|(k, _)| k) {
                if name.contains('+') || rows.iter().any(|(n, _)| n == name) {
                    continue;
                }
                rows.push((name.clone(), label.replace("{}", &escape(name))));
            }
        }
    }
    let _ = writeln!(md, "Per crate, and the parts with rows of their own:\n");
    let _ = write!(md, "| crate or part |");
    for m in &measured {
        let name = m["name"]
            .as_str()
            .or_else(|| m["id"].as_str())
            .unwrap_or("?");
        let _ = write!(md, " {0}: lines | {0}: regions |", escape(name));
    }
    let _ = writeln!(md, "\n| --- |{}", " ---: | ---: |".repeat(measured.len()));
    for (name, label) in &rows {
        let _ = write!(md, "| {label} |");
        for m in &measured {
            let figures = if m["crates"][name.as_str()].is_object() {
                &m["crates"][name.as_str()]
            } else {
                &m["parts"][name.as_str()]
            };
            let _ = write!(
                md,
                " {} | {} |",
                coverage_cell(&figures["lines"]),
                coverage_cell(&figures["regions"])
            );
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md);
}

/// The goals judged on the latest run, as a list under its figures.
fn goals_of_latest(md: &mut String, goals: &[Goal]) {
    for goal in goals {
        let _ = writeln!(
            md,
            "- Goal: {} — {}: **{}**.",
            goal.what,
            goal.figure,
            verdict(goal.met)
        );
    }
    let _ = writeln!(md);
}

// ----------------------------------------------------------------- fuzz

const FUZZ_GOALS: [(&str, u64); 5] = [
    ("stdin_bytes", 10_000),
    ("session_model", 5_000),
    ("chunking", 5_000),
    ("stdout_frames", 5_000),
    ("wrap_session", 5_000),
];

/// Whether a fuzz run carries the targets' throughput floors (the nightly
/// that sets them also fuzzes every target).
fn has_floors(r: &Record) -> bool {
    r.figures
        .get("targets")
        .and_then(Value::as_array)
        .is_some_and(|ts| ts.iter().any(|t| t["floor_exec_per_cpu_sec"].is_number()))
}

/// The goals' targets shown: each one some run measured, all of them once a
/// run carries floors (older runs fuzzed only some targets, and the page
/// they rendered stays as it was).
fn shown_fuzz_goals(runs: &[&Record]) -> Vec<(&'static str, u64)> {
    let every = runs.iter().any(|r| has_floors(r));
    FUZZ_GOALS
        .iter()
        .copied()
        .filter(|(target, _)| every || runs.iter().any(|r| fuzz_target(r, target).is_some()))
        .collect()
}

/// The sanitizer description of the nightly's default configuration.
fn default_split() -> String {
    SanitizerPlan::Split {
        asan_percent: SanitizerPlan::DEFAULT_ASAN_PERCENT,
    }
    .describe()
}

fn fuzz_target<'a>(r: &'a Record, target: &str) -> Option<&'a Value> {
    r.figures
        .get("targets")?
        .as_array()?
        .iter()
        .find(|t| t["target"] == target)
}

fn is_default_split(r: &Record) -> bool {
    r.figures.get("sanitizer").and_then(Value::as_str) == Some(default_split().as_str())
}

fn fuzz_goal_for(target: &str) -> Option<u64> {
    FUZZ_GOALS
        .iter()
        .find(|(t, _)| *t == target)
        .map(|&(_, goal)| goal)
}

pub(super) fn fuzz_goals(runs: &[&Record]) -> Vec<Goal> {
    shown_fuzz_goals(runs)
        .into_iter()
        .map(|(target, goal)| {
            let what = format!(
                "`{target}` ≥ {} exec per CPU-second (combined, default split)",
                thousands(goal)
            );
            let latest = runs.iter().filter(|r| is_default_split(r)).find_map(|r| {
                let exec = fuzz_target(r, target)?["exec_per_cpu_sec"].as_f64()?;
                Some((r, exec))
            });
            match latest {
                Some((r, exec)) => Goal {
                    what,
                    figure: thousands(exec.round() as u64),
                    run: when(r),
                    met: Some(exec >= goal as f64),
                },
                None => Goal {
                    what,
                    figure: "not measured yet".into(),
                    run: "–".into(),
                    met: None,
                },
            }
        })
        .collect()
}

/// `default split (none 80% + address 20%), 240 s budget`, or in a table
/// (`short`) `default split, 240 s`.
fn fuzz_configuration(r: &Record, short: bool) -> String {
    let sanitizer = r
        .figures
        .get("sanitizer")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let mut text = match (sanitizer == default_split(), short) {
        (true, true) => "default split".to_owned(),
        (true, false) => format!("default split ({sanitizer})"),
        (false, _) => escape(sanitizer),
    };
    if let Some(secs) = r.figures.get("budget_secs").and_then(Value::as_u64) {
        let _ = write!(text, ", {secs} s{}", if short { "" } else { " budget" });
    }
    text
}

pub(super) fn fuzz(runs: &[&Record]) -> String {
    let mut md = String::new();
    let latest = runs[0];
    let _ = writeln!(md, "### Latest run\n\n{}\n", stamp(latest));
    let _ = writeln!(
        md,
        "Configuration: {}. Executions per CPU-second:\n",
        fuzz_configuration(latest, false)
    );
    let split = is_default_split(latest);
    let floors = has_floors(latest);
    let _ = writeln!(
        md,
        "| target | fast build | ASan build | **combined** | combined, wall exec/s | crashes | goal | met |{}",
        if floors { " floor |" } else { "" }
    );
    let _ = writeln!(
        md,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |{}",
        if floors { " ---: |" } else { "" }
    );
    let targets: &[Value] = latest
        .figures
        .get("targets")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    for t in targets {
        let name = t["target"].as_str().unwrap_or("?");
        let goal = fuzz_goal_for(name);
        let met = match (goal, t["exec_per_cpu_sec"].as_f64()) {
            (Some(goal), Some(exec)) if split => verdict(Some(exec >= goal as f64)),
            (Some(_), _) if !split => "n/a (not the default split)",
            _ => "–",
        };
        let _ = write!(
            md,
            "| `{}` | {} | {} | **{}** | {} | {} | {} | {} |",
            escape(name),
            int(&t["fast_exec_per_cpu_sec"]),
            int(&t["asan_exec_per_cpu_sec"]),
            int(&t["exec_per_cpu_sec"]),
            int(&t["exec_per_sec"]),
            int(&t["crashes"]),
            goal.map_or_else(|| "–".to_owned(), thousands),
            met
        );
        if floors {
            let under = if t["under_floor"] == true {
                " ⚠️ under"
            } else {
                ""
            };
            let _ = write!(md, " {}{under} |", int(&t["floor_exec_per_cpu_sec"]));
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md);
    if floors {
        let _ = writeln!(
            md,
            "Floor: the throughput under which the nightly flags a target (`xtask/src/nightly/floors.rs`), judged on shares of at least 60 s fuzzed whole in the default configuration; ⚠️ marks a judged run under it.\n"
        );
    }

    if runs.len() > 1 {
        let columns = shown_fuzz_goals(runs);
        earlier_heading(&mut md);
        let _ = write!(
            md,
            "Combined executions per CPU-second.\n\n| date · commit | configuration |"
        );
        for (target, _) in &columns {
            let _ = write!(md, " `{target}` |");
        }
        let _ = writeln!(md, " note |");
        let _ = writeln!(md, "| --- | --- |{} --- |", " ---: |".repeat(columns.len()));
        for r in &runs[1..] {
            let _ = write!(md, "| {} | {} |", when(r), fuzz_configuration(r, true));
            for (target, _) in &columns {
                let cell = fuzz_target(r, target)
                    .map_or_else(|| "–".to_owned(), |t| int(&t["exec_per_cpu_sec"]));
                let _ = write!(md, " {cell} |");
            }
            let _ = writeln!(md, " {} |", note(r));
        }
        let _ = writeln!(md);
    }
    md
}

// -------------------------------------------------------------- mutants

fn counts(r: &Record) -> (Option<u64>, Option<u64>) {
    (
        r.figures.get("caught").and_then(Value::as_u64),
        r.figures.get("missed").and_then(Value::as_u64),
    )
}

/// caught / (caught + missed).
fn score(r: &Record) -> String {
    match counts(r) {
        (Some(caught), Some(missed)) if caught + missed > 0 => {
            format!("{:.1}%", caught as f64 * 100.0 / (caught + missed) as f64)
        }
        _ => "n/a".to_owned(),
    }
}

fn figure<'a>(r: &'a Record, key: &str) -> &'a Value {
    r.figures.get(key).unwrap_or(&Value::Null)
}

pub(super) fn mutants_goals(runs: &[&Record]) -> Vec<Goal> {
    let what = "no unexplained surviving mutant".to_owned();
    let Some(r) = runs.first() else {
        return vec![Goal {
            what,
            figure: "not measured yet".into(),
            run: "–".into(),
            met: None,
        }];
    };
    let unexplained = figure(r, "unexplained_survivors").as_u64();
    vec![Goal {
        what,
        figure: format!(
            "{} unexplained of {} survivors; score {}",
            unexplained.map_or_else(|| "?".to_owned(), thousands),
            int(figure(r, "missed")),
            score(r)
        ),
        run: when(r),
        met: unexplained.map(|n| n == 0),
    }]
}

pub(super) fn mutants(runs: &[&Record]) -> String {
    let mut md = String::new();
    let latest = runs[0];
    let _ = writeln!(md, "### Latest run\n\n{}\n", stamp(latest));
    if let Some(scope) = figure(latest, "scope").as_str() {
        let _ = writeln!(md, "Scope: {}.\n", escape(scope));
    }
    let _ = writeln!(
        md,
        "| tested | caught | missed | timeouts | unviable | excluded | score | unexplained survivors |"
    );
    let _ = writeln!(
        md,
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let _ = writeln!(
        md,
        "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
        int(figure(latest, "tested")),
        int(figure(latest, "caught")),
        int(figure(latest, "missed")),
        int(figure(latest, "timeouts")),
        int(figure(latest, "unviable")),
        int(figure(latest, "excluded")),
        score(latest),
        int(figure(latest, "unexplained_survivors")),
    );
    if let Some(shards) = figure(latest, "shards").as_array() {
        let _ = writeln!(md, "By shard:\n");
        let _ = writeln!(
            md,
            "| shard | commit | mutants | caught | missed | timeouts | unviable |"
        );
        let _ = writeln!(md, "| --- | --- | ---: | ---: | ---: | ---: | ---: |");
        for s in shards {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} |",
                fixed(&s["shard"], 0),
                s["commit"]
                    .as_str()
                    .map_or_else(|| "–".to_owned(), |c| format!("`{}`", escape(c))),
                int(&s["mutants"]),
                int(&s["caught"]),
                int(&s["missed"]),
                int(&s["timeouts"]),
                int(&s["unviable"]),
            );
        }
        let _ = writeln!(md);
    }
    if let Some(crates) = figure(latest, "crates").as_array() {
        let _ = writeln!(md, "By crate:\n");
        let _ = writeln!(
            md,
            "| crate | tested | caught | missed | timeouts | unviable | excluded | score |"
        );
        let _ = writeln!(
            md,
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        // A narrowed run (`--file`, `--diff`) reaches only some crates.
        let reached = |c: &&Value| {
            c["tested"].as_u64().unwrap_or(0) + c["excluded"].as_u64().unwrap_or(0) > 0
        };
        for c in crates.iter().filter(reached) {
            let score = match (c["caught"].as_u64(), c["missed"].as_u64()) {
                (Some(caught), Some(missed)) if caught + missed > 0 => {
                    format!("{:.1}%", caught as f64 * 100.0 / (caught + missed) as f64)
                }
                _ => "n/a".to_owned(),
            };
            let name = if c["scope"].is_string() {
                &c["scope"]
            } else {
                &c["package"]
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {score} |",
                fixed(name, 0),
                int(&c["tested"]),
                int(&c["caught"]),
                int(&c["missed"]),
                int(&c["timeouts"]),
                int(&c["unviable"]),
                int(&c["excluded"]),
            );
        }
        let _ = writeln!(md);
    }
    if let Some(survivors) = figure(latest, "survivors").as_array() {
        let _ = writeln!(md, "Survivors:\n");
        for s in survivors {
            let _ = writeln!(md, "- `{}`", s.as_str().unwrap_or("?"));
        }
        let _ = writeln!(md);
    }
    goals_of_latest(&mut md, &mutants_goals(&[latest]));

    if runs.len() > 1 {
        earlier_heading(&mut md);
        let _ = writeln!(
            md,
            "| date · commit | scope | tested | caught | missed | score | unexplained | note |"
        );
        let _ = writeln!(md, "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |");
        for r in &runs[1..] {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                when(r),
                fixed(figure(r, "scope"), 0),
                int(figure(r, "tested")),
                int(figure(r, "caught")),
                int(figure(r, "missed")),
                score(r),
                int(figure(r, "unexplained_survivors")),
                note(r)
            );
        }
        let _ = writeln!(md);
    }
    md
}

// ------------------------------------------------------------- bugbench

fn bugs(r: &Record) -> &[Value] {
    figure(r, "bugs").as_array().map_or(&[], Vec::as_slice)
}

fn caught_by_fuzzing(bug: &Value) -> bool {
    bug["fuzz"]
        .as_array()
        .is_some_and(|runs| runs.iter().any(|f| f["caught"] == true))
}

fn was_fuzzed(bug: &Value) -> bool {
    bug["fuzz"].as_array().is_some_and(|runs| !runs.is_empty())
}

fn caught_by_tests(bug: &Value) -> bool {
    bug["cargo_test"]["caught"] == true
}

/// Each bug's most recent measurement, by name, with the run it is from.
fn latest_bugs<'a>(runs: &[&'a Record]) -> BTreeMap<&'a str, (&'a Value, &'a Record)> {
    let mut latest = BTreeMap::new();
    for r in runs.iter().rev() {
        for bug in bugs(r) {
            if let Some(name) = bug["name"].as_str() {
                latest.insert(name, (bug, *r));
            }
        }
    }
    latest
}

pub(super) fn bugbench_goals(runs: &[&Record]) -> Vec<Goal> {
    let what = "every planted bug caught by `cargo test` and by a fuzz target".to_owned();
    let latest = latest_bugs(runs);
    let Some(newest) = runs.first() else {
        return vec![Goal {
            what,
            figure: "not measured yet".into(),
            run: "–".into(),
            met: None,
        }];
    };
    let by_tests = latest.values().filter(|(b, _)| caught_by_tests(b)).count();
    // A bug no fuzz target reaches is judged by `cargo test` alone.
    let fuzzed = latest.values().filter(|(b, _)| was_fuzzed(b)).count();
    let by_fuzzing = latest
        .values()
        .filter(|(b, _)| caught_by_fuzzing(b))
        .count();
    vec![Goal {
        what,
        figure: format!(
            "{by_tests} of {n} by `cargo test`, {by_fuzzing} of {fuzzed} by fuzzing",
            n = latest.len()
        ),
        run: when(newest),
        met: Some(by_tests == latest.len() && by_fuzzing == fuzzed),
    }]
}

/// `caught (2 failing tests)` or `**escaped**`.
fn test_cell(bug: &Value) -> String {
    let test = &bug["cargo_test"];
    if !caught_by_tests(bug) {
        return "**escaped**".to_owned();
    }
    if test["status"] == "build-failed" {
        return "caught (the tests no longer build)".to_owned();
    }
    match test["failed_tests"].as_u64() {
        Some(1) => "caught (1 failing test)".to_owned(),
        Some(n) => format!("caught ({n} failing tests)"),
        None => "caught".to_owned(),
    }
}

/// `` `chunking` **0.9 s** ``, per target the bug was fuzzed with.
fn fuzz_cell(bug: &Value) -> String {
    let runs: Vec<String> = bug["fuzz"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let target = escape(f["target"].as_str().unwrap_or("?"));
            let secs = f["secs"].as_f64();
            if f["caught"] == true {
                format!(
                    "`{target}` **{} s**",
                    secs.map_or("?".into(), |s| format!("{s:.1}"))
                )
            } else if f["status"] == "error" {
                format!("`{target}` error")
            } else {
                format!(
                    "`{target}` **escaped** for {} s",
                    secs.map_or("?".into(), |s| format!("{s:.0}"))
                )
            }
        })
        .collect();
    let mut cell = if runs.is_empty() && bug["no_fuzz_target"] == true {
        "no fuzz target reaches it".to_owned()
    } else if runs.is_empty() {
        "not fuzzed".to_owned()
    } else {
        runs.join(", ")
    };
    if let Some(error) = bug["error"].as_str() {
        let _ = write!(cell, " (error: {})", escape(error));
    }
    cell
}

/// Per stage: the crates its bugs patch and what caught them; shown once
/// the bugs record their crates (older runs did not, and the page they
/// rendered stays as it was).
fn bugbench_per_stage(md: &mut String, latest: &BTreeMap<&str, (&Value, &Record)>) {
    if !latest.values().any(|(b, _)| b["crates"].is_array()) {
        return;
    }
    let mut stages: BTreeMap<&str, (Vec<&str>, usize, usize, usize, usize)> = BTreeMap::new();
    for (bug, _) in latest.values() {
        let stage = bug["stage"].as_str().unwrap_or("?");
        let row = stages.entry(stage).or_default();
        for krate in bug["crates"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !row.0.contains(&krate) {
                row.0.push(krate);
            }
        }
        row.1 += 1;
        row.2 += usize::from(caught_by_tests(bug));
        row.3 += usize::from(was_fuzzed(bug));
        row.4 += usize::from(caught_by_fuzzing(bug));
    }
    let _ = writeln!(md, "By stage:\n");
    let _ = writeln!(
        md,
        "| stage | crates | bugs | caught by `cargo test` | caught by fuzzing |"
    );
    let _ = writeln!(md, "| --- | --- | ---: | ---: | ---: |");
    for (stage, (crates, bugs, by_tests, fuzzed, by_fuzzing)) in stages {
        let crates: Vec<String> = crates.iter().map(|c| format!("`{}`", escape(c))).collect();
        let _ = writeln!(
            md,
            "| {} | {} | {bugs} | {by_tests} | {} |",
            escape(stage),
            if crates.is_empty() {
                "–".to_owned()
            } else {
                crates.join(", ")
            },
            if fuzzed == 0 {
                "no target reaches them".to_owned()
            } else {
                format!("{by_fuzzing} of {fuzzed}")
            }
        );
    }
    let _ = writeln!(md);
}

pub(super) fn bugbench(runs: &[&Record]) -> String {
    let mut md = String::new();
    let newest = runs[0];
    let _ = writeln!(
        md,
        "### Latest figures\n\nEach bug's most recent measurement, dated in its row. {}\n",
        stamp_after("The newest run was measured on", newest)
    );
    let mut settings = Vec::new();
    if let Some(cap) = figure(newest, "cap_secs").as_u64() {
        settings.push(format!("cap {cap} s per target"));
    }
    if let Some(sanitizer) = figure(newest, "sanitizer").as_str() {
        settings.push(format!("sanitizer `{}`", escape(sanitizer)));
    }
    if !settings.is_empty() {
        let _ = writeln!(md, "Fuzzing: {}.\n", settings.join(", "));
    }
    let _ = writeln!(
        md,
        "| bug | stage | `cargo test` | fuzz: seconds to the first failure | measured |"
    );
    let _ = writeln!(md, "| --- | --- | --- | --- | --- |");
    for (name, (bug, r)) in latest_bugs(runs) {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} | {} |",
            escape(name),
            fixed(&bug["stage"], 0),
            test_cell(bug),
            fuzz_cell(bug),
            when(r)
        );
    }
    let _ = writeln!(md);
    bugbench_per_stage(&mut md, &latest_bugs(runs));
    goals_of_latest(&mut md, &bugbench_goals(runs));

    if runs.len() > 1 {
        earlier_heading(&mut md);
        let _ = writeln!(
            md,
            "| date · commit | bugs | caught by `cargo test` | caught by fuzzing | cap | note |"
        );
        let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: | --- |");
        for r in &runs[1..] {
            let bugs = bugs(r);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                when(r),
                bugs.len(),
                bugs.iter().filter(|b| caught_by_tests(b)).count(),
                bugs.iter().filter(|b| caught_by_fuzzing(b)).count(),
                figure(r, "cap_secs")
                    .as_u64()
                    .map_or_else(|| "–".to_owned(), |c| format!("{c} s")),
                note(r)
            );
        }
        let _ = writeln!(md);
    }
    md
}

// ---------------------------------------------------------------- bench

const RATIO_GOAL: f64 = 1.2;
const STARTUP_GOAL_MS: f64 = 10.0;

fn ratio(r: &Record) -> Option<f64> {
    figure(r, "pipeline_vs_serde_value").as_f64()
}

fn rows(r: &Record) -> &[Value] {
    figure(r, "rows").as_array().map_or(&[], Vec::as_slice)
}

/// A table with every figure of every row (a run may record a few ratios
/// only).
fn has_full_table(r: &Record) -> bool {
    let rows = rows(r);
    !rows.is_empty()
        && rows
            .iter()
            .all(|row| row["mb_per_s"].is_number() && row["frames_per_s"].is_number())
}

/// The runner's own startup figure (the first one recorded).
fn startup_median(r: &Record) -> Option<f64> {
    figure(r, "startup").as_array()?.first()?["median_ms"].as_f64()
}

fn row_ratio(r: &Record, mix: &str, contender: &str) -> String {
    rows(r)
        .iter()
        .find(|row| row["mix"] == mix && row["contender"] == contender)
        .map_or_else(|| "–".to_owned(), |row| fixed(&row["ratio"], 2))
}

pub(super) fn bench_goals(runs: &[&Record]) -> Vec<Goal> {
    let mut goals = Vec::new();
    let what = format!("`pipeline_vs_serde_value` ≥ {RATIO_GOAL} (legacy mix)");
    goals.push(match runs.iter().find_map(|r| Some((r, ratio(r)?))) {
        Some((r, ratio)) => Goal {
            what,
            figure: format!("{ratio:.2}"),
            run: when(r),
            met: Some(ratio >= RATIO_GOAL),
        },
        None => Goal {
            what,
            figure: "not measured yet".into(),
            run: "–".into(),
            met: None,
        },
    });
    let what =
        format!("startup: median launch → `initialize` answered within {STARTUP_GOAL_MS:.0} ms");
    goals.push(
        match runs.iter().find_map(|r| Some((r, startup_median(r)?))) {
            Some((r, median)) => Goal {
                what,
                figure: format!("{median:.2} ms"),
                run: when(r),
                met: Some(median <= STARTUP_GOAL_MS),
            },
            None => Goal {
                what,
                figure: "not measured yet".into(),
                run: "–".into(),
                met: None,
            },
        },
    );
    goals
}

fn bench_table(md: &mut String, r: &Record) {
    let _ = writeln!(
        md,
        "| mix | contender | MB/s | frames/s | × serde_json::Value |"
    );
    let _ = writeln!(md, "| --- | --- | ---: | ---: | ---: |");
    for row in rows(r) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            fixed(&row["mix"], 0),
            fixed(&row["contender"], 0),
            fixed(&row["mb_per_s"], 1),
            int(&row["frames_per_s"]),
            fixed(&row["ratio"], 2)
        );
    }
    let _ = writeln!(md);
}

pub(super) fn bench(runs: &[&Record]) -> String {
    let mut md = String::new();
    let latest = runs[0];
    let _ = writeln!(md, "### Latest run\n\n{}\n", stamp(latest));
    if let Some(ratio) = ratio(latest) {
        let _ = writeln!(
            md,
            "`pipeline_vs_serde_value={ratio:.2}` (legacy mix){}.\n",
            if figure(latest, "quick") == true {
                ", from `--quick`"
            } else {
                ""
            }
        );
    }
    if !rows(latest).is_empty() {
        bench_table(&mut md, latest);
    }
    let latency = figure(latest, "latency");
    if latency.is_object() {
        let mut parts = Vec::new();
        for (key, label) in [("p50_us", "p50"), ("p99_us", "p99"), ("max_us", "slowest")] {
            if latency[key].is_number() {
                parts.push(format!("{label} {} µs", fixed(&latency[key], 2)));
            }
        }
        let frames = latency["frames"]
            .as_u64()
            .map(|n| format!(" ({} frames, one per read)", thousands(n)))
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "Latency, a `tools/call` frame in to its `Execute` effect{frames}: {}.\n",
            parts.join(", ")
        );
    }
    if let Some(startup) = figure(latest, "startup").as_array() {
        let _ = writeln!(
            md,
            "Startup, launch to the `initialize` answer (release binary, `examples/policy-20-tools.toml`):\n"
        );
        let _ = writeln!(
            md,
            "| timed by | launches | median | 90th percentile | slowest | over {STARTUP_GOAL_MS:.0} ms |"
        );
        let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: | ---: |");
        for s in startup {
            let ms = |key: &str| match &s[key] {
                Value::Null => "–".to_owned(),
                v => format!("{} ms", fixed(v, 2)),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                fixed(&s["method"], 0),
                int(&s["runs"]),
                ms("median_ms"),
                ms("p90_ms"),
                ms("max_ms"),
                int(&s["over_goal"]),
            );
        }
        let _ = writeln!(md);
    }
    goals_of_latest(&mut md, &bench_goals(&[latest]));
    if !has_full_table(latest)
        && let Some(full) = runs.iter().find(|r| has_full_table(r))
    {
        let _ = writeln!(
            md,
            "### Latest full table\n\nThe latest run above recorded only some of the table. {}\n",
            stamp(full)
        );
        bench_table(&mut md, full);
    }

    if runs.len() > 1 {
        earlier_heading(&mut md);
        let _ = writeln!(
            md,
            "| date · commit | legacy (`pipeline_vs_serde_value`) | large | hostile | `wire`, legacy | latency p50 / p99 | startup median | note |"
        );
        let _ = writeln!(
            md,
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
        );
        for r in &runs[1..] {
            let latency = figure(r, "latency");
            let latency = if latency["p50_us"].is_number() || latency["p99_us"].is_number() {
                format!(
                    "{} / {} µs",
                    fixed(&latency["p50_us"], 2),
                    fixed(&latency["p99_us"], 2)
                )
            } else {
                "–".to_owned()
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                when(r),
                ratio(r).map_or_else(|| "–".to_owned(), |x| format!("{x:.2}")),
                row_ratio(r, "large", "pipeline"),
                row_ratio(r, "hostile", "pipeline"),
                row_ratio(r, "legacy", "wire"),
                latency,
                startup_median(r).map_or_else(|| "–".to_owned(), |m| format!("{m:.2} ms")),
                note(r)
            );
        }
        let _ = writeln!(md);
    }
    md
}

// --------------------------------------------------------------- memory

pub(super) fn memory(runs: &[&Record]) -> String {
    let mut md = String::new();
    // Newest first, so the first record of each measurement is its latest.
    let mut latest: Vec<(&str, &Record)> = Vec::new();
    let mut earlier: Vec<&Record> = Vec::new();
    for r in runs {
        let name = figure(r, "measurement").as_str().unwrap_or("?");
        if latest.iter().any(|(n, _)| *n == name) {
            earlier.push(r);
        } else {
            latest.push((name, r));
        }
    }
    let _ = writeln!(md, "### Latest figures\n");
    let _ = writeln!(
        md,
        "| measurement | test | build | traffic | peak RSS | bound | measured | machine |"
    );
    let _ = writeln!(md, "| --- | --- | --- | --- | ---: | --- | --- | --- |");
    let row = |md: &mut String, name: &str, r: &Record| {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            escape(name),
            figure(r, "test")
                .as_str()
                .map_or_else(|| "–".to_owned(), |t| format!("`{}`", escape(t))),
            fixed(figure(r, "build"), 0),
            fixed(figure(r, "traffic"), 0),
            fixed(figure(r, "peak_rss"), 0),
            fixed(figure(r, "bound"), 0),
            when(r),
            escape(&r.machine)
        );
    };
    for (name, r) in &latest {
        row(&mut md, name, r);
    }
    let _ = writeln!(md);
    // One line per distinct note, naming the rows it is about.
    let mut notes: Vec<(&str, Vec<&str>)> = Vec::new();
    for (name, r) in &latest {
        let Some(note) = r.note.as_deref() else {
            continue;
        };
        match notes.iter_mut().find(|(n, _)| *n == note) {
            Some((_, names)) => names.push(name),
            None => notes.push((note, vec![name])),
        }
    }
    if !notes.is_empty() {
        for (note, names) in &notes {
            let _ = writeln!(md, "- {}: {}", escape(&names.join(", ")), sentence(note));
        }
        let _ = writeln!(md);
    }
    if !earlier.is_empty() {
        earlier_heading(&mut md);
        let _ = writeln!(md, "| measurement | peak RSS | measured | note |");
        let _ = writeln!(md, "| --- | ---: | --- | --- |");
        for r in earlier {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} |",
                fixed(figure(r, "measurement"), 0),
                fixed(figure(r, "peak_rss"), 0),
                when(r),
                note(r)
            );
        }
        let _ = writeln!(md);
    }
    md
}
