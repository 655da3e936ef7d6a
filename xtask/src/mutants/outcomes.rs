//! Reading cargo-mutants' own record of a run, `mutants.out/outcomes.json`:
//! one outcome per scenario (the unmutated baseline, then each mutant) with
//! its summary and the duration of each phase.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// What happened to one mutant, as cargo-mutants summarizes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Verdict {
    /// A test failed: the mutant was noticed.
    CaughtMutant,
    /// Every test passed with the mutant in place: a survivor.
    MissedMutant,
    /// The tests did not finish within the timeout.
    Timeout,
    /// The mutated code did not build.
    Unviable,
    /// Anything else cargo-mutants reports (`Success`, `Failure`).
    #[serde(other)]
    Other,
}

/// One mutated place in the source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mutant {
    /// The name `cargo mutants --list` prints (what `exclude_re` matches).
    pub name: String,
    pub package: String,
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// The enclosing function, when there is one.
    pub function: Option<String>,
    /// The change, as cargo-mutants words it: `replace == with != in ...`.
    pub mutation: String,
    /// `mutants.out`-relative path of the diff cargo-mutants wrote.
    pub diff_path: Option<String>,
}

/// A tested mutant with its verdict and the time its build and tests took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tested {
    #[serde(flatten)]
    pub mutant: Mutant,
    pub verdict: Verdict,
    pub build_secs: f64,
    pub test_secs: f64,
}

/// Everything `outcomes.json` says about a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcomes {
    pub cargo_mutants_version: String,
    /// The baseline's summary (`Success` unless the unmutated tests fail);
    /// `None` with `--baseline skip`.
    pub baseline: Option<String>,
    pub mutants: Vec<Tested>,
}

impl Outcomes {
    pub fn count(&self, verdict: Verdict) -> usize {
        self.mutants.iter().filter(|m| m.verdict == verdict).count()
    }

    pub fn with(&self, verdict: Verdict) -> impl Iterator<Item = &Tested> {
        self.mutants.iter().filter(move |m| m.verdict == verdict)
    }
}

#[derive(Deserialize)]
struct RawOutcomes {
    cargo_mutants_version: String,
    outcomes: Vec<RawOutcome>,
}

#[derive(Deserialize)]
struct RawOutcome {
    scenario: RawScenario,
    summary: String,
    diff_path: Option<String>,
    #[serde(default)]
    phase_results: Vec<RawPhase>,
}

#[derive(Deserialize)]
enum RawScenario {
    Baseline,
    Mutant(RawMutant),
}

#[derive(Deserialize)]
struct RawMutant {
    name: String,
    package: String,
    file: String,
    function: Option<RawFunction>,
    span: RawSpan,
}

#[derive(Deserialize)]
struct RawFunction {
    function_name: String,
}

#[derive(Deserialize)]
struct RawSpan {
    start: RawPosition,
}

#[derive(Deserialize)]
struct RawPosition {
    line: u32,
    column: u32,
}

#[derive(Deserialize)]
struct RawPhase {
    phase: String,
    duration: f64,
}

/// Parses the text of `outcomes.json`.
pub fn parse(text: &str) -> Result<Outcomes> {
    let raw: RawOutcomes =
        serde_json::from_str(text).context("outcomes.json is not what cargo-mutants writes")?;
    let mut baseline = None;
    let mut mutants = Vec::new();
    for outcome in raw.outcomes {
        match outcome.scenario {
            RawScenario::Baseline => baseline = Some(outcome.summary),
            RawScenario::Mutant(m) => {
                let verdict: Verdict =
                    serde_json::from_value(serde_json::Value::String(outcome.summary))?;
                let secs = |phase: &str| -> f64 {
                    outcome
                        .phase_results
                        .iter()
                        .filter(|p| p.phase == phase)
                        .map(|p| p.duration)
                        .sum()
                };
                let (build_secs, test_secs) = (secs("Build") + secs("Check"), secs("Test"));
                mutants.push(Tested {
                    mutant: Mutant {
                        mutation: mutation_text(&m.name).to_owned(),
                        name: m.name,
                        package: m.package,
                        file: m.file,
                        line: m.span.start.line,
                        column: m.span.start.column,
                        function: m.function.map(|f| f.function_name),
                        diff_path: outcome.diff_path,
                    },
                    verdict,
                    build_secs,
                    test_secs,
                });
            }
        }
    }
    Ok(Outcomes {
        cargo_mutants_version: raw.cargo_mutants_version,
        baseline,
        mutants,
    })
}

/// The name without its `file:line:col: ` prefix.
pub fn mutation_text(name: &str) -> &str {
    let mut rest = name;
    // file, line, column: three `:`-separated fields, then a space.
    for _ in 0..3 {
        match rest.split_once(':') {
            Some((_, tail)) => rest = tail,
            None => return name,
        }
    }
    rest.strip_prefix(' ').unwrap_or(name)
}

/// One mutant as `cargo mutants --list --json` prints it.
#[derive(Debug, Deserialize)]
pub struct Listed {
    pub name: String,
    pub package: String,
    pub file: String,
}

