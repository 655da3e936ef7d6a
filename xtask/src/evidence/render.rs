//! `docs/evidence.md` as a function of `docs/evidence/history.jsonl`'s text:
//! no clock, no machine and no repository is read here, so the committed
//! page can be checked against the committed history.
//!
//! The page: a note that it is generated, the goals with their latest
//! figures, then a section per kind of record (what is measured and how,
//! the command, the latest run's figures stamped with its date, commit and
//! machine, its goals, and the earlier runs' key figures, newest first).
//! [`super::sections`] writes each kind's figures with the cells and
//! stamps defined here.

use std::fmt::Write as _;

use anyhow::Result;
use serde_json::Value;

use super::record::{Kind, Record, parse_history};
use super::sections::{
    bench, bench_goals, bugbench, bugbench_goals, coverage, coverage_goals, fuzz, fuzz_goals,
    memory, mutants, mutants_goals,
};
use super::{HISTORY, PAGE};

/// The page for a history's text.
pub fn render(history: &str) -> Result<String> {
    Ok(page(&parse_history(history)?))
}

/// What a kind's section says before its figures.
struct Method {
    title: &'static str,
    what: &'static str,
    command: &'static str,
}

fn method(kind: Kind) -> Method {
    match kind {
        Kind::Coverage => Method {
            title: "Coverage",
            what: "`cargo xtask coverage` measures line and region coverage of the product crates \
                   `crates/wire`, `crates/gateway`, `crates/exec`, `crates/wrap` and `crates/cli`, \
                   with the scrubber, the CLI's audit code and its wrap driver also reported apart \
                   (unit-test modules not counted; records before `wrap` and `cli` were in scope \
                   hold wire, gateway and exec only), with cargo-llvm-cov, twice: by `cargo test \
                   --workspace`, whose process tests pass the profile variables on to the binary \
                   they launch so its own lines count, and by replaying each fuzz \
                   target's checked-in seeds (`corpus/<target>/` and `regressions/<target>/`, each \
                   input once), per target and all together. It writes `target/nightly/coverage.md`, \
                   which lists the uncovered lines of every file, and `coverage.json`. Corpus replay \
                   does not reach `exec` or `cli` by design: the harnesses hand actions to a \
                   recorder, never to a real executor, and drive the sans-IO cores, not the binary.",
            command: "JSONTESTSUITE_DIR=… MCP_SCHEMA_DIR=… cargo xtask coverage",
        },
        Kind::Fuzz => Method {
            title: "Fuzz throughput",
            what: "`cargo xtask nightly` fuzzes each target for its share of a time budget and \
                   reports wall-clock executions per second and executions per CPU-second (the \
                   libFuzzer process's user + system time), the per-core figure on a machine that \
                   is doing other work. By default each target runs the fast build (coverage \
                   counters on the boundary crates only, no sanitizer) for 80% of its share and \
                   the AddressSanitizer build for the rest; *combined* is all of a target's runs \
                   together, and the goals are judged on it in that default split. A 60 s figure \
                   moves by about ±15% from run to run, so runs compare best on one machine under \
                   one load.",
            command: "rm -rf fuzz/corpus && cargo xtask nightly --budget 600s --no-merge   # 60 s a target",
        },
        Kind::Mutants => Method {
            title: "Mutation score",
            what: "`cargo xtask mutants` runs cargo-mutants over `crates/wire`, `crates/gateway`, \
                   `crates/wrap`, `crates/exec` and the CLI's audit code, one run per group \
                   against that group's own tests (records before the wider scope cover wire and \
                   gateway only): each mutant is one small edit (an operator flipped, a match \
                   arm deleted, a function body replaced by a default) tested against the tests \
                   `cargo xtask mutants` selects for its group. A mutant no test notices is a survivor; the score \
                   is caught / (caught + missed), and timeouts and mutants that do not build are \
                   counted apart. A survivor is explained once a test kills it, the code it \
                   mutated is removed, or `.cargo/mutants.toml` excludes it as equivalent with its \
                   reason.",
            command: "cargo xtask mutants   # or, split over machines: cargo xtask mutants --shard K/16 -- --sharding round-robin",
        },
        Kind::Bugbench => Method {
            title: "Planted bugs",
            what: "`bugbench/` holds realistic one-line defects, each a patch naming its stage \
                   (the boundary's stages, `wrap`, `scrubber` or `audit`), the defect class it \
                   models and the fuzz targets that reach it (`none` when only tests can). \
                   `cargo xtask bugbench` applies each in a scratch worktree, runs its stage's \
                   tests (the boundary's: `-p portcullis-wire -p portcullis-gateway -p \
                   portcullis-testkit`; wrap: wrap and testkit; scrubber: exec; audit: the \
                   binary's unit tests, wrap and testkit; failing tests counted), then fuzzes the bug's targets from the checked-in corpus until the \
                   first failure, at most the cap. Seconds run from the start of the fuzz run, \
                   corpus loading included, so a fraction of a second means a checked-in input \
                   already reaches the bug.",
            command: "cargo xtask bugbench --sanitizer none",
        },
        Kind::Bench => Method {
            title: "Performance",
            what: "`cargo xtask bench` runs `crates/gateway/benches/pipeline.rs` over three mixes \
                   (legacy: an `initialize` and 10,000 `tools/call` of about 300 bytes; large: 200 \
                   calls with a 64 KiB argument; hostile: half the frames refused) for five \
                   contenders: the whole inbound boundary (`pipeline`), its reading stages alone \
                   (`wire`), `serde_json::from_slice::<Value>` (`serde_value`), a validate-only \
                   pass (`ignored_any`) and a newline scan (`memchr`). They run interleaved, 15 \
                   rounds, and each ratio is the median of the per-round ratios to `serde_value`, \
                   so ratios are measured side by side while absolute figures move with the \
                   machine's speed. It also times one `tools/call` frame in to its `Execute` \
                   effect, and the release binary from launch to its `initialize` answer with \
                   `examples/policy-20-tools.toml`.",
            command: "cargo xtask bench --quick",
        },
        Kind::Memory => Method {
            title: "Memory",
            what: "Process tests stream long or large inputs through the binary and read its peak \
                   resident set (`VmHWM` in `/proc`), asserting a bound set by the policy's frame \
                   cap rather than by the input's length; `--nocapture` prints the figure.",
            command: "cargo build --release -p portcullis-cli && \
                      PORTCULLIS_BIN=$PWD/target/release/portcullis cargo test -p portcullis-cli \
                      --test memory --test replay_memory -- --nocapture && \
                      cargo test -p portcullis-cli --test wrap_memory -- --nocapture",
        },
    }
}

