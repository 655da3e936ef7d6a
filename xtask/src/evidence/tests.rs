use std::fs;
use std::path::Path;

use clap::Parser;
use serde_json::{Value, json};

use super::machine::Local;
use super::record::{Kind, Origin, Record, parse_history};
use super::*;
use crate::bench;
use crate::report::{Report as FuzzReport, RunReport, TargetReport};

/// Fixed answers for what a source file does not record.
struct Fixed;

impl Local for Fixed {
    fn commit(&self) -> Result<String> {
        Ok("abc1234".into())
    }

    fn machine(&self) -> String {
        "4 cores, Test CPU, 16 GiB".into()
    }

    fn date_of(&self, _: &Path) -> Result<String> {
        Ok("2001-02-09".into())
    }
}

/// What `cargo xtask coverage` writes (`coverage::report::Report`).
const COVERAGE: &str = r#"{
  "started": "2001-02-03T04:05:06Z",
  "total_secs": 567.0,
  "llvm_cov": "llvm-cov-22 (PATH)",
  "scope": "crates/{wire,gateway,exec}/src without unit-test modules",
  "goals": [
    {"measurement": "tests", "crates": "wire+gateway", "metric": "lines", "min_percent": 95.0, "percent": 98.23, "met": true}
  ],
  "measurements": [
    {"id": "tests", "name": "cargo test", "command": "cargo llvm-cov --no-report test --workspace", "ok": true, "secs": 300.0,
     "crates": {
       "exec": {"lines": {"covered": 913, "total": 1001, "percent": 91.21}, "regions": {"covered": 100, "total": 110, "percent": 90.91}},
       "gateway": {"lines": {"covered": 2000, "total": 2030, "percent": 98.52}, "regions": {"covered": 3000, "total": 3050, "percent": 98.36}},
       "wire": {"lines": {"covered": 1880, "total": 1920, "percent": 97.92}, "regions": {"covered": 3392, "total": 3476, "percent": 97.58}},
       "wire+gateway": {"lines": {"covered": 3880, "total": 3950, "percent": 98.23}, "regions": {"covered": 6392, "total": 6526, "percent": 97.95}}
     },
     "files": [{"path": "crates/wire/src/frame.rs", "crate": "wire", "lines": {"covered": 9, "total": 12, "percent": 75.0}, "regions": {"covered": 9, "total": 12, "percent": 75.0}, "uncovered_lines": "52-54"}]},
    {"id": "corpus", "name": "corpus replay (all targets)", "command": "cargo llvm-cov run --example replay_corpus -- chunking", "ok": true, "secs": 200.0,
     "crates": {"wire+gateway": {"lines": {"covered": 3500, "total": 3950, "percent": 88.61}, "regions": {"covered": 5800, "total": 6526, "percent": 88.88}}},
     "files": []},
    {"id": "corpus:chunking", "name": "corpus replay: chunking", "command": "cargo llvm-cov run --example replay_corpus -- chunking", "ok": true, "secs": 20.0,
     "crates": {"wire+gateway": {"lines": {"covered": 2544, "total": 3950, "percent": 64.41}, "regions": {"covered": 4000, "total": 6526, "percent": 61.29}}},
     "files": []}
  ]
}"#;

/// What `cargo xtask mutants` writes (`mutants::report::Report`).
const MUTANTS: &str = r#"{
  "started": "2001-02-04T00:00:00Z",
  "cargo_mutants": "27.1.0",
  "mode": "diff",
  "base": "main",
  "packages": ["portcullis-wire", "portcullis-gateway"],
  "score": 0.75,
  "tested": 6,
  "caught": 3,
  "missed": 1,
  "timeout": 1,
  "unviable": 1,
  "excluded": 2,
  "mean_build_secs": 15.2,
  "mean_test_secs": 4.7,
  "total_secs": 120.0,
  "survivors": [
    {"name": "crates/wire/src/id.rs:19:5: replace fmt", "package": "portcullis-wire", "file": "crates/wire/src/id.rs", "line": 19, "column": 5,
     "function": "fmt", "mutation": "replace <impl fmt::Display for Id>::fmt -> fmt::Result with Ok(Default::default())",
     "diff_path": "diff/id.rs_line_19.diff", "verdict": "MissedMutant", "build_secs": 15.0, "test_secs": 4.0}
  ],
  "timeouts": [],
  "excluded_mutants": [],
  "ok": false
}"#;

