//! Every protocol edge of the wire layer, pinned with a readable name.

use portcullis_wire::codes::{INVALID_REQUEST, PARSE_ERROR};
use portcullis_wire::strict_json::parse_value;
use portcullis_wire::{
    FrameEvent, FrameReader, Id, Limits, Rejection, RpcMessage, Stage, parse_message, utf8,
};

#[derive(Debug, PartialEq)]
enum Ev {
    Frame(u64, Vec<u8>),
    Rejected(u64, Stage, String),
}

fn split(input: &[u8], max: usize, chunk: usize) -> Vec<Ev> {
    let mut reader = FrameReader::new(max);
    let mut out = Vec::new();
    let mut sink = |line, ev: FrameEvent<'_>| match ev {
        FrameEvent::Frame(f) => out.push(Ev::Frame(line, f.to_vec())),
        FrameEvent::Rejected(r) => out.push(Ev::Rejected(line, r.stage, r.reason)),
    };
    for piece in input.chunks(chunk.max(1)) {
        reader.feed(piece, &mut sink);
    }
    reader.finish(&mut sink);
    out
}

fn message(line: &str) -> Result<RpcMessage<'_>, Rejection> {
    parse_message(line, &Limits::default())
}

fn rejected_at(line: &str, stage: Stage) -> Rejection {
    let r = message(line).expect_err(line);
    assert_eq!(r.stage, stage, "{line}: {}", r.reason);
    r
}

#[test]
fn frames_split_on_newline_whatever_the_chunking() {
    let input = b"{\"a\":1}\n{\"b\":2}\r\nxyz\n";
    let whole = split(input, 64, input.len());
    for chunk in 1..input.len() {
        assert_eq!(split(input, 64, chunk), whole, "chunk size {chunk}");
    }
    assert_eq!(
        whole[1],
        Ev::Frame(2, b"{\"b\":2}".to_vec()),
        "one trailing CR is stripped"
    );
}

/// The frame of one line and whether the inbound stages accept it.
fn read_line(line: &[u8]) -> (Vec<u8>, bool) {
    let events = split(line, 1024, line.len());
    let [Ev::Frame(1, frame)] = events.as_slice() else {
        panic!("{line:?} is not one frame: {events:?}")
    };
    let accepted = utf8::decode(frame)
        .and_then(|text| parse_message(text, &Limits::default()))
        .is_ok();
    (frame.clone(), accepted)
}

/// Framing strips the newline and one CR before it, nothing else: every
/// other byte at the end of a line is part of the value, where strict JSON
/// allows only its own whitespace (space, tab, CR) after a value. A form
/// feed, a vertical tab, NUL or a non-ASCII space after the request is
/// refused, however the line ends.
#[test]
fn only_one_final_cr_is_stripped_and_every_other_byte_is_judged_as_json() {
    let request = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut trailers: Vec<Vec<u8>> = (0..=u8::MAX)
        .filter(|&b| b != b'\n')
        .map(|b| vec![b])
        .collect();
    for extra in [
        "\r\r", " \r", "\x0c\r", "\r\x0c", "\u{a0}", "\u{85}", "\u{2028}", "\u{3000}", "\u{feff}",
    ] {
        trailers.push(extra.as_bytes().to_vec());
    }
    for trailer in trailers {
        for ending in [&b"\n"[..], b"\r\n"] {
            let line = [&request[..], &trailer, ending].concat();
            let mut value = [&request[..], &trailer, &ending[..ending.len() - 1]].concat();
            if value.ends_with(b"\r") {
                value.pop();
            }
            let (frame, accepted) = read_line(&line);
            assert_eq!(frame, value, "{line:?}");
            let json_whitespace = value[request.len()..]
                .iter()
                .all(|b| matches!(b, b' ' | b'\t' | b'\r'));
            assert_eq!(accepted, json_whitespace, "{line:?}");
        }
    }
}

#[test]
fn bytes_after_the_last_newline_are_a_truncated_frame() {
    let events = split(
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\"",
        1024,
        7,
    );
    assert!(matches!(events[0], Ev::Frame(1, _)));
    assert!(matches!(&events[1], Ev::Rejected(2, Stage::Framing, r) if r.contains("truncated")));
}

