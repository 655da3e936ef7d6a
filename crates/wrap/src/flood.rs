//! Flood aggregation: an upstream can write millions of unreadable lines or
//! unsolicited answers a second (2 MB of newlines is two million lines), and
//! one journal record and one stderr line each would let it grow the
//! journal and the log by its own bytes. Quarantines and drops are counted
//! per (kind, stage or reason): the first of an interval is recorded and
//! shown at once; the others that come within [`INTERVAL_MS`] of it become
//! one record (their count, first and last line numbers) and one summary
//! line, written once the interval is over (on the first event or tick
//! after it; [`crate::Wrap::next_deadline`] asks for that tick) or when the
//! session ends. So each key adds at most two records and two stderr lines
//! per interval, whatever the upstream writes.

use portcullis_wire::{Fingerprint, Stage};

use crate::effect::Dropped;

/// Length of an aggregation interval, in ms.
pub const INTERVAL_MS: u64 = 1_000;

/// What is aggregated together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloodKey {
    /// Upstream lines quarantined at this stage.
    Quarantined(Stage),
    /// Upstream messages dropped for this reason.
    Dropped(Dropped),
    /// Client answers to requests the upstream cancelled.
    LateAnswer,
}

/// The events of one key counted after the first of an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) first_line: u64,
    pub(crate) last_line: u64,
    pub(crate) count: u64,
    /// The first line's fingerprint (quarantines only).
    pub(crate) fingerprint: Option<Fingerprint>,
}

#[derive(Debug)]
struct Window {
    key: FloodKey,
    /// When its first event came, in ms.
    opened: u64,
    run: Option<Run>,
}

/// The open intervals, one per key at most (a few dozen keys exist).
#[derive(Debug, Default)]
pub(crate) struct Floods {
    windows: Vec<Window>,
}

impl Floods {
    /// An event of `key` on `line` at `now`: `true` when it is the first of
    /// its interval (record and show it now), `false` when it was counted.
    /// The caller takes the intervals over at `now` ([`Floods::due`]) first.
    pub(crate) fn note(
        &mut self,
        key: FloodKey,
        line: u64,
        fingerprint: Option<Fingerprint>,
        now: u64,
    ) -> bool {
        match self.windows.iter_mut().find(|w| w.key == key) {
            Some(window) if now < window.opened.saturating_add(INTERVAL_MS) => {
                match &mut window.run {
                    Some(run) => {
                        run.last_line = line;
                        run.count = run.count.saturating_add(1);
                    }
                    None => {
                        window.run = Some(Run {
                            first_line: line,
                            last_line: line,
                            count: 1,
                            fingerprint,
                        });
                    }
                }
                false
            }
            Some(window) => {
                window.opened = now;
                window.run = None;
                true
            }
            None => {
                self.windows.push(Window {
                    key,
                    opened: now,
                    run: None,
                });
                true
            }
        }
    }

    /// The runs of the intervals over at `now`, oldest key first; those
    /// intervals close (the next event of their key opens a new one).
    pub(crate) fn due(&mut self, now: u64) -> Vec<(FloodKey, Run)> {
        let mut runs = Vec::new();
        self.windows.retain(|w| {
            let over = now >= w.opened.saturating_add(INTERVAL_MS);
            if over && let Some(run) = w.run {
                runs.push((w.key, run));
            }
            !over
        });
        runs
    }

    /// Every run still counted (the session is ending).
    pub(crate) fn all(&mut self) -> Vec<(FloodKey, Run)> {
        std::mem::take(&mut self.windows)
            .into_iter()
            .filter_map(|w| w.run.map(|run| (w.key, run)))
            .collect()
    }

    /// When the earliest interval holding a run is over, in ms.
    pub(crate) fn next_flush(&self) -> Option<u64> {
        self.windows
            .iter()
            .filter(|w| w.run.is_some())
            .map(|w| w.opened.saturating_add(INTERVAL_MS))
            .min()
    }
}