/// What `cargo xtask bugbench` writes (checked against its struct below).
const BUGBENCH: &str = r#"{
  "started": "2001-02-05T10:00:00Z",
  "commit": "def5678",
  "cap_secs": 120,
  "sanitizer": "none",
  "test_packages": ["portcullis-wire", "portcullis-gateway", "portcullis-testkit"],
  "targets": ["stdin_bytes", "chunking"],
  "bugs": [
    {"name": "frame-cap-ignores-pending-chunk", "stage": "framing", "class": "off-by-one", "summary": "s",
     "cargo_test": {"caught": true, "status": "failed", "failed_tests": ["a::b", "c::d"], "secs": 30.0, "log": "l"},
     "fuzz_build_secs": 40.0,
     "fuzz": [{"target": "chunking", "caught": true, "secs": 0.9, "status": "crashed", "finding": "panicked", "log": "l"},
              {"target": "stdin_bytes", "caught": false, "secs": 120.0, "status": "ok", "log": "l"}]},
    {"name": "rpc-integral-float-id", "stage": "json-rpc", "class": "type confusion", "summary": "s",
     "cargo_test": {"caught": false, "status": "passed", "failed_tests": [], "secs": 30.0, "log": "l"},
     "fuzz_build_secs": 40.0,
     "fuzz": [{"target": "stdin_bytes", "caught": false, "secs": 120.0, "status": "ok", "log": "l"}]}
  ],
  "total_secs": 400.0,
  "ok": false
}"#;

fn fuzz_report() -> FuzzReport {
    let run = |sanitizer: &str, budget_secs, execs_per_cpu_sec| RunReport {
        sanitizer: sanitizer.into(),
        budget_secs,
        duration_secs: budget_secs as f64,
        cpu_secs: Some(budget_secs as f64),
        execs: 1000,
        execs_per_sec: 900,
        execs_per_cpu_sec: Some(execs_per_cpu_sec),
        log: "target/nightly/logs/x/fuzz.log".into(),
    };
    let target = |name: &str, combined, fast, asan| TargetReport {
        target: name.into(),
        status: "ok".into(),
        error: None,
        budget_secs: 60,
        duration_secs: 60.2,
        execs: 600_000,
        execs_per_sec: combined - 100,
        execs_per_cpu_sec: Some(combined),
        previous: None,
        floor: None,
        runs: vec![run("none", 48, fast), run("address", 12, asan)],
        coverage: Some(3000),
        features: Some(9000),
        peak_rss_mb: Some(200),
        corpus_size_before: 10,
        corpus_size_after: 10,
        working_corpus_size: 40,
        regression_seeds: 2,
        crashes: 0,
        candidates: Vec::new(),
        log: "target/nightly/logs/x/fuzz.log".into(),
    };
    FuzzReport {
        started: "2001-02-06T01:02:03Z".into(),
        budget_secs: 240,
        jobs: 1,
        sanitizer: "none 80% + address 20%".into(),
        toolchain: "rustc nightly".into(),
        cargo_fuzz: "cargo-fuzz 0.13".into(),
        build_secs: 30.0,
        total_secs: 280.0,
        targets: vec![
            target("stdin_bytes", 9_500, 12_000, 1_100),
            target("session_model", 5_400, 6_800, 540),
        ],
        crashes: 0,
        under_floor: Vec::new(),
        ok: true,
    }
}

fn bench_report() -> bench::Report {
    let row = |mix: &str, contender: &str, ratio| bench::Row {
        mix: mix.into(),
        contender: contender.into(),
        mb_per_s: 200.0 * ratio,
        frames_per_s: 700_000.0 * ratio,
        ratio,
    };
    bench::Report {
        started: "2001-02-07T08:00:00Z".into(),
        commit: Some("fed4321".into()),
        machine: "8 cores, Bench CPU, 32 GiB".into(),
        quick: true,
        policy: "examples/policy-20-tools.toml".into(),
        rows: vec![
            row("legacy", "pipeline", 1.25),
            row("legacy", "serde_value", 1.0),
            row("hostile", "pipeline", 0.85),
        ],
        latency: bench::parse_latency("frames=100000 p50_us=0.97 p99_us=3.02 max_us=40.00"),
        startup: bench::StartupReport {
            runs: 20,
            median_ms: 7.6,
            p90_ms: 9.1,
            max_ms: 11.32,
            over_goal: 1,
            goal_ms: 10.0,
        },
        pipeline_vs_serde_value: 1.25,
    }
}

