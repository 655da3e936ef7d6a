//! The canonical form of a call's arguments, whose SHA-256 its intent record
//! carries: compact JSON (no whitespace), object members sorted by the
//! bytes of their keys (UTF-8), recursively; a string with only `"`, `\`
//! and the controls below U+0020 escaped (`\b \f \n \r \t`, the others
//! `\u00xx` in lowercase hex), everything else as itself; a number as
//! serde_json writes it (an integer in decimal, any other in the shortest
//! form that reads back as the same double).
//!
//! The order is fixed here rather than taken from the map: serde_json's
//! map keeps keys sorted or in insertion order depending on a crate
//! feature any dependency may turn on, and RFC 8785 orders by UTF-16 code
//! units, which differs from byte order above U+FFFF. A verifier
//! recomputes the hash from the arguments with nothing but this paragraph.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// SHA-256 (64 lowercase hex digits) of `arguments` in canonical form; of
/// `{}` when absent.
pub fn arguments_sha256(arguments: Option<&Value>) -> String {
    let mut bytes = Vec::new();
    match arguments {
        Some(value) => write_canonical(value, &mut bytes),
        None => bytes.extend_from_slice(b"{}"),
    }
    hex::encode(Sha256::digest(&bytes))
}

/// `value` in canonical form.
pub fn canonical(value: &Value) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_canonical(value, &mut bytes);
    bytes
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
    }
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &b in s.as_bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x00..=0x1f => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
            // Multi-byte characters pass byte by byte: none of their bytes
            // is below 0x80.
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expected digests were computed outside Rust, by Python's
    /// `hashlib.sha256(json.dumps(v, sort_keys=True, separators=(",", ":"),
    /// ensure_ascii=False).encode()).hexdigest()` (Python sorts keys by code
    /// point, which is UTF-8 byte order, and escapes strings as above).
    #[test]
    fn digests_match_an_independent_computation() {
        let cases = [
            (
                "absent",
                None,
                "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
            ),
            (
                "flat, keys out of order",
                Some(r#"{"b": 2, "a": "x"}"#),
                "768ca668c0f84dd39bf269e25c9a3f0af4812e41026b6fead9a2666078ef16f6",
            ),
            (
                "nested",
                Some(r#"{"z": {"y": [1, {"b": null, "a": true}], "x": -3}, "a": 10.5}"#),
                "fa548b7f4ba83b3b6498f340bbea099afd27b57926ca7819c0c76ee37c5a2c0d",
            ),
            (
                "escapes",
                Some("{\"s\": \"tab\\t nl\\n quote\\\" back\\\\ bell\\u0007 del\\u007f\"}"),
                "4f1329c74154f17d532b1f18c09a8a71d73bdca930b44eb26f2bbe0ba15611b3",
            ),
            (
                "astral after high BMP (byte order, not UTF-16)",
                Some("{\"\u{1F600}\": 1, \"\u{FF61}\": 2, \"e\": 3}"),
                "a0d37c0a2d662a0a480c248f2a66ef005ba16ff354d19e09a5794889a0aebee8",
            ),
            (
                "unicode text as itself",
                Some("{\"m\": \"caf\u{e9} \u{2028} \u{1F600}\"}"),
                "c4fcd289599192bb82cbbea99ccade853679ac9d9b684ab3ec8d8714a470d3d6",
            ),
        ];
        for (what, text, expected) in cases {
            let value: Option<Value> = text.map(|t| serde_json::from_str(t).unwrap());
            assert_eq!(arguments_sha256(value.as_ref()), expected, "{what}");
        }
    }

    #[test]
    fn members_are_sorted_by_key_bytes_at_every_depth() {
        let value: Value = serde_json::from_str(
            "{\"\u{1F600}\":{\"b\":1,\"a\":[{\"d\":0,\"c\":0}]},\"\u{FF61}\":2,\"e\":3}",
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(canonical(&value)).unwrap(),
            "{\"e\":3,\"\u{FF61}\":2,\"\u{1F600}\":{\"a\":[{\"c\":0,\"d\":0}],\"b\":1}}"
        );
    }

    /// The example of `docs/audit.md`, byte for byte.
    #[test]
    fn the_documented_example_holds() {
        let value: Value = serde_json::from_str(r#"{"b":[1,2.5,"é\n"],"a":{}}"#).unwrap();
        assert_eq!(
            canonical(&value),
            r#"{"a":{},"b":[1,2.5,"é\n"]}"#.as_bytes()
        );
    }
}
