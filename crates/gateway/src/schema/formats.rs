//! `format` in a policy's input schemas: only formats the gateway checks.
//!
//! With format assertion on, jsonschema 0.61 (built here without its `idna`
//! feature) checks the [`CHECKED_FORMATS`] of JSON Schema 2020-12 and
//! ignores every other name: `idn-hostname`, `idn-email`, a misspelling
//! such as `hostnmae`, OpenAPI's `int32`. A schema saying `format =
//! "idn-email"` would accept any string while the policy reads as if it
//! were checked. So a policy's schema may name only the formats in
//! [`CHECKED_FORMATS`]; any other is refused at load, naming the JSON
//! pointer of the keyword and the format (the loader adds the tool).
//!
//! Two passes look for them: every subschema of the document, at the
//! positions JSON Schema 2020-12 defines (whether or not anything refers to
//! it), then jsonschema's own compilation with unknown formats refused,
//! which also sees a schema that only a `$ref` into some other position
//! reaches. Servers behind `portcullis wrap` are not held to this: their
//! schemas are theirs, and a format the gateway cannot check is only an
//! annotation there.

use super::self_application::locate;
use referencing::Draft;
use serde_json::Value;

/// The formats the gateway checks: each one is asserted (a string that
/// does not match is refused), and a test holds every one to that.
pub const CHECKED_FORMATS: [&str; 17] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// How the refusal of a format the gateway does not check reads, after the
/// format and its pointer.
pub const UNCHECKED_FORMAT: &str = "is not checked by the gateway";

const DRAFT: Draft = Draft::Draft202012;

/// Refuse `document` (a schema that compiles) if it names a format outside
/// [`CHECKED_FORMATS`].
pub(super) fn refuse_unchecked(document: &Value) -> Result<(), String> {
    if let Some((at, format)) = first_unchecked(document) {
        return Err(refusal(&at, &format));
    }
    let strict = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        .build(document);
    match strict {
        Ok(_) => Ok(()),
        Err(err) => {
            // The schema compiled without this option, so a format is what
            // jsonschema does not know here.
            let at = err.schema_path().to_string();
            Err(match document.pointer(&at) {
                Some(Value::String(format)) if at.ends_with("/format") => refusal(&at, format),
                _ => format!("{err}; the formats the gateway checks are {}", listed()),
            })
        }
    }
}

fn refusal(at: &str, format: &str) -> String {
    format!(
        "format {format:?} at {at} {UNCHECKED_FORMAT} (it would accept any string); \
         the formats it checks are {}, and `pattern` constrains anything else",
        listed()
    )
}

fn listed() -> String {
    CHECKED_FORMATS.join(", ")
}

/// The pointer and name of the first `format` outside the checked ones, in
/// the document's order.
fn first_unchecked(document: &Value) -> Option<(String, String)> {
    let mut pending = vec![(document, String::new())];
    while let Some((schema, at)) = pending.pop() {
        if let Some(Value::String(format)) = schema.get("format")
            && !CHECKED_FORMATS.contains(&format.as_str())
        {
            return Some((format!("{at}/format"), format.clone()));
        }
        let children: Vec<&Value> = DRAFT.subresources_of(schema).collect();
        for child in children.into_iter().rev() {
            pending.push((child, format!("{at}{}", locate(schema, child))));
        }
    }
    None
}
