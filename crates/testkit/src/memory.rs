//! `session_memory`: a long session, streamed through the gateway from a
//! small recipe, must leave the gateway holding no more than a fixed amount
//! per request — never the ids or arguments it was sent.
//!
//! A recipe is text, one directive per line (`#` starts a comment):
//!
//! ```text
//! mode keep-open          # or close (default keep-open)
//! repeat 200              # rounds of the `frame` lines
//! warmup 40               # rounds before the first measurement
//! pad 1048576             # length of {pad}
//! once <frame>            # sent once, before the rounds
//! frame <frame>           # sent every round (requests: each is answered)
//! ```
//!
//! In a frame, `{n}` is the round number and `{pad}` (or `{pad:N}`) a run of
//! `p` bytes. Each frame is fed in 64 KiB reads, as the binary reads stdin;
//! actions complete at once with a short outcome; writes are counted, not
//! kept. After `warmup` rounds and at the end the harness measures the
//! gateway's retained state two ways, and fails when either grows with the
//! traffic:
//!
//! - structurally: the length of the gateway's `Debug` rendering (it shows
//!   every id, ledger record and buffer the gateway keeps; the policy is
//!   constant) may grow by at most [`MAX_DEBUG_BYTES_PER_ROUND`] a round;
//! - resident memory (Linux): `VmRSS` may grow by at most
//!   [`MAX_RSS_GROWTH_KIB`] over the measured rounds, a small fraction of
//!   what the rounds carry (large freed buffers go back to the system, so a
//!   gateway that keeps nothing does not grow).
//!
//! The gateway is driven as a test harness drives it, without draining its
//! ledger: what is checked is that each record is small and fixed-size.

use std::path::Path;
use std::sync::Arc;

use portcullis_gateway::{
    BoundPolicy, Config, Effect, Gateway, OnInvalid, Outcome, Policy, SecretStore,
};

/// Structural growth allowed per round (a digest per accepted id, a ledger
/// record per refused or executed frame, rendered).
pub const MAX_DEBUG_BYTES_PER_ROUND: usize = 1024;
/// Resident growth allowed between the two measurements.
pub const MAX_RSS_GROWTH_KIB: u64 = 8 * 1024;

const READ_BYTES: usize = 64 * 1024;

/// The harness's policy: frames up to 2 MiB, one HTTP tool whose single
/// string argument is unconstrained (so a large argument is executed and its
/// target is as large as the frame).
const POLICY: &str = r#"
[server]
name = "session-memory"
max_frame_bytes = 2097152

[[tools]]
name = "echo"
description = "Echo a text through the path"
[tools.http]
method = "GET"
url = "http://127.0.0.1:8080/echo/{text}"
allow = ["127.0.0.1:8080"]
[tools.input_schema]
type = "object"
required = ["text"]
properties.text = { type = "string" }
"#;

#[derive(Debug)]
struct Recipe {
    mode: OnInvalid,
    repeat: u64,
    warmup: u64,
    pad: usize,
    once: Vec<String>,
    frames: Vec<String>,
}

impl Recipe {
    fn parse(bytes: &[u8]) -> Self {
        let text = std::str::from_utf8(bytes).expect("a session_memory recipe is UTF-8 text");
        let mut recipe = Recipe {
            mode: OnInvalid::KeepOpen,
            repeat: 0,
            warmup: 0,
            pad: 0,
            once: Vec::new(),
            frames: Vec::new(),
        };
        for line in text.lines() {
            let line = line.trim_start();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (directive, rest) = line.split_once(' ').unwrap_or((line, ""));
            let number = || -> u64 {
                rest.split('#')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("recipe: {directive} needs a number: {line:?}"))
            };
            match directive {
                "mode" => {
                    recipe.mode = match rest.trim() {
                        "keep-open" => OnInvalid::KeepOpen,
                        "close" => OnInvalid::Close,
                        other => panic!("recipe: unknown mode {other:?}"),
                    }
                }
                "repeat" => recipe.repeat = number(),
                "warmup" => recipe.warmup = number(),
                "pad" => recipe.pad = usize::try_from(number()).expect("pad fits"),
                "once" => recipe.once.push(rest.to_owned()),
                "frame" => recipe.frames.push(rest.to_owned()),
                other => panic!("recipe: unknown directive {other:?}"),
            }
        }
        assert!(
            !recipe.frames.is_empty() && recipe.warmup >= 1 && recipe.repeat > recipe.warmup,
            "recipe: needs frames and 1 <= warmup < repeat"
        );
        recipe
    }

    /// `template` with `{n}` and `{pad}`/`{pad:N}` expanded, plus `\n`.
    fn expand(&self, template: &str, n: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(template.len() + self.pad + 1);
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.extend_from_slice(&rest.as_bytes()[..open]);
            let after = &rest[open..];
            let close = after.find('}').map(|c| c + 1);
            match close.map(|c| &after[..c]) {
                Some("{n}") => out.extend_from_slice(n.to_string().as_bytes()),
                Some("{pad}") => out.resize(out.len() + self.pad, b'p'),
                Some(tag) if tag.starts_with("{pad:") => {
                    let len: usize = tag[5..tag.len() - 1]
                        .parse()
                        .unwrap_or_else(|_| panic!("recipe: bad {tag}"));
                    out.resize(out.len() + len, b'p');
                }
                _ => {
                    out.push(b'{');
                    rest = &after[1..];
                    continue;
                }
            }
            rest = &after[close.expect("matched a tag")..];
        }
        out.extend_from_slice(rest.as_bytes());
        out.push(b'\n');
        out
    }
}

