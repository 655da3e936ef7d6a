//! The whole inbound boundary against the parse it replaces.
//!
//! Three mixes, built once and shared by every contender: a legacy session
//! (`initialize` + 10,000 `tools/call` of about 300 bytes), large calls
//! (64 KiB string arguments) and a hostile mix (half the frames refused, at
//! every stage from framing to authorization, under `keep-open`). For each
//! mix five contenders read the same bytes:
//!
//! - `pipeline`: [`Gateway::receive`] in 64 KiB reads, as the binary's
//!   driver feeds it — framing, UTF-8, strict JSON, JSON-RPC, MCP routing,
//!   the schema check and authorization — each `Execute`'s action handed to
//!   a recorder;
//! - `wire`: the first stages alone, as the session runs them — framing,
//!   UTF-8, strict JSON and JSON-RPC — so the table shows, by time, what
//!   the MCP, schema and authorization stages add to the reading;
//! - `serde_value`: `serde_json::from_slice::<Value>` of each line (split
//!   beforehand, so the baseline does no framing);
//! - `ignored_any`: `serde_json::from_slice::<IgnoredAny>`, a validate-only
//!   pass;
//! - `memchr`: a newline scan.
//!
//! Criterion measures each contender; then the table is measured again with
//! the contenders interleaved round by round (median of 15 rounds), so that
//! load from other processes hits all of them alike, and the ratio to the
//! `Value` parse is the median of the per-round ratios. Lines starting with
//! `bench-row`, `latency` and `pipeline_vs_serde_value=` are what
//! `cargo xtask bench` reads.
//!
//! Latency: 100,000 `tools/call` frames, each fed alone; the time from
//! `receive` to the `Execute` effect it returns, p50 and p99.

#![expect(
    clippy::print_stdout,
    reason = "a bench binary: its report on stdout is what `cargo xtask bench` reads"
)]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use portcullis_gateway::{
    AuthorizedAction, Config, Effect, Gateway, OnInvalid, Policy, SecretStore, session::read_frame,
};
use portcullis_wire::{FrameEvent, FrameReader};
use serde::de::IgnoredAny;
use serde_json::Value;

const POLICY: &str = include_str!("../../../examples/policy-20-tools.toml");
const READ_BYTES: usize = 64 * 1024;
const ROUNDS: usize = 15;
const LATENCY_FRAMES: usize = 100_000;

struct Mix {
    name: &'static str,
    input: Vec<u8>,
    lines: Vec<std::ops::Range<usize>>,
    keep_open: bool,
    executes: usize,
}

impl Mix {
    fn new(name: &'static str, frames: Vec<Vec<u8>>, keep_open: bool, executes: usize) -> Self {
        let mut input = Vec::new();
        let mut lines = Vec::new();
        for frame in frames {
            let start = input.len();
            input.extend_from_slice(&frame);
            lines.push(start..input.len());
            input.push(b'\n');
        }
        Self {
            name,
            input,
            lines,
            keep_open,
            executes,
        }
    }
}

fn initialize() -> Vec<u8> {
    br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}},"clientInfo":{"name":"example-client","title":"Example Client","version":"1.4.2"}}}"#.to_vec()
}

fn initialized() -> Vec<u8> {
    br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec()
}

/// A legacy `tools/call` of about 300 bytes: a short argument and the
/// `_meta` real clients send (a progress token, trace context).
fn small_call(id: usize) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"service_status","arguments":{{"service":"billing-api-{}"}},"_meta":{{"progressToken":"progress-{id:08}","io.opentelemetry/traceparent":"00-4bf92f3577b34da6a3ce929d0e0e{:04x}-00f067aa0ba902b7-01","io.example/attempt":{{"n":1,"retry":false}}}}}}}}"#,
        id % 97,
        id % 65536
    )
    .into_bytes()
}

fn legacy() -> Mix {
    let mut frames = vec![initialize(), initialized()];
    frames.extend((2..10_002).map(small_call));
    Mix::new("legacy", frames, false, 10_000)
}

fn large() -> Mix {
    // Printable text with escapes and non-ASCII: what a note or a file
    // body looks like once JSON-encoded.
    let mut text = String::new();
    while text.len() < 64 * 1024 {
        text.push_str(r#"Line of text with \"quotes\", a path C:\\tmp and unicode é中 — "#);
    }
    let mut frames = vec![initialize(), initialized()];
    frames.extend((2..202).map(|id| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"append_note","arguments":{{"text":"{text}"}},"_meta":{{"progressToken":{id}}}}}}}"#
        )
        .into_bytes()
    }));
    Mix::new("large", frames, false, 200)
}

