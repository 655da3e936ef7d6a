//! Property tests for the wire layer: encoder against the transcript
//! checker, chunking independence of the frame reader, injection
//! robustness of the inbound pipeline, and a differential check of the
//! strict JSON profile against serde_json.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// Failures persist under `crates/wire/proptest-regressions/` (committed).
fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/properties.txt"
        )))),
        ..ProptestConfig::default()
    }
}
use serde_json::{Map, Number, Value};

use portcullis_wire::rpc::{ErrorObject, Id};
use portcullis_wire::{
    FrameEvent, FrameReader, Limits, Outbound, check_transcript, encode, parse_message,
    strict_json, utf8,
};

const MAX_SAFE: i64 = (1 << 53) - 1;

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

/// Strings with newlines, control characters, quotes, backslashes and
/// non-ASCII text (including astral characters).
fn nasty_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('\n'),
            Just('\r'),
            Just('\t'),
            Just('\u{0}'),
            Just('\u{1f}'),
            Just('\u{7f}'),
            Just('"'),
            Just('\\'),
            Just('/'),
            Just('\u{2028}'),
            Just('\u{feff}'),
            Just('é'),
            Just('中'),
            Just('😀'),
            prop::char::range('a', 'z'),
            any::<char>(),
        ],
        0..16,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

fn safe_int() -> impl Strategy<Value = i64> {
    prop_oneof![
        -1000i64..1000,
        -MAX_SAFE..=MAX_SAFE,
        Just(MAX_SAFE),
        Just(-MAX_SAFE),
    ]
}

fn small_float() -> impl Strategy<Value = f64> {
    prop_oneof![-1.0e6f64..1.0e6, -1.0f64..1.0, Just(0.5), Just(-0.0)]
}

/// Leaves inside the strict profile.
fn strict_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        safe_int().prop_map(|n| Value::Number(n.into())),
        small_float().prop_map(|f| Value::Number(Number::from_f64(f).expect("finite"))),
        nasty_string().prop_map(Value::String),
    ]
}

/// Values of at most `depth` levels of nesting (the leaf level counts).
fn strict_value(depth: u32) -> impl Strategy<Value = Value> {
    strict_leaf().prop_recursive(depth.saturating_sub(1), 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(nasty_string(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// An object whose nesting (the object itself included) is at most 4.
fn strict_object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(nasty_string(), strict_value(3), 0..6)
        .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()))
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        safe_int().prop_map(Id::Int),
        nasty_string().prop_map(Id::Str),
    ]
}

fn outbound() -> impl Strategy<Value = Outbound> {
    prop_oneof![
        (id(), strict_object()).prop_map(|(id, result)| Outbound::Response { id, result }),
        (
            prop::option::of(id()),
            safe_int(),
            nasty_string(),
            prop::option::of(strict_value(4)),
        )
            .prop_map(|(id, code, message, data)| Outbound::Error {
                id,
                error: ErrorObject {
                    code,
                    message,
                    data,
                },
            }),
        (nasty_string(), prop::option::of(strict_object()))
            .prop_map(|(method, params)| Outbound::Notification { method, params }),
    ]
}

// ---------------------------------------------------------------------------
// (a) encoder output is always one permitted line
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]
    #[test]
    fn encode_yields_one_checked_line(message in outbound()) {
        let bytes = encode(&message).expect("encode");
        prop_assert_eq!(bytes.last(), Some(&b'\n'));
        prop_assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
        let checked = check_transcript(&bytes);
        prop_assert_eq!(checked, Ok(1), "{}", String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn encoded_transcript_of_many_is_checked(messages in prop::collection::vec(outbound(), 0..12)) {
        let mut transcript = Vec::new();
        for message in &messages {
            transcript.extend(encode(message).expect("encode"));
        }
        prop_assert_eq!(check_transcript(&transcript), Ok(messages.len()));
    }
}

// ---------------------------------------------------------------------------
// (b) the frame reader is independent of chunking
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Frame(u64, Vec<u8>),
    Rejected {
        line: u64,
        stage: String,
        code: i64,
        reason: String,
        fingerprint: String,
    },
}

