//! End-to-end tests of `portcullis inspect`, run against the built binary.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_portcullis");

/// The five hard cases, one per line; the last is truncated at end of input.
const HARD_CASES: &str = concat!(
    "debug: entering tool handler\n",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} server ready\n",
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n",
    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":\"run\"}\n",
    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/ca",
);

fn inspect(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .arg("inspect")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn portcullis");
    let mut input = child.stdin.take().expect("stdin");
    // The binary may exit before reading everything (usage errors); a broken
    // pipe here is expected then.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().expect("wait for portcullis")
}

fn inspect_file(args: &[&str], contents: &[u8]) -> Output {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(contents).expect("write temp file");
    let path = file.path().to_str().expect("utf-8 temp path").to_owned();
    let mut all = args.to_vec();
    all.push(&path);
    inspect(&all, b"")
}

fn stdout(output: &Output) -> &str {
    std::str::from_utf8(&output.stdout).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> &str {
    std::str::from_utf8(&output.stderr).expect("stderr is UTF-8")
}

/// Every stdout line parsed as one JSON object with the contract's keys.
fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("not one JSON object: {line:?}: {err}"));
            let object = value.as_object().expect("a JSON object");
            for key in ["line", "ok", "stage", "code", "reason"] {
                assert!(object.contains_key(key), "{key} missing from {line}");
            }
            value
        })
        .collect()
}

fn example(name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name]
        .iter()
        .collect();
    path.to_str().expect("utf-8 path").to_owned()
}

#[test]
fn hard_cases_are_each_rejected_at_their_stage() {
    let output = inspect_file(&["--direction", "client", "--json"], HARD_CASES.as_bytes());
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 5, "{}", stdout(&output));

    let expected = [
        ("json", -32700, "expected value at line 1 column 1"),
        ("json", -32700, "trailing characters at line 1 column 42"),
        ("json", -32700, "trailing characters at line 1 column 41"),
        ("rpc", -32600, "\"params\" must be an object, not a string"),
        (
            "framing",
            -32700,
            "truncated frame: 42 bytes after the last newline at end of input",
        ),
    ];
    for (n, (line, (stage, code, reason))) in lines.iter().zip(expected).enumerate() {
        assert_eq!(line["line"], n + 1);
        assert_eq!(line["ok"], false);
        assert_eq!(line["stage"], stage, "line {}", n + 1);
        assert_eq!(line["code"], code, "line {}", n + 1);
        assert_eq!(line["reason"], reason, "line {}", n + 1);
        let fingerprint = line["fingerprint"].as_str().expect("fingerprint");
        assert_eq!(fingerprint.len(), 64);
        assert!(fingerprint.bytes().all(|b| b.is_ascii_hexdigit()));
    }
    // The id is echoed once the rpc stage could read it.
    assert_eq!(lines[3]["id"], 4);
    assert!(lines[0].get("id").is_none());
}

#[test]
fn hard_cases_example_file_matches() {
    let output = inspect(
        &[
            "--direction",
            "client",
            "--json",
            &example("hard-cases.jsonl"),
        ],
        b"",
    );
    assert_eq!(output.status.code(), Some(1));
    let stages: Vec<_> = json_lines(&output)
        .iter()
        .map(|line| line["stage"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(stages, ["json", "json", "json", "rpc", "framing"]);
}

#[test]
fn human_report_names_stage_and_reason_but_never_frame_contents() {
    let output = inspect_file(&[], HARD_CASES.as_bytes());
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert!(lines[0].starts_with("line 1: rejected [json -32700] expected value at line 1"));
    assert!(
        lines[2]
            .starts_with("line 3: rejected [json -32700] trailing characters at line 1 column 41")
    );
    assert!(lines[3].starts_with(
        "line 4: rejected [rpc -32600] \"params\" must be an object, not a string (id=4, fingerprint "
    ));
    assert!(lines[4].starts_with("line 5: rejected [framing -32700] truncated frame"));
    assert_eq!(lines[5], "5 lines: 0 accepted, 5 rejected");
    for secret in ["debug", "entering", "server ready", "tools/ca"] {
        assert!(!text.contains(secret), "{secret:?} echoed: {text}");
    }
}

#[test]
fn valid_lines_are_accepted() {
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n",
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}\n",
    );
    let output = inspect_file(&["--json"], input.as_bytes());
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 3);
    for line in &lines {
        assert_eq!(line["ok"], true);
        assert!(line["stage"].is_null() && line["code"].is_null() && line["reason"].is_null());
    }
    assert_eq!(lines[0]["kind"], "request");
    assert_eq!(lines[0]["id"], 2);
    assert_eq!(lines[1]["kind"], "notification");
    assert!(lines[1].get("id").is_none());
    assert_eq!(lines[2]["id"], "a");

    let output = inspect_file(&[], input.as_bytes());
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output),
        concat!(
            "line 1: ok request \"tools/call\" id=2\n",
            "line 2: ok notification \"notifications/initialized\"\n",
            "line 3: ok request \"ping\" id=\"a\"\n",
            "3 lines: 3 accepted, 0 rejected\n",
        )
    );
}