/// A directory with one file of each kind, as the measuring commands
/// write them.
fn sources() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| fs::write(dir.path().join(name), text).unwrap();
    write("coverage.json", COVERAGE.into());
    write("mutants.json", MUTANTS.into());
    write("bugbench.json", BUGBENCH.into());
    write(
        "report.json",
        serde_json::to_string_pretty(&fuzz_report()).unwrap(),
    );
    write(
        "bench.json",
        serde_json::to_string_pretty(&bench_report()).unwrap(),
    );
    dir
}

fn added(outcomes: &[(std::path::PathBuf, Ingestion)], kind: Kind) -> &Record {
    outcomes
        .iter()
        .find_map(|(_, o)| match o {
            Ingestion::Added(r) if r.kind == kind => Some(r),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {} record in {outcomes:?}", kind.as_str()))
}

#[test]
fn the_bugbench_fixture_is_what_bugbench_writes() {
    let report: crate::bugbench::BenchReport = serde_json::from_str(BUGBENCH).unwrap();
    assert_eq!(report.bugs.len(), 2);
}

#[test]
fn each_source_becomes_one_record_with_its_key_figures() {
    let dir = sources();
    let history = dir.path().join("docs/evidence/history.jsonl");
    let outcomes = ingest_dir(dir.path(), &history, &Fixed).unwrap();
    assert_eq!(outcomes.len(), 5);
    let text = fs::read_to_string(&history).unwrap();
    let records = parse_history(&text).unwrap();
    let kinds: Vec<_> = records.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            Kind::Coverage,
            Kind::Fuzz,
            Kind::Mutants,
            Kind::Bugbench,
            Kind::Bench
        ]
    );
    for r in &records {
        let Origin::Sha256(sha) = &r.origin else {
            panic!("{r:?}");
        };
        assert_eq!(sha.len(), 64);
    }

    let coverage = added(&outcomes, Kind::Coverage);
    assert_eq!(
        (coverage.date.as_str(), coverage.commit.as_str()),
        ("2001-02-03", "abc1234")
    );
    assert_eq!(coverage.machine, "4 cores, Test CPU, 16 GiB");
    let tests = &coverage.figures["measurements"][0];
    assert_eq!(tests["id"], "tests");
    assert_eq!(
        tests["wire_gateway_lines"],
        json!({"covered": 3880, "total": 3950, "percent": 98.23})
    );
    assert_eq!(tests["exec_lines"]["covered"], 913);
    assert_eq!(coverage.figures["measurements"][2]["id"], "corpus:chunking");

    let fuzz = added(&outcomes, Kind::Fuzz);
    assert_eq!(fuzz.date, "2001-02-06");
    assert_eq!(fuzz.figures["sanitizer"], "none 80% + address 20%");
    assert_eq!(
        fuzz.figures["targets"][0],
        json!({"target": "stdin_bytes", "status": "ok", "exec_per_cpu_sec": 9500,
               "exec_per_sec": 9400, "fast_exec_per_cpu_sec": 12000,
               "asan_exec_per_cpu_sec": 1100, "crashes": 0})
    );

    let mutants = added(&outcomes, Kind::Mutants);
    assert_eq!(mutants.figures["scope"], "code changed since main");
    assert_eq!(
        (
            &mutants.figures["tested"],
            &mutants.figures["caught"],
            &mutants.figures["missed"],
            &mutants.figures["timeouts"],
            &mutants.figures["unexplained_survivors"]
        ),
        (&json!(6), &json!(3), &json!(1), &json!(1), &json!(1))
    );
    assert_eq!(
        mutants.figures["survivors"][0],
        "crates/wire/src/id.rs:19: replace <impl fmt::Display for Id>::fmt -> fmt::Result with Ok(Default::default())"
    );

    let bugbench = added(&outcomes, Kind::Bugbench);
    assert_eq!(
        (bugbench.date.as_str(), bugbench.commit.as_str()),
        ("2001-02-05", "def5678"),
        "the report's own commit wins"
    );
    assert_eq!(
        bugbench.figures["bugs"][0]["cargo_test"],
        json!({"caught": true, "failed_tests": 2, "status": "failed"})
    );
    assert_eq!(
        bugbench.figures["bugs"][0]["fuzz"][0],
        json!({"target": "chunking", "caught": true, "secs": 0.9})
    );

    let bench = added(&outcomes, Kind::Bench);
    assert_eq!(
        (
            bench.date.as_str(),
            bench.commit.as_str(),
            bench.machine.as_str()
        ),
        ("2001-02-07", "fed4321", "8 cores, Bench CPU, 32 GiB")
    );
    assert_eq!(bench.figures["pipeline_vs_serde_value"], 1.25);
    assert_eq!(bench.figures["latency"]["p99_us"], 3.02);
    assert_eq!(bench.figures["startup"][0]["p90_ms"], 9.1);
    assert_eq!(bench.figures["rows"][2]["mix"], "hostile");
}

