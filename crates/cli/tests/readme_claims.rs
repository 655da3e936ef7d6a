//! The documentation checked against the built binary (see `common`): every
//! block of `README.md` and `docs/*.md` marked ```` ```sh runnable ```` runs
//! as written from a copy of a clone's root and exits 0; every `portcullis`
//! command shown in a shell block uses only flags its `--help` lists; every
//! JSON block parses; every relative link resolves; and claims of
//! `docs/mcp.md` that no other test guards.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::docs::{self, Block};
use common::{Fixture, Launch, binary, call, drain, http_policy, session};
use portcullis_testkit::fakes::FakeHttp;
use serde_json::json;

fn mcp(fx: &Fixture) -> Launch {
    Launch::new(fx.cwd.path(), &["mcp", "--policy"]).arg(&fx.policy)
}

/// "JSON Lines, appended (the file is created 0600)".
#[test]
fn the_audit_journal_is_created_owner_only() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    let audit = fx.file("audit.jsonl");
    let input = session(&[&call(2, "service_status", json!({"service": "api"}))]);
    mcp(&fx)
        .env("TEST_TOKEN", "tok-t")
        .arg("--audit")
        .arg(&audit)
        .run(&input)
        .assert_code(0);
    let mode = std::fs::metadata(&audit)
        .expect("journal")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
}

/// `--workers` is 1 to 64 and `--grace-ms` at most 3600000: the bounds are
/// accepted, one past them is a usage error (exit 2, nothing on stdout).
#[test]
fn workers_and_grace_are_bounded_as_documented() {
    let server = FakeHttp::start();
    let fx = Fixture::new(&http_policy(server.port()));
    for (flag, ok, bad) in [
        ("--workers", "1", "0"),
        ("--workers", "64", "65"),
        ("--grace-ms", "3600000", "3600001"),
    ] {
        let run = mcp(&fx).args(&[flag, ok]).run(b"");
        run.assert_code(0);
        let run = mcp(&fx).args(&[flag, bad]).run(b"");
        run.assert_code(2);
        assert!(run.stdout.is_empty(), "{flag} {bad}\n{}", run.context());
    }
}

/// "a credential the environment cannot supply is a warning at startup (by
/// name), and tools that need it are denied".
#[test]
fn a_missing_credential_is_a_startup_warning_and_its_tools_are_denied() {
    let server = FakeHttp::start();
    // keep-open, so the session goes on past the denial.
    let fx = Fixture::new(&http_policy(server.port()).replacen(
        "on_invalid = \"close\"",
        "on_invalid = \"keep-open\"",
        1,
    ));
    let input = session(&[
        &call(2, "service_status", json!({"service": "api"})),
        &call(3, "region_probe", json!({"host": "127.0.0.1"})),
    ]);
    let run = mcp(&fx).run(&input);
    run.assert_code(0);
    let stderr = run.stderr_text();
    assert!(
        stderr.contains("WARN") && stderr.contains("status_token"),
        "{}",
        run.context()
    );
    let (text, is_error) = run.tool_result(2);
    assert!(is_error && text.starts_with("denied"), "{text}");
    // A tool without a credential still runs.
    let (_, is_error) = run.tool_result(3);
    assert!(!is_error, "{}", run.context());
    assert_eq!(server.connections(), 1, "{}", run.context());
}

/// "a bounded queue (16 per worker; a call arriving when it is full is
/// answered `busy: …` as a tool error)".
#[test]
fn a_call_arriving_at_a_full_queue_is_answered_busy() {
    let server = FakeHttp::with(Duration::from_millis(100), None);
    let fx = Fixture::new(&http_policy(server.port()));
    // One worker: one call running, sixteen queued, the rest refused.
    let calls: Vec<Vec<u8>> = (0..20)
        .map(|i| call(2 + i, "slow_status", json!({"service": "a"})))
        .collect();
    let parts: Vec<&[u8]> = calls.iter().map(Vec::as_slice).collect();
    let run = mcp(&fx)
        .env("TEST_TOKEN", "tok-t")
        .args(&["--workers", "1"])
        .run(&session(&parts));
    run.assert_code(0);
    let busy: Vec<i64> = (2..22)
        .filter(|&id| {
            let (text, is_error) = run.tool_result(id);
            text.starts_with("busy: ") && is_error
        })
        .collect();
    // At most 20 - 16 slots - 0 running; at least one unless the worker
    // drained calls while the core was still reading the twenty.
    assert!(
        (1..=4).contains(&busy.len()),
        "busy answers {busy:?}\n{}",
        run.context()
    );
    assert_eq!(server.connections(), 20 - busy.len(), "{}", run.context());
}

/// The front door stays a front door.
#[test]
fn the_readme_is_at_most_250_lines() {
    let (_, text) = &docs::pages()[0];
    let lines = text.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; move reference material into docs/"
    );
}

/// How long one runnable block may take (the hostile matrix of `check`
/// takes several seconds a run).
const BLOCK_LIMIT: Duration = Duration::from_secs(120);