#[test]
fn over_long_line_is_rejected_once_and_the_next_line_survives() {
    let mut input = vec![b'x'; 100];
    input.extend_from_slice(b"\nok\n");
    for chunk in [1, 3, 50, 200] {
        let events = split(&input, 10, chunk);
        assert_eq!(events.len(), 2, "chunk {chunk}: {events:?}");
        assert!(
            matches!(&events[0], Ev::Rejected(1, Stage::Framing, r) if r.contains("max_frame_bytes"))
        );
        assert_eq!(events[1], Ev::Frame(2, b"ok".to_vec()));
    }
}

#[test]
fn over_long_line_is_never_buffered_beyond_the_cap() {
    let mut reader = FrameReader::new(16);
    let mut rejections = 0;
    for _ in 0..10_000 {
        reader.feed(&[b'a'; 7], |_, ev| {
            if let FrameEvent::Rejected(_) = ev {
                rejections += 1
            }
        });
        assert!(reader.buffered() <= 17);
    }
    assert_eq!(rejections, 1);
}

#[test]
fn buffered_counts_the_bytes_of_the_incomplete_frame() {
    // The drivers' memory accounting reads this figure; a bound alone
    // (above) would not notice it stuck at a constant.
    let mut reader = FrameReader::new(16);
    let mut frames = Vec::new();
    let mut sink = |_, ev: FrameEvent<'_>| {
        if let FrameEvent::Frame(f) = ev {
            frames.push(f.to_vec())
        }
    };
    assert_eq!(reader.buffered(), 0);
    reader.feed(b"abc", &mut sink);
    assert_eq!(reader.buffered(), 3);
    reader.feed(b"defgh", &mut sink);
    assert_eq!(reader.buffered(), 8);
    reader.feed(b"ij\nkl", &mut sink);
    assert_eq!(
        reader.buffered(),
        2,
        "only the frame after the newline stays"
    );
    reader.feed(&[b'x'; 20], &mut sink);
    assert_eq!(
        reader.buffered(),
        0,
        "an over-long frame is dropped, not kept"
    );
    reader.feed(b"\nm", &mut sink);
    assert_eq!(reader.buffered(), 1);
    assert_eq!(frames, [b"abcdefghij".to_vec()]);
}

#[test]
fn frame_of_exactly_the_cap_is_accepted_with_or_without_cr() {
    assert_eq!(
        split(b"0123456789\n", 10, 1),
        vec![Ev::Frame(1, b"0123456789".to_vec())]
    );
    assert_eq!(
        split(b"0123456789\r\n", 10, 1),
        vec![Ev::Frame(1, b"0123456789".to_vec())]
    );
    assert!(matches!(
        split(b"0123456789a\n", 10, 1)[0],
        Ev::Rejected(1, Stage::Framing, _)
    ));
}

#[test]
fn over_long_fingerprint_does_not_depend_on_chunking() {
    let input = [b'q'; 300];
    let fp = |chunk: usize| {
        let mut reader = FrameReader::new(20);
        let mut fps = Vec::new();
        for piece in input.chunks(chunk) {
            reader.feed(piece, |_, ev| {
                if let FrameEvent::Rejected(r) = ev {
                    fps.push(r.fingerprint)
                }
            });
        }
        reader.feed(b"\n", |_, _| {});
        fps
    };
    assert_eq!(fp(1), fp(300));
    assert_eq!(fp(7), fp(300));
}

#[test]
fn empty_lines_are_rejected() {
    assert!(
        matches!(&split(b"\n", 10, 1)[0], Ev::Rejected(1, Stage::Framing, r) if r == "empty line")
    );
    assert!(matches!(
        &split(b"\r\n", 10, 1)[0],
        Ev::Rejected(1, Stage::Framing, _)
    ));
}

#[test]
fn invalid_utf8_is_rejected_never_decoded_lossily() {
    let r = utf8::decode(b"{\"a\":\"\xff\"}").unwrap_err();
    assert_eq!((r.stage, r.code), (Stage::Utf8, PARSE_ERROR));
}

