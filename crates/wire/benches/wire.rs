//! Wire-stage throughput against a plain `serde_json::Value` parse.
//!
//! Input is a mix of realistic MCP frames. The baseline parses each frame
//! with `serde_json::from_slice::<Value>`; the wire stage runs the whole
//! inbound pipeline: `FrameReader::feed` over the concatenated input, then
//! `utf8::decode` and `parse_message` per frame.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use portcullis_wire::{FrameEvent, FrameReader, Limits, parse_message, utf8};

fn frames() -> Vec<String> {
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}},"clientInfo":{"name":"example-client","title":"Example Client","version":"1.4.2"}}}"#.to_owned();
    let small_call = r#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"get_weather","arguments":{"location":"New York","units":"metric"}}}"#.to_owned();
    let mut body = String::new();
    while body.len() < 2048 {
        body.push_str(
            "Line of file content with \\\"quotes\\\", tabs\\t and unicode \u{e9}\u{4e2d}\\n",
        );
    }
    let big_call = format!(
        r#"{{"jsonrpc":"2.0","id":"req-4242","method":"tools/call","params":{{"name":"write_file","arguments":{{"path":"/srv/project/src/main.rs","content":"{body}","create_dirs":true,"mode":420,"tags":["a","b","c"]}},"_meta":{{"progressToken":99}}}}}}"#
    );
    let notification = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned();
    let ping = r#"{"jsonrpc":"2.0","id":18,"method":"ping"}"#.to_owned();
    vec![initialize, small_call, big_call, notification, ping]
}

fn concatenated(frames: &[String]) -> Vec<u8> {
    let mut input = Vec::new();
    for frame in frames {
        input.extend_from_slice(frame.as_bytes());
        input.push(b'\n');
    }
    input
}

fn baseline(frames: &[String]) -> usize {
    let mut n = 0;
    for frame in frames {
        let value: serde_json::Value =
            serde_json::from_slice(frame.as_bytes()).expect("baseline frame parses");
        black_box(&value);
        n += 1;
    }
    n
}

fn wire_stage(input: &[u8], limits: &Limits) -> usize {
    let mut reader = FrameReader::new(limits.max_frame_bytes);
    let mut n = 0;
    reader.feed(input, |_, event| match event {
        FrameEvent::Frame(frame) => {
            let text = utf8::decode(frame).expect("frame is UTF-8");
            let message = parse_message(text, limits).expect("frame is a message");
            black_box(&message);
            n += 1;
        }
        FrameEvent::Rejected(rejection) => panic!("unexpected rejection: {rejection}"),
    });
    n
}

/// Bytes per second of `a` and of `b`, each over `bytes` bytes per call.
/// After a warm-up the two alternate in 100 ms slices (about 0.5 s each in
/// all), so that load from other processes hits both alike.
fn measure_pair(
    bytes: usize,
    mut a: impl FnMut() -> usize,
    mut b: impl FnMut() -> usize,
) -> (f64, f64) {
    let warm_up = Instant::now();
    while warm_up.elapsed() < Duration::from_millis(200) {
        black_box(a());
        black_box(b());
    }
    let slice = Duration::from_millis(100);
    let (mut a_calls, mut a_time, mut b_calls, mut b_time) =
        (0u64, Duration::ZERO, 0u64, Duration::ZERO);
    for _ in 0..5 {
        let start = Instant::now();
        while start.elapsed() < slice {
            black_box(a());
            a_calls += 1;
        }
        a_time += start.elapsed();
        let start = Instant::now();
        while start.elapsed() < slice {
            black_box(b());
            b_calls += 1;
        }
        b_time += start.elapsed();
    }
    let rate = |calls: u64, time: Duration| bytes as f64 * calls as f64 / time.as_secs_f64();
    (rate(a_calls, a_time), rate(b_calls, b_time))
}

fn main() {
    let frames = frames();
    let input = concatenated(&frames);
    let limits = Limits::default();
    assert_eq!(baseline(&frames), frames.len());
    assert_eq!(wire_stage(&input, &limits), frames.len());

    let mut criterion = Criterion::default().configure_from_args();
    {
        let mut group = criterion.benchmark_group("inbound");
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function("serde_json_value", |b| {
            b.iter(|| baseline(black_box(&frames)))
        });
        group.bench_function("wire_stage", |b| {
            b.iter(|| wire_stage(black_box(&input), &limits))
        });
        group.finish();
    }
    criterion.final_summary();

    let (serde_rate, wire_rate) = measure_pair(
        input.len(),
        || baseline(black_box(&frames)),
        || wire_stage(black_box(&input), &limits),
    );
    eprintln!(
        "wire stage vs serde_json::Value: {:.2}x throughput ({:.1} MiB/s vs {:.1} MiB/s)",
        wire_rate / serde_rate,
        wire_rate / (1024.0 * 1024.0),
        serde_rate / (1024.0 * 1024.0)
    );
}
