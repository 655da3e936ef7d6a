//! The command line's help is documentation: every subcommand's `--help`
//! ends with a worked example, the examples that need neither the network
//! nor a foreign program run as written from the root of a clone, and
//! `portcullis completions` prints a script for every shell it offers.
//!
//! The examples are read from the help the binary prints, never restated
//! here, so what is run is exactly what a reader is shown.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{LAUNCH_LIMIT, Launch, Run, binary, drain, wait_limited};

/// What a subcommand's example needs to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// Only the binary and the repository's `examples/`: run here.
    Nothing,
    /// A server program or the network: its flags are checked, not run.
    Foreign,
}

/// Every subcommand, as the help tree lists it. A subcommand added without
/// an entry here fails `the_subcommand_list_matches_the_help_tree`.
const SUBCOMMANDS: &[(&str, Needs)] = &[
    ("mcp", Needs::Nothing),
    ("policy", Needs::Nothing),
    ("policy check", Needs::Nothing),
    ("policy tools", Needs::Nothing),
    ("audit", Needs::Nothing),
    ("audit verify", Needs::Nothing),
    ("inspect", Needs::Nothing),
    ("replay", Needs::Nothing),
    ("check", Needs::Foreign),
    ("wrap", Needs::Foreign),
    ("completions", Needs::Nothing),
];

/// The shells `portcullis completions` is expected to offer.
const SHELLS: &[&str] = &["bash", "elvish", "fish", "powershell", "zsh"];

/// The workspace root: where a reader of the help stands.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

/// `portcullis <args>`, which must exit 0, and its stdout.
fn stdout_of(args: &[&str]) -> String {
    let run = Launch::new(&root(), args).run(b"");
    run.assert_code(0);
    String::from_utf8(run.stdout).expect("help is UTF-8")
}

/// `portcullis <path> --help`.
fn help(path: &str) -> String {
    let mut args: Vec<&str> = path.split_whitespace().collect();
    args.push("--help");
    stdout_of(&args)
}

/// The subcommand names of a help text's `Commands:` section (without
/// clap's own `help`).
fn commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every subcommand path below the top level, walking the help tree.
fn help_tree() -> Vec<String> {
    let mut found = Vec::new();
    let mut pending: Vec<String> = commands(&stdout_of(&["--help"]));
    while let Some(path) = pending.pop() {
        pending.extend(
            commands(&help(&path))
                .into_iter()
                .map(|name| format!("{path} {name}")),
        );
        found.push(path);
    }
    found.sort();
    found
}

/// The closing example section of a help text: its lines (indentation
/// removed), or why there is none.
fn example(help: &str) -> Result<Vec<String>, String> {
    let lines: Vec<&str> = help.lines().collect();
    let start = lines
        .iter()
        .rposition(|line| matches!(*line, "Example:" | "Examples:"))
        .ok_or("no `Example:` or `Examples:` section")?;
    let body = &lines[start + 1..];
    if let Some(line) = body
        .iter()
        .find(|line| !line.is_empty() && !line.starts_with("  "))
    {
        return Err(format!(
            "the example is not the last section ({line:?} follows it)"
        ));
    }
    let body: Vec<String> = body
        .iter()
        .filter(|line| !line.is_empty())
        .map(|line| line.trim().to_owned())
        .collect();
    if !body.iter().any(|line| line.starts_with("portcullis ")) {
        return Err("the example runs no `portcullis` command".to_owned());
    }
    Ok(body)
}

/// The shell command lines of an example (comment lines dropped).
fn command_lines(example: &[String]) -> Vec<&str> {
    example
        .iter()
        .map(String::as_str)
        .filter(|line| !line.starts_with('#'))
        .collect()
}

/// The exit status a line documents: `# exit N` as its trailing comment,
/// else 0 (success, by the top-level convention).
fn documented_status(line: &str) -> i32 {
    line.split_once(" # ")
        .and_then(|(_, comment)| comment.trim().strip_prefix("exit "))
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .map(|digits| digits.parse().expect("a status number after `# exit`"))
        .unwrap_or(0)
}

/// A directory that stands in for the root of a clone: `examples/` links to
/// the repository's, and whatever an example writes lands here, not in
/// the checkout.
fn clone_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(root().join("examples"), dir.path().join("examples"))
        .expect("link examples/");
    dir
}

/// Run one example line with `sh` in `dir`, `portcullis` first on `PATH`
/// and `HOME` and `TMPDIR` inside `dir`.
fn run_line(dir: &Path, line: &str) -> Run {
    let bin_dir = binary().parent().expect("the binary's directory");
    let mut path = std::ffi::OsString::from(bin_dir);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()));
    let describe = format!("cd {dir:?} && sh -c {line:?}");
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(line)
        .env_clear()
        .envs(common::profile_env())
        .env("PATH", path)
        .env("HOME", dir)
        .env("TMPDIR", dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot launch {describe}: {e}"));
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let started = std::time::Instant::now();
    let status = wait_limited(&mut child, LAUNCH_LIMIT, &describe);
    Run {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        launch: describe,
        elapsed: started.elapsed(),
    }
}

