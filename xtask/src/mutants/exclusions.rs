//! The committed exclusions: `exclude_re` in `.cargo/mutants.toml`, where
//! each regex is preceded by a one-line `# reason` comment saying why the
//! mutants it matches are equivalent (no test could tell them apart).

use anyhow::{Context, Result, bail};
use regex::Regex;

/// One `exclude_re` entry and the reason above it.
#[derive(Debug, Clone)]
pub struct Exclusion {
    pub pattern: Regex,
    pub reason: String,
}

/// Reads the exclusions of a `mutants.toml`. Fails unless every entry has a
/// reason and the comments agree with what a TOML parser sees.
pub fn parse(config: &str) -> Result<Vec<Exclusion>> {
    let table: toml::Table = toml::from_str(config).context("parsing .cargo/mutants.toml")?;
    let declared: Vec<String> = match table.get("exclude_re") {
        None => Vec::new(),
        Some(value) => value
            .as_array()
            .context("exclude_re must be an array of strings")?
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .context("exclude_re must be an array of strings")?,
    };

    let mut found = Vec::new();
    let mut inside = false;
    let mut reason: Option<String> = None;
    for (number, line) in config.lines().enumerate() {
        let line = line.trim();
        if !inside {
            inside = line.starts_with("exclude_re") && line.ends_with('[');
            continue;
        }
        if line == "]" {
            break;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.trim();
            if reason.is_some() {
                bail!(
                    "line {}: one reason per exclusion, on one line (found a second comment)",
                    number + 1
                );
            }
            reason = Some(comment.to_owned()).filter(|c| !c.is_empty());
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let entry = line.strip_suffix(',').unwrap_or(line);
        let value: toml::Table = toml::from_str(&format!("v = {entry}"))
            .with_context(|| format!("line {}: not one string per line", number + 1))?;
        let pattern = value
            .get("v")
            .and_then(toml::Value::as_str)
            .with_context(|| format!("line {}: not a string", number + 1))?
            .to_owned();
        let reason = reason.take().with_context(|| {
            format!(
                "line {}: exclusion {pattern:?} has no `# reason` line above it",
                number + 1
            )
        })?;
        let regex = Regex::new(&pattern)
            .with_context(|| format!("line {}: {pattern:?} is not a regex", number + 1))?;
        found.push((
            pattern,
            Exclusion {
                pattern: regex,
                reason,
            },
        ));
    }
    if reason.is_some() {
        bail!("a `# reason` comment at the end of exclude_re explains nothing");
    }
    let read: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
    if read != declared {
        bail!(
            "exclude_re must be written one string per line inside `exclude_re = [ ... ]`, \
             each after its `# reason` line (read {read:?}, TOML says {declared:?})"
        );
    }
    Ok(found.into_iter().map(|(_, e)| e).collect())
}

/// The reason of the first exclusion matching `name`, if any.
pub fn reason_for<'a>(exclusions: &'a [Exclusion], name: &str) -> Option<&'a str> {
    exclusions
        .iter()
        .find(|e| e.pattern.is_match(name))
        .map(|e| e.reason.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::Project;

    const CONFIG: &str = r#"
profile = "mutants"
exclude_re = [
    # The capacity hint only changes when the vector reallocates.
    'crates/wire/src/frame\.rs:.*with_capacity',

    # Display of a log-only label.
    "crates/gateway/src/effect\\.rs:.*<impl fmt::Display for Label>::fmt",
]
"#;

    #[test]
    fn each_exclusion_keeps_its_reason() {
        let exclusions = parse(CONFIG).unwrap();
        assert_eq!(exclusions.len(), 2);
        assert_eq!(
            exclusions[0].reason,
            "The capacity hint only changes when the vector reallocates."
        );
        assert_eq!(
            reason_for(
                &exclusions,
                "crates/gateway/src/effect.rs:9:9: replace <impl fmt::Display for Label>::fmt -> fmt::Result with Ok(Default::default())"
            ),
            Some("Display of a log-only label.")
        );
        assert_eq!(
            reason_for(&exclusions, "crates/wire/src/id.rs:1:1: x"),
            None
        );
    }

    #[test]
    fn an_exclusion_without_a_reason_is_refused() {
        let config = "exclude_re = [\n    'a',\n]\n";
        let err = parse(config).unwrap_err().to_string();
        assert!(err.contains("no `# reason`"), "{err}");
    }

    #[test]
    fn a_reason_longer_than_one_line_is_refused() {
        let config = "exclude_re = [\n    # one\n    # two\n    'a',\n]\n";
        assert!(parse(config).unwrap_err().to_string().contains("one line"));
    }

    #[test]
    fn entries_the_line_reader_cannot_see_are_refused() {
        let config = "exclude_re = [\n    # why\n    'a', 'b',\n]\n";
        assert!(parse(config).is_err());
        let inline = "exclude_re = ['a']\n";
        assert!(
            parse(inline)
                .unwrap_err()
                .to_string()
                .contains("one string per line")
        );
    }

    #[test]
    fn no_exclusions_is_fine() {
        assert!(parse("profile = \"mutants\"\n").unwrap().is_empty());
    }

    #[test]
    fn every_committed_exclusion_has_a_reason() {
        let path = Project::locate().root.join(".cargo").join("mutants.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        parse(&text).unwrap();
    }
}
