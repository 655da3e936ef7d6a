//! Tool pins: the SHA-256 of the JCS-canonical (RFC 8785) form of what a
//! tool tells the model — `name`, `description`, `inputSchema` and
//! `annotations` (members that are absent stay absent). JCS sorts keys and
//! writes numbers the ECMAScript way, so `{"b":1,"a":1.0}` and
//! `{"a":1,"b":1e0}` pin alike: a pin changes when the definition does, not
//! when its spelling does.
//!
//! A pins file is JSON: `{"format": "portcullis-pins/1", "tools": {NAME:
//! "sha256:HEX", ...}}`.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// The `format` member of a pins file.
pub const PINS_FORMAT: &str = "portcullis-pins/1";

/// The members of a tool definition a pin covers.
pub const PINNED_MEMBERS: [&str; 4] = ["name", "description", "inputSchema", "annotations"];

/// One tool's pin.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pin([u8; 32]);

impl Pin {
    /// The pin of a tool definition (one element of `tools/list`'s `tools`).
    pub fn of(tool: &Map<String, Value>) -> Self {
        // Borrowed, and hashed as it is written: a definition may be as
        // large as a frame, and is neither copied nor kept whole once more.
        let pinned: BTreeMap<&str, &Value> = PINNED_MEMBERS
            .iter()
            .filter_map(|k| tool.get(*k).map(|v| (*k, v)))
            .collect();
        let mut hasher = Sha256::new();
        // Neither can fail: every number in a `Value` is finite, and a hash
        // takes every byte written to it.
        let _ = serde_json_canonicalizer::to_writer(&pinned, &mut hasher);
        Self(hasher.finalize().into())
    }

    /// `sha256:` and 64 lowercase hex digits.
    pub fn to_text(self) -> String {
        format!("sha256:{}", hex::encode(self.0))
    }

    /// Parse [`Self::to_text`]'s form.
    pub fn parse(text: &str) -> Option<Self> {
        let hex_part = text.strip_prefix("sha256:")?;
        if hex_part.len() != 64 || hex_part.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hex_part, &mut bytes).ok()?;
        Some(Self(bytes))
    }
}

impl fmt::Debug for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pin({})", &hex::encode(self.0)[..16])
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

/// Pins by tool name.
pub type Pins = BTreeMap<String, Pin>;

/// A pins file that cannot be used.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum PinsFileError {
    /// Not strict JSON.
    #[error("not valid JSON: {0}")]
    Json(String),
    /// Valid JSON, wrong shape.
    #[error("{0}")]
    Shape(String),
}

/// Parse a pins file.
pub fn parse_pins(text: &str) -> Result<Pins, PinsFileError> {
    let value =
        portcullis_wire::strict_json::parse_value(text, &portcullis_wire::Limits::default())
            .map_err(|r| PinsFileError::Json(r.reason))?;
    let shape = |m: &str| PinsFileError::Shape(m.to_owned());
    let Value::Object(mut root) = value else {
        return Err(shape("the pins file must be a JSON object"));
    };
    if root.remove("format").as_ref().and_then(Value::as_str) != Some(PINS_FORMAT) {
        return Err(shape(&format!("\"format\" must be \"{PINS_FORMAT}\"")));
    }
    let Some(Value::Object(tools)) = root.remove("tools") else {
        return Err(shape(
            "\"tools\" must be an object of name → \"sha256:HEX\"",
        ));
    };
    if let Some(extra) = root.keys().next() {
        return Err(shape(&format!("unknown member {extra:?}")));
    }
    tools
        .into_iter()
        .map(|(name, pin)| {
            let parsed = pin.as_str().and_then(Pin::parse);
            parsed.map(|pin| (name.clone(), pin)).ok_or_else(|| {
                shape(&format!(
                    "tools[{name:?}] must be \"sha256:\" and 64 lowercase hex digits"
                ))
            })
        })
        .collect()
}

