//! The id read from the first bytes of an upstream line
//! (`upstream::leading_response_id`), judged against the structure the
//! line was built from: lines are generated member by member, so what the
//! reading must answer follows from what was generated, not from a second
//! scanner. An answer is read only where the line surely is the response
//! to that id; every prefix of a line is asked too, since an over-long
//! answer is judged by its first bytes alone.

use portcullis_wrap::upstream::leading_response_id;
use proptest::prelude::*;
use serde_json::Value;

/// One member of the generated object, in the order written.
#[derive(Debug, Clone)]
enum Member {
    /// `"jsonrpc"` with the string's raw text between the quotes.
    Jsonrpc(&'static str),
    /// `"id"` with the token's raw text.
    Id(IdToken),
    /// `"result"` or `"error"`: where a response's id must already be known.
    Answer(&'static str),
    /// Any other key (`method`, `params`, an escaped spelling of `id`).
    Other(&'static str),
}

#[derive(Debug, Clone)]
enum IdToken {
    /// A JSON integer of at most 16 digits without a leading zero: read.
    Readable(i64),
    /// Any other token: a string, a float, an exponent, a leading zero,
    /// 17 digits or more, null. Never read.
    Unreadable(&'static str),
}

impl IdToken {
    fn text(&self) -> String {
        match self {
            IdToken::Readable(n) => n.to_string(),
            IdToken::Unreadable(t) => (*t).to_owned(),
        }
    }
}

/// Whitespace JSON allows between tokens, and none.
fn space() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", " ", "\t", "\r\n", "\n  ", " \r"])
}

/// A readable id: 0, small, negative, and at the 16-digit edge.
fn readable() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(0i64),
        0i64..1000,
        -1000i64..0,
        Just(9_999_999_999_999_999),
        Just(-9_999_999_999_999_999),
        1_000_000_000_000_000i64..9_999_999_999_999_999,
        any::<i32>().prop_map(i64::from),
    ]
}

fn id_token() -> impl Strategy<Value = IdToken> {
    prop_oneof![
        4 => readable().prop_map(IdToken::Readable),
        1 => prop::sample::select(vec![
            "\"7\"",
            "7.5",
            "7e1",
            "07",
            "-07",
            "00",
            "10000000000000000",
            "-10000000000000000",
            "9223372036854775807",
            "null",
            "-",
            "+7",
        ])
        .prop_map(IdToken::Unreadable),
    ]
}

fn member() -> impl Strategy<Value = Member> {
    prop_oneof![
        3 => prop::sample::select(vec!["2.0", "2.0", "2.0 final", "", "2\\u002e0", "2.0\u{1}", "2.0\u{1f}"])
            .prop_map(Member::Jsonrpc),
        3 => id_token().prop_map(Member::Id),
        3 => prop::sample::select(vec!["result", "error"]).prop_map(Member::Answer),
        1 => prop::sample::select(vec!["method", "params", "i\\u0064", "ID", "id "]).prop_map(Member::Other),
    ]
}

/// A generated line: its text, and what the reading must answer for the
/// whole line and from which prefix length on.
#[derive(Debug)]
struct Line {
    text: String,
    /// The id the reading must give once it has seen `from` bytes.
    answer: Option<i64>,
    from: usize,
    /// No key repeats (else serde_json keeps the last of a repeated id,
    /// where the strict reader refuses the line).
    distinct: bool,
}

fn build(lead: &str, members: &[(Member, [&str; 4])], open: bool) -> Line {
    let mut text = String::from(lead);
    text.push(if open { '{' } else { '[' });
    let mut id = None;
    let mut keys = std::collections::HashSet::new();
    // `Some(x)` once the members seen so far decide the answer.
    let mut decided: Option<(Option<i64>, usize)> = if open { None } else { Some((None, 0)) };
    for (n, (m, [before_key, before_colon, after_colon, after_value])) in members.iter().enumerate()
    {
        if n > 0 {
            text.push(',');
        }
        text.push_str(before_key);
        let (key, value) = match m {
            Member::Jsonrpc(v) => ("jsonrpc".to_owned(), format!("\"{v}\"")),
            Member::Id(t) => ("id".to_owned(), t.text()),
            Member::Answer(k) => ((*k).to_owned(), "{\"x\":1}".to_owned()),
            Member::Other(k) => ((*k).to_owned(), "\"x\"".to_owned()),
        };
        text.push('"');
        text.push_str(&key);
        // As JSON reads it: `i\u0064` is `id`.
        keys.insert(key.replace("\\u0064", "d"));
        text.push('"');
        text.push_str(before_colon);
        text.push(':');
        let colon_end = text.len();
        text.push_str(after_colon);
        text.push_str(&value);
        text.push_str(after_value);
        if decided.is_some() {
            continue;
        }
        decided = match m {
            Member::Jsonrpc(v) if v.bytes().all(|b| b != b'\\' && b >= 0x20) => None,
            Member::Id(IdToken::Readable(n)) if id.is_none() => {
                id = Some(*n);
                None
            }
            Member::Answer(_) => Some((id, colon_end)),
            _ => Some((None, 0)),
        };
    }
    text.push('}');
    let (answer, from) = decided.unwrap_or((None, 0));
    let distinct = keys.len() == members.len();
    Line {
        text,
        answer,
        from,
        distinct,
    }
}

fn line() -> impl Strategy<Value = Line> {
    (
        space(),
        prop::collection::vec((member(), [space(), space(), space(), space()]), 0..6),
        prop::bool::weighted(0.95),
    )
        .prop_map(|(lead, members, open)| build(lead, &members, open))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn the_leading_id_is_read_exactly_where_the_line_is_surely_its_answer(l in line()) {
        let bytes = l.text.as_bytes();
        for cut in 0..=bytes.len() {
            let expected = if cut >= l.from { l.answer } else { None };
            prop_assert_eq!(
                leading_response_id(&bytes[..cut]),
                expected,
                "prefix {:?} of {:?}",
                String::from_utf8_lossy(&bytes[..cut]),
                l.text
            );
        }
        // Where an id is read and the line is JSON, serde_json agrees that
        // it is a response with that id.
        if let (Some(id), Ok(value), true) = (l.answer, serde_json::from_str::<Value>(&l.text), l.distinct) {
            prop_assert_eq!(value["id"].as_i64(), Some(id));
            prop_assert!(value.get("result").is_some() || value.get("error").is_some());
        }
    }
}

#[test]
fn the_ids_at_each_edge_of_the_reading() {
    let id = |text: &str| leading_response_id(text.as_bytes());
    assert_eq!(id(r#"{"id":0,"result":1}"#), Some(0));
    assert_eq!(
        id(r#"{"id":9999999999999999,"result":1}"#),
        Some(9_999_999_999_999_999)
    );
    assert_eq!(id(r#"{"id":10000000000000000,"result":1}"#), None);
    assert_eq!(id(r#"{"jsonrpc":"2.0 final","id":5,"error":1}"#), Some(5));
    assert_eq!(id("{\"jsonrpc\":\"2.0\u{1f}\",\"id\":5,\"error\":1}"), None);
    assert_eq!(id("{\t\"id\"\r:\n5 ,\"result\" :"), Some(5));
    assert_eq!(id(r#"{"id":5,"result""#), None);
    assert_eq!(id(r#"{"error":1}"#), None);
}