/// A goal with the latest figure it is judged on.
pub(super) struct Goal {
    pub what: String,
    pub figure: String,
    pub run: String,
    pub met: Option<bool>,
}

fn page(records: &[Record]) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "_Generated by `cargo xtask evidence` from [`{HISTORY}`](evidence/history.jsonl); do not \
         edit by hand. `cargo xtask evidence --check` and `cargo test -p xtask` fail when this \
         page differs from what the history renders to._\n"
    );
    let _ = writeln!(md, "# Evidence\n");
    let _ = writeln!(
        md,
        "What the tests, fuzzers and benchmarks of Portcullis measure, run by run. Each \
         measuring command writes JSON under `target/nightly/`; `cargo xtask evidence` appends \
         its key figures to `{HISTORY}` as one record (date, commit, machine) and renders \
         `{PAGE}` from that history alone. Figures from different machines, or from one machine \
         under different load, are not directly comparable: every table says where it was \
         measured.\n"
    );

    let goals: Vec<Goal> = [
        coverage_goals(&runs(records, Kind::Coverage)),
        fuzz_goals(&runs(records, Kind::Fuzz)),
        mutants_goals(&runs(records, Kind::Mutants)),
        bugbench_goals(&runs(records, Kind::Bugbench)),
        bench_goals(&runs(records, Kind::Bench)),
    ]
    .into_iter()
    .flatten()
    .collect();
    let _ = writeln!(md, "## Goals\n");
    let _ = writeln!(md, "| goal | latest figure | measured | met |");
    let _ = writeln!(md, "| --- | --- | --- | --- |");
    for goal in &goals {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            goal.what,
            escape(&goal.figure),
            goal.run,
            verdict(goal.met)
        );
    }
    let _ = writeln!(md);

    for kind in Kind::ALL {
        let m = method(kind);
        let runs = runs(records, kind);
        let _ = writeln!(md, "## {}\n", m.title);
        let _ = writeln!(md, "{}\n", m.what);
        let _ = writeln!(md, "```sh\n{}\n```\n", m.command);
        if runs.is_empty() {
            let _ = writeln!(
                md,
                "Not measured yet: run the command above, then `cargo xtask evidence`.\n"
            );
            continue;
        }
        let section = match kind {
            Kind::Coverage => coverage(&runs),
            Kind::Fuzz => fuzz(&runs),
            Kind::Mutants => mutants(&runs),
            Kind::Bugbench => bugbench(&runs),
            Kind::Bench => bench(&runs),
            Kind::Memory => memory(&runs),
        };
        md.push_str(&section);
    }
    while md.ends_with("\n\n") {
        md.pop();
    }
    md
}

