//! libFuzzer's figures: status lines, the `-print_final_stats=1` block, and
//! their totals over a target's jobs.

/// One libFuzzer status line, e.g.
/// `#524288 pulse  cov: 71 ft: 269 corp: 94/19Kb lim: 4096 exec/s: 262144 rss: 27Mb`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// Executions so far (the `#N`).
    pub execs: u64,
    /// `INITED`, `NEW`, `REDUCE`, `pulse`, `RELOAD`, `DONE`, ...
    pub event: String,
    /// Coverage counters (`cov:`), i.e. edges.
    pub cov: Option<u64>,
    /// Features (`ft:`).
    pub ft: Option<u64>,
    /// Units in the in-memory corpus (`corp: N/size`).
    pub corp_units: Option<u64>,
    /// Size of the in-memory corpus as libFuzzer prints it (`19Kb`).
    pub corp_size: Option<String>,
    /// Executions per second (`exec/s:`).
    pub exec_per_sec: Option<u64>,
    /// Resident set size in MB (`rss: 27Mb`).
    pub rss_mb: Option<u64>,
}

impl Status {
    /// The figures worth showing while a run is in progress.
    pub fn condensed(&self) -> String {
        let mut out = format!("#{}", self.execs);
        if let Some(cov) = self.cov {
            out.push_str(&format!(" cov: {cov}"));
        }
        if let Some(ft) = self.ft {
            out.push_str(&format!(" ft: {ft}"));
        }
        if let Some(units) = self.corp_units {
            out.push_str(&format!(" corp: {units}"));
            if let Some(size) = &self.corp_size {
                out.push_str(&format!("/{size}"));
            }
        }
        if let Some(eps) = self.exec_per_sec {
            out.push_str(&format!(" exec/s: {eps}"));
        }
        if let Some(rss) = self.rss_mb {
            out.push_str(&format!(" rss: {rss}Mb"));
        }
        out
    }
}

/// Parses a status line; anything else (INFO lines, crash reports) is `None`.
pub fn parse_status_line(line: &str) -> Option<Status> {
    let rest = line.trim_start().strip_prefix('#')?;
    let mut tokens = rest.split_whitespace();
    let execs = tokens.next()?.parse().ok()?;
    let event = tokens.next()?;
    if event.is_empty() || !event.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let mut status = Status {
        execs,
        event: event.to_owned(),
        ..Status::default()
    };
    while let Some(key) = tokens.next() {
        let value = match key {
            "cov:" | "ft:" | "corp:" | "exec/s:" | "rss:" => match tokens.next() {
                Some(v) => v,
                None => break,
            },
            _ => continue,
        };
        match key {
            "cov:" => status.cov = value.parse().ok(),
            "ft:" => status.ft = value.parse().ok(),
            "corp:" => {
                let (units, size) = value.split_once('/').unwrap_or((value, ""));
                status.corp_units = units.parse().ok();
                status.corp_size = (!size.is_empty()).then(|| size.to_owned());
            }
            "exec/s:" => status.exec_per_sec = value.parse().ok(),
            "rss:" => status.rss_mb = value.trim_end_matches("Mb").parse().ok(),
            _ => {}
        }
    }
    // A status line always carries at least one figure.
    if status.cov.is_none() && status.exec_per_sec.is_none() && status.rss_mb.is_none() {
        return None;
    }
    Some(status)
}

/// The `stat::` block printed at exit with `-print_final_stats=1`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FinalStats {
    pub executed_units: Option<u64>,
    pub average_exec_per_sec: Option<u64>,
    pub new_units_added: Option<u64>,
    pub slowest_unit_time_sec: Option<u64>,
    pub peak_rss_mb: Option<u64>,
}

