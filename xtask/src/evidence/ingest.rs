//! The key figures of each JSON file the measuring commands write, read
//! loosely: a field the writer may leave out (or an older writer did not
//! have) is left out of the figures, while a file without the fields that
//! make it that report is refused.

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use super::record::{Kind, is_iso_date};

/// The files `cargo xtask evidence` reads, in the directory the measuring
/// commands write to, and what each measures.
pub const SOURCES: [(Kind, &str); 5] = [
    (Kind::Coverage, "coverage.json"),
    (Kind::Fuzz, "report.json"),
    (Kind::Mutants, "mutants.json"),
    (Kind::Bugbench, "bugbench.json"),
    (Kind::Bench, "bench.json"),
];

/// What a source file says about its run. The date, commit and machine
/// are `None` when the file does not record them.
#[derive(Debug, Clone, PartialEq)]
pub struct Ingested {
    pub date: Option<String>,
    pub commit: Option<String>,
    pub machine: Option<String>,
    pub figures: Map<String, Value>,
}

/// The figures of one source file's text.
pub fn ingest(kind: Kind, text: &str) -> Result<Ingested> {
    let value: Value = serde_json::from_str(text).context("not JSON")?;
    if !value.is_object() {
        bail!("not a JSON object");
    }
    let figures = match kind {
        Kind::Coverage => coverage(&value)?,
        Kind::Fuzz => fuzz(&value)?,
        Kind::Mutants => mutants(&value)?,
        Kind::Bugbench => bugbench(&value)?,
        Kind::Bench => bench(&value)?,
        Kind::Memory => bail!("memory figures are printed by tests, not written as a file"),
    };
    let started = value["started"].as_str().unwrap_or_default();
    Ok(Ingested {
        date: started
            .get(..10)
            .filter(|date| is_iso_date(date))
            .map(str::to_owned),
        commit: nonempty(&value["commit"]),
        machine: nonempty(&value["machine"]),
        figures,
    })
}

fn nonempty(value: &Value) -> Option<String> {
    value
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// `value[key]` when it is an array; an error naming the key otherwise.
fn array<'a>(value: &'a Value, key: &str) -> Result<&'a Vec<Value>> {
    value[key]
        .as_array()
        .with_context(|| format!("no `{key}` array"))
}

fn string<'a>(value: &'a Value, key: &str) -> Result<&'a str> {
    value[key]
        .as_str()
        .with_context(|| format!("no `{key}` string"))
}

fn count(value: &Value, key: &str) -> Result<u64> {
    value[key]
        .as_u64()
        .with_context(|| format!("no `{key}` count"))
}

/// Copies `from[key]` into `to` under `name` when it is a number, a string
/// or a boolean (a `null` or a missing field is left out).
fn copy(to: &mut Map<String, Value>, name: &str, from: &Value, key: &str) {
    let value = &from[key];
    if value.is_number() || value.is_string() || value.is_boolean() {
        to.insert(name.to_owned(), value.clone());
    }
}

/// `{covered, total, percent}` of one figure of `coverage.json`; `None`
/// when the report has no such figure.
fn coverage_figure(figure: &Value, what: &str) -> Result<Option<Map<String, Value>>> {
    if figure.is_null() {
        return Ok(None);
    }
    let percent = figure["percent"]
        .as_f64()
        .with_context(|| format!("{what} has no `percent`"))?;
    let mut f = Map::new();
    copy(&mut f, "covered", figure, "covered");
    copy(&mut f, "total", figure, "total");
    f.insert("percent".into(), json!(percent));
    Ok(Some(f))
}

/// Each entry of a `crates` or `parts` map as `{name: {lines, regions}}`
/// (empty when the report has no such map).
fn coverage_map(map: &Value, id: &str) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for (name, figures) in map.as_object().into_iter().flatten() {
        let mut both = Map::new();
        for metric in ["lines", "regions"] {
            let what = format!("measurement {id:?}: {name} {metric}");
            if let Some(f) = coverage_figure(&figures[metric], &what)? {
                both.insert(metric.into(), Value::Object(f));
            }
        }
        out.insert(name.clone(), Value::Object(both));
    }
    Ok(out)
}

/// The crates every coverage report has measured, kept under their own
/// keys; a report that measures more crates also keeps `crates` and
/// `parts` whole.
const FIRST_CRATES: [(&str, &str); 2] = [("wire+gateway", "wire_gateway"), ("exec", "exec")];