fn record(events: &mut Vec<Seen>, line: u64, event: FrameEvent<'_>) {
    events.push(match event {
        FrameEvent::Frame(frame) => Seen::Frame(line, frame.to_vec()),
        FrameEvent::Rejected(r) => Seen::Rejected {
            line,
            stage: r.stage.to_string(),
            code: r.code,
            reason: r.reason,
            fingerprint: r.fingerprint.to_hex(),
        },
    });
}

fn read_in_chunks(input: &[u8], max: usize, sizes: &[usize]) -> Vec<Seen> {
    let mut reader = FrameReader::new(max);
    let mut events = Vec::new();
    let mut rest = input;
    let mut i = 0;
    while !rest.is_empty() {
        let size = if sizes.is_empty() {
            rest.len()
        } else {
            sizes[i % sizes.len()].clamp(1, rest.len())
        };
        i += 1;
        let (chunk, next) = rest.split_at(size);
        reader.feed(chunk, |line, event| record(&mut events, line, event));
        rest = next;
    }
    reader.finish(|line, event| record(&mut events, line, event));
    events
}

fn framing_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            4 => Just(b'\n'),
            3 => Just(b'\r'),
            3 => Just(b'{'),
            2 => Just(b'}'),
            4 => b'a'..=b'e',
            1 => any::<u8>(),
        ],
        0..300,
    )
}

proptest! {
    #![proptest_config(config())]
    #[test]
    fn frame_reader_ignores_chunking(
        input in framing_bytes(),
        max in 1usize..=64,
        sizes in prop::collection::vec(1usize..80, 1..12),
    ) {
        let whole = read_in_chunks(&input, max, &[]);
        let bytewise = read_in_chunks(&input, max, &[1]);
        let chunked = read_in_chunks(&input, max, &sizes);
        prop_assert_eq!(&whole, &bytewise);
        prop_assert_eq!(&whole, &chunked);
    }
}

/// What may stand between a value and its newline: JSON whitespace, the
/// other ASCII blanks and controls, characters that look blank, any byte.
fn trailer_piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => Just(b"\r".to_vec()),
        2 => Just(b" ".to_vec()),
        2 => Just(b"\t".to_vec()),
        2 => Just(b"\x0c".to_vec()),
        1 => Just(b"\x0b".to_vec()),
        1 => Just(b"\x00".to_vec()),
        1 => Just("\u{a0}".as_bytes().to_vec()),
        1 => Just("\u{2028}".as_bytes().to_vec()),
        1 => Just("\u{feff}".as_bytes().to_vec()),
        2 => any::<u8>()
            .prop_filter("not a newline", |b| *b != b'\n')
            .prop_map(|b| vec![b]),
    ]
}

proptest! {
    #![proptest_config(config())]
    /// Framing takes off the newline and one CR before it, nothing more:
    /// every other byte after a request, however the line is read, reaches
    /// strict JSON, which accepts the line only when those bytes are its
    /// whitespace (space, tab, CR).
    #[test]
    fn every_byte_before_the_newline_but_one_cr_is_part_of_the_value(
        frame in request_frame(),
        trailer in prop::collection::vec(trailer_piece(), 0..4),
        crlf in any::<bool>(),
        sizes in prop::collection::vec(1usize..40, 1..6),
    ) {
        let trailer = trailer.concat();
        let mut line = [frame.as_bytes(), &trailer].concat();
        let mut value = line.clone();
        if crlf {
            line.push(b'\r');
        } else if value.ends_with(b"\r") {
            value.pop();
        }
        line.push(b'\n');
        let events = read_in_chunks(&line, 1 << 20, &sizes);
        prop_assert_eq!(&events, &vec![Seen::Frame(1, value.clone())]);
        let accepted = utf8::decode(&value)
            .and_then(|text| parse_message(text, &Limits::default()))
            .is_ok();
        let blank = value[frame.len()..]
            .iter()
            .all(|b| matches!(b, b' ' | b'\t' | b'\r'));
        prop_assert_eq!(accepted, blank, "{:?}", line);
    }
}