/// Half the frames are refused, cycling through every stage: framing,
/// UTF-8, strict JSON, JSON-RPC, MCP, schema, authorization.
fn hostile() -> Mix {
    let mut frames = vec![initialize(), initialized()];
    let mut executes = 0;
    let mut id = 2usize;
    let mut next = || {
        id += 1;
        id
    };
    for i in 0..5_000 {
        frames.push(small_call(next()));
        executes += 1;
        let n = next();
        let bad: Vec<u8> = match i % 12 {
            0 => Vec::new(),
            1 => {
                let mut f = small_call(n);
                let at = f.len() - 20;
                f[at] = 0xff;
                f
            }
            2 => format!(r#"{{"jsonrpc":"2.0","id":{n},"id":{n},"method":"ping"}}"#).into_bytes(),
            3 => format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"ping"}} {{}}"#).into_bytes(),
            4 => format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"ping","params":{{"x":1e400}}}}"#)
                .into_bytes(),
            5 => format!(r#"{{"jsonrpc":"1.0","id":{n},"method":"ping"}}"#).into_bytes(),
            6 => format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"ping","extra":true}}"#)
                .into_bytes(),
            7 => small_call(n - 1),
            8 => format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"no_such_tool","arguments":{{}}}}}}"#).into_bytes(),
            9 => format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"service_status","arguments":{{"service":"Bad Service!"}}}}}}"#).into_bytes(),
            10 => format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"service_status","arguments":{{"service":"api","extra":1}}}}}}"#).into_bytes(),
            _ => format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"region_probe","arguments":{{"host":"evil.example"}}}}}}"#).into_bytes(),
        };
        frames.push(bad);
    }
    Mix::new("hostile", frames, true, executes)
}

fn policy(keep_open: bool) -> (Arc<Policy>, Arc<SecretStore>) {
    let mut policy = Policy::from_toml(POLICY, Path::new("examples/policy-20-tools.toml"))
        .expect("the bench policy is valid");
    if keep_open {
        policy.server.on_invalid = OnInvalid::KeepOpen;
    }
    let secrets = SecretStore::stand_ins(&policy);
    (Arc::new(policy), Arc::new(secrets))
}

/// Counts the actions it is handed; what a recorder must do with one
/// (look at it) and nothing more, so the figure is the boundary's.
#[derive(Default)]
struct Recorder {
    actions: usize,
}

impl Recorder {
    fn record(&mut self, action: &AuthorizedAction) {
        black_box(action);
        self.actions += 1;
    }
}

fn pipeline(mix: &Mix, policy: &(Arc<Policy>, Arc<SecretStore>)) -> usize {
    let config = Config::from_policy(&policy.0);
    let mut gateway = Gateway::new(Arc::clone(&policy.0), Arc::clone(&policy.1), config);
    let mut recorder = Recorder::default();
    let mut sink = |effects: Vec<Effect>| {
        for effect in effects {
            if let Effect::Execute { action, .. } = &effect {
                recorder.record(action);
            }
            black_box(effect);
        }
    };
    for read in mix.input.chunks(READ_BYTES) {
        sink(gateway.receive(read));
    }
    sink(gateway.end_of_input());
    recorder.actions
}

/// Frames read as the session reads them up to its MCP stage (the
/// session's own [`read_frame`]). Counts the messages read.
fn wire(mix: &Mix, policy: &(Arc<Policy>, Arc<SecretStore>)) -> usize {
    let config = Config::from_policy(&policy.0);
    let mut reader = FrameReader::new(config.limits.max_frame_bytes);
    let mut read = 0;
    for chunk in mix.input.chunks(READ_BYTES) {
        reader.feed(chunk, |_, event| {
            if let FrameEvent::Frame(frame) = event {
                let message = read_frame(frame, &config.limits).ok();
                read += usize::from(black_box(message).is_some());
            }
        });
    }
    read
}

fn serde_value(mix: &Mix) -> usize {
    let mut ok = 0;
    for line in &mix.lines {
        if let Ok(value) = serde_json::from_slice::<Value>(&mix.input[line.clone()]) {
            black_box(value);
            ok += 1;
        }
    }
    ok
}

fn ignored_any(mix: &Mix) -> usize {
    let mut ok = 0;
    for line in &mix.lines {
        if serde_json::from_slice::<IgnoredAny>(&mix.input[line.clone()]).is_ok() {
            ok += 1;
        }
    }
    ok
}

fn newlines(mix: &Mix) -> usize {
    memchr::memchr_iter(b'\n', &mix.input).count()
}

const CONTENDERS: [&str; 5] = ["pipeline", "serde_value", "wire", "ignored_any", "memchr"];

fn run(contender: &str, mix: &Mix, policy: &(Arc<Policy>, Arc<SecretStore>)) -> usize {
    match contender {
        "pipeline" => pipeline(mix, policy),
        "serde_value" => serde_value(mix),
        "wire" => wire(mix, policy),
        "ignored_any" => ignored_any(mix),
        _ => newlines(mix),
    }
}