fn coverage(report: &Value) -> Result<Map<String, Value>> {
    let mut measurements = Vec::new();
    for (i, m) in array(report, "measurements")?.iter().enumerate() {
        let id = string(m, "id").with_context(|| format!("measurement {i}"))?;
        let mut out = Map::new();
        out.insert("id".into(), id.into());
        copy(&mut out, "name", m, "name");
        copy(&mut out, "ok", m, "ok");
        for (krate, prefix) in FIRST_CRATES {
            for metric in ["lines", "regions"] {
                let what = format!("measurement {id:?}: {krate} {metric}");
                if let Some(f) = coverage_figure(&m["crates"][krate][metric], &what)? {
                    out.insert(format!("{prefix}_{metric}"), Value::Object(f));
                }
            }
        }
        // A report of the crates beyond the first ones: wrap, cli, and the
        // parts (scrubber, audit, wrap driver).
        if m["parts"].is_object() {
            out.insert(
                "crates".into(),
                Value::Object(coverage_map(&m["crates"], id)?),
            );
            out.insert(
                "parts".into(),
                Value::Object(coverage_map(&m["parts"], id)?),
            );
        }
        measurements.push(Value::Object(out));
    }
    let mut figures = Map::new();
    figures.insert("measurements".into(), measurements.into());
    Ok(figures)
}

fn fuzz(report: &Value) -> Result<Map<String, Value>> {
    let mut figures = Map::new();
    figures.insert("sanitizer".into(), string(report, "sanitizer")?.into());
    copy(&mut figures, "budget_secs", report, "budget_secs");
    copy(&mut figures, "crashes", report, "crashes");
    let mut targets = Vec::new();
    for (i, t) in array(report, "targets")?.iter().enumerate() {
        let name = string(t, "target").with_context(|| format!("target {i}"))?;
        let mut out = Map::new();
        out.insert("target".into(), name.into());
        copy(&mut out, "status", t, "status");
        copy(&mut out, "exec_per_cpu_sec", t, "execs_per_cpu_sec");
        copy(&mut out, "exec_per_sec", t, "execs_per_sec");
        for run in t["runs"].as_array().into_iter().flatten() {
            let build = match run["sanitizer"].as_str() {
                Some("none") => "fast_exec_per_cpu_sec",
                Some("address") => "asan_exec_per_cpu_sec",
                _ => continue,
            };
            copy(&mut out, build, run, "execs_per_cpu_sec");
        }
        copy(&mut out, "crashes", t, "crashes");
        let floor = &t["floor"];
        if floor.is_object() {
            copy(
                &mut out,
                "floor_exec_per_cpu_sec",
                floor,
                "exec_per_cpu_sec",
            );
            if floor["judged"] == true {
                copy(&mut out, "under_floor", floor, "under");
            }
        }
        targets.push(Value::Object(out));
    }
    figures.insert("targets".into(), targets.into());
    Ok(figures)
}

fn mutants(report: &Value) -> Result<Map<String, Value>> {
    let caught = count(report, "caught")?;
    let missed = count(report, "missed")?;
    let mut scope = match (report["mode"].as_str(), report["base"].as_str()) {
        (Some("diff"), Some(base)) => format!("code changed since {base}"),
        _ => "every mutant".to_owned(),
    };
    if let Some(shard) = report["shard"].as_str() {
        scope.push_str(&format!(", shard {shard}"));
    }
    let files: Vec<&str> = report["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !files.is_empty() {
        scope.push_str(&format!(", files {}", files.join(" ")));
    }
    let mut figures = Map::new();
    figures.insert("scope".into(), scope.into());
    copy(&mut figures, "tested", report, "tested");
    figures.insert("caught".into(), caught.into());
    figures.insert("missed".into(), missed.into());
    copy(&mut figures, "timeouts", report, "timeout");
    copy(&mut figures, "unviable", report, "unviable");
    copy(&mut figures, "excluded", report, "excluded");
    // The run fails on any survivor: none has a killing test or an
    // exclusion yet.
    figures.insert("unexplained_survivors".into(), missed.into());
    let crates: Vec<Value> = report["crates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let mut out = Map::new();
            copy(&mut out, "package", c, "package");
            copy(&mut out, "scope", c, "scope");
            for (name, key) in [
                ("tested", "tested"),
                ("caught", "caught"),
                ("missed", "missed"),
                ("timeouts", "timeout"),
                ("unviable", "unviable"),
                ("excluded", "excluded"),
            ] {
                copy(&mut out, name, c, key);
            }
            Value::Object(out)
        })
        .collect();
    if !crates.is_empty() {
        figures.insert("crates".into(), crates.into());
    }
    let survivors: Vec<Value> = report["survivors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            format!(
                "{}:{}: {}",
                s["file"].as_str().unwrap_or("?"),
                s["line"].as_u64().unwrap_or_default(),
                s["mutation"].as_str().unwrap_or("?")
            )
            .into()
        })
        .collect();
    if !survivors.is_empty() {
        figures.insert("survivors".into(), survivors.into());
    }
    Ok(figures)
}