// ---------------------------------------------------------------------------
// (c) injected garbage around or inside a valid request is refused
// ---------------------------------------------------------------------------

fn request_frame() -> impl Strategy<Value = String> {
    (
        id(),
        prop::string::string_regex("[a-z]{1,8}(/[a-z]{1,8})?").expect("regex"),
        strict_object(),
    )
        .prop_map(|(id, method, params)| {
            let id: Value = id.into();
            let mut message = Map::new();
            message.insert("jsonrpc".into(), Value::String("2.0".into()));
            message.insert("id".into(), id);
            message.insert("method".into(), Value::String(method));
            message.insert("params".into(), params);
            serde_json::to_string(&Value::Object(message)).expect("serialize")
        })
}

fn garbage_token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("x".to_owned()),
        Just("1".to_owned()),
        Just("-".to_owned()),
        Just("{}".to_owned()),
        Just("[]".to_owned()),
        Just("\"s\"".to_owned()),
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("}".to_owned()),
        Just("]".to_owned()),
        Just("/*c*/".to_owned()),
        Just("\u{feff}".to_owned()),
        Just("\u{0}".to_owned()),
        prop::string::string_regex("[!-~]{1,6}").expect("regex"),
    ]
}

/// Byte offsets of commas outside string literals.
fn structural_commas(text: &str) -> Vec<usize> {
    let mut commas = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b',' {
            commas.push(i);
        }
    }
    commas
}

fn inbound(text: &str) -> bool {
    utf8::decode(text.as_bytes())
        .and_then(|text| parse_message(text, &Limits::default()))
        .is_ok()
}

proptest! {
    #![proptest_config(config())]
    #[test]
    fn injected_garbage_is_refused(
        frame in request_frame(),
        token in garbage_token(),
        space in any::<bool>(),
        pick in any::<prop::sample::Index>(),
    ) {
        prop_assert!(inbound(&frame), "baseline frame refused: {}", frame);
        let sep = if space { " " } else { "" };
        let before = format!("{token}{sep}{frame}");
        prop_assert!(!inbound(&before), "accepted: {}", before);
        let after = format!("{frame}{sep}{token}");
        prop_assert!(!inbound(&after), "accepted: {}", after);
        let commas = structural_commas(&frame);
        prop_assert!(!commas.is_empty());
        let at = commas[pick.index(commas.len())];
        let doubled = format!("{},{}", &frame[..at], &frame[at..]);
        prop_assert!(!inbound(&doubled), "accepted: {}", doubled);
    }
}

// ---------------------------------------------------------------------------
// (d) differential against serde_json
// ---------------------------------------------------------------------------

/// Leaves that may fall outside the strict profile (big integers,
/// integral floats beyond 2^53).
fn any_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => strict_leaf(),
        1 => any::<i64>().prop_map(|n| Value::Number(n.into())),
        1 => any::<u64>().prop_map(|n| Value::Number(n.into())),
        1 => prop::num::f64::NORMAL.prop_map(|f| Value::Number(Number::from_f64(f).expect("finite"))),
    ]
}