/// The records of one kind, newest first: by date, and among runs of one
/// day the one written later to the history first.
fn runs(records: &[Record], kind: Kind) -> Vec<&Record> {
    let mut runs: Vec<(usize, &Record)> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.kind == kind)
        .collect();
    runs.sort_by(|(i, a), (j, b)| b.date.cmp(&a.date).then(j.cmp(i)));
    runs.into_iter().map(|(_, r)| r).collect()
}

// ---------------------------------------------------------------- cells

pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count: `13,345`; a string as written; `–` for nothing.
pub(super) fn int(value: &Value) -> String {
    match value {
        Value::Number(n) => match n.as_u64() {
            Some(n) => thousands(n),
            None => n
                .as_f64()
                .map_or_else(|| n.to_string(), |f| thousands(f.round().max(0.0) as u64)),
        },
        Value::String(s) => escape(s),
        _ => "–".to_owned(),
    }
}

/// A number with `decimals` places; a string as written; `–` for nothing.
pub(super) fn fixed(value: &Value, decimals: usize) -> String {
    match value {
        Value::Number(n) => n
            .as_f64()
            .map_or_else(|| n.to_string(), |f| format!("{f:.decimals$}")),
        Value::String(s) => escape(s),
        _ => "–".to_owned(),
    }
}

pub(super) fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

pub(super) fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "✅ met",
        Some(false) => "❌ not met",
        None => "n/a",
    }
}

/// `YYYY-MM-DD · <commit>`, for a table.
pub(super) fn when(r: &Record) -> String {
    format!("{} · `{}`", r.date, escape(&r.commit))
}

/// The stamp over a run's figures.
pub(super) fn stamp(r: &Record) -> String {
    stamp_after("Measured on", r)
}

/// `<lead> **YYYY-MM-DD** at commit <commit>, on <machine>.` and the
/// run's note.
pub(super) fn stamp_after(lead: &str, r: &Record) -> String {
    let mut text = format!(
        "{lead} **{}** at commit `{}`, on {}.",
        r.date, r.commit, r.machine
    );
    if let Some(note) = &r.note {
        let _ = write!(text, " {}", sentence(note));
    }
    text
}

/// `note` with a capital and a full stop.
pub(super) fn sentence(note: &str) -> String {
    let mut chars = note.trim().chars();
    let mut text: String = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    if !text.ends_with('.') {
        text.push('.');
    }
    text
}

pub(super) fn note(r: &Record) -> String {
    r.note.as_deref().map(escape).unwrap_or_default()
}

pub(super) fn earlier_heading(md: &mut String) {
    let _ = writeln!(md, "### Earlier runs (newest first)\n");
}
