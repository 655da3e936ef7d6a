//! The canonical form of a call's arguments (`canonical::canonical`, whose
//! hash an intent record carries) writes strings and member order exactly
//! as RFC 8785 does wherever the two agree by definition: strings (the
//! short escapes `\b \t \n \f \r`, other controls as lowercase `\u00xx`,
//! everything else as itself) and objects whose keys lie below U+10000
//! (where UTF-16 order is byte order). The judge is serde_json_canonicalizer,
//! an implementation of the RFC that shares no code with ours.

use portcullis_wrap::canonical::canonical;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Text rich in what a writer can get wrong: every control, quotes,
/// backslashes, the line separators, non-ASCII and astral characters.
fn text() -> impl Strategy<Value = String> {
    let special = prop_oneof![
        (0u32..0x20).prop_map(|c| char::from_u32(c).expect("a control")),
        prop::sample::select(vec!['"', '\\', '/', '\u{7f}', '\u{2028}', 'é', '\u{1F600}']),
        any::<char>(),
        prop::char::range('a', 'z'),
    ];
    prop::collection::vec(special, 0..24).prop_map(|cs| cs.into_iter().collect())
}

fn bmp_key() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            prop::char::range('a', 'e'),
            prop::sample::select(vec!['\u{8}', '\u{c}', '\r', 'é', '\u{FF61}']),
        ],
        0..4,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        text().prop_map(Value::String),
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((bmp_key(), inner), 0..4)
                .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn strings_and_member_order_are_rfc_8785s(v in value()) {
        let expected = serde_json_canonicalizer::to_vec(&v).expect("a Value serializes");
        let ours = canonical(&v);
        prop_assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&expected));
    }
}

#[test]
fn each_control_is_written_as_the_rfc_writes_it() {
    for c in (0u32..0x20).chain([0x22, 0x5c, 0x7f]) {
        let s = Value::String(char::from_u32(c).expect("a char").to_string());
        assert_eq!(
            canonical(&s),
            serde_json_canonicalizer::to_vec(&s).expect("serializes"),
            "U+{c:04X}"
        );
    }
    assert_eq!(
        canonical(&Value::String("\u{8}\u{c}\r".into())),
        br#""\b\f\r""#
    );
}