/// The stage and reason agree with the gateway, which refuses a client's
/// response at its MCP stage.
#[test]
fn a_response_from_the_client_is_refused() {
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":8,\"error\":{\"code\":-1,\"message\":\"no\"}}\n",
    );
    let output = inspect_file(&["--json"], input.as_bytes());
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 2);
    for (line, id) in lines.iter().zip([7, 8]) {
        assert_eq!(line["stage"], "mcp");
        assert_eq!(line["code"], -32600);
        assert_eq!(line["id"], id);
        let reason = line["reason"].as_str().expect("reason");
        assert_eq!(
            reason,
            "a response from the client is invalid: the gateway sends no requests"
        );
    }
}

/// A request method without an id is never executed by the gateway; inspect
/// says so at the same stage, while a real notification stays accepted.
#[test]
fn a_request_sent_as_a_notification_is_refused_at_the_mcp_stage() {
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}\n",
    );
    let output = inspect_file(&["--json"], input.as_bytes());
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 3);
    for (line, method) in lines.iter().zip(["tools/call", "ping"]) {
        assert_eq!(line["ok"], false);
        assert_eq!(line["stage"], "mcp");
        assert_eq!(line["code"], -32600);
        assert!(line.get("id").is_none());
        assert_eq!(
            line["reason"],
            format!(
                "{method} sent as a notification (no id): requests need an id and are never executed without one"
            )
        );
    }
    assert_eq!(lines[2]["ok"], true);
    assert_eq!(lines[2]["kind"], "notification");
}

#[test]
fn framing_stage_rejects_empty_and_over_long_lines() {
    let input = format!(
        "\n{}\n{{\"jsonrpc\":\"2.0\",\"method\":\"x\"}}\n",
        "x".repeat(100)
    );
    let output = inspect_file(&["--json", "--max-frame-bytes", "64"], input.as_bytes());
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["stage"], "framing");
    assert_eq!(lines[0]["reason"], "empty line");
    assert_eq!(lines[1]["line"], 2);
    assert_eq!(lines[1]["stage"], "framing");
    assert_eq!(lines[1]["reason"], "frame exceeds max_frame_bytes (64)");
    assert_eq!(lines[2]["line"], 3);
    assert_eq!(lines[2]["ok"], true);
}

#[test]
fn json_stage_refuses_a_line_past_the_value_limit() {
    let zeros = |n: usize| format!("[{}]", vec!["0"; n].join(","));
    let input = format!("{}\n{}\n", zeros(99), zeros(100));
    let output = inspect_file(&["--json", "--max-frame-values", "100"], input.as_bytes());
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    assert_eq!(
        lines[0]["stage"], "rpc",
        "99 zeros and their array are read"
    );
    assert_eq!(lines[1]["stage"], "json");
    assert_eq!(lines[1]["code"], -32700);
    assert!(
        lines[1]["reason"]
            .as_str()
            .unwrap()
            .starts_with("frame exceeds max_frame_values (100)"),
        "{}",
        lines[1]
    );
    // The default is the policy's.
    let output = inspect_file(&["--json"], format!("{}\n", zeros(16_384)).as_bytes());
    assert_eq!(json_lines(&output)[0]["stage"], "json");
}

#[test]
fn invalid_utf8_is_rejected_at_the_utf8_stage() {
    let output = inspect_file(&["--json"], b"{\"a\":\"\xff\"}\n");
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    assert_eq!(lines[0]["stage"], "utf8");
    assert_eq!(lines[0]["reason"], "invalid UTF-8 at byte 6");
}

#[test]
fn server_banner_is_shown_with_its_raw_bytes() {
    let output = inspect(
        &["--direction", "server", &example("transcript-banner.txt")],
        b"",
    );
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    let first = text.lines().next().expect("a report line");
    assert!(
        first.starts_with(
            "non-protocol stdout on line 1: b\"loading optional extension\\n\": not JSON ("
        ),
        "{text}"
    );
    assert!(text.contains("line 2: ok\n"), "{text}");
    assert!(
        text.ends_with("2 lines: 1 accepted, 1 rejected\n"),
        "{text}"
    );

    let output = inspect(
        &[
            "--direction",
            "server",
            "--json",
            &example("transcript-banner.txt"),
        ],
        b"",
    );
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["line"], 1);
    assert_eq!(lines[0]["stage"], "transcript");
    assert_eq!(lines[0]["code"], -32700);
    assert_eq!(lines[0]["raw"], "b\"loading optional extension\\n\"");
    assert_eq!(lines[1]["ok"], true);
}

