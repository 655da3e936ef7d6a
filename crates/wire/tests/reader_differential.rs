//! The hand-written strict reader against the reference reading through
//! serde_json (`strict_json::reference`): on every text, the same verdict,
//! the same value when both accept, and (since refusals are worded by the
//! reference) the same reason. The texts are built to sit on the rules'
//! edges: token soup from fragments that break each rule, valid documents
//! with a few characters changed, and nesting around the depth limit and
//! value counts around the value limit.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::Value;

use portcullis_wire::strict_json::{self, reference};
use portcullis_wire::{
    Limits, RpcMessage, Skim, Stage, parse_message_borrowed, parse_message_skimmed,
};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/reader_differential.txt"
        )))),
        ..ProptestConfig::default()
    }
}

/// Pieces of JSON text, each valid somewhere and most invalid elsewhere.
const FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    " ",
    "\t",
    "\r",
    "\n",
    "\u{feff}",
    "\"a\"",
    "\"b\"",
    "\"\\u0061\"",
    "\"\\u0000\"",
    "\"\\ud800\"",
    "\"\\udc00\"",
    "\"\\ud83d\\ude00\"",
    "\"\\ud800\\u0041\"",
    "\"\\ud800\\n\"",
    "\"\\ud800\\\"",
    "\"\\x\"",
    "\"\\/\"",
    "\"é中😀\"",
    "\"\u{1}\"",
    "\"\u{7f}\"",
    "\"tab\there\"",
    "\"",
    "\\",
    "\"abcdefghijklmnopq\"",
    "\"abcdefgh\\\"ijklmnop\"",
    "0",
    "-0",
    "1",
    "-1",
    "01",
    "-",
    "0.5",
    "1.",
    ".5",
    "1e5",
    "1E+2",
    "1e-400",
    "1e400",
    "-1e400",
    "1e",
    "2.5e-3",
    "1.0",
    "9007199254740991",
    "9007199254740992",
    "-9007199254740991",
    "-9007199254740992",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "100000000000000000000",
    "1e22",
    "true",
    "false",
    "null",
    "tru",
    "nul",
    "True",
    "NaN",
    "Infinity",
    "\"jsonrpc\"",
    "\"2.0\"",
    "\"id\"",
    "\"method\"",
    "\"params\"",
    "\"result\"",
    "\"error\"",
    "\"met\\u0068od\"",
];

fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..24).prop_map(|parts| parts.concat())
}

/// Objects and arrays around the fragments, so the soup also lands inside
/// well-formed structure.
fn structured_soup() -> impl Strategy<Value = String> {
    let member = (soup(), soup()).prop_map(|(k, v)| format!("\"{k}\":{v}"));
    prop::collection::vec(member, 0..6).prop_map(|members| format!("{{{}}}", members.join(",")))
}

/// A valid document with a few characters inserted, removed or replaced.
fn mutated_document() -> impl Strategy<Value = String> {
    let edit = (
        any::<prop::sample::Index>(),
        0u8..3,
        prop::sample::select(FRAGMENTS),
    );
    (
        prop::sample::select(vec![
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"a":"x\"y","n":-12,"f":0.25,"l":[1,true,null]},"_meta":{"progressToken":"p"}}}"#,
            r#"{"a":{"b":{"c":[{"d":"\u00e9\ud83d\ude00"}]}},"e":"abcdefghijklmnopqrstuvwxyz"}"#,
            r#"[1,-0,1e3,"s",{"k":"v","\u006b2":2},[]]"#,
            r#"{"jsonrpc":"2.0","id":"x","result":{"ok":true}}"#,
            r#"{"jsonrpc":"2.0","id":"x","result":{"_meta":{"progressToken":"p","b":[1,{"c":2}]}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m","data":{"_meta":{"b":1}}}}"#,
        ]),
        prop::collection::vec(edit, 1..4),
    )
        .prop_map(|(doc, edits)| {
            let mut chars: Vec<String> = doc.chars().map(String::from).collect();
            for (at, kind, fragment) in edits {
                let i = at.index(chars.len() + 1);
                match kind {
                    0 => chars.insert(i, fragment.to_owned()),
                    1 if i < chars.len() => {
                        chars.remove(i);
                    }
                    _ if i < chars.len() => chars[i] = fragment.to_owned(),
                    _ => chars.push(fragment.to_owned()),
                }
            }
            chars.concat()
        })
}