#[test]
fn a_file_without_its_own_date_takes_its_modification_date() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = serde_json::to_value(fuzz_report()).unwrap();
    report.as_object_mut().unwrap().remove("started");
    fs::write(dir.path().join("report.json"), report.to_string()).unwrap();
    let outcomes = ingest_dir(dir.path(), &dir.path().join("h.jsonl"), &Fixed).unwrap();
    assert_eq!(added(&outcomes, Kind::Fuzz).date, "2001-02-09");
}

#[test]
fn a_second_ingestion_of_the_same_files_adds_nothing() {
    let dir = sources();
    let history = dir.path().join("history.jsonl");
    ingest_dir(dir.path(), &history, &Fixed).unwrap();
    let first = fs::read(&history).unwrap();
    let again = ingest_dir(dir.path(), &history, &Fixed).unwrap();
    assert_eq!(again.len(), 5);
    assert!(
        again.iter().all(|(_, o)| matches!(o, Ingestion::Known)),
        "{again:?}"
    );
    assert_eq!(fs::read(&history).unwrap(), first);

    // A changed file is a new run.
    fs::write(
        dir.path().join("bench.json"),
        serde_json::to_string(&bench_report()).unwrap(),
    )
    .unwrap();
    let third = ingest_dir(dir.path(), &history, &Fixed).unwrap();
    assert_eq!(
        third
            .iter()
            .filter(|(_, o)| matches!(o, Ingestion::Added(_)))
            .count(),
        1
    );
    let text = fs::read_to_string(&history).unwrap();
    assert_eq!(text.lines().count(), 6);
    assert!(text.starts_with(std::str::from_utf8(&first).unwrap()));
}