fn bugbench(report: &Value) -> Result<Map<String, Value>> {
    let mut figures = Map::new();
    copy(&mut figures, "cap_secs", report, "cap_secs");
    copy(&mut figures, "sanitizer", report, "sanitizer");
    let mut bugs = Vec::new();
    for (i, b) in array(report, "bugs")?.iter().enumerate() {
        let name = string(b, "name").with_context(|| format!("bug {i}"))?;
        let test = &b["cargo_test"];
        let caught = test["caught"]
            .as_bool()
            .with_context(|| format!("bug {name:?}: no `cargo_test.caught`"))?;
        let mut out = Map::new();
        out.insert("name".into(), name.into());
        copy(&mut out, "stage", b, "stage");
        if let Some(crates) = b["crates"].as_array().filter(|c| !c.is_empty()) {
            out.insert("crates".into(), crates.clone().into());
        }
        // Only a report that records targets can say a bug has none.
        if b["targets"].as_array().is_some_and(Vec::is_empty) {
            out.insert("no_fuzz_target".into(), true.into());
        }
        let mut cargo_test = Map::new();
        cargo_test.insert("caught".into(), caught.into());
        if let Some(failed) = test["failed_tests"].as_array() {
            cargo_test.insert("failed_tests".into(), failed.len().into());
        }
        copy(&mut cargo_test, "status", test, "status");
        out.insert("cargo_test".into(), Value::Object(cargo_test));
        let mut fuzz = Vec::new();
        for f in b["fuzz"].as_array().into_iter().flatten() {
            let mut run = Map::new();
            copy(&mut run, "target", f, "target");
            copy(&mut run, "caught", f, "caught");
            copy(&mut run, "secs", f, "secs");
            if f["status"] == "error" {
                run.insert("status".into(), "error".into());
            }
            fuzz.push(Value::Object(run));
        }
        out.insert("fuzz".into(), fuzz.into());
        copy(&mut out, "error", b, "error");
        bugs.push(Value::Object(out));
    }
    figures.insert("bugs".into(), bugs.into());
    Ok(figures)
}

fn bench(report: &Value) -> Result<Map<String, Value>> {
    let ratio = report["pipeline_vs_serde_value"]
        .as_f64()
        .context("no `pipeline_vs_serde_value` number")?;
    let mut figures = Map::new();
    figures.insert("pipeline_vs_serde_value".into(), json!(ratio));
    copy(&mut figures, "quick", report, "quick");
    let mut rows = Vec::new();
    for r in report["rows"].as_array().into_iter().flatten() {
        let mut row = Map::new();
        for key in ["mix", "contender", "mb_per_s", "frames_per_s", "ratio"] {
            copy(&mut row, key, r, key);
        }
        rows.push(Value::Object(row));
    }
    if !rows.is_empty() {
        figures.insert("rows".into(), rows.into());
    }
    if let Some(latency) = report["latency"].as_object() {
        let numbers: Map<String, Value> = latency
            .iter()
            .filter(|(_, v)| v.is_number())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        figures.insert("latency".into(), numbers.into());
    }
    let startup = &report["startup"];
    if startup.is_object() {
        let mut out = Map::new();
        out.insert("method".into(), "cargo xtask bench".into());
        for key in ["runs", "median_ms", "p90_ms", "max_ms", "over_goal"] {
            copy(&mut out, key, startup, key);
        }
        figures.insert("startup".into(), vec![Value::Object(out)].into());
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_kind_has_no_file() {
        assert!(ingest(Kind::Memory, "{}").is_err());
    }

    #[test]
    fn the_date_is_the_run_start_when_it_is_one() {
        let text = r#"{"started":"2001-02-03T04:05:06Z","sanitizer":"none","targets":[]}"#;
        let ingested = ingest(Kind::Fuzz, text).unwrap();
        assert_eq!(ingested.date.as_deref(), Some("2001-02-03"));
        assert_eq!(ingested.commit, None);
        let text = r#"{"started":"not a timestamp","sanitizer":"none","targets":[]}"#;
        assert_eq!(ingest(Kind::Fuzz, text).unwrap().date, None);
    }
}