/// Both readings of `text` under `limits`: verdict, value and reason agree.
fn agree(text: &str, limits: &Limits) -> Result<(), TestCaseError> {
    let reader = strict_json::parse_value(text, limits);
    let borrowed = strict_json::parse_json(text, limits).map(portcullis_wire::Json::into_value);
    let reference = reference::parse_value(text, limits);
    prop_assert_eq!(
        reader.as_ref().ok(),
        reference.as_ref().ok(),
        "the reader and the reference disagree on {:?}",
        text
    );
    prop_assert_eq!(reader.as_ref().ok(), borrowed.as_ref().ok());
    if let (Err(mine), Err(theirs)) = (&reader, &reference) {
        prop_assert_eq!(&mine.reason, &theirs.reason);
        prop_assert_eq!(mine.stage, Stage::Json);
    }
    // The reference's verdict alone (what words a refusal) is its reading's.
    prop_assert_eq!(
        reference::verdict(text, limits),
        reference.as_ref().map(drop).map_err(Clone::clone)
    );
    // The envelope reader decides the JSON stage alike.
    let message = parse_message_borrowed(text, limits);
    let json_refused = matches!(&message, Err(r) if r.stage == Stage::Json);
    prop_assert_eq!(json_refused, reference.is_err(), "envelope on {:?}", text);
    // Skimming `params._meta` changes nothing but what it drops: the same
    // refusal, or the same message less the members it does not keep.
    let skimmed =
        parse_message_skimmed(text, limits, &SKIM).map_err(portcullis_wire::Unworded::word);
    match (&message, &skimmed) {
        (Err(whole), Err(skimmed)) => prop_assert_eq!(whole, skimmed, "skimmed on {:?}", text),
        (Ok(whole), Ok(skimmed)) => prop_assert_eq!(
            without_dropped(whole.clone()),
            skimmed
                .clone()
                .map_params(portcullis_wire::Object::into_map),
            "skimmed on {:?}",
            text
        ),
        _ => prop_assert!(false, "skimming changed the verdict on {:?}", text),
    }
    Ok(())
}

/// The member the differential tests skim, and what they keep of it: one
/// key the generated texts often hold, one they hold inside nesting.
const SKIM: Skim = Skim {
    member: "_meta",
    keep: &["progressToken", "a"],
};

/// `message` as the skimmed reading should give it: `params._meta`, when
/// an object, with only the kept members (an oracle on `Value`s, sharing
/// nothing with the reader's skip).
fn without_dropped<'a>(
    message: RpcMessage<'a, portcullis_wire::Object<'a>>,
) -> RpcMessage<'a, serde_json::Map<String, Value>> {
    message.map_params(|params| {
        let mut params = params.into_map();
        if let Some(Value::Object(meta)) = params.get_mut(SKIM.member) {
            meta.retain(|key, _| SKIM.keep.contains(&key.as_str()));
        }
        params
    })
}

/// A request whose `params._meta` is token soup, soup inside objects, or
/// nested around the depth limit: what the skim checks and drops.
fn meta_soup() -> impl Strategy<Value = String> {
    // Each level is an array or an object under a kept or a dropped key,
    // beside a second member that may repeat the first's key (written
    // plainly or escaped).
    let level = (
        0u8..2,
        prop::sample::select(vec!["a", "b", "progressToken", "\\u0062"]),
        prop::sample::select(vec!["b", "c", "\\u0062", "a"]),
    );
    let inner = prop_oneof![
        prop::sample::select(vec!["1", "\"s\"", "null", "[]", "{}", "-0.5"]).prop_map(String::from),
        soup(),
    ];
    let nested = (prop::collection::vec(level, 0..8), inner).prop_map(|(levels, inner)| {
        let mut text = inner;
        for (kind, key, other) in levels {
            text = if kind == 0 {
                format!("[{text}]")
            } else {
                format!("{{\"{key}\":{text},\"{other}\":1}}")
            };
        }
        text
    });
    let meta = prop_oneof![soup(), structured_soup(), nested];
    (meta, prop::bool::ANY).prop_map(|(meta, first)| {
        let other = r#""name":"t","arguments":{"a":1}"#;
        let params = if first {
            format!("{{\"_meta\":{meta},{other}}}")
        } else {
            format!("{{{other},\"_meta\":{meta}}}")
        };
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#)
    })
}