fn policy(mode: OnInvalid) -> Arc<BoundPolicy> {
    let mut policy = Policy::from_toml(POLICY, Path::new("testkit/session_memory.toml"))
        .expect("the session_memory policy is valid");
    policy.server.on_invalid = mode;
    let secrets = SecretStore::stand_ins(&policy);
    Arc::new(policy.bind_secrets(secrets))
}

/// Resident set of this process (Linux), in KiB.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[derive(Debug, Default)]
struct Tally {
    frames_sent: u64,
    bytes_sent: u64,
    writes: u64,
    executed: u64,
    closed: bool,
}

fn feed(gateway: &mut Gateway, frame: &[u8], tally: &mut Tally) {
    tally.frames_sent += 1;
    tally.bytes_sent += frame.len() as u64;
    for read in frame.chunks(READ_BYTES) {
        let mut effects = gateway.receive(read);
        while !effects.is_empty() {
            let mut next = Vec::new();
            for effect in effects {
                match effect {
                    Effect::Write(_) => tally.writes += 1,
                    Effect::Execute { ticket, .. } => {
                        tally.executed += 1;
                        next.extend(gateway.complete(ticket, Outcome::success("ok")));
                    }
                    Effect::Rejected(_) | Effect::Cancel(_) => {}
                    Effect::Close(_) => tally.closed = true,
                }
            }
            effects = next;
        }
    }
}

/// The `session_memory` harness (replay only; see the module docs).
pub fn session_memory(recipe: &[u8]) {
    let recipe = Recipe::parse(recipe);
    let policy = policy(recipe.mode);
    let mut gateway = Gateway::new(
        Arc::clone(policy.policy()),
        Arc::clone(policy.secrets()),
        Config::from_policy(&policy),
    );
    let mut tally = Tally::default();
    for template in &recipe.once {
        feed(&mut gateway, &recipe.expand(template, 0), &mut tally);
    }
    let mut first = None;
    for n in 0..recipe.repeat {
        if n == recipe.warmup {
            first = Some((format!("{gateway:?}").len(), rss_kib(), tally.bytes_sent));
        }
        for template in &recipe.frames {
            feed(&mut gateway, &recipe.expand(template, n), &mut tally);
        }
    }
    assert!(
        !tally.closed,
        "the session closed: the recipe must keep it open to measure a long session"
    );
    let (debug_before, rss_before, bytes_before) = first.expect("warmup < repeat");
    let rss_after = rss_kib();
    let rounds = recipe.repeat - recipe.warmup;
    let carried = (tally.bytes_sent - bytes_before) / 1024;
    let debug_after = format!("{gateway:?}").len();
    let per_round = debug_after.saturating_sub(debug_before) / usize::try_from(rounds).unwrap_or(1);
    eprintln!(
        "session_memory: {rounds} rounds carrying {carried} KiB: resident {} KiB, retained state +{per_round} bytes a round (rendered)",
        match (rss_before, rss_after) {
            (Some(b), Some(a)) => format!("{:+}", i128::from(a) - i128::from(b)),
            _ => "unknown".into(),
        }
    );
    if let (Some(before), Some(after)) = (rss_before, rss_after) {
        let growth = after.saturating_sub(before);
        assert!(
            growth <= MAX_RSS_GROWTH_KIB,
            "the gateway's resident memory grew by {growth} KiB over {rounds} rounds carrying {carried} KiB: it keeps what it is sent"
        );
    }
    assert!(
        per_round <= MAX_DEBUG_BYTES_PER_ROUND,
        "the gateway's retained state grew by {per_round} bytes a round (rendered) over {rounds} rounds carrying {carried} KiB"
    );
    assert!(
        tally.writes >= tally.frames_sent - recipe.once.len() as u64,
        "every request is answered ({} writes for {} frames)",
        tally.writes,
        tally.frames_sent
    );
}