/// Applies one `stat::name: value` line; returns whether it was one.
fn apply_stat_line(stats: &mut FinalStats, line: &str) -> bool {
    let Some(rest) = line.trim().strip_prefix("stat::") else {
        return false;
    };
    let Some((name, value)) = rest.split_once(':') else {
        return false;
    };
    let value = value.trim().parse().ok();
    let slot = match name.trim() {
        "number_of_executed_units" => &mut stats.executed_units,
        "average_exec_per_sec" => &mut stats.average_exec_per_sec,
        "new_units_added" => &mut stats.new_units_added,
        "slowest_unit_time_sec" => &mut stats.slowest_unit_time_sec,
        "peak_rss_mb" => &mut stats.peak_rss_mb,
        _ => return true,
    };
    *slot = value;
    true
}

/// Everything worth keeping from one libFuzzer process's output, built line by
/// line so that a long run never has to be held in memory.
#[derive(Debug, Clone, Default)]
pub struct LogStats {
    /// The most recent status line.
    pub last_status: Option<Status>,
    /// Last `cov:` and `ft:` seen (an `INITED` line on an empty corpus has none).
    pub cov: Option<u64>,
    pub ft: Option<u64>,
    pub final_stats: FinalStats,
}

impl LogStats {
    pub fn feed_line(&mut self, line: &str) {
        if let Some(status) = parse_status_line(line) {
            self.cov = status.cov.or(self.cov);
            self.ft = status.ft.or(self.ft);
            self.last_status = Some(status);
        } else {
            apply_stat_line(&mut self.final_stats, line);
        }
    }

    pub fn from_text(text: &str) -> Self {
        let mut stats = Self::default();
        for line in text.lines() {
            stats.feed_line(line);
        }
        stats
    }

    pub fn execs(&self) -> u64 {
        self.final_stats
            .executed_units
            .or(self.last_status.as_ref().map(|s| s.execs))
            .unwrap_or(0)
    }

    pub fn execs_per_sec(&self) -> u64 {
        self.final_stats
            .average_exec_per_sec
            .or(self.last_status.as_ref().and_then(|s| s.exec_per_sec))
            .unwrap_or(0)
    }

    pub fn peak_rss_mb(&self) -> Option<u64> {
        self.final_stats
            .peak_rss_mb
            .or(self.last_status.as_ref().and_then(|s| s.rss_mb))
    }
}

/// Figures for one target, summed over its libFuzzer jobs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub execs: u64,
    /// Sum of the jobs' averages: the target's aggregate throughput.
    pub execs_per_sec: u64,
    /// Highest `cov:` of any job (jobs share a corpus, so this is a lower
    /// bound on the union).
    pub cov: Option<u64>,
    pub ft: Option<u64>,
    pub peak_rss_mb: Option<u64>,
}