#[test]
fn clean_transcript_passes() {
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32601,\"message\":\"no\"}}\n",
    );
    let output = inspect(&["--direction", "server"], input.as_bytes());
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).ends_with("3 lines: 3 accepted, 0 rejected\n"));
}

#[test]
fn transcript_violations_have_their_codes() {
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
        "\n",
        "[1]\n",
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}",
    );
    let output = inspect(&["--direction", "server", "--json", "-"], input.as_bytes());
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    let summary: Vec<_> = lines
        .iter()
        .map(|l| (l["ok"].clone(), l["code"].clone(), l["reason"].clone()))
        .collect();
    assert_eq!(
        summary,
        [
            (Value::Bool(true), Value::Null, Value::Null),
            (false.into(), (-32700).into(), "empty line".into()),
            (false.into(), (-32600).into(), "not a JSON object".into()),
            (false.into(), (-32600).into(), "\"id\": null".into()),
            (
                false.into(),
                (-32700).into(),
                "missing final newline".into()
            ),
        ]
    );
    assert_eq!(
        lines[4]["raw"],
        "b\"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":3,\\\"result\\\":{}}\""
    );
}

#[test]
fn over_long_server_line_shows_its_first_bytes_only() {
    let input = format!(
        "{}\n{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}\n",
        "z".repeat(5000)
    );
    let output = inspect(
        &["--direction", "server", "--max-frame-bytes", "1000"],
        input.as_bytes(),
    );
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    let expected = format!(
        "non-protocol stdout on line 1: b\"{}\"... (5001 bytes in all): line exceeds max_frame_bytes (1000)\nline 2: ok\n",
        "z".repeat(512)
    );
    assert!(text.starts_with(&expected), "{text}");
}

#[test]
fn usage_errors_exit_2_with_nothing_on_stdout() {
    let output = inspect(&["--direction", "sideways", "-"], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(stderr(&output).contains("sideways"), "{}", stderr(&output));

    let output = inspect(&["--max-frame-bytes", "0"], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());

    let output = inspect(&["--max-frame-values", "0"], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
}

#[test]
fn missing_file_exits_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("absent.jsonl");
    let output = inspect(&[path.to_str().expect("utf-8 path")], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(
        stderr(&output).contains("absent.jsonl"),
        "{}",
        stderr(&output)
    );

    // A directory opens but cannot be read.
    let output = inspect(&[dir.path().to_str().expect("utf-8 path")], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(!stderr(&output).is_empty());
}

#[test]
fn empty_input_is_zero_lines() {
    let output = inspect_file(&[], b"");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "0 lines: 0 accepted, 0 rejected\n");

    for direction in ["client", "server"] {
        let output = inspect(&["--direction", direction, "--json"], b"");
        assert_eq!(output.status.code(), Some(0));
        assert!(output.stdout.is_empty());
    }
}

#[test]
fn large_input_streams() {
    const LINES: usize = 50_000;
    let mut input = Vec::new();
    for n in 1..=LINES {
        if n == 31_337 {
            input.extend_from_slice(b"oops\n");
        } else {
            writeln!(
                input,
                "{{\"jsonrpc\":\"2.0\",\"id\":{n},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"{}\"}}}}}}",
                "a".repeat(n % 97)
            )
            .expect("write to Vec");
        }
    }
    let output = inspect_file(&["--json"], &input);
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), LINES);
    let rejected: Vec<_> = lines.iter().filter(|l| l["ok"] == false).collect();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["line"], 31_337);
    assert_eq!(lines[LINES - 1]["id"], LINES);

    let output = inspect_file(&["--direction", "client"], &input);
    assert!(stdout(&output).ends_with("50000 lines: 49999 accepted, 1 rejected\n"));
}

#[test]
fn closed_stdout_ends_the_run_quietly() {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    for n in 0..50_000 {
        writeln!(
            file,
            "{{\"jsonrpc\":\"2.0\",\"id\":{n},\"method\":\"ping\"}}"
        )
        .expect("write");
    }
    let mut child = Command::new(BIN)
        .args(["inspect", "--json"])
        .arg(file.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn portcullis");
    // The report is far larger than a pipe buffer, so the binary blocks on
    // writing until the read end is closed here.
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stderr(&output), "");
}