fn limits(max_depth: usize) -> Limits {
    Limits {
        max_depth,
        ..Limits::default()
    }
}

fn value_limit(max_values: usize) -> Limits {
    Limits {
        max_values,
        ..Limits::default()
    }
}

/// The values in `value`, every scalar, array and object once: counted on
/// the tree serde_json built, sharing nothing with either reading's count.
fn values_in(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(values_in).sum(),
        Value::Object(members) => members.values().map(values_in).sum(),
        _ => 0,
    }
}

/// Any of the texts the other properties draw.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![soup(), structured_soup(), mutated_document(), meta_soup()]
}

proptest! {
    #![proptest_config(config(3000))]

    #[test]
    fn the_reader_and_the_reference_agree_on_token_soup(text in soup()) {
        agree(&text, &Limits::default())?;
    }

    #[test]
    fn the_reader_and_the_reference_agree_inside_objects(text in structured_soup()) {
        agree(&text, &Limits::default())?;
    }

    #[test]
    fn the_reader_and_the_reference_agree_on_mutated_documents(text in mutated_document()) {
        agree(&text, &Limits::default())?;
    }

    #[test]
    fn the_reader_and_the_reference_agree_on_skimmed_meta(
        text in meta_soup(),
        max_depth in 2usize..12,
    ) {
        agree(&text, &limits(max_depth))?;
    }

    #[test]
    fn the_reader_and_the_reference_agree_around_the_depth_limit(
        opens in prop::collection::vec(prop::bool::ANY, 1..12),
        max_depth in 1usize..10,
        inner in prop::sample::select(FRAGMENTS),
    ) {
        let mut text = String::from(inner);
        for array in opens {
            text = if array { format!("[{text}]") } else { format!("{{\"k\":{text}}}") };
        }
        agree(&text, &limits(max_depth))?;
    }

    #[test]
    fn the_reader_and_the_reference_agree_around_the_value_limit(
        text in any_text(),
        max_values in 0usize..40,
    ) {
        agree(&text, &value_limit(max_values))?;
    }

    #[test]
    fn an_accepted_text_is_accepted_at_its_own_count_of_values_and_refused_below(
        text in any_text(),
    ) {
        if let Ok(value) = strict_json::parse_value(&text, &Limits::default()) {
            let count = values_in(&value);
            agree(&text, &value_limit(count))?;
            prop_assert!(strict_json::parse_value(&text, &value_limit(count)).is_ok());
            agree(&text, &value_limit(count - 1))?;
            let refused = strict_json::parse_value(&text, &value_limit(count - 1));
            prop_assert!(
                refused.as_ref().is_err_and(|r| r
                    .reason
                    .starts_with(&format!("frame exceeds max_frame_values ({})", count - 1))),
                "{:?} holds {} values: {:?}", text, count, refused
            );
        }
    }
}

#[test]
fn dropped_values_of_every_shape_are_read_alike() {
    for value in [
        "[]",
        "{}",
        "[[]]",
        "[{}]",
        r#"{"a":[]}"#,
        r#"{"a":{}}"#,
        r#"[1,"s",null,true,false,-0.5,{"k":[]},[]]"#,
        r#""\u00e9\n""#,
        "-0",
    ] {
        for meta in [
            format!(r#"{{"b":{value}}}"#),
            format!(r#"{{"b":{value},"progressToken":{value},"c":{value}}}"#),
        ] {
            let text =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{meta}}}}}"#);
            agree(&text, &Limits::default()).unwrap();
            parse_message_skimmed(&text, &Limits::default(), &SKIM)
                .unwrap_or_else(|e| panic!("{text}: {}", e.word()));
        }
    }
}