#[test]
fn a_malformed_file_is_an_error_naming_it_and_records_nothing() {
    for (name, text, why) in [
        ("report.json", "{\"targets\": [", "not JSON"),
        (
            "report.json",
            "{\"sanitizer\": \"none\"}",
            "no `targets` array",
        ),
        ("mutants.json", "{\"caught\": 1}", "no `missed` count"),
        ("coverage.json", "[1, 2]", "not a JSON object"),
        (
            "bugbench.json",
            "{\"bugs\": [{\"name\": \"x\", \"cargo_test\": {}}]}",
            "cargo_test.caught",
        ),
        ("bench.json", "{\"rows\": []}", "pipeline_vs_serde_value"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let history = dir.path().join("history.jsonl");
        fs::write(&history, "").unwrap();
        fs::write(dir.path().join(name), text).unwrap();
        let err = format!(
            "{:#}",
            ingest_dir(dir.path(), &history, &Fixed).unwrap_err()
        );
        let path = dir.path().join(name);
        assert!(
            err.contains(&path.display().to_string()) && err.contains(why),
            "{name} {text}: {err}"
        );
        assert_eq!(fs::read_to_string(&history).unwrap(), "", "{name}");
    }
}

#[test]
fn a_malformed_history_is_an_error_naming_it_and_its_line() {
    let dir = sources();
    let history = dir.path().join("history.jsonl");
    fs::write(&history, "\n{\"kind\":\"speed\"}\n").unwrap();
    let err = format!(
        "{:#}",
        ingest_dir(dir.path(), &history, &Fixed).unwrap_err()
    );
    assert!(
        err.contains("history.jsonl") && err.contains("line 2") && err.contains("unknown kind"),
        "{err}"
    );
}

fn ingested_history() -> String {
    let dir = sources();
    let history = dir.path().join("history.jsonl");
    ingest_dir(dir.path(), &history, &Fixed).unwrap();
    fs::read_to_string(history).unwrap()
}

#[test]
fn rendering_is_deterministic() {
    let history = ingested_history();
    let page = render::render(&history).unwrap();
    assert_eq!(render::render(&history).unwrap(), page);
    // Records of one day keep their order in the history, whatever else
    // the history holds.
    let doubled = format!("{history}{history}");
    assert_eq!(
        render::render(&doubled).unwrap(),
        render::render(&doubled).unwrap()
    );
}

#[test]
fn the_page_says_it_is_generated_and_shows_each_latest_run() {
    let page = render::render(&ingested_history()).unwrap();
    let first = page.lines().next().unwrap();
    assert!(
        first.contains("Generated by `cargo xtask evidence`")
            && first.contains(HISTORY)
            && first.contains("do not edit by hand"),
        "{first}"
    );
    for expected in [
        "## Coverage",
        "| cargo test | 98.2% (3880/3950) | 98.0% (6392/6526) | 91.2% (913/1001) | 90.9% (100/110) |",
        "| `chunking` | 64.4% (2544/3950) | 61.3% (4000/6526) |",
        "corpus replay (all targets) covers ≥ 90% of wire+gateway lines — 88.6% (3500/3950); 3555 needed: **❌ not met**",
        "Measured on **2001-02-06** at commit `abc1234`, on 4 cores, Test CPU, 16 GiB.",
        "| `stdin_bytes` | 12,000 | 1,100 | **9,500** | 9,400 | 0 | 10,000 | ❌ not met |",
        "| `session_model` | 6,800 | 540 | **5,400** | 5,300 | 0 | 5,000 | ✅ met |",
        "Scope: code changed since main.",
        "| 6 | 3 | 1 | 1 | 1 | 2 | 75.0% | 1 |",
        "- `crates/wire/src/id.rs:19: replace",
        "| `frame-cap-ignores-pending-chunk` | framing | caught (2 failing tests) | `chunking` **0.9 s**, `stdin_bytes` **escaped** for 120 s | 2001-02-05 · `def5678` |",
        "| `rpc-integral-float-id` | json-rpc | **escaped** |",
        "`pipeline_vs_serde_value=1.25` (legacy mix), from `--quick`.",
        "| hostile | pipeline | 170.0 | 595,000 | 0.85 |",
        "p50 0.97 µs, p99 3.02 µs, slowest 40.00 µs",
        "| cargo xtask bench | 20 | 7.60 ms | 9.10 ms | 11.32 ms | 1 |",
        "## Memory",
    ] {
        assert!(page.contains(expected), "missing {expected:?} in\n{page}");
    }
    let memory = &page[page.find("## Memory").unwrap()..];
    assert!(memory.contains("Not measured yet"), "{memory}");
    assert!(page.ends_with("|\n") || page.ends_with(".\n"), "{page:?}");
    assert!(!page.ends_with("\n\n"));
}

#[test]
fn an_empty_history_says_each_kind_is_not_measured_yet_and_how_to_measure_it() {
    let page = render::render("").unwrap();
    assert_eq!(page.matches("Not measured yet").count(), Kind::ALL.len());
    for command in [
        "cargo xtask coverage",
        "cargo xtask nightly --budget 600s",
        "cargo xtask mutants",
        "cargo xtask bugbench --sanitizer none",
        "cargo xtask bench --quick",
        "--test wrap_memory",
    ] {
        assert!(page.contains(command), "{command}");
    }
    assert!(page.contains("| n/a |"), "{page}");
}

/// A record line for the rendering tests.
fn line(kind: &str, date: &str, commit: &str, figures: Value) -> String {
    let Value::Object(figures) = figures else {
        panic!("figures must be an object");
    };
    Record {
        kind: Kind::parse(kind).unwrap(),
        date: date.into(),
        commit: commit.into(),
        machine: "2 cores".into(),
        origin: Origin::Source("test".into()),
        note: None,
        figures,
    }
    .to_line()
        + "\n"
}

#[test]
fn the_latest_run_is_the_newest_date_then_the_later_line() {
    let split = "none 80% + address 20%";
    let fuzz = |commit: &str, date: &str, exec: u64| {
        line(
            "fuzz",
            date,
            commit,
            json!({"sanitizer": split, "targets": [{"target": "stdin_bytes", "exec_per_cpu_sec": exec}]}),
        )
    };
    let history = fuzz("1111111", "2001-01-02", 12_000)
        + &fuzz("2222222", "2001-01-01", 11_000)
        + &fuzz("3333333", "2001-01-02", 9_000);
    let page = render::render(&history).unwrap();
    assert!(
        page.contains("| `stdin_bytes` ≥ 10,000 exec per CPU-second (combined, default split) | 9,000 | 2001-01-02 · `3333333` | ❌ not met |"),
        "{page}"
    );
    let earlier = &page[page.find("### Earlier runs").unwrap()..];
    let (a, b) = (
        earlier.find("`1111111`").unwrap(),
        earlier.find("`2222222`").unwrap(),
    );
    assert!(a < b, "newest first: {earlier}");

    // A run outside the default split is shown but not judged.
    let history = history
        + &line(
            "fuzz",
            "2001-01-03",
            "4444444",
            json!({"sanitizer": "address", "targets": [{"target": "stdin_bytes", "exec_per_cpu_sec": 1_200}]}),
        );
    let page = render::render(&history).unwrap();
    assert!(page.contains("n/a (not the default split)"), "{page}");
    assert!(
        page.contains("| 9,000 | 2001-01-02 · `3333333` | ❌ not met |"),
        "{page}"
    );
}

#[test]
fn each_bugs_latest_measurement_is_shown_with_its_run() {
    let bug = |caught_by_fuzz: bool, secs: f64| {
        json!({"name": "rpc-integral-float-id", "stage": "json-rpc",
               "cargo_test": {"caught": true, "failed_tests": 1},
               "fuzz": [{"target": "stdin_bytes", "caught": caught_by_fuzz, "secs": secs}]})
    };
    let other = json!({"name": "authz-tab-allowed", "stage": "authorization",
                       "cargo_test": {"caught": true, "failed_tests": 10},
                       "fuzz": [{"target": "authz_expansion", "caught": true, "secs": 0.1}]});
    let history = line(
        "bugbench",
        "2001-01-01",
        "1111111",
        json!({"cap_secs": 120, "bugs": [bug(false, 120.0), other]}),
    ) + &line(
        "bugbench",
        "2001-01-02",
        "2222222",
        json!({"cap_secs": 120, "bugs": [bug(true, 0.2)]}),
    );
    let page = render::render(&history).unwrap();
    assert!(
        page.contains("| `rpc-integral-float-id` | json-rpc | caught (1 failing test) | `stdin_bytes` **0.2 s** | 2001-01-02 · `2222222` |"),
        "{page}"
    );
    assert!(
        page.contains("| `authz-tab-allowed` | authorization | caught (10 failing tests) | `authz_expansion` **0.1 s** | 2001-01-01 · `1111111` |"),
        "{page}"
    );
    assert!(
        page.contains(
            "2 of 2 by `cargo test`, 2 of 2 by fuzzing | 2001-01-02 · `2222222` | ✅ met |"
        ),
        "{page}"
    );
}

#[test]
fn check_fails_on_a_page_that_differs_from_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let (history, page) = (dir.path().join("history.jsonl"), dir.path().join("page.md"));
    fs::write(&history, ingested_history()).unwrap();
    let err = format!("{:#}", check(&history, &page).unwrap_err());
    assert!(err.contains("cargo xtask evidence"), "{err}");
    let rendered = render::render(&fs::read_to_string(&history).unwrap()).unwrap();
    fs::write(&page, &rendered).unwrap();
    check(&history, &page).unwrap();
    fs::write(&page, rendered.replacen("9,500", "19,500", 1)).unwrap();
    let err = format!("{:#}", check(&history, &page).unwrap_err());
    assert!(
        err.contains("not edited by hand") && err.contains("cargo xtask evidence"),
        "{err}"
    );
}

