//! Replays `regressions/audit_verify/`. Each `.bin` is an audit journal:
//!
//! - `genuine-*`: one the writers write (chain and members intact) that
//!   `portcullis audit verify` once refused; it must verify, exit 0 with no
//!   problem;
//! - any other: a forged journal in which *every* line departs from what
//!   `portcullis mcp --audit` or `portcullis wrap --audit` writes (its chain
//!   may be intact: the members are what is forged). `portcullis audit
//!   verify` must exit 1 and name, on stderr, each line and the member that
//!   is wrong (never the kind or the chain members, which are genuine).

mod common;

use common::{Fixture, Launch};
use portcullis_testkit::regressions::{discover_in, workspace_root};

#[test]
fn forged_journals_are_refused_line_by_line_and_genuine_ones_verify() {
    let cases = discover_in(&workspace_root().join("regressions"), "audit_verify");
    assert!(
        !cases.is_empty(),
        "no regressions in regressions/audit_verify"
    );
    let fx = Fixture::new("");
    for case in cases {
        let name = case.path.display().to_string();
        let genuine = case
            .path
            .file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|s| s.starts_with("genuine-"));
        if genuine {
            let run = Launch::new(fx.cwd.path(), &["audit", "verify"])
                .arg(&case.path)
                .run(b"");
            run.assert_code(0);
            let report = String::from_utf8_lossy(&run.stdout).into_owned();
            assert!(report.contains("\nproblems: 0\n"), "{name}:\n{report}");
            assert!(run.stderr.is_empty(), "{name}: {}", run.stderr_text());
            continue;
        }
        let journal = std::fs::read_to_string(&case.path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let lines = journal.lines().count();
        assert!(lines > 0, "{name}: empty");
        let run = Launch::new(fx.cwd.path(), &["audit", "verify"])
            .arg(&case.path)
            .run(b"");
        run.assert_code(1);
        let report = String::from_utf8_lossy(&run.stdout).into_owned();
        assert!(
            report.contains(&format!("problems: {lines}\n")),
            "{name}: not every line was refused:\n{report}"
        );
        let stderr = run.stderr_text();
        for n in 1..=lines {
            let prefix = format!("{name}: line {n}: ");
            let said = stderr
                .lines()
                .find_map(|l| l.split_once(&prefix).map(|(_, why)| why))
                .unwrap_or_else(|| panic!("{name}: line {n} is not named on stderr:\n{stderr}"));
            assert!(
                said.contains("field \"") || said.contains("unknown member"),
                "{name}: line {n}: the problem names no member: {said}"
            );
            // The kind and the chain are genuine in these journals: a
            // verifier that refuses the line for them does not know the
            // record it refuses.
            for genuine in ["field \"kind\"", "\"seq\"", "\"prev\"", "\"mac\""] {
                assert!(
                    !said.contains(genuine),
                    "{name}: line {n}: refused for its {genuine}, which is genuine: {said}"
                );
            }
        }
    }
}