#[test]
fn the_subcommand_list_matches_the_help_tree() {
    let mut listed: Vec<String> = SUBCOMMANDS.iter().map(|(p, _)| (*p).to_owned()).collect();
    listed.sort();
    assert_eq!(
        help_tree(),
        listed,
        "the help tree (left) and SUBCOMMANDS (right) differ: give a new subcommand an \
         example and an entry in SUBCOMMANDS"
    );
}

#[test]
fn every_subcommand_help_ends_with_an_example() {
    let mut missing = Vec::new();
    for path in help_tree() {
        let text = help(&path);
        if let Err(why) = example(&text) {
            missing.push(format!("`portcullis {path} --help`: {why}"));
        }
        let mut args: Vec<&str> = vec!["help"];
        args.extend(path.split_whitespace());
        assert_eq!(
            stdout_of(&args),
            text,
            "`portcullis help {path}` and `portcullis {path} --help` differ"
        );
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn top_level_help_gives_the_exit_codes_and_the_docs() {
    let text = stdout_of(&["--help"]);
    let codes: Vec<&str> = text
        .lines()
        .skip_while(|line| *line != "Exit status:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .collect();
    for code in ["0", "1", "2"] {
        assert!(
            codes
                .iter()
                .any(|line| line.trim_start().starts_with(&format!("{code} "))),
            "exit status {code} is not explained under `Exit status:`:\n{text}"
        );
    }
    assert!(text.contains("docs/"), "no pointer to docs/:\n{text}");
    assert!(
        root().join("docs").is_dir(),
        "docs/ is not in the repository"
    );
    assert_eq!(
        stdout_of(&["help"]),
        text,
        "`portcullis help` differs from --help"
    );
}

#[test]
fn examples_name_only_files_in_the_repository() {
    let mut absent = Vec::new();
    for (path, _) in SUBCOMMANDS {
        let lines = example(&help(path)).unwrap_or_default();
        for word in lines.iter().flat_map(|line| line.split_whitespace()) {
            if word.starts_with("examples/") && !root().join(word).exists() {
                absent.push(format!("`portcullis {path} --help` names {word}"));
            }
        }
    }
    assert!(absent.is_empty(), "{}", absent.join("\n"));
}

#[test]
fn offline_examples_run_as_written_from_a_clone() {
    let mut failures = Vec::new();
    for (path, _) in SUBCOMMANDS.iter().filter(|(_, n)| *n == Needs::Nothing) {
        let lines = example(&help(path)).unwrap_or_else(|why| panic!("{path}: {why}"));
        // One directory per example: its lines build on each other (a
        // journal written by one is read by the next).
        let dir = clone_root();
        for line in command_lines(&lines) {
            let run = run_line(dir.path(), line);
            let expected = documented_status(line);
            if run.code() != Some(expected) {
                failures.push(format!(
                    "`portcullis {path} --help` example, expected exit {expected}:\n{}",
                    run.context()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn foreign_examples_use_flags_the_binary_accepts() {
    // The server is swapped for `true`, which ends at once: the command
    // then fails or passes on its merits, but never with a usage error.
    for (path, _) in SUBCOMMANDS.iter().filter(|(_, n)| *n == Needs::Foreign) {
        let lines = example(&help(path)).unwrap_or_else(|why| panic!("{path}: {why}"));
        let dir = clone_root();
        for line in command_lines(&lines) {
            let (head, rest) = line
                .split_once(" -- ")
                .unwrap_or_else(|| panic!("{path}: no ` -- COMMAND` in {line:?}"));
            let redirect = rest.find(" >").map_or("", |at| &rest[at..]);
            let line = format!("{head} -- true{redirect}");
            let run = run_line(dir.path(), &line);
            assert!(
                run.code() != Some(2) && !run.stderr_text().contains("try '--help'"),
                "`portcullis {path} --help` example does not parse:\n{}",
                run.context()
            );
        }
    }
}

#[test]
fn completions_cover_every_offered_shell() {
    let text = help("completions");
    let offered = text
        .lines()
        .find_map(|line| line.split_once("[possible values: "))
        .and_then(|(_, rest)| rest.trim_end().strip_suffix(']'))
        .unwrap_or_else(|| panic!("no possible values in:\n{text}"));
    assert_eq!(offered.split(", ").collect::<Vec<_>>(), SHELLS);
    for shell in SHELLS {
        let run = Launch::new(&root(), &["completions", shell]).run(b"");
        run.assert_code(0);
        let script = String::from_utf8(run.stdout.clone()).expect("a script is UTF-8");
        for name in ["wrap", "check", "policy"] {
            assert!(
                script.contains(name),
                "{shell} completions never name {name}\n{}",
                run.context()
            );
        }
        // A hidden flag is a test hook, not something to offer.
        assert!(
            !script.contains("stray-print-test"),
            "{shell} completions offer a hidden flag"
        );
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let run = Launch::new(&root(), &["completions", "tcsh"]).run(b"");
    run.assert_code(2);
    assert!(
        run.stdout.is_empty(),
        "stdout is not empty\n{}",
        run.context()
    );
    assert!(
        run.stderr_text().contains("tcsh"),
        "stderr does not name the value\n{}",
        run.context()
    );
}