#[test]
fn a_valid_request_is_classified() {
    let m =
        message(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}"#).unwrap();
    assert!(
        matches!(m, RpcMessage::Request { id: Id::Int(7), ref method, params: Some(_) } if method == "tools/call")
    );
    let n = message(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
    assert_eq!(n.kind(), "notification");
}

#[test]
fn two_objects_on_one_line_are_rejected() {
    let r = rejected_at(
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        Stage::Json,
    );
    assert_eq!(r.code, PARSE_ERROR);
    rejected_at("{}{}", Stage::Json);
}

#[test]
fn a_banner_after_a_valid_request_on_the_same_line_is_rejected() {
    rejected_at(
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"} server ready"#,
        Stage::Json,
    );
}

#[test]
fn duplicate_keys_are_rejected_at_any_depth_and_after_unescaping() {
    rejected_at(
        r#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}"#,
        Stage::Json,
    );
    rejected_at(
        r#"{"jsonrpc":"2.0","id":1,"method":"a","met\u0068od":"b"}"#,
        Stage::Json,
    );
    rejected_at(
        r#"{"jsonrpc":"2.0","id":1,"method":"a","params":{"name":"x","name":"y"}}"#,
        Stage::Json,
    );
    rejected_at(
        r#"{"jsonrpc":"2.0","id":1,"method":"a","params":{"a":[{"k":1,"k":2}]}}"#,
        Stage::Json,
    );
    rejected_at(
        r#"{"jsonrpc":"2.0","id":1,"method":"a","x":1,"x":2}"#,
        Stage::Json,
    );
}

#[test]
fn nesting_past_the_depth_limit_is_rejected_without_overflowing_the_stack() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let limits = Limits::default();
    assert!(parse_value(&deep(64), &limits).is_ok());
    assert_eq!(
        parse_value(&deep(65), &limits).unwrap_err().stage,
        Stage::Json
    );
    assert!(parse_value(&deep(1_000_000), &limits).is_err());
    let frame = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"a","params":{{"x":{}}}}}"#,
        deep(200_000)
    );
    rejected_at(&frame, Stage::Json);
}

/// docs/boundary.md: a frame holds at most `max_frame_values` JSON values
/// (default 16384), every scalar, array and object counted, also in the
/// `_meta` the gateway reads without keeping; the value past the limit is
/// a JSON-stage refusal (-32700) whose reason names the limit.
#[test]
fn a_frame_of_exactly_the_value_limit_is_accepted_and_one_more_value_is_refused() {
    let limit = portcullis_wire::limits::DEFAULT_MAX_VALUES;
    assert_eq!(Limits::default().max_values, 16_384);
    // The envelope is eight values: the frame's object, "2.0", the id, the
    // method, `params`, the tool name, `arguments` (or `_meta`) and the
    // array; each `{"a":1}` adds two, a trailing `0` makes the count odd.
    let frame = |values: usize, member: &str| {
        let items = values - 8;
        let mut list = vec![r#"{"a":1}"#; items / 2];
        if items % 2 == 1 {
            list.push("0");
        }
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","{member}":{{"x":[{}]}}}}}}"#,
            list.join(",")
        )
    };
    let skim = portcullis_wire::Skim {
        member: "_meta",
        keep: &["progressToken"],
    };
    for member in ["arguments", "_meta"] {
        let at_limit = frame(limit, member);
        assert!(parse_value(&at_limit, &Limits::default()).is_ok());
        assert!(message(&at_limit).is_ok(), "{member}");
        assert!(
            portcullis_wire::parse_message_skimmed(&at_limit, &Limits::default(), &skim).is_ok(),
            "{member}"
        );
        let past = frame(limit + 1, member);
        let refused = rejected_at(&past, Stage::Json);
        assert_eq!(refused.code, PARSE_ERROR);
        assert!(
            refused
                .reason
                .starts_with("frame exceeds max_frame_values (16384)"),
            "{}",
            refused.reason
        );
        assert_eq!(
            parse_value(&past, &Limits::default()).unwrap_err().reason,
            refused.reason
        );
        // Skimmed, `_meta`'s dropped members count all the same.
        let skimmed =
            portcullis_wire::parse_message_skimmed(&past, &Limits::default(), &skim).unwrap_err();
        assert_eq!(
            (skimmed.stage(), skimmed.code()),
            (Stage::Json, PARSE_ERROR)
        );
        assert_eq!(skimmed.word().reason, refused.reason);
    }
    // A policy's own limit moves it; scalars alone count too.
    let small = Limits {
        max_values: 64,
        ..Limits::default()
    };
    let zeros = |n: usize| format!("[{}]", vec!["0"; n].join(","));
    assert!(parse_value(&zeros(63), &small).is_ok());
    assert!(parse_value(&zeros(64), &small).is_err());
}