fn any_value() -> impl Strategy<Value = Value> {
    any_leaf().prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(nasty_string(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A JSON text spelling `key`, possibly with its first character escaped.
fn key_text(key: &str, escape_first: bool) -> String {
    let plain = serde_json::to_string(key).expect("serialize key");
    let Some(first) = key.chars().next() else {
        return plain;
    };
    if !escape_first || first == '"' || first == '\\' || (first as u32) > 0xffff {
        return plain;
    }
    let rest = serde_json::to_string(&key[first.len_utf8()..]).expect("serialize key");
    format!("\"\\u{:04x}{}", first as u32, &rest[1..])
}

proptest! {
    #![proptest_config(config())]
    #[test]
    fn strict_accepts_only_what_serde_json_reads_equally(value in any_value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&value)
        } else {
            serde_json::to_string(&value)
        }
        .expect("serialize");
        let strict = strict_json::parse_value(&text, &Limits::default());
        let borrowed = strict_json::parse_json(&text, &Limits::default()).map(portcullis_wire::Json::into_value);
        prop_assert_eq!(strict.as_ref().ok(), borrowed.as_ref().ok(), "parse_json disagrees with parse_value");
        if let Ok(strict) = strict {
            let loose: Value = serde_json::from_str(&text).expect("serde_json refuses what strict accepts");
            prop_assert_eq!(&strict, &loose);
        }
    }

    #[test]
    fn duplicate_keys_are_refused(
        entries in prop::collection::btree_map(nasty_string(), strict_value(3), 1..5),
        pick in any::<prop::sample::Index>(),
        again in strict_value(2),
        escape_first in any::<bool>(),
        wrap in 0usize..4,
    ) {
        let keys: Vec<&String> = entries.keys().collect();
        let dup = keys[pick.index(keys.len())].clone();
        let mut members: Vec<String> = entries
            .iter()
            .map(|(k, v)| format!("{}:{}", key_text(k, false), serde_json::to_string(v).expect("serialize")))
            .collect();
        members.push(format!(
            "{}:{}",
            key_text(&dup, escape_first),
            serde_json::to_string(&again).expect("serialize")
        ));
        let mut text = format!("{{{}}}", members.join(","));
        for level in 0..wrap {
            text = if level % 2 == 0 {
                format!("[1,{text}]")
            } else {
                format!("{{\"w\":{text}}}")
            };
        }
        prop_assert!(
            strict_json::parse_value(&text, &Limits::default()).is_err(),
            "accepted duplicate key: {}",
            text
        );
        prop_assert!(
            strict_json::parse_json(&text, &Limits::default()).is_err(),
            "the borrowed reader accepted duplicate key: {}",
            text
        );
        // serde_json's Value keeps the last one instead.
        prop_assert!(serde_json::from_str::<Value>(&text).is_ok());
    }
}

proptest! {
    #![proptest_config(config())]
    /// Past a handful of members the borrowed reader finds duplicates with
    /// a hash set instead of a scan; both ways refuse every duplicate,
    /// escaped spellings included, wherever it sits among the members.
    #[test]
    fn duplicate_keys_among_many_members_are_refused_in_params(
        count in 1usize..80,
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        escape in any::<bool>(),
    ) {
        let keys: Vec<String> = (0..count).map(|i| format!("k{i}")).collect();
        let dup = &keys[pick.index(count)];
        let mut members: Vec<String> = keys.iter().map(|k| format!("\"{k}\":1")).collect();
        members.insert(at.index(count + 1), format!("{}:2", key_text(dup, escape)));
        let object = format!("{{{}}}", members.join(","));
        let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{object}}}"#);
        prop_assert!(strict_json::parse_json(&object, &Limits::default()).is_err());
        let refused = portcullis_wire::parse_message_borrowed(&frame, &Limits::default());
        prop_assert_eq!(refused.map_err(|r| r.stage).err(), Some(portcullis_wire::Stage::Json));
        let unique = format!("{{{}}}", keys.iter().map(|k| format!("\"{k}\":1")).collect::<Vec<_>>().join(","));
        let parsed = strict_json::parse_json(&unique, &Limits::default()).map(portcullis_wire::Json::into_value);
        prop_assert_eq!(parsed.ok(), strict_json::parse_value(&unique, &Limits::default()).ok());
    }
}