#[test]
fn only_params_is_skimmed() {
    // `_meta` elsewhere (a response's result, an error's data, a member
    // nested in params) is read whole.
    for text in [
        r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"progressToken":"p","b":[1]}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m","data":{"_meta":{"b":1}}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":{"_meta":{"b":1}}}}"#,
    ] {
        let whole = parse_message_borrowed(text, &Limits::default())
            .unwrap()
            .map_params(portcullis_wire::Object::into_map);
        let skimmed = parse_message_skimmed(text, &Limits::default(), &SKIM)
            .unwrap()
            .map_params(portcullis_wire::Object::into_map);
        assert_eq!(whole, skimmed, "{text}");
    }
}

/// Each shape counted by hand, at its count and one below: every scalar,
/// array and object is one value, keys are none; `params._meta`, which the
/// skim reads without keeping, counts alike.
#[test]
fn values_are_counted_one_per_scalar_array_and_object() {
    for (text, count) in [
        ("0", 1),
        ("[]", 1),
        ("{}", 1),
        (r#"{"a":1}"#, 2),
        (r#"[{"a":[true,null]},"s",-0.5]"#, 7),
        (r#"{"a":{"b":{"c":{}}}}"#, 4),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":"p","b":[1,{"c":2}]}}}"#,
            11,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":[1,2]}}"#,
            8,
        ),
        (r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"b":1}}}"#, 6),
    ] {
        agree(text, &value_limit(count)).unwrap();
        agree(text, &value_limit(count - 1)).unwrap();
        assert!(
            strict_json::parse_value(text, &value_limit(count)).is_ok(),
            "{text}"
        );
        assert!(
            strict_json::parse_value(text, &value_limit(count - 1)).is_err(),
            "{text}"
        );
        // The envelope readers, whole and skimmed, count alike (a text
        // that is not a message is refused at the rpc stage at its count).
        for limit in [count, count - 1] {
            let json_refused = |stage: Option<Stage>| stage == Some(Stage::Json);
            let whole = parse_message_borrowed(text, &value_limit(limit)).err();
            let skimmed = parse_message_skimmed(text, &value_limit(limit), &SKIM).err();
            assert_eq!(
                json_refused(whole.map(|r| r.stage)),
                limit < count,
                "{text} at {limit}"
            );
            assert_eq!(
                json_refused(skimmed.map(|r| r.stage())),
                limit < count,
                "{text} skimmed at {limit}"
            );
        }
    }
}

#[test]
fn nesting_beyond_the_hard_limit_is_refused_alike() {
    for depth in [126, 127, 128, 129, 200] {
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let reader = strict_json::parse_value(&text, &limits(1000));
        let reference = reference::parse_value(&text, &limits(1000));
        assert_eq!(reader.is_ok(), reference.is_ok(), "depth {depth}");
        assert_eq!(reader.is_ok(), depth <= 127, "depth {depth}");
    }
}