#[test]
fn lone_surrogates_and_bom_are_rejected() {
    let limits = Limits::default();
    assert!(parse_value(r#""\ud800""#, &limits).is_err());
    assert!(parse_value(r#""\udc00x""#, &limits).is_err());
    assert!(parse_value(r#""\ud83d\ude00""#, &limits).is_ok());
    assert!(parse_value("\u{feff}{}", &limits).is_err());
}

#[test]
fn numbers_must_be_exactly_representable() {
    let limits = Limits::default();
    assert!(parse_value("9007199254740991", &limits).is_ok());
    assert!(parse_value("-9007199254740991", &limits).is_ok());
    assert!(parse_value("9007199254740992", &limits).is_err());
    assert!(parse_value("18446744073709551616", &limits).is_err());
    assert!(parse_value("1e400", &limits).is_err());
    assert!(parse_value("-1e400", &limits).is_err());
    assert!(parse_value("-9223372036854775809", &limits).is_err());
    assert!(parse_value("123123123123123123123123123123", &limits).is_err());
    assert!(parse_value(&"9".repeat(400), &limits).is_err());
    assert!(parse_value("0.1", &limits).is_ok());
    assert!(parse_value("1.5e-300", &limits).is_ok());
}

/// Issue 10: a finite number with a fraction or an exponent is one double,
/// read the same by every peer; only integer syntax carries the ±(2^53−1)
/// rule.
#[test]
fn fraction_and_exponent_numbers_are_doubles_and_accepted() {
    let limits = Limits::default();
    for ok in [
        "1e22",
        "1E22",
        "1.5e300",
        "-1.0e+28",
        "123.456e78",
        "9007199254740993.0",
    ] {
        assert!(parse_value(ok, &limits).is_ok(), "{ok}");
    }
    let mixed = r#"{"a":1.0e+28,"b":"18446744073709551616","c":[-1.0e+28]}"#;
    assert!(
        parse_value(mixed, &limits).is_ok(),
        "digits in strings are text"
    );
    let smuggled = r#"{"a":1e22,"b":18446744073709551616}"#;
    assert!(
        parse_value(smuggled, &limits).is_err(),
        "a big float elsewhere does not excuse an unsafe integer"
    );
    let escaped = r#"{"k\"":"\\","n":1e300,"m":100000000000000000000}"#;
    assert!(parse_value(escaped, &limits).is_err());
    assert!(parse_value(r#"{"k\"":"\\","n":1e300}"#, &limits).is_ok());
}

#[test]
fn id_must_be_a_string_or_a_safe_integer() {
    for bad in ["true", "null", "1.0", "1e2", "-0", "{}", "[1]", "1.5"] {
        let r = rejected_at(
            &format!(r#"{{"jsonrpc":"2.0","id":{bad},"method":"ping"}}"#),
            Stage::Rpc,
        );
        assert_eq!((r.code, r.id.clone()), (INVALID_REQUEST, None), "{bad}");
    }
    for huge in ["9007199254740992", "18446744073709551616", "1e400"] {
        rejected_at(
            &format!(r#"{{"jsonrpc":"2.0","id":{huge},"method":"ping"}}"#),
            Stage::Json,
        );
    }
    let m = message(r#"{"jsonrpc":"2.0","id":-9007199254740991,"method":"ping"}"#).unwrap();
    assert_eq!(m.id(), Some(&Id::Int(-9007199254740991)));
}

#[test]
fn jsonrpc_must_be_exactly_2_0() {
    for bad in [r#""1.0""#, r#""2.00""#, "2.0", "null", r#"" 2.0""#] {
        rejected_at(
            &format!(r#"{{"jsonrpc":{bad},"id":1,"method":"ping"}}"#),
            Stage::Rpc,
        );
    }
    let r = rejected_at(r#"{"id":1,"method":"ping"}"#, Stage::Rpc);
    assert_eq!(
        r.id,
        Some(Id::Int(1)),
        "the id is echoed when it could be read"
    );
}

#[test]
fn batches_and_non_objects_are_rejected() {
    for bad in [
        "[]",
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
        "null",
        "1",
        r#""x""#,
        "true",
    ] {
        rejected_at(bad, Stage::Rpc);
    }
}

#[test]
fn params_string_is_rejected_with_the_id() {
    let r = rejected_at(
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"run"}"#,
        Stage::Rpc,
    );
    assert_eq!((r.code, r.id), (INVALID_REQUEST, Some(Id::Int(4))));
    rejected_at(
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":["run"]}"#,
        Stage::Rpc,
    );
}

#[test]
fn unknown_top_level_members_are_rejected() {
    let r = rejected_at(
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","extra":true}"#,
        Stage::Rpc,
    );
    assert!(r.reason.contains("\"extra\""), "{}", r.reason);
}

#[test]
fn responses_and_errors_are_classified() {
    assert_eq!(
        message(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#)
            .unwrap()
            .kind(),
        "response"
    );
    assert_eq!(
        message(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#)
            .unwrap()
            .kind(),
        "error"
    );
    assert_eq!(
        message(r#"{"jsonrpc":"2.0","error":{"code":-1,"message":"m"}}"#)
            .unwrap()
            .kind(),
        "error"
    );
    rejected_at(
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
        Stage::Rpc,
    );
    rejected_at(r#"{"jsonrpc":"2.0","result":{}}"#, Stage::Rpc);
    rejected_at(
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#,
        Stage::Rpc,
    );
    rejected_at(
        r#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#,
        Stage::Rpc,
    );
    rejected_at(r#"{"jsonrpc":"2.0","id":1}"#, Stage::Rpc);
}

#[test]
fn serde_json_private_number_token_stays_an_object() {
    // With `arbitrary_precision` on, serde_json would read this object as a
    // number; with `raw_value` on, the raw-value token is special. Cargo
    // unifies features across the tree, so this pins them off.
    let v = parse_value(
        r#"{"$serde_json::private::Number":"1"}"#,
        &Limits::default(),
    )
    .unwrap();
    assert!(v.is_object(), "{v:?}");
    let v = parse_value(
        r#"{"$serde_json::private::RawValue":"1"}"#,
        &Limits::default(),
    )
    .unwrap();
    assert!(v.is_object(), "{v:?}");
    let direct: serde_json::Value =
        serde_json::from_str(r#"{"$serde_json::private::Number":"1"}"#).unwrap();
    assert!(direct.is_object());
}

#[test]
fn rejections_never_carry_the_frame() {
    let secret = "hunter2-canary";
    let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"{secret}"}}"#);
    let r = rejected_at(&frame, Stage::Rpc);
    assert!(!format!("{r:?} {r}").contains(secret));
    assert_eq!(r.fingerprint.to_hex().len(), 64);
    // A duplicated key that does not look like a name may be data: withheld.
    let key = "hunter2 canary value";
    let r = rejected_at(&format!(r#"{{"{key}":1,"{key}":2}}"#), Stage::Json);
    assert!(!format!("{r:?} {r}").contains(key), "{r}");
}

#[test]
fn the_encoder_refuses_what_the_transcript_checker_would() {
    use portcullis_wire::{EncodeError, ErrorObject, Outbound, encode};
    let huge = Id::Int(1 << 53);
    let r = encode(&Outbound::Response {
        id: huge.clone(),
        result: serde_json::json!({}),
    });
    assert!(matches!(r, Err(EncodeError::UnsafeId(_))));
    let r = encode(&Outbound::Response {
        id: Id::Int(1),
        result: serde_json::json!([1]),
    });
    assert!(matches!(r, Err(EncodeError::NotAnObject("result"))));
    let error = ErrorObject {
        code: -32600,
        message: "m".into(),
        data: None,
    };
    let r = encode(&Outbound::Error {
        id: Some(huge),
        error,
    });
    assert!(matches!(r, Err(EncodeError::UnsafeId(_))));
    let r = encode(&Outbound::Notification {
        method: "m".into(),
        params: Some(serde_json::json!("x")),
    });
    assert!(matches!(r, Err(EncodeError::NotAnObject("params"))));
    let ok = encode(&Outbound::Error {
        id: None,
        error: ErrorObject {
            code: -32700,
            message: "m".into(),
            data: None,
        },
    })
    .unwrap();
    assert!(
        !String::from_utf8(ok).unwrap().contains("null"),
        "no id member at all"
    );
}