#[test]
fn check_and_no_ingest_are_exclusive_flags() {
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        opts: Options,
    }
    let cli = Cli::try_parse_from(["evidence"]).unwrap();
    assert!(!cli.opts.check && !cli.opts.no_ingest);
    assert_eq!(cli.opts.from, Path::new("target/nightly"));
    assert!(
        Cli::try_parse_from(["evidence", "--check"])
            .unwrap()
            .opts
            .check
    );
    assert!(Cli::try_parse_from(["evidence", "--check", "--no-ingest"]).is_err());
}

#[test]
fn committed_evidence_page_matches_its_history() {
    let root = crate::project::Project::locate().root;
    let history = fs::read_to_string(root.join(HISTORY)).unwrap();
    let records = parse_history(&history).unwrap();
    for kind in Kind::ALL {
        assert!(
            records.iter().any(|r| r.kind == kind),
            "{HISTORY} has no {} record",
            kind.as_str()
        );
    }
    let rendered = render::render(&history).unwrap();
    let committed = fs::read_to_string(root.join(PAGE)).unwrap_or_default();
    assert!(
        committed == rendered,
        "{PAGE} is not what {HISTORY} renders to: it is generated, not edited by hand. \
         Run `cargo xtask evidence` (or `cargo xtask evidence --no-ingest`) and commit both files."
    );
}

