//! Each target's last throughput, kept across nightlies in
//! `<out>/exec-history.json`, so a report shows the previous figure beside
//! the new one even when the last run fuzzed only some of the targets.
//!
//! When the history file does not exist yet, the previous `report.json`
//! seeds it (older reports have no history beside them).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::report::{PreviousFigure, Report};

pub const FILE: &str = "exec-history.json";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// Target name → its figure in the last nightly that fuzzed it.
    pub targets: BTreeMap<String, PreviousFigure>,
}

impl History {
    /// The history in `out`, else what the report in `out` says, else none.
    /// An unreadable file is no history (a report must still be written).
    pub fn load(out: &Path) -> Self {
        if let Ok(text) = fs::read_to_string(out.join(FILE)) {
            return serde_json::from_str(&text).unwrap_or_default();
        }
        fs::read_to_string(out.join("report.json"))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .map(|report| Self::from_report_json(&report))
            .unwrap_or_default()
    }

    /// The figures of a `report.json` (read loosely: older reports lack
    /// fields this one has).
    pub fn from_report_json(report: &serde_json::Value) -> Self {
        let started = report["started"].as_str().unwrap_or_default();
        let sanitizer = report["sanitizer"].as_str().unwrap_or_default();
        let mut history = Self::default();
        for target in report["targets"].as_array().into_iter().flatten() {
            let (Some(name), Some(execs_per_sec)) =
                (target["target"].as_str(), target["execs_per_sec"].as_u64())
            else {
                continue;
            };
            if execs_per_sec == 0 || target["status"] == "error" {
                continue;
            }
            history.targets.insert(
                name.to_owned(),
                PreviousFigure {
                    execs_per_sec,
                    started: started.to_owned(),
                    sanitizer: sanitizer.to_owned(),
                    budget_secs: target["budget_secs"].as_u64().unwrap_or_default(),
                },
            );
        }
        history
    }

    pub fn previous(&self, target: &str) -> Option<PreviousFigure> {
        self.targets.get(target).cloned()
    }

    /// Keeps this report's figures; targets it did not fuzz (or that
    /// failed to run) keep their earlier ones.
    pub fn record(&mut self, report: &Report) {
        for t in &report.targets {
            if t.error.is_some() || t.execs_per_sec == 0 {
                continue;
            }
            self.targets.insert(
                t.target.clone(),
                PreviousFigure {
                    execs_per_sec: t.execs_per_sec,
                    started: report.started.clone(),
                    sanitizer: report.sanitizer.clone(),
                    budget_secs: t.budget_secs,
                },
            );
        }
    }

    pub fn save(&self, out: &Path) -> Result<()> {
        let path = out.join(FILE);
        fs::write(&path, serde_json::to_string_pretty(self)? + "\n")
            .with_context(|| format!("writing {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::TargetReport;

    fn target(name: &str, execs_per_sec: u64) -> TargetReport {
        TargetReport {
            target: name.to_owned(),
            status: "ok".to_owned(),
            error: None,
            budget_secs: 60,
            duration_secs: 60.0,
            execs: execs_per_sec * 60,
            execs_per_sec,
            execs_per_cpu_sec: None,
            previous: None,
            floor: None,
            runs: Vec::new(),
            coverage: None,
            features: None,
            peak_rss_mb: None,
            corpus_size_before: 0,
            corpus_size_after: 0,
            working_corpus_size: 0,
            regression_seeds: 0,
            crashes: 0,
            candidates: Vec::new(),
            log: String::new(),
        }
    }

    fn report(started: &str, sanitizer: &str, targets: Vec<TargetReport>) -> Report {
        Report {
            started: started.to_owned(),
            budget_secs: 60 * targets.len() as u64,
            jobs: 1,
            sanitizer: sanitizer.to_owned(),
            toolchain: String::new(),
            cargo_fuzz: String::new(),
            build_secs: 0.0,
            total_secs: 0.0,
            crashes: 0,
            under_floor: Vec::new(),
            ok: true,
            targets,
        }
    }

    #[test]
    fn a_run_of_some_targets_keeps_the_others_previous_figures() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = History::load(dir.path());
        assert_eq!(history, History::default());
        history.record(&report(
            "2026-11-30T00:00:00Z",
            "address",
            vec![target("stdin_bytes", 1203), target("chunking", 879)],
        ));
        history.save(dir.path()).unwrap();

        let mut history = History::load(dir.path());
        let mut failed = target("stdin_bytes", 0);
        failed.error = Some("did not build".to_owned());
        history.record(&report(
            "2026-12-01T00:00:00Z",
            "none 80% + address 20%",
            vec![target("chunking", 6000), failed],
        ));
        assert_eq!(
            history.previous("chunking"),
            Some(PreviousFigure {
                execs_per_sec: 6000,
                started: "2026-12-01T00:00:00Z".to_owned(),
                sanitizer: "none 80% + address 20%".to_owned(),
                budget_secs: 60,
            })
        );
        let kept = history.previous("stdin_bytes").unwrap();
        assert_eq!(
            (kept.execs_per_sec, kept.sanitizer.as_str()),
            (1203, "address")
        );
        assert_eq!(history.previous("strict_json"), None);
    }

    #[test]
    fn without_a_history_the_previous_report_seeds_it() {
        let dir = tempfile::tempdir().unwrap();
        // The shape of a report written before the history existed.
        let old = serde_json::json!({
            "started": "2026-11-30T02:00:00Z",
            "sanitizer": "address",
            "targets": [
                {"target": "stdin_bytes", "status": "ok", "budget_secs": 16, "execs_per_sec": 1203},
                {"target": "chunking", "status": "error", "budget_secs": 16, "execs_per_sec": 0}
            ]
        });
        fs::write(dir.path().join("report.json"), old.to_string()).unwrap();
        let history = History::load(dir.path());
        assert_eq!(
            history.previous("stdin_bytes"),
            Some(PreviousFigure {
                execs_per_sec: 1203,
                started: "2026-11-30T02:00:00Z".to_owned(),
                sanitizer: "address".to_owned(),
                budget_secs: 16,
            })
        );
        assert_eq!(history.previous("chunking"), None);
    }
}
