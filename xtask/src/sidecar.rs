//! The TOML sidecar that describes a regression input, and UTC dates for it.
//!
//! `regressions/<target>/<name>.toml` holds `summary`, `found` and `source`;
//! a nightly candidate additionally names its `target`.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sidecar {
    /// One line: what goes wrong (for a crash, the first panic line).
    pub summary: String,
    /// When the defect was found, `YYYY-MM-DD`.
    pub found: String,
    /// Where it came from: a public issue it mirrors, or the tool that found it.
    pub source: String,
    /// The fuzz target (candidates only; in `regressions/` the folder says it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Sidecar {
    pub fn to_toml(&self) -> Result<String> {
        toml::to_string(self).context("serialising a regression sidecar")
    }

    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading sidecar {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("parsing sidecar {}", path.display()))
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.to_toml()?)
            .with_context(|| format!("writing sidecar {}", path.display()))
    }
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day)
/// (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn unix_secs(now: SystemTime) -> i64 {
    match now.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// `YYYY-MM-DD` (UTC) for a point in time.
pub fn iso_date(now: SystemTime) -> String {
    let (y, m, d) = civil_from_days(unix_secs(now).div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a point in time.
pub fn iso_datetime(now: SystemTime) -> String {
    let secs = unix_secs(now);
    let rem = secs.rem_euclid(86_400);
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        iso_date(now),
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Today's date, UTC.
pub fn today() -> String {
    iso_date(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn epoch_and_known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(iso_date(at(1_735_689_599)), "2024-12-31");
        assert_eq!(iso_date(at(1_735_689_600)), "2025-01-01");
    }

    #[test]
    fn datetimes_are_utc_with_seconds() {
        assert_eq!(iso_datetime(at(0)), "1970-01-01T00:00:00Z");
        assert_eq!(
            iso_datetime(at(1_750_204_800 + 3723)),
            "2025-06-18T01:02:03Z"
        );
    }

    #[test]
    fn sidecar_round_trips_and_escapes() {
        let sidecar = Sidecar {
            summary: "non-protocol stdout on line 1: b\"x\\n\"".to_owned(),
            found: "2025-06-18".to_owned(),
            source: "cargo xtask nightly".to_owned(),
            target: Some("stdout_frames".to_owned()),
        };
        let text = sidecar.to_toml().unwrap();
        assert!(text.contains("found = \"2025-06-18\""), "{text}");
        assert_eq!(toml::from_str::<Sidecar>(&text).unwrap(), sidecar);
    }

    #[test]
    fn regression_sidecars_have_exactly_three_keys() {
        let sidecar = Sidecar {
            summary: "s".to_owned(),
            found: "2025-01-01".to_owned(),
            source: "https://example.invalid/issue/1".to_owned(),
            target: None,
        };
        let text = sidecar.to_toml().unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        let mut keys: Vec<_> = table.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["found", "source", "summary"]);
    }
}