#[test]
fn a_refusal_is_worded_as_serde_json_words_it() {
    let reason = |text: &str| {
        strict_json::parse_value(text, &Limits::default())
            .unwrap_err()
            .reason
    };
    assert_eq!(reason("{} {}"), "trailing characters at line 1 column 4");
    assert_eq!(reason(""), "EOF while parsing a value at line 1 column 0");
    assert!(reason(r#"{"a":1,"a":2}"#).starts_with("duplicate object key \"a\""));
}

#[test]
fn doubles_are_the_doubles_serde_json_reads() {
    for text in [
        "0.1",
        "1e22",
        "-1.0e+28",
        "2.2250738585072014e-308",
        "1e-400",
        "-0.0",
        "-0",
    ] {
        let reader = strict_json::parse_value(text, &Limits::default()).unwrap();
        let serde: Value = serde_json::from_str(text).unwrap();
        assert_eq!(reader, serde, "{text}");
        assert_eq!(
            reader.as_f64().map(f64::to_bits),
            serde.as_f64().map(f64::to_bits),
            "{text}"
        );
    }
}

/// Objects past the size where the reader switches from scanning the keys
/// read so far to a hash set: distinct keys are all kept, and a repeat is
/// found wherever it falls, escaped or not.
/// `object` as a request's `params._meta`, and as a member of it that the
/// skim drops.
fn in_meta(object: &str) -> [String; 2] {
    let request = |meta: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{meta}}}}}"#)
    };
    [request(object), request(&format!(r#"{{"b":{object}}}"#))]
}

#[test]
fn large_objects_keep_distinct_keys_and_refuse_a_repeat_alike() {
    let object = |keys: &[String]| {
        let members: Vec<String> = keys.iter().map(|k| format!("\"{k}\":0")).collect();
        format!("{{{}}}", members.join(","))
    };
    for size in [15, 16, 17, 18, 40] {
        let keys: Vec<String> = (0..size).map(|i| format!("k{i}")).collect();
        let text = object(&keys);
        agree(&text, &Limits::default()).unwrap();
        let read = strict_json::parse_value(&text, &Limits::default()).unwrap();
        assert_eq!(read.as_object().map(serde_json::Map::len), Some(size));
        // As `_meta` (its keys checked beside the kept ones) and as a
        // dropped member inside it (checked by the skip alone).
        for meta in in_meta(&text) {
            agree(&meta, &Limits::default()).unwrap();
            parse_message_skimmed(&meta, &Limits::default(), &SKIM).unwrap();
        }
        for repeat in [0, size / 2, size - 1] {
            for spelling in [format!("k{repeat}"), format!("\\u006b{repeat}")] {
                let mut with_repeat = keys.clone();
                with_repeat.push(spelling);
                let text = object(&with_repeat);
                agree(&text, &Limits::default()).unwrap();
                for meta in in_meta(&text) {
                    agree(&meta, &Limits::default()).unwrap();
                    let refusal = parse_message_skimmed(&meta, &Limits::default(), &SKIM)
                        .unwrap_err()
                        .word();
                    assert!(refusal.reason.starts_with("duplicate object key"), "{meta}");
                }
                let refusal = strict_json::parse_value(&text, &Limits::default()).unwrap_err();
                assert!(
                    refusal.reason.starts_with("duplicate object key"),
                    "{text}: {}",
                    refusal.reason
                );
            }
        }
    }
}

/// A large integral double (`1e22`) makes the reference look for integer
/// tokens beyond ±(2^53−1) in the text: digits inside a string, after an
/// escaped quote or in a key, are not such a token, nor is ±(2^53−1)
/// itself; digits after a string (one ending in an escaped backslash
/// included) are.
#[test]
fn digits_inside_strings_are_not_integer_tokens() {
    let accepted = [
        r#"["99999999999999999999",1e22]"#,
        r#"[1e22,"99999999999999999999"]"#,
        r#"["\"99999999999999999999",1e22]"#,
        r#"["a\\\"99999999999999999999\"",1e22]"#,
        r#"{"k99999999999999999999":1e22}"#,
        r#"[9007199254740991,-9007199254740991,1e22]"#,
    ];
    for text in accepted {
        agree(text, &Limits::default()).unwrap();
        assert!(
            reference::parse_value(text, &Limits::default()).is_ok(),
            "{text}"
        );
    }
    for text in [
        r#"["\\",99999999999999999999]"#,
        r#"["",1e22,-12345678901234567890]"#,
        r#"["a",1e22,99999999999999999999]"#,
    ] {
        agree(text, &Limits::default()).unwrap();
        assert!(
            reference::parse_value(text, &Limits::default()).is_err(),
            "{text}"
        );
    }
}

/// Every fragment and every pair of fragments, bare, side by side and as
/// array items: the edges each fragment was written for are met on every
/// run, however few random cases the property tests draw.
#[test]
fn the_reader_and_the_reference_agree_on_every_fragment_pair() {
    for first in FRAGMENTS {
        agree(first, &Limits::default()).unwrap();
        for second in FRAGMENTS {
            agree(&format!("{first}{second}"), &Limits::default()).unwrap();
            agree(&format!("[{first},{second}]"), &Limits::default()).unwrap();
        }
    }
}
