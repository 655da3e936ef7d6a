//! `--matrix`: the conditions under which real servers leak onto stdout or
//! fall over, each one a fresh launch of the same script.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use portcullis_wire::transcript::render_bytes;

use super::judge::Mode;
use super::launch::Launch;
use super::script::{Era, Step, handshake, ping};

/// The hard cases: lines a hostile or broken client really sends.
const HARD_CASES: &str = include_str!("../../../../examples/hard-cases.jsonl");

/// Variables that turn on the chatty paths of common runtimes and
/// frameworks.
const VERBOSE_ENV: [(&str, &str); 10] = [
    ("RUST_LOG", "trace"),
    ("RUST_BACKTRACE", "full"),
    ("DEBUG", "*"),
    ("NODE_DEBUG", "*"),
    ("PYTHONWARNINGS", "always"),
    ("PYTHONDEVMODE", "1"),
    ("LOG_LEVEL", "debug"),
    ("LOGLEVEL", "DEBUG"),
    ("VERBOSE", "1"),
    ("NPM_CONFIG_LOGLEVEL", "verbose"),
];

/// One condition: how to launch and what to send.
#[derive(Debug, Clone)]
pub struct Condition {
    /// Short machine name (used for transcript file names and JUnit).
    pub name: String,
    /// What the condition is, for the report.
    pub description: String,
    pub launch: Launch,
    pub steps: Vec<Step>,
    pub mode: Mode,
}

/// Every hostile inbound line the garbage probes send: the hard cases,
/// then a few that strict parsers and naive ones disagree on.
pub fn probes() -> Vec<Vec<u8>> {
    let mut probes: Vec<Vec<u8>> = HARD_CASES
        .split_inclusive('\n')
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.as_bytes().to_vec())
        .collect();
    // The hard cases keep their bytes exactly (the last one has no
    // newline on purpose); these extra probes are whole lines.
    let extra: [Vec<u8>; 7] = [
        br#"{"jsonrpc":"2.0","id":70,"method":"ping","id":71}"#.to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":72,\"method\":\"p\xffing\"}".to_vec(),
        br#"{"jsonrpc":"2.0","id":73,"method":"ping","params":{"s":"\ud800"}}"#.to_vec(),
        br#"[{"jsonrpc":"2.0","id":74,"method":"ping"}]"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":76,"method":"tools/call","params":{"name":"x","arguments":{}},"extra":1}"#.to_vec(),
        [b"[".repeat(5000), b"]".repeat(5000)].concat(),
    ];
    // Unterminated cases go last: nothing can follow them on stdin.
    probes.sort_by_key(|p| p.last() != Some(&b'\n'));
    let at = probes
        .iter()
        .take_while(|p| p.last() == Some(&b'\n'))
        .count();
    for (i, mut line) in extra.into_iter().enumerate() {
        line.push(b'\n');
        probes.insert(at + i, line);
    }
    probes
}

/// The conditions of `--matrix`, scratch directories made under `scratch`.
pub fn conditions(
    base: &Launch,
    script: &[Step],
    era: Era,
    idle: Duration,
    scratch: &Path,
) -> std::io::Result<Vec<Condition>> {
    let mut out = Vec::new();
    let mut verbose = base.clone();
    verbose.env.extend(
        VERBOSE_ENV
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v))),
    );
    out.push(Condition {
        name: "verbose-env".into(),
        description: format!(
            "verbose environment ({})",
            VERBOSE_ENV.map(|(k, v)| format!("{k}={v}")).join(" ")
        ),
        launch: verbose,
        steps: script.to_vec(),
        mode: Mode::Script,
    });

    let home = scratch.join("empty-home");
    let mut empty_home = base.clone();
    for (var, sub) in [
        ("HOME", ""),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_RUNTIME_DIR", "run"),
    ] {
        let dir = home.join(sub);
        std::fs::create_dir_all(&dir)?;
        empty_home.env.push((var.to_owned(), dir.into_os_string()));
    }
    out.push(Condition {
        name: "empty-home".into(),
        description: format!("empty HOME and XDG directories under {}", home.display()),
        launch: empty_home,
        steps: script.to_vec(),
        mode: Mode::Script,
    });

    let cwd = scratch.join("empty-cwd");
    std::fs::create_dir_all(&cwd)?;
    let mut bare_cwd = base.clone();
    bare_cwd.cwd = Some(cwd.clone());
    out.push(Condition {
        name: "empty-cwd".into(),
        description: format!("working directory with no config ({})", cwd.display()),
        launch: bare_cwd,
        steps: script.to_vec(),
        mode: Mode::Script,
    });

    let mut idle_steps = vec![Step::Delay(idle)];
    idle_steps.extend(script.iter().cloned());
    out.push(Condition {
        name: "idle-start".into(),
        description: format!("idle for {} ms before the first request", idle.as_millis()),
        launch: base.clone(),
        steps: idle_steps,
        mode: Mode::Script,
    });

    out.push(Condition {
        name: "stdin-closed".into(),
        description: "stdin closed at once".into(),
        launch: base.clone(),
        steps: Vec::new(),
        mode: Mode::Script,
    });

    for (n, probe) in probes().into_iter().enumerate() {
        let mut steps = handshake(era);
        let terminated = probe.last() == Some(&b'\n');
        steps.push(Step::Send(probe.clone()));
        if terminated {
            steps.push(Step::Send(ping(era)));
        }
        out.push(Condition {
            name: format!("garbage-{}", n + 1),
            description: format!(
                "garbage inbound after the handshake: {}{}",
                render_bytes(&probe[..probe.len().min(120)]),
                if terminated {
                    ", then a liveness ping"
                } else {
                    ", then stdin closed"
                }
            ),
            launch: base.clone(),
            steps,
            mode: Mode::Hostile,
        });
    }
    Ok(out)
}
