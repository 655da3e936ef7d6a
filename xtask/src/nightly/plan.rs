//! Which sanitizer fuzzes for how long within a target's share.
//!
//! The workspace forbids `unsafe`, so AddressSanitizer mostly guards the
//! dependencies' `unsafe` and costs a large factor in executions. By default
//! most of each share runs uninstrumented (the exploration), and a share runs
//! under ASan over the same working corpus (memory errors in the inputs the
//! fast run found, plus its `memcmp` interception, which guides libFuzzer
//! towards compared byte strings). `--sanitizer` picks one for the whole
//! share instead.

use crate::project::Sanitizer;

/// The sanitizers of a nightly run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SanitizerPlan {
    /// One sanitizer for the whole share (`--sanitizer`).
    Only(Sanitizer),
    /// Uninstrumented for most of the share, then `asan_percent` of it
    /// under AddressSanitizer.
    Split { asan_percent: u8 },
}

impl SanitizerPlan {
    /// The default: this percentage of each share under ASan.
    pub const DEFAULT_ASAN_PERCENT: u8 = 20;

    pub fn new(explicit: Option<Sanitizer>, asan_percent: u8) -> Self {
        match explicit {
            Some(sanitizer) => Self::Only(sanitizer),
            None if asan_percent == 0 => Self::Only(Sanitizer::None),
            None if asan_percent >= 100 => Self::Only(Sanitizer::Address),
            None => Self::Split { asan_percent },
        }
    }

    /// The builds this plan needs, in the order they run.
    pub fn sanitizers(self) -> Vec<Sanitizer> {
        match self {
            Self::Only(sanitizer) => vec![sanitizer],
            Self::Split { .. } => vec![Sanitizer::None, Sanitizer::Address],
        }
    }

    /// The runs of one target with a share of `share_secs`: each sanitizer
    /// and its seconds, in order, summing to the share. A split keeps at
    /// least one second for each side when the share has two.
    pub fn runs(self, share_secs: u64) -> Vec<(Sanitizer, u64)> {
        match self {
            Self::Only(sanitizer) => vec![(sanitizer, share_secs)],
            Self::Split { asan_percent } => {
                let asan = (share_secs * u64::from(asan_percent)).div_ceil(100);
                let asan = asan.clamp(1, share_secs.saturating_sub(1).max(1));
                let none = share_secs.saturating_sub(asan);
                [(Sanitizer::None, none), (Sanitizer::Address, asan)]
                    .into_iter()
                    .filter(|(_, secs)| *secs > 0)
                    .collect()
            }
        }
    }

    /// For people: `none 80% + address 20%`, or the one sanitizer.
    pub fn describe(self) -> String {
        match self {
            Self::Only(sanitizer) => sanitizer.as_str().to_owned(),
            Self::Split { asan_percent } => format!(
                "{} {}% + {} {asan_percent}%",
                Sanitizer::None.as_str(),
                100 - asan_percent,
                Sanitizer::Address.as_str()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_spends_a_fifth_of_each_share_under_asan_after_the_fast_run() {
        let plan = SanitizerPlan::new(None, SanitizerPlan::DEFAULT_ASAN_PERCENT);
        assert_eq!(plan.describe(), "none 80% + address 20%");
        assert_eq!(plan.sanitizers(), [Sanitizer::None, Sanitizer::Address]);
        assert_eq!(
            plan.runs(60),
            [(Sanitizer::None, 48), (Sanitizer::Address, 12)]
        );
        // CI's smoke share: the ASan part rounds up so it is never skipped.
        assert_eq!(
            plan.runs(16),
            [(Sanitizer::None, 12), (Sanitizer::Address, 4)]
        );
        assert_eq!(
            plan.runs(2),
            [(Sanitizer::None, 1), (Sanitizer::Address, 1)]
        );
        assert_eq!(plan.runs(1), [(Sanitizer::Address, 1)]);
    }

    #[test]
    fn an_explicit_sanitizer_takes_the_whole_share() {
        for sanitizer in [Sanitizer::Address, Sanitizer::None] {
            let plan = SanitizerPlan::new(Some(sanitizer), 20);
            assert_eq!(plan.runs(60), [(sanitizer, 60)]);
            assert_eq!(plan.sanitizers(), [sanitizer]);
            assert_eq!(plan.describe(), sanitizer.as_str());
        }
    }

    #[test]
    fn zero_and_full_asan_shares_are_single_builds() {
        assert_eq!(
            SanitizerPlan::new(None, 0),
            SanitizerPlan::Only(Sanitizer::None)
        );
        assert_eq!(
            SanitizerPlan::new(None, 100),
            SanitizerPlan::Only(Sanitizer::Address)
        );
    }
}
