//! Time budgets: parsing `90s` / `5m` / `1h30m`, printing them back, and
//! sharing one budget between fuzz targets.

use std::time::Duration;

/// Parses a human duration: a sequence of `<number><unit>` groups with units
/// `s`, `m`, `h` (e.g. `90s`, `5m`, `1h30m`), or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration; expected something like 90s, 5m or 1h".to_owned());
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        let secs = text
            .parse::<u64>()
            .map_err(|_| format!("duration {text:?} is too large"))?;
        return Ok(Duration::from_secs(secs));
    }

    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit: u64 = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => {
                return Err(format!(
                    "duration {text:?}: unknown unit {c:?}; use s, m or h (e.g. 90s, 5m, 1h30m)"
                ));
            }
        };
        if digits.is_empty() {
            return Err(format!(
                "duration {text:?}: unit {c:?} has no number before it"
            ));
        }
        let value = digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(unit))
            .ok_or_else(|| format!("duration {text:?} is too large"))?;
        total = total
            .checked_add(value)
            .ok_or_else(|| format!("duration {text:?} is too large"))?;
        digits.clear();
    }
    if !digits.is_empty() {
        return Err(format!(
            "duration {text:?}: trailing number {digits:?} has no unit; write e.g. 1m30s"
        ));
    }
    Ok(Duration::from_secs(total))
}

/// Formats whole seconds compactly: `45s`, `2m`, `1m30s`, `1h5m`.
pub fn format_secs(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}

/// Splits `total_secs` between `targets` as evenly as whole seconds allow;
/// the first targets get the leftover seconds. Fails when a target would get
/// less than one second, since libFuzzer's `-max_total_time=0` means "forever".
pub fn split_budget(total_secs: u64, targets: usize) -> Result<Vec<u64>, String> {
    if targets == 0 {
        return Err("no fuzz targets selected".to_owned());
    }
    let n = targets as u64;
    if total_secs < n {
        return Err(format!(
            "budget of {} is too small for {targets} targets: each needs at least 1s",
            format_secs(total_secs)
        ));
    }
    let (share, rest) = (total_secs / n, total_secs % n);
    Ok((0..n).map(|i| share + u64::from(i < rest)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(text: &str) -> u64 {
        parse_duration(text).unwrap().as_secs()
    }

    #[test]
    fn single_units_parse() {
        assert_eq!(secs("90s"), 90);
        assert_eq!(secs("5m"), 300);
        assert_eq!(secs("1h"), 3600);
        assert_eq!(secs("10m"), 600);
    }

    #[test]
    fn bare_number_is_seconds() {
        assert_eq!(secs("45"), 45);
        assert_eq!(secs(" 60 "), 60);
    }

    #[test]
    fn compound_durations_add_up() {
        assert_eq!(secs("1h30m"), 5400);
        assert_eq!(secs("1m30s"), 90);
        assert_eq!(secs("2h0m5s"), 7205);
    }

    #[test]
    fn malformed_durations_are_refused_with_a_hint() {
        for bad in ["", "m", "5x", "1.5m", "5m3", "-5m", "5 m"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(!err.is_empty(), "{bad:?}");
        }
        assert!(parse_duration("5d").unwrap_err().contains("unknown unit"));
        assert!(
            parse_duration("99999999999999999999h")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn seconds_format_compactly() {
        assert_eq!(format_secs(0), "0s");
        assert_eq!(format_secs(45), "45s");
        assert_eq!(format_secs(120), "2m");
        assert_eq!(format_secs(90), "1m30s");
        assert_eq!(format_secs(3900), "1h5m");
    }

    #[test]
    fn budget_is_shared_evenly_with_leftovers_first() {
        assert_eq!(split_budget(300, 5).unwrap(), vec![60; 5]);
        assert_eq!(split_budget(62, 5).unwrap(), vec![13, 13, 12, 12, 12]);
        assert_eq!(split_budget(5, 5).unwrap(), vec![1; 5]);
        assert_eq!(split_budget(60, 1).unwrap(), vec![60]);
    }

    #[test]
    fn budget_too_small_or_no_targets_is_an_error() {
        assert!(split_budget(4, 5).unwrap_err().contains("at least 1s"));
        assert!(split_budget(60, 0).is_err());
    }
}