/// Parses `cargo mutants --list --json`. With `--in-diff`, a diff that
/// adds no line (one that only deletes code) makes cargo-mutants print
/// nothing at all rather than `[]` ("No mutants to filter"): no mutants.
pub fn parse_list(text: &str) -> Result<Vec<Listed>> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(text).context("`cargo mutants --list --json` printed something else")
}

/// Survivors per file, for the report's overview.
pub fn by_file<'a>(mutants: impl Iterator<Item = &'a Tested>) -> BTreeMap<&'a str, usize> {
    let mut files = BTreeMap::new();
    for m in mutants {
        *files.entry(m.mutant.file.as_str()).or_insert(0) += 1;
    }
    files
}

/// Fails when the unmutated tree does not pass its tests: no verdict on a
/// mutant means anything then.
pub fn check_baseline(outcomes: &Outcomes) -> Result<()> {
    match outcomes.baseline.as_deref() {
        None | Some("Success") => Ok(()),
        Some(other) => bail!(
            "the unmutated baseline did not pass its tests ({other}); \
             see mutants.out/log/baseline.log"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("testdata/outcomes.json");

    #[test]
    fn the_sample_has_a_passing_baseline_and_every_verdict_kind() {
        let outcomes = parse(SAMPLE).unwrap();
        assert_eq!(outcomes.cargo_mutants_version, "27.1.0");
        assert_eq!(outcomes.baseline.as_deref(), Some("Success"));
        check_baseline(&outcomes).unwrap();
        assert_eq!(outcomes.count(Verdict::CaughtMutant), 2);
        assert_eq!(outcomes.count(Verdict::MissedMutant), 1);
        assert_eq!(outcomes.count(Verdict::Unviable), 1);
        assert_eq!(outcomes.count(Verdict::Timeout), 0);
    }

    #[test]
    fn a_survivor_carries_its_place_and_mutation() {
        let outcomes = parse(SAMPLE).unwrap();
        let survivor = outcomes.with(Verdict::MissedMutant).next().unwrap();
        assert_eq!(survivor.mutant.file, "crates/wire/src/id.rs");
        assert_eq!((survivor.mutant.line, survivor.mutant.column), (19, 9));
        assert_eq!(
            survivor.mutant.mutation,
            "replace <impl fmt::Display for Id>::fmt -> fmt::Result with Ok(Default::default())"
        );
        assert_eq!(
            survivor.mutant.function.as_deref(),
            Some("<impl fmt::Display for Id>::fmt")
        );
        assert_eq!(
            survivor.mutant.diff_path.as_deref(),
            Some("diff/crates__wire__src__id.rs_line_19_col_9.diff")
        );
        assert!(survivor.build_secs > 0.0 && survivor.test_secs > 0.0);
    }

    #[test]
    fn an_unviable_mutant_took_no_test_time() {
        let outcomes = parse(SAMPLE).unwrap();
        let unviable = outcomes.with(Verdict::Unviable).next().unwrap();
        assert!(unviable.build_secs > 0.0);
        assert_eq!(unviable.test_secs, 0.0);
    }

    #[test]
    fn a_failing_baseline_is_an_error() {
        let text = r#"{"cargo_mutants_version":"27.1.0","outcomes":[
            {"scenario":"Baseline","summary":"Failure","diff_path":null,"phase_results":[]}]}"#;
        let err = check_baseline(&parse(text).unwrap()).unwrap_err();
        assert!(err.to_string().contains("baseline.log"), "{err}");
    }

    #[test]
    fn unknown_summaries_are_kept_apart_from_the_four_verdicts() {
        let text = r#"{"cargo_mutants_version":"27.1.0","outcomes":[
            {"scenario":{"Mutant":{"name":"a.rs:1:1: replace f with ()","package":"p",
             "file":"a.rs","function":null,"span":{"start":{"line":1,"column":1}}}},
             "summary":"Failure","diff_path":null}]}"#;
        let outcomes = parse(text).unwrap();
        assert_eq!(outcomes.mutants[0].verdict, Verdict::Other);
        assert_eq!(outcomes.mutants[0].mutant.function, None);
    }

    #[test]
    fn mutation_text_drops_the_place_prefix() {
        assert_eq!(
            mutation_text("crates/wire/src/frame.rs:88:27: replace > with >= in FrameReader::push"),
            "replace > with >= in FrameReader::push"
        );
        assert_eq!(mutation_text("no place here"), "no place here");
    }

    #[test]
    fn the_list_gives_names() {
        let listed =
            parse_list(r#"[{"name":"a.rs:1:1: x","package":"p","file":"a.rs","genre":"FnValue"}]"#)
                .unwrap();
        assert_eq!(listed[0].name, "a.rs:1:1: x");
        assert_eq!(
            (listed[0].package.as_str(), listed[0].file.as_str()),
            ("p", "a.rs")
        );
        assert!(parse_list("{}").is_err());
        assert!(parse_list("No mutants").is_err());
    }

    #[test]
    fn a_diff_that_only_deletes_lists_nothing() {
        // What cargo-mutants 27 prints for `--list --json --in-diff` of a
        // diff without added lines (CI's run after a commit that removed
        // `FrameReader::line`).
        assert!(parse_list("").unwrap().is_empty());
        assert!(parse_list("\n").unwrap().is_empty());
    }
}