/// What the measuring commands write once they cover every crate: coverage
/// per crate and part, floors, mutants per crate, bugs with their crates.
fn newer_sources() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| fs::write(dir.path().join(name), text).unwrap();
    let coverage = json!({
        "started": "2001-03-01T00:00:00Z",
        "measurements": [
            {"id": "tests", "name": "cargo test", "ok": true,
             "crates": {
                "wire+gateway": {"lines": {"covered": 95, "total": 100, "percent": 95.0}, "regions": {"covered": 9, "total": 10, "percent": 90.0}},
                "wrap": {"lines": {"covered": 96, "total": 100, "percent": 96.0}, "regions": {"covered": 9, "total": 10, "percent": 90.0}},
                "cli": {"lines": {"covered": 50, "total": 100, "percent": 50.0}, "regions": {"covered": 5, "total": 10, "percent": 50.0}}
             },
             "parts": {
                "audit": {"lines": {"covered": 94, "total": 100, "percent": 94.0}, "regions": {"covered": 9, "total": 10, "percent": 90.0}},
                "scrubber": {"lines": {"covered": 99, "total": 100, "percent": 99.0}, "regions": {"covered": 10, "total": 10, "percent": 100.0}}
             }},
            {"id": "corpus", "name": "corpus replay (all targets)", "ok": true,
             "crates": {"wrap": {"lines": {"covered": 80, "total": 100, "percent": 80.0}, "regions": {"covered": 8, "total": 10, "percent": 80.0}}},
             "parts": {}}
        ]
    });
    write("coverage.json", coverage.to_string());
    let mut fuzz = fuzz_report();
    fuzz.targets[0].floor = Some(crate::nightly::FloorCheck {
        exec_per_cpu_sec: 7_500,
        judged: true,
        under: false,
        not_judged: String::new(),
    });
    fuzz.targets[1].target = "wrap_session".into();
    fuzz.targets[1].execs_per_cpu_sec = Some(4_800);
    fuzz.targets[1].floor = Some(crate::nightly::FloorCheck {
        exec_per_cpu_sec: 5_000,
        judged: true,
        under: true,
        not_judged: String::new(),
    });
    write("report.json", serde_json::to_string(&fuzz).unwrap());
    let mut mutants: Value = serde_json::from_str(MUTANTS).unwrap();
    mutants["crates"] = json!([
        {"package": "portcullis-wire", "scope": "portcullis-wire", "score": 0.75, "tested": 6, "caught": 3, "missed": 1, "timeout": 1, "unviable": 1, "excluded": 2},
        {"package": "portcullis-cli", "scope": "portcullis-cli (crates/cli/src/audit/)", "score": null, "tested": 0, "caught": 0, "missed": 0, "timeout": 0, "unviable": 0, "excluded": 3},
        {"package": "portcullis-exec", "scope": "portcullis-exec", "score": null, "tested": 0, "caught": 0, "missed": 0, "timeout": 0, "unviable": 0, "excluded": 0}
    ]);
    write("mutants.json", mutants.to_string());
    let mut bugbench: Value = serde_json::from_str(BUGBENCH).unwrap();
    bugbench["bugs"][0]["crates"] = json!(["wire"]);
    bugbench["bugs"][0]["targets"] = json!(["chunking", "stdin_bytes"]);
    bugbench["bugs"][1] = json!({"name": "audit-append-after-failed-write", "stage": "audit", "class": "fail-open", "summary": "s",
        "crates": ["cli"], "targets": [],
        "cargo_test": {"caught": true, "status": "failed", "failed_tests": ["portcullis::x"], "secs": 9.0, "log": "l", "commands": []},
        "fuzz_build_secs": 0.0, "fuzz": []});
    write("bugbench.json", bugbench.to_string());
    dir
}

#[test]
fn newer_reports_keep_their_per_crate_figures_floors_and_stages() {
    let dir = newer_sources();
    let history = dir.path().join("history.jsonl");
    let outcomes = ingest_dir(dir.path(), &history, &Fixed).unwrap();

    let coverage = added(&outcomes, Kind::Coverage);
    let tests = &coverage.figures["measurements"][0];
    assert_eq!(
        tests["wire_gateway_lines"]["covered"], 95,
        "the older keys stay"
    );
    assert_eq!(
        tests["crates"]["wrap"]["lines"],
        json!({"covered": 96, "total": 100, "percent": 96.0})
    );
    assert_eq!(tests["parts"]["audit"]["lines"]["percent"], 94.0);
    assert_eq!(tests["crates"]["cli"]["regions"]["total"], 10);

    let fuzz = added(&outcomes, Kind::Fuzz);
    assert_eq!(fuzz.figures["targets"][0]["floor_exec_per_cpu_sec"], 7500);
    assert_eq!(fuzz.figures["targets"][0]["under_floor"], false);
    assert_eq!(fuzz.figures["targets"][1]["under_floor"], true);

    let mutants = added(&outcomes, Kind::Mutants);
    assert_eq!(
        mutants.figures["crates"][0],
        json!({"package": "portcullis-wire", "scope": "portcullis-wire", "tested": 6, "caught": 3,
               "missed": 1, "timeouts": 1, "unviable": 1, "excluded": 2})
    );

    let bugbench = added(&outcomes, Kind::Bugbench);
    assert_eq!(bugbench.figures["bugs"][0]["crates"], json!(["wire"]));
    assert!(bugbench.figures["bugs"][0].get("no_fuzz_target").is_none());
    assert_eq!(bugbench.figures["bugs"][1]["no_fuzz_target"], true);
}

