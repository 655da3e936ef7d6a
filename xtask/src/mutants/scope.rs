//! What `cargo xtask mutants` mutates, and which tests judge each part.
//!
//! The scope is split into groups, one cargo-mutants run each, because the
//! tests that can notice a mutant differ and their cost differs a lot: the
//! boundary crates are judged by their own tests, testkit's properties,
//! harnesses and regression replay, and the wrap core's tests (which drive
//! wire and gateway too); the wrap core by its own tests and testkit's
//! `wrap_session` harness; the executors by their own tests; and the CLI's
//! audit code by the binary's unit tests (`cargo test -p portcullis-cli
//! --bin portcullis`), not the process tests, which need minutes each and
//! exercise the same code through a process.

/// One cargo-mutants run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    /// Its name: the folder of its `mutants.out` and its row in the report.
    pub name: &'static str,
    /// The packages mutated (`--package`).
    pub packages: &'static [&'static str],
    /// The files of those packages in scope, repository-relative: a
    /// directory ends in `/`.
    pub sources: &'static [&'static str],
    /// The packages whose tests run against each mutant (`--test-package`).
    pub test_packages: &'static [&'static str],
    /// Which of their test targets run (`cargo test` target selection).
    pub test_targets: &'static [&'static str],
}

pub const GROUPS: [Group; 4] = [
    Group {
        name: "boundary",
        packages: &["portcullis-wire", "portcullis-gateway"],
        sources: &["crates/wire/src/", "crates/gateway/src/"],
        test_packages: &[
            "portcullis-wire",
            "portcullis-gateway",
            "portcullis-testkit",
            "portcullis-wrap",
        ],
        test_targets: &["--tests"],
    },
    Group {
        name: "wrap",
        packages: &["portcullis-wrap"],
        sources: &["crates/wrap/src/"],
        test_packages: &["portcullis-wrap", "portcullis-testkit"],
        test_targets: &["--tests"],
    },
    Group {
        name: "exec",
        packages: &["portcullis-exec"],
        sources: &["crates/exec/src/"],
        test_packages: &["portcullis-exec"],
        test_targets: &["--tests"],
    },
    Group {
        name: "cli-audit",
        packages: &["portcullis-cli"],
        sources: &["crates/cli/src/audit/", "crates/cli/src/wrap/journal.rs"],
        test_packages: &["portcullis-cli"],
        test_targets: &["--bin", "portcullis"],
    },
];

impl Group {
    /// Whether a repository-relative file is in this group's scope.
    pub fn covers(&self, file: &str) -> bool {
        self.sources.iter().any(|s| {
            if s.ends_with('/') {
                file.starts_with(s)
            } else {
                file == *s
            }
        })
    }

    /// The `--file` globs that select the group's sources.
    pub fn globs(&self) -> Vec<String> {
        self.sources
            .iter()
            .map(|s| {
                if s.ends_with('/') {
                    format!("{s}**")
                } else {
                    (*s).to_owned()
                }
            })
            .collect()
    }

    /// The cargo-mutants arguments that make this group's run: what it
    /// mutates (`files`: the `--file` globs, the group's own when none are
    /// given) and the tests that judge it.
    pub fn args(&self, files: &[String]) -> Vec<String> {
        let mut args = Vec::new();
        for package in self.packages {
            args.extend(["--package".to_owned(), (*package).to_owned()]);
        }
        let globs = if files.is_empty() {
            self.globs()
        } else {
            files.to_vec()
        };
        for glob in globs {
            args.extend(["--file".to_owned(), glob]);
        }
        for package in self.test_packages {
            args.extend(["--test-package".to_owned(), (*package).to_owned()]);
        }
        for target in self.test_targets {
            // `=` keeps a value that starts with `--` from reading as a flag.
            args.push(format!("--cargo-test-arg={target}"));
        }
        args
    }
}

/// Every package mutated, in scope order.
pub fn packages() -> Vec<&'static str> {
    GROUPS
        .iter()
        .flat_map(|g| g.packages.iter().copied())
        .collect()
}

/// Every source path in scope (what a pull request's diff is cut to).
pub fn sources() -> Vec<&'static str> {
    GROUPS
        .iter()
        .flat_map(|g| g.sources.iter().copied())
        .collect()
}

