//! Each fuzz target's throughput floor: the executions per CPU-second its
//! combined runs must reach in the nightly's default configuration (the
//! default sanitizer split, one job). A target under its floor is flagged in
//! the report: a slower target explores less in the same night, so a
//! slowdown is a regression of the evidence even when nothing crashes.
//!
//! A floor sits below what the target reaches on an idle machine by about
//! the noise of a short run (a 60 s figure moves by ±15%), so noise alone
//! does not trip it; `wrap_session`'s is the figure it must reach. A run is
//! judged only when the target's share was at least [`MIN_JUDGED_SECS`] in
//! the default configuration and it fuzzed all of it: a smoke run's few
//! seconds, another sanitizer's figure, or a run a crash cut short say
//! nothing about a regression.

use serde::Serialize;

use super::SanitizerPlan;

/// Executions per CPU-second, combined over the default split's runs, set
/// from the nightly's figures on the reference machine (2 cores): the first
/// four from many runs (`stdin_bytes` 8,800–12,000, `session_model`
/// 5,300–6,200, `chunking` 11,000–12,400, `stdout_frames` 12,500–15,800),
/// about 15% under their lowest; the next five from one 60 s run each on a
/// busy machine (`strict_json` 82,900, `authz_expansion` 9,600,
/// `schema_nesting` 4,000, `policy_load` 20,900, `transcript_check` 89,200),
/// about 25% under it, as one run says less about the noise.
pub const FLOORS: [(&str, u64); 10] = [
    ("stdin_bytes", 7_500),
    ("session_model", 4_500),
    ("chunking", 9_000),
    ("stdout_frames", 10_000),
    ("strict_json", 62_000),
    ("authz_expansion", 7_200),
    ("schema_nesting", 3_000),
    ("policy_load", 15_500),
    ("transcript_check", 67_000),
    ("wrap_session", 5_000),
];

/// The shortest share of the budget (all of a target's runs) whose figure
/// is judged against the floor.
pub const MIN_JUDGED_SECS: u64 = 60;

/// A target's floor, when it has one.
pub fn floor_of(target: &str) -> Option<u64> {
    FLOORS.iter().find(|(t, _)| *t == target).map(|&(_, f)| f)
}

/// A target's throughput set against its floor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FloorCheck {
    /// The floor, in executions per CPU-second.
    pub exec_per_cpu_sec: u64,
    /// Whether this run's figure counts: long enough, in the default
    /// configuration, with a CPU-time figure.
    pub judged: bool,
    /// Judged and under the floor.
    pub under: bool,
    /// Why the run was not judged (empty when it was).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub not_judged: String,
}

/// What a run was, as far as judging its throughput goes.
#[derive(Debug, Clone, Copy)]
pub struct RunShape {
    pub plan: SanitizerPlan,
    pub jobs: u32,
    /// The target's share of the budget, in seconds.
    pub share_secs: u64,
    /// Whether it fuzzed its whole share (not stopped by a crash or an
    /// error).
    pub completed: bool,
    pub execs_per_cpu_sec: Option<u64>,
}

/// The nightly's default configuration: the default sanitizer split and
/// one libFuzzer job.
pub fn is_default(plan: SanitizerPlan, jobs: u32) -> bool {
    jobs == 1
        && plan
            == (SanitizerPlan::Split {
                asan_percent: SanitizerPlan::DEFAULT_ASAN_PERCENT,
            })
}

/// Sets a target's run against its floor; `None` when it has no floor.
pub fn check(target: &str, run: RunShape) -> Option<FloorCheck> {
    let floor = floor_of(target)?;
    let not_judged = if !is_default(run.plan, run.jobs) {
        "not the default configuration".to_owned()
    } else if run.share_secs < MIN_JUDGED_SECS {
        format!(
            "a {} s share, under the {MIN_JUDGED_SECS} s a judged run needs",
            run.share_secs
        )
    } else if !run.completed {
        "the run stopped before the end of its share".to_owned()
    } else if run.execs_per_cpu_sec.is_none() {
        "no CPU-time figure".to_owned()
    } else {
        String::new()
    };
    let judged = not_judged.is_empty();
    Some(FloorCheck {
        exec_per_cpu_sec: floor,
        judged,
        under: judged && run.execs_per_cpu_sec.is_some_and(|e| e < floor),
        not_judged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_run(secs: u64, execs: Option<u64>) -> RunShape {
        RunShape {
            plan: SanitizerPlan::new(None, SanitizerPlan::DEFAULT_ASAN_PERCENT),
            jobs: 1,
            share_secs: secs,
            completed: true,
            execs_per_cpu_sec: execs,
        }
    }

    #[test]
    fn wrap_session_must_reach_five_thousand_and_every_floor_is_listed_once() {
        assert_eq!(floor_of("wrap_session"), Some(5_000));
        assert_eq!(floor_of("no_such_target"), None);
        for (i, (target, floor)) in FLOORS.iter().enumerate() {
            assert!(*floor > 0, "{target}");
            assert!(
                FLOORS[i + 1..].iter().all(|(t, _)| t != target),
                "{target} listed twice"
            );
        }
    }

    #[test]
    fn every_floor_names_a_fuzz_target() {
        let targets = crate::project::Project::locate().fuzz_targets().unwrap();
        for (target, _) in FLOORS {
            assert!(targets.iter().any(|t| t == target), "{target}");
        }
    }

    #[test]
    fn a_long_default_run_under_its_floor_is_flagged() {
        let under = check("wrap_session", default_run(60, Some(1_802))).unwrap();
        assert_eq!(
            under,
            FloorCheck {
                exec_per_cpu_sec: 5_000,
                judged: true,
                under: true,
                not_judged: String::new(),
            }
        );
        let at = check("wrap_session", default_run(240, Some(5_000))).unwrap();
        assert!(at.judged && !at.under);
        assert_eq!(
            check("transcript_check_unknown", default_run(240, Some(1))),
            None
        );
    }

    #[test]
    fn a_short_or_other_run_is_shown_but_not_judged() {
        let smoke = check("wrap_session", default_run(59, Some(10))).unwrap();
        assert!(!smoke.judged && !smoke.under);
        assert!(smoke.not_judged.contains("60 s"), "{}", smoke.not_judged);
        let crashed = RunShape {
            completed: false,
            ..default_run(600, Some(10))
        };
        let checked = check("wrap_session", crashed).unwrap();
        assert!(!checked.judged && !checked.under);
        assert!(
            checked.not_judged.contains("stopped"),
            "{}",
            checked.not_judged
        );
        let asan = RunShape {
            plan: SanitizerPlan::new(Some(crate::project::Sanitizer::Address), 20),
            ..default_run(600, Some(10))
        };
        let checked = check("wrap_session", asan).unwrap();
        assert!(!checked.judged && !checked.under);
        assert_eq!(checked.not_judged, "not the default configuration");
        let jobs = RunShape {
            jobs: 2,
            ..default_run(600, Some(10))
        };
        assert!(!check("wrap_session", jobs).unwrap().judged);
        let other_split = RunShape {
            plan: SanitizerPlan::new(None, 50),
            ..default_run(600, Some(10))
        };
        assert!(!check("wrap_session", other_split).unwrap().judged);
        let no_cpu = check("wrap_session", default_run(600, None)).unwrap();
        assert!(!no_cpu.judged && !no_cpu.under);
    }
}