/// Seconds per pass of `contender` over `mix`, over at least `slice`.
fn time_slice(
    contender: &str,
    mix: &Mix,
    policy: &(Arc<Policy>, Arc<SecretStore>),
    slice: Duration,
) -> f64 {
    let start = Instant::now();
    let mut passes = 0u32;
    while start.elapsed() < slice || passes == 0 {
        black_box(run(contender, mix, policy));
        passes += 1;
    }
    start.elapsed().as_secs_f64() / f64::from(passes)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The interleaved table: per contender the median seconds per pass, and
/// the median over rounds of its ratio to `serde_value` in that round.
fn table(mix: &Mix, policy: &(Arc<Policy>, Arc<SecretStore>)) -> f64 {
    let slice = Duration::from_millis(60);
    for contender in CONTENDERS {
        time_slice(contender, mix, policy, slice);
    }
    let mut seconds: Vec<Vec<f64>> = vec![Vec::new(); CONTENDERS.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); CONTENDERS.len()];
    for round in 0..ROUNDS {
        let mut this_round = [0.0; CONTENDERS.len()];
        // Rotate the order so no contender always runs first.
        for k in 0..CONTENDERS.len() {
            let i = (k + round) % CONTENDERS.len();
            this_round[i] = time_slice(CONTENDERS[i], mix, policy, slice);
        }
        for i in 0..CONTENDERS.len() {
            seconds[i].push(this_round[i]);
            ratios[i].push(this_round[1] / this_round[i]);
        }
    }
    let bytes = mix.input.len() as f64;
    let frames = mix.lines.len() as f64;
    let pipeline_ratio = median(&mut ratios[0]);
    for (i, contender) in CONTENDERS.iter().enumerate() {
        let s = median(&mut seconds[i]);
        let ratio = median(&mut ratios[i]);
        println!(
            "bench-row mix={} contender={contender} mb_per_s={:.1} frames_per_s={:.0} ratio_to_serde_value={ratio:.2} frames={} bytes={}",
            mix.name,
            bytes / s / 1e6,
            frames / s,
            mix.lines.len(),
            mix.input.len()
        );
    }
    pipeline_ratio
}

/// p50 and p99 of `receive` → `Execute`, one `tools/call` per read.
fn latency(policy: &(Arc<Policy>, Arc<SecretStore>)) {
    let config = Config::from_policy(&policy.0);
    let mut gateway = Gateway::new(Arc::clone(&policy.0), Arc::clone(&policy.1), config);
    let mut handshake = initialize();
    handshake.push(b'\n');
    handshake.extend(initialized());
    handshake.push(b'\n');
    black_box(gateway.receive(&handshake));
    let frames: Vec<Vec<u8>> = (2..LATENCY_FRAMES + 2)
        .map(|id| {
            let mut f = small_call(id);
            f.push(b'\n');
            f
        })
        .collect();
    let mut nanos = Vec::with_capacity(frames.len());
    for frame in &frames {
        let start = Instant::now();
        let effects = gateway.receive(frame);
        let executed = effects.iter().any(|e| matches!(e, Effect::Execute { .. }));
        nanos.push(start.elapsed().as_nanos() as f64);
        assert!(executed, "every latency frame is executed");
        black_box(effects);
    }
    let p = |q: f64| {
        let mut sorted = nanos.clone();
        sorted.sort_by(f64::total_cmp);
        sorted[((sorted.len() as f64 - 1.0) * q).round() as usize] / 1000.0
    };
    println!(
        "latency frames={} p50_us={:.2} p99_us={:.2} max_us={:.2}",
        nanos.len(),
        p(0.5),
        p(0.99),
        p(1.0)
    );
}

fn main() {
    let mixes = [legacy(), large(), hostile()];
    let policies = [policy(false), policy(true)];
    let policy_of = |mix: &Mix| &policies[usize::from(mix.keep_open)];
    // `PIPELINE_PROFILE=<mix>`: run only that mix's pipeline for ten
    // seconds (`PIPELINE_PROFILE_SECS`; another contender with
    // `PIPELINE_PROFILE_CONTENDER`), for `perf record` or
    // `valgrind --tool=callgrind`.
    if let Ok(name) = std::env::var("PIPELINE_PROFILE") {
        let mix = mixes.iter().find(|m| m.name == name).expect("a mix name");
        let secs = std::env::var("PIPELINE_PROFILE_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(10);
        let contender = std::env::var("PIPELINE_PROFILE_CONTENDER");
        let contender = contender.as_deref().unwrap_or("pipeline");
        time_slice(contender, mix, policy_of(mix), Duration::from_secs(secs));
        return;
    }
    for mix in &mixes {
        assert_eq!(
            pipeline(mix, policy_of(mix)),
            mix.executes,
            "{}: every valid call, and only those, reaches the recorder",
            mix.name
        );
        assert!(
            wire(mix, policy_of(mix)) >= mix.executes,
            "{}: every frame that executes is read by the wire stages",
            mix.name
        );
    }

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(10)
        .configure_from_args();
    for mix in &mixes {
        let mut group = criterion.benchmark_group(mix.name);
        group.throughput(Throughput::Bytes(mix.input.len() as u64));
        for contender in CONTENDERS {
            group.bench_function(contender, |b| {
                b.iter(|| run(contender, black_box(mix), policy_of(mix)))
            });
        }
        group.finish();
    }
    criterion.final_summary();

    let ratios: Vec<f64> = mixes.iter().map(|mix| table(mix, policy_of(mix))).collect();
    latency(&policies[0]);
    // The runner's contract: the legacy mix's ratio, on the last line.
    println!("pipeline_vs_serde_value={:.2}", ratios[0]);
}
