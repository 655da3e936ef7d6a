//! Reading and writing regression sidecars, and UTC dates for them.
//!
//! The format is testkit's [`Sidecar`] (the one the replay walkers read):
//! `regressions/<target>/<name>.toml` holds `summary`, `found` and `source`;
//! a nightly candidate additionally names its `target`.

use std::path::Path;
use std::time::SystemTime;

use anyhow::{Context, Result};
use portcullis_testkit::regressions::Sidecar;
use time::OffsetDateTime;

/// The sidecar at `path`.
pub fn read(path: &Path) -> Result<Sidecar> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading sidecar {}", path.display()))?;
    Sidecar::from_toml(&text).with_context(|| format!("parsing sidecar {}", path.display()))
}

/// Writes `sidecar` to `path`.
pub fn write(sidecar: &Sidecar, path: &Path) -> Result<()> {
    let text = sidecar
        .to_toml()
        .context("serialising a regression sidecar")?;
    std::fs::write(path, text).with_context(|| format!("writing sidecar {}", path.display()))
}

/// `YYYY-MM-DD` (UTC) for a point in time.
pub fn iso_date(now: SystemTime) -> String {
    let date = OffsetDateTime::from(now).date();
    format!(
        "{:04}-{:02}-{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    )
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a point in time.
pub fn iso_datetime(now: SystemTime) -> String {
    let (hour, minute, second) = OffsetDateTime::from(now).to_hms();
    format!("{}T{hour:02}:{minute:02}:{second:02}Z", iso_date(now))
}

/// Today's date, UTC.
pub fn today() -> String {
    iso_date(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    const DAY: u64 = 86_400;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn epoch_and_known_dates() {
        assert_eq!(iso_date(at(0)), "1970-01-01");
        assert_eq!(
            iso_date(UNIX_EPOCH - Duration::from_secs(DAY)),
            "1969-12-31"
        );
        assert_eq!(iso_date(at(11_016 * DAY)), "2000-02-29");
        assert_eq!(iso_date(at(19_782 * DAY)), "2024-02-29");
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
        let file = tempfile::NamedTempFile::new().unwrap();
        write(&sidecar, file.path()).unwrap();
        let text = std::fs::read_to_string(file.path()).unwrap();
        assert!(text.contains("found = \"2025-06-18\""), "{text}");
        assert_eq!(read(file.path()).unwrap(), sidecar);
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

    #[test]
    fn a_sidecar_with_an_unknown_key_is_refused() {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(
            file.path(),
            "summary = \"s\"\nfound = \"2025-01-01\"\nsource = \"x\"\nsumary = \"typo\"\n",
        )
        .unwrap();
        assert!(read(file.path()).is_err());
    }
}