/// The pins file text for `pins` (pretty, one tool a line, newline-ended).
pub fn render_pins(pins: &Pins) -> String {
    let tools: Map<String, Value> = pins
        .iter()
        .map(|(name, pin)| (name.clone(), Value::String(pin.to_text())))
        .collect();
    let doc = json!({ "format": PINS_FORMAT, "tools": tools });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(text: &str) -> Map<String, Value> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn key_order_and_number_spelling_do_not_change_a_pin() {
        let a = tool(
            r#"{"name":"add","description":"Add","inputSchema":{"type":"object","properties":{"a":{"type":"number","maximum":100}}}}"#,
        );
        let b = tool(
            r#"{"inputSchema":{"properties":{"a":{"maximum":1e2,"type":"number"}},"type":"object"},"description":"Add","name":"add"}"#,
        );
        let c = tool(
            r#"{"inputSchema":{"properties":{"a":{"maximum":100.0,"type":"number"}},"type":"object"},"description":"Add","name":"add"}"#,
        );
        assert_eq!(Pin::of(&a), Pin::of(&b));
        assert_eq!(Pin::of(&a), Pin::of(&c));
    }

    #[test]
    fn a_changed_description_schema_or_annotation_changes_the_pin() {
        let base = tool(r#"{"name":"t","description":"d","inputSchema":{"type":"object"}}"#);
        for changed in [
            r#"{"name":"t","description":"d!","inputSchema":{"type":"object"}}"#,
            r#"{"name":"t","description":"d","inputSchema":{"type":"object","properties":{}}}"#,
            r#"{"name":"t","description":"d","inputSchema":{"type":"object"},"annotations":{}}"#,
            r#"{"name":"u","description":"d","inputSchema":{"type":"object"}}"#,
            r#"{"name":"t","inputSchema":{"type":"object"}}"#,
        ] {
            assert_ne!(Pin::of(&base), Pin::of(&tool(changed)), "{changed}");
        }
    }

    #[test]
    fn members_outside_the_pin_do_not_change_it() {
        let base = tool(r#"{"name":"t","description":"d","inputSchema":{"type":"object"}}"#);
        let titled = tool(
            r#"{"name":"t","title":"T","description":"d","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}"#,
        );
        assert_eq!(Pin::of(&base), Pin::of(&titled));
    }

    /// A pin reads back only from its own form: `sha256:`, then 64
    /// lowercase hex digits; it shows as that form, and debugs as a prefix.
    #[test]
    fn a_pin_parses_only_from_its_own_form_and_shows_as_it() {
        let pin = Pin([0xab; 32]);
        let text = pin.to_text();
        assert_eq!(text, format!("sha256:{}", "ab".repeat(32)));
        assert_eq!(Pin::parse(&text), Some(pin));
        assert_eq!(format!("{pin}"), text);
        assert_eq!(format!("{pin:?}"), "Pin(abababababababab)");
        for bad in [
            format!("sha256:{}", "AB".repeat(32)),
            format!("sha256:{}", "ab".repeat(31)),
            format!("sha256:{}a", "ab".repeat(32)),
            "ab".repeat(32),
        ] {
            assert_eq!(Pin::parse(&bad), None, "{bad}");
        }
    }

    #[test]
    fn the_pin_is_the_sha256_of_the_rfc8785_form() {
        // RFC 8785 §3.2.3 sorts by UTF-16 code units and writes 1e2 as 100.
        let t = tool(r#"{"name":"t","inputSchema":{"b":1e2,"a":"\u20ac"}}"#);
        let canonical = "{\"inputSchema\":{\"a\":\"\u{20ac}\",\"b\":100},\"name\":\"t\"}";
        assert_eq!(
            Pin::of(&t).to_text(),
            format!(
                "sha256:{}",
                hex::encode(Sha256::digest(canonical.as_bytes()))
            )
        );
    }

    #[test]
    fn a_pins_file_round_trips_and_refuses_other_shapes() {
        let mut pins = Pins::new();
        pins.insert("a".into(), Pin::of(&tool(r#"{"name":"a"}"#)));
        pins.insert("b".into(), Pin::of(&tool(r#"{"name":"b"}"#)));
        assert_eq!(parse_pins(&render_pins(&pins)), Ok(pins));
        for bad in [
            "[]",
            r#"{"tools":{}}"#,
            r#"{"format":"portcullis-pins/1","tools":{"a":"md5:00"}}"#,
            r#"{"format":"portcullis-pins/1","tools":{},"extra":1}"#,
            r#"{"format":"portcullis-pins/1","tools":{"a":"x","a":"y"}}"#,
        ] {
            assert!(parse_pins(bad).is_err(), "{bad}");
        }
    }
}