/// A scratch copy of what a user has after `git clone`: `examples/` (a
/// symlink), the binary under test first on `PATH` as `portcullis`, and
/// nothing of the test's own environment but `PATH` and `HOME`.
fn run_block(block: &Block) -> (Option<i32>, String, String) {
    let scratch = tempfile::tempdir().expect("scratch directory");
    std::os::unix::fs::symlink(
        docs::root().join("examples"),
        scratch.path().join("examples"),
    )
    .expect("link examples/");
    let bin_dir = binary().parent().expect("the binary's directory");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = format!("set -euo pipefail\n{}", block.body);
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(scratch.path())
        .env_clear()
        .envs(common::profile_env())
        .env("PATH", path)
        .env("HOME", scratch.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A group of its own, so a timeout kills the servers the block started too.
        .process_group(0)
        .spawn()
        .expect("spawn bash");
    let out = drain(child.stdout.take().expect("stdout"));
    let err = drain(child.stderr.take().expect("stderr"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break Some(status);
        }
        if started.elapsed() > BLOCK_LIMIT {
            let group = rustix::process::Pid::from_child(&child);
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    let out = text(out.join().expect("stdout reader"));
    let err = text(err.join().expect("stderr reader"));
    (status.and_then(|s| s.code()), out, err)
}

/// The last `n` lines of a text, for a failure message.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[test]
fn runnable_blocks_of_the_documentation_run_as_written() {
    let blocks: Vec<Block> = docs::all_blocks()
        .into_iter()
        .filter(Block::is_runnable)
        .collect();
    // The three quick starts at least: a page that loses its marks fails here.
    let in_readme = blocks.iter().filter(|b| b.page == "README.md").count();
    assert!(
        in_readme >= 3,
        "README.md has {in_readme} runnable blocks, expected the three quick starts"
    );
    let mut failures = Vec::new();
    for block in &blocks {
        let (code, out, err) = run_block(block);
        if code != Some(0) {
            failures.push(format!(
                "{} exited {code:?}\n--- block ---\n{}--- stdout (tail) ---\n{}\n--- stderr (tail) ---\n{}",
                block.place(),
                block.body,
                tail(&out, 15),
                tail(&err, 25),
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} runnable blocks failed:\n\n{}",
        failures.len(),
        blocks.len(),
        failures.join("\n\n")
    );
}

/// `portcullis <command> --help`, once per command.
fn help(command: &[String], cache: &mut BTreeMap<Vec<String>, String>) -> String {
    cache
        .entry(command.to_vec())
        .or_insert_with(|| {
            let run = Command::new(binary())
                .args(command)
                .arg("--help")
                .output()
                .expect("run --help");
            assert!(
                run.status.success(),
                "portcullis {} --help exited {:?}: {}",
                command.join(" "),
                run.status.code(),
                String::from_utf8_lossy(&run.stderr)
            );
            String::from_utf8_lossy(&run.stdout).into_owned()
        })
        .clone()
}

#[test]
fn every_portcullis_command_in_the_documentation_uses_flags_it_has() {
    let mut cache = BTreeMap::new();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for block in docs::all_blocks() {
        if !matches!(block.language(), "sh" | "yaml") {
            continue;
        }
        for line in docs::shell_lines(&block.body) {
            for (command, flags) in docs::invocations(&line) {
                let text = help(&command, &mut cache);
                for flag in flags {
                    checked += 1;
                    let listed = text.contains(&format!("{flag} "))
                        || text.contains(&format!("{flag}\n"))
                        || text.contains(&format!("{flag},"));
                    if !listed {
                        wrong.push(format!(
                            "{}: `portcullis {} {flag}` is not in its --help",
                            block.place(),
                            command.join(" ")
                        ));
                    }
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} flags found in the documentation: is the parser still reading it?"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_json_block_of_the_documentation_parses() {
    let mut seen = 0;
    for block in docs::all_blocks().iter().filter(|b| b.language() == "json") {
        seen += 1;
        if let Err(e) = serde_json::from_str::<serde_json::Value>(&block.body) {
            panic!(
                "{}: the json block does not parse ({e}):\n{}",
                block.place(),
                block.body
            );
        }
    }
    assert!(
        seen >= 4,
        "only {seen} json blocks: the client snippets are gone?"
    );
}

#[test]
fn every_relative_link_of_the_documentation_resolves() {
    let root = docs::root();
    let mut broken = Vec::new();
    for (page, text) in docs::pages() {
        let dir = root
            .join(&page)
            .parent()
            .expect("page directory")
            .to_path_buf();
        for (line, target) in docs::relative_links(&text) {
            let path = target.split('#').next().unwrap_or(&target);
            if !dir.join(path).exists() {
                broken.push(format!("{page}:{line}: {target}"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}

/// The parser the checks above rely on reads what it should.
#[test]
fn the_documentation_parser_reads_fences_and_commands() {
    let page = "text\n```sh runnable\nportcullis wrap --pins a.json \\\n  --audit j -- portcullis mcp --policy p\n```\n````md\n```\ninner\n```\n````\n";
    let found = docs::blocks("p.md", page);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].is_runnable() && found[0].line == 2);
    assert_eq!(found[1].body, "```\ninner\n```\n");
    let lines = docs::shell_lines(&found[0].body);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let calls = docs::invocations(&lines[0]);
    assert_eq!(
        calls,
        vec![
            (
                vec!["wrap".to_owned()],
                vec!["--pins".to_owned(), "--audit".to_owned()]
            ),
            (vec!["mcp".to_owned()], vec!["--policy".to_owned()]),
        ]
    );
    assert_eq!(
        docs::invocations("portcullis policy check x.toml # --not-a-flag"),
        vec![(vec!["policy".to_owned(), "check".to_owned()], vec![])]
    );
    assert_eq!(
        docs::relative_links("see [a](docs/a.md#x) and [b](https://b)"),
        vec![(1, "docs/a.md#x".to_owned())]
    );
}