pub fn combine(jobs: &[LogStats]) -> Totals {
    let mut totals = Totals::default();
    for job in jobs {
        totals.execs += job.execs();
        totals.execs_per_sec += job.execs_per_sec();
        totals.cov = totals.cov.max(job.cov);
        totals.ft = totals.ft.max(job.ft);
        totals.peak_rss_mb = totals.peak_rss_mb.max(job.peak_rss_mb());
    }
    totals
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    // Captured from a `strict_json` run (libfuzzer-sys 0.4.13, rustc 1.97-nightly).
    pub(in crate::libfuzzer) const RUN_LOG: &str = "\
INFO: Running with entropic power schedule (0xFF, 100).
INFO: Seed: 2863179353
INFO: Loaded 1 modules   (392 inline 8-bit counters): 392 [0x5555c833d848, 0x5555c833d9d0),
INFO: -max_len is not provided; libFuzzer will not generate inputs larger than 4096 bytes
INFO: A corpus is not provided, starting from an empty corpus
#2\tINITED exec/s: 0 rss: 27Mb
#3\tNEW    cov: 5 ft: 6 corp: 2/3b lim: 4 exec/s: 0 rss: 27Mb L: 2/2 MS: 1 ChangeBit-
#524288\tpulse  cov: 71 ft: 269 corp: 94/19Kb lim: 4096 exec/s: 262144 rss: 27Mb
#1044259\tDONE   cov: 71 ft: 272 corp: 97/26Kb lim: 4096 exec/s: 174043 rss: 27Mb
###### Recommended dictionary. ######
\"\\377\\377(\\324\" # Uses: 2315
###### End of recommended dictionary. ######
Done 1044259 runs in 6 second(s)
stat::number_of_executed_units: 1044259
stat::average_exec_per_sec:     174043
stat::new_units_added:          120
stat::slowest_unit_time_sec:    0
stat::peak_rss_mb:              28
";

    #[test]
    fn status_lines_parse_with_all_figures() {
        let s = parse_status_line(
            "#524288\tpulse  cov: 71 ft: 269 corp: 94/19Kb lim: 4096 exec/s: 262144 rss: 27Mb",
        )
        .unwrap();
        assert_eq!(s.execs, 524_288);
        assert_eq!(s.event, "pulse");
        assert_eq!((s.cov, s.ft), (Some(71), Some(269)));
        assert_eq!(
            (s.corp_units, s.corp_size.as_deref()),
            (Some(94), Some("19Kb"))
        );
        assert_eq!((s.exec_per_sec, s.rss_mb), (Some(262_144), Some(27)));
        assert_eq!(
            s.condensed(),
            "#524288 cov: 71 ft: 269 corp: 94/19Kb exec/s: 262144 rss: 27Mb"
        );
    }

    #[test]
    fn inited_on_an_empty_corpus_has_no_coverage_yet() {
        let s = parse_status_line("#2\tINITED exec/s: 0 rss: 27Mb").unwrap();
        assert_eq!(
            (s.event.as_str(), s.cov, s.rss_mb),
            ("INITED", None, Some(27))
        );
    }

    #[test]
    fn non_status_lines_are_not_status_lines() {
        for line in [
            "INFO: Seed: 1",
            "###### Recommended dictionary. ######",
            "#0x62,",
            "#12",
            "#12 NEW",
            "  #0 0x55d5 in __sanitizer_print_stack_trace",
            "",
        ] {
            assert_eq!(parse_status_line(line), None, "{line:?}");
        }
    }

    #[test]
    fn final_stats_win_over_the_last_status_line() {
        let stats = LogStats::from_text(RUN_LOG);
        assert_eq!(stats.execs(), 1_044_259);
        assert_eq!(stats.execs_per_sec(), 174_043);
        assert_eq!(stats.peak_rss_mb(), Some(28));
        assert_eq!((stats.cov, stats.ft), (Some(71), Some(272)));
        assert_eq!(stats.final_stats.new_units_added, Some(120));
        assert_eq!(stats.last_status.unwrap().event, "DONE");
    }

    #[test]
    fn a_killed_run_falls_back_to_its_last_status_line() {
        let stats = LogStats::from_text(
            "#100\tNEW    cov: 9 ft: 10 corp: 3/4b exec/s: 50 rss: 30Mb L: 1/1 MS: 1 ChangeBit-\n\
             #200\tINITED exec/s: 70 rss: 31Mb\n",
        );
        assert_eq!(stats.execs(), 200);
        assert_eq!(stats.execs_per_sec(), 70);
        assert_eq!(stats.peak_rss_mb(), Some(31));
        assert_eq!((stats.cov, stats.ft), (Some(9), Some(10)));
    }

    #[test]
    fn jobs_are_summed_and_maxed() {
        let a = LogStats::from_text(RUN_LOG);
        let b = LogStats::from_text(
            "#10\tDONE   cov: 80 ft: 200 corp: 5/1Kb exec/s: 1000 rss: 40Mb\n\
             stat::number_of_executed_units: 10\nstat::average_exec_per_sec: 1000\n",
        );
        let totals = combine(&[a, b]);
        assert_eq!(totals.execs, 1_044_269);
        assert_eq!(totals.execs_per_sec, 175_043);
        assert_eq!((totals.cov, totals.ft), (Some(80), Some(272)));
        assert_eq!(totals.peak_rss_mb, Some(40));
        assert_eq!(combine(&[]), Totals::default());
    }
}
