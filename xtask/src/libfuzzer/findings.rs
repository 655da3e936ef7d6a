//! What a run found: artifact names, `-merge=1` results, and a one-line
//! summary of a crash for a regression sidecar.

/// What libFuzzer wrote an artifact for, from its file name prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArtifactKind {
    Crash,
    Timeout,
    Oom,
    Leak,
}

impl ArtifactKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Crash => "crash",
            Self::Timeout => "timeout",
            Self::Oom => "oom",
            Self::Leak => "leak",
        }
    }
}

/// Classifies an artifact file name; `slow-unit-*`, `minimized-from-*` and
/// anything else that is not a finding are `None`.
pub fn artifact_kind(file_name: &str) -> Option<ArtifactKind> {
    let (prefix, hash) = file_name.split_once('-')?;
    if hash.is_empty() {
        return None;
    }
    match prefix {
        "crash" => Some(ArtifactKind::Crash),
        "timeout" => Some(ArtifactKind::Timeout),
        "oom" => Some(ArtifactKind::Oom),
        "leak" => Some(ArtifactKind::Leak),
        _ => None,
    }
}

/// The number of files a `-merge=1` run added, from
/// `MERGE-OUTER: 3 new files with 15 new features added; 4 new coverage edges`.
pub fn parse_merge_added(output: &str) -> Option<u64> {
    output.lines().rev().find_map(|line| {
        let rest = line.trim().strip_prefix("MERGE-OUTER: ")?;
        let (count, tail) = rest.split_once(' ')?;
        tail.starts_with("new files").then(|| count.parse().ok())?
    })
}

const SUMMARY_MAX_CHARS: usize = 300;

/// A one-line description of why a run died, for a regression sidecar.
///
/// In order of preference: the first Rust panic (`<message> (panicked at
/// <file:line:col>)`), a stack overflow, a sanitizer's `SUMMARY:` line,
/// libFuzzer's own `ERROR:` line (timeout, out-of-memory, deadly signal).
pub fn crash_summary(output: &str) -> Option<String> {
    let lines: Vec<&str> = output.lines().collect();
    let summary = lines
        .iter()
        .enumerate()
        .find_map(|(i, line)| rust_panic(line, lines.get(i + 1).copied()))
        .or_else(|| {
            lines
                .iter()
                .find(|l| l.contains("has overflowed its stack"))
                .map(|l| format!("stack overflow: {}", l.trim()))
        })
        .or_else(|| {
            lines.iter().find_map(|l| {
                let rest = l.trim().strip_prefix("SUMMARY: ")?;
                rest.contains("Sanitizer: ").then(|| rest.to_owned())
            })
        })
        .or_else(|| {
            lines.iter().find_map(|l| {
                let at = l.find("ERROR: ")?;
                Some(l[at + "ERROR: ".len()..].trim().to_owned())
            })
        })
        .or_else(|| {
            lines
                .iter()
                .find_map(|l| Some(l.trim().strip_prefix("SUMMARY: ")?.to_owned()))
        })?;
    Some(truncate(&summary, SUMMARY_MAX_CHARS))
}

/// Recognises `thread '<unnamed>' panicked at src/x.rs:1:2:` followed by the
/// message line (Rust >= 1.73, with or without a `(tid)` after the name), and
/// the older one-line `panicked at 'message', src/x.rs:1:2`.
fn rust_panic(line: &str, next: Option<&str>) -> Option<String> {
    let line = line.trim();
    if !line.starts_with("thread '") {
        return None;
    }
    let at = line.find(" panicked at ")?;
    let rest = &line[at + " panicked at ".len()..];
    if let Some(quoted) = rest.strip_prefix('\'') {
        // Old format: panicked at 'message', file:line:col
        let (message, location) = quoted.rsplit_once("', ")?;
        return Some(format!("{message} (panicked at {location})"));
    }
    let location = rest.strip_suffix(':').unwrap_or(rest);
    let message = next.map(str::trim).unwrap_or_default();
    if message.is_empty() || message.starts_with("note: run with `RUST_BACKTRACE") {
        Some(format!("panicked at {location}"))
    } else {
        Some(format!("{message} (panicked at {location})"))
    }
}

fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max_chars - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::libfuzzer::stats::tests::RUN_LOG;

    #[test]
    fn artifact_names_are_classified() {
        let sha = "da39a3ee5e6b4b0d3255bfef95601890afd80709";
        assert_eq!(
            artifact_kind(&format!("crash-{sha}")),
            Some(ArtifactKind::Crash)
        );
        assert_eq!(
            artifact_kind(&format!("timeout-{sha}")),
            Some(ArtifactKind::Timeout)
        );
        assert_eq!(
            artifact_kind(&format!("oom-{sha}")),
            Some(ArtifactKind::Oom)
        );
        assert_eq!(
            artifact_kind(&format!("leak-{sha}")),
            Some(ArtifactKind::Leak)
        );
        assert_eq!(artifact_kind(&format!("slow-unit-{sha}")), None);
        assert_eq!(artifact_kind(&format!("minimized-from-{sha}")), None);
        assert_eq!(artifact_kind("crash-"), None);
        assert_eq!(artifact_kind("README"), None);
    }

    #[test]
    fn merge_output_reports_added_files() {
        let out = "MERGE-OUTER: 97 files, 0 in the initial corpus, 0 processed earlier\n\
                   MERGE-OUTER: attempt 1\n\
                   MERGE-OUTER: the control file has 2231 bytes\n\
                   MERGE-OUTER: consumed 0Mb (27Mb rss) to parse the control file\n\
                   MERGE-OUTER: 41 new files with 266 new features added; 71 new coverage edges\n";
        assert_eq!(parse_merge_added(out), Some(41));
        assert_eq!(parse_merge_added("MERGE-OUTER: attempt 1\n"), None);
    }

    #[test]
    fn panic_summary_names_message_and_location() {
        let out = "\
INFO: Running with entropic power schedule (0xFF, 100).
thread '<unnamed>' panicked at crates/testkit/src/harness.rs:40:9:
non-protocol stdout on line 1: b\"loading optional extension\\n\"
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
==4242== ERROR: libFuzzer: deadly signal
SUMMARY: libFuzzer: deadly signal
";
        assert_eq!(
            crash_summary(out).unwrap(),
            "non-protocol stdout on line 1: b\"loading optional extension\\n\" \
             (panicked at crates/testkit/src/harness.rs:40:9)"
        );
    }

    #[test]
    fn panic_summary_accepts_thread_ids_and_empty_messages() {
        let out = "thread '<unnamed>' (4242) panicked at src/lib.rs:1:5:\n\
                   assertion `left == right` failed\n  left: 1\n right: 2\n";
        assert_eq!(
            crash_summary(out).unwrap(),
            "assertion `left == right` failed (panicked at src/lib.rs:1:5)"
        );
        let out = "thread 'main' panicked at src/lib.rs:1:5:\n\
                   note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(crash_summary(out).unwrap(), "panicked at src/lib.rs:1:5");
    }

    #[test]
    fn old_one_line_panics_are_understood() {
        let out = "thread '<unnamed>' panicked at 'index out of bounds', src/frame.rs:10:5\n";
        assert_eq!(
            crash_summary(out).unwrap(),
            "index out of bounds (panicked at src/frame.rs:10:5)"
        );
    }

    #[test]
    fn timeouts_ooms_and_sanitizer_reports_are_summarised() {
        let timeout =
            "==77== ERROR: libFuzzer: timeout after 10 seconds\nSUMMARY: libFuzzer: timeout\n";
        assert_eq!(
            crash_summary(timeout).unwrap(),
            "libFuzzer: timeout after 10 seconds"
        );

        let oom = "==77== ERROR: libFuzzer: out-of-memory (used: 2100Mb; exceeds: 2048Mb)\n\
                   SUMMARY: libFuzzer: out-of-memory\n";
        assert_eq!(
            crash_summary(oom).unwrap(),
            "libFuzzer: out-of-memory (used: 2100Mb; exceeds: 2048Mb)"
        );

        let asan = "==9==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602 at pc 0x55\n\
                    SUMMARY: AddressSanitizer: heap-buffer-overflow src/lib.rs:3:4 in parse\n";
        assert_eq!(
            crash_summary(asan).unwrap(),
            "AddressSanitizer: heap-buffer-overflow src/lib.rs:3:4 in parse"
        );

        let overflow =
            "\nthread '<unnamed>' has overflowed its stack\nfatal runtime error: stack overflow\n";
        assert_eq!(
            crash_summary(overflow).unwrap(),
            "stack overflow: thread '<unnamed>' has overflowed its stack"
        );

        assert_eq!(crash_summary(RUN_LOG), None);
    }

    #[test]
    fn long_summaries_are_cut_on_a_char_boundary() {
        let out = format!("thread 'x' panicked at a.rs:1:1:\n{}\n", "é".repeat(400));
        let summary = crash_summary(&out).unwrap();
        assert_eq!(summary.chars().count(), SUMMARY_MAX_CHARS);
        assert!(summary.ends_with('…'));
    }
}