/// The scope in words, for the report: `portcullis-wire`, or
/// `portcullis-cli (crates/cli/src/audit/, ...)` when only part of a
/// package is mutated.
pub fn describe(package: &str) -> String {
    let Some(group) = GROUPS.iter().find(|g| g.packages.contains(&package)) else {
        return package.to_owned();
    };
    let dir = format!("crates/{}/", package.trim_start_matches("portcullis-"));
    let own: Vec<&str> = group
        .sources
        .iter()
        .copied()
        .filter(|s| s.starts_with(&dir))
        .collect();
    if own == [format!("{dir}src/")] {
        package.to_owned()
    } else {
        format!("{package} ({})", own.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str) -> Group {
        *GROUPS.iter().find(|g| g.name == name).unwrap()
    }

    #[test]
    fn the_scope_mutates_the_boundary_the_wrap_core_the_executors_and_the_audit_code() {
        assert_eq!(
            packages(),
            [
                "portcullis-wire",
                "portcullis-gateway",
                "portcullis-wrap",
                "portcullis-exec",
                "portcullis-cli"
            ]
        );
        let covered = |file: &str| GROUPS.iter().filter(|g| g.covers(file)).count();
        for file in [
            "crates/wire/src/frame.rs",
            "crates/gateway/src/authz/mod.rs",
            "crates/wrap/src/session.rs",
            "crates/exec/src/scrub/spellings.rs",
            "crates/exec/src/http.rs",
            "crates/exec/src/ssh/argv.rs",
            "crates/cli/src/audit/verify/chain.rs",
            "crates/cli/src/wrap/journal.rs",
        ] {
            assert_eq!(covered(file), 1, "{file} is in exactly one group");
        }
        for file in [
            "crates/cli/src/main.rs",
            "crates/cli/src/wrap/driver.rs",
            "crates/cli/src/mcp/driver.rs",
            "crates/testkit/src/harness.rs",
            "crates/wire/tests/properties.rs",
            "crates/cli/src/wrap/journal.rs.orig",
        ] {
            assert_eq!(covered(file), 0, "{file} is out of scope");
        }
    }

    #[test]
    fn each_group_is_judged_by_the_tests_that_reach_it() {
        let boundary = group("boundary");
        assert!(boundary.test_packages.contains(&"portcullis-testkit"));
        assert!(!boundary.test_packages.contains(&"portcullis-cli"));
        let wrap = group("wrap");
        assert_eq!(
            wrap.test_packages,
            ["portcullis-wrap", "portcullis-testkit"]
        );
        assert_eq!(group("exec").test_packages, ["portcullis-exec"]);
        let audit = group("cli-audit");
        assert_eq!(audit.test_packages, ["portcullis-cli"]);
        // The binary's unit tests only: `--tests` would add every process test.
        assert_eq!(audit.test_targets, ["--bin", "portcullis"]);
    }

    #[test]
    fn a_groups_arguments_name_its_packages_files_and_tests() {
        let args = group("cli-audit").args(&[]);
        assert_eq!(
            args,
            [
                "--package",
                "portcullis-cli",
                "--file",
                "crates/cli/src/audit/**",
                "--file",
                "crates/cli/src/wrap/journal.rs",
                "--test-package",
                "portcullis-cli",
                "--cargo-test-arg=--bin",
                "--cargo-test-arg=portcullis",
            ]
        );
        let narrowed = group("boundary").args(&["crates/gateway/src/authz/*.rs".to_owned()]);
        assert!(
            narrowed
                .windows(2)
                .any(|w| w == ["--file", "crates/gateway/src/authz/*.rs"])
        );
        assert!(
            !narrowed.iter().any(|a| a == "crates/wire/src/**"),
            "{narrowed:?}"
        );
        assert!(narrowed.contains(&"--cargo-test-arg=--tests".to_owned()));
    }

    #[test]
    fn a_partly_mutated_package_names_its_files() {
        assert_eq!(describe("portcullis-wire"), "portcullis-wire");
        assert_eq!(describe("portcullis-exec"), "portcullis-exec");
        assert_eq!(
            describe("portcullis-cli"),
            "portcullis-cli (crates/cli/src/audit/, crates/cli/src/wrap/journal.rs)"
        );
        assert_eq!(describe("portcullis-unknown"), "portcullis-unknown");
    }

    #[test]
    fn the_diff_is_cut_to_every_source_in_scope() {
        let all = sources();
        assert!(all.contains(&"crates/wrap/src/"));
        assert!(all.contains(&"crates/cli/src/wrap/journal.rs"));
        assert_eq!(
            all.len(),
            GROUPS.iter().map(|g| g.sources.len()).sum::<usize>()
        );
    }
}