#[test]
fn an_older_report_says_nothing_of_what_it_did_not_record() {
    let dir = sources();
    let history = dir.path().join("history.jsonl");
    let outcomes = ingest_dir(dir.path(), &history, &Fixed).unwrap();
    let coverage = added(&outcomes, Kind::Coverage);
    assert!(coverage.figures["measurements"][0].get("crates").is_none());
    let fuzz = added(&outcomes, Kind::Fuzz);
    assert!(
        fuzz.figures["targets"][0]
            .get("floor_exec_per_cpu_sec")
            .is_none()
    );
    assert!(
        added(&outcomes, Kind::Mutants)
            .figures
            .get("crates")
            .is_none()
    );
    let bugs = &added(&outcomes, Kind::Bugbench).figures["bugs"];
    assert!(bugs[0].get("crates").is_none() && bugs[0].get("no_fuzz_target").is_none());
    let page = render::render(&fs::read_to_string(&history).unwrap()).unwrap();
    for absent in [
        "wrap_session",
        "Per crate",
        "By crate",
        "By stage",
        "of the audit code",
        "| floor |",
    ] {
        assert!(!page.contains(absent), "{absent:?} in\n{page}");
    }
}

#[test]
fn the_page_shows_per_crate_figures_floors_and_stages_once_runs_record_them() {
    let dir = newer_sources();
    let history = dir.path().join("history.jsonl");
    ingest_dir(dir.path(), &history, &Fixed).unwrap();
    let page = render::render(&fs::read_to_string(&history).unwrap()).unwrap();
    for expected in [
        "| `cargo test` covers ≥ 95% of `crates/wrap` lines | 96.0% (96/100); 95 needed |",
        "| `cargo test` covers ≥ 95% of the audit code lines | 94.0% (94/100); 95 needed | 2001-03-01 · `abc1234` | ❌ not met |",
        "| `cargo test` covers ≥ 95% of the scrubber lines | 99.0% (99/100); 95 needed |",
        "| corpus replay (all targets) covers ≥ 85% of `crates/wrap` lines | 80.0% (80/100); 85 needed |",
        "| `wrap_session` ≥ 5,000 exec per CPU-second (combined, default split) | 4,800 | 2001-02-06 · `abc1234` | ❌ not met |",
        "| `chunking` ≥ 5,000 exec per CPU-second (combined, default split) | not measured yet |",
        "| crate or part | cargo test: lines | cargo test: regions | corpus replay (all targets): lines | corpus replay (all targets): regions |",
        "| `crates/wrap` | 96.0% (96/100) | 90.0% (9/10) | 80.0% (80/100) | 80.0% (8/10) |",
        "| part: audit | 94.0% (94/100) | 90.0% (9/10) | – | – |",
        "| crashes | goal | met | floor |",
        "| `stdin_bytes` | 12,000 | 1,100 | **9,500** | 9,400 | 0 | 10,000 | ❌ not met | 7,500 |",
        "| `wrap_session` | 6,800 | 540 | **4,800** | 5,300 | 0 | 5,000 | ❌ not met | 5,000 ⚠️ under |",
        "By crate:",
        "| portcullis-wire | 6 | 3 | 1 | 1 | 1 | 2 | 75.0% |",
        "| portcullis-cli (crates/cli/src/audit/) | 0 | 0 | 0 | 0 | 0 | 3 | n/a |",
        "By stage:",
        "| audit | `cli` | 1 | 1 | no target reaches them |",
        "| framing | `wire` | 1 | 1 | 1 of 1 |",
        "| `audit-append-after-failed-write` | audit | caught (1 failing test) | no fuzz target reaches it |",
        "2 of 2 by `cargo test`, 1 of 1 by fuzzing",
    ] {
        assert!(page.contains(expected), "missing {expected:?} in\n{page}");
    }
    assert!(
        !page.contains("+gateway` |"),
        "wire+gateway is no crate row: {page}"
    );
}
