//! Shared helpers: authorized actions from policy text, SSH tools and a
//! fake `ssh` (`ssh`), the scrubber's spelling oracle (`spelling`), and an
//! independent oracle for a credential read back from a text. The fake
//! services are `portcullis_testkit::fakes`.

#![expect(
    dead_code,
    reason = "each test binary that includes this module uses only some of its helpers"
)]

pub mod spelling;
pub mod ssh;

use std::path::Path;

use portcullis_gateway::{AuthorizedAction, BoundPolicy, Policy, SecretStore, schema};
use serde_json::Value;

/// Load `policy_text`, bind `store`, check `args` against `tool`'s schema
/// and authorize the call.
pub fn authorize(
    policy_text: &str,
    store: SecretStore,
    tool: &str,
    args: Value,
) -> AuthorizedAction {
    let policy = Policy::from_toml(policy_text, Path::new("test.toml"))
        .unwrap_or_else(|e| panic!("policy: {e}\n{policy_text}"))
        .bind_secrets(store);
    authorize_with(&policy, tool, args)
}

/// Authorize against an already loaded policy.
pub fn authorize_with(policy: &BoundPolicy, tool: &str, args: Value) -> AuthorizedAction {
    let spec = policy.tool(tool).expect("tool in policy");
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    let checked = schema::check(spec, map).unwrap_or_else(|e| panic!("schema: {e:?}"));
    portcullis_gateway::authz::authorize(&checked, policy.secrets())
        .unwrap_or_else(|d| panic!("denied: {d}"))
}

/// A unique suffix for file names.
pub fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}

/// Every way `canary` could be read back from `text`: literally, after
/// percent-decoding (with and without `+` as space), after undoing JSON
/// escapes, or inside any run of base64 characters (either alphabet,
/// decoded from each of its four possible character offsets). This is an
/// independent oracle: it decodes, where the scrubber matches encodings.
pub fn canary_readings(text: &str, canary: &str) -> Vec<String> {
    use base64::Engine as _;
    use base64::alphabet::{STANDARD, URL_SAFE};
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    // Lenient: a run may end inside a group, or with its last character
    // shared with bytes that follow the canary.
    let lenient = GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent);
    let mut found = Vec::new();
    let percent_decoded = |s: &str, plus: bool| -> Vec<u8> {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match (b[i], hex) {
                (b'%', Some(v)) => {
                    out.push(v);
                    i += 3;
                }
                (b'+', _) if plus => {
                    out.push(b' ');
                    i += 1;
                }
                (c, _) => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        out
    };
    let contains = |hay: &[u8]| hay.windows(canary.len()).any(|w| w == canary.as_bytes());
    if text.contains(canary) {
        found.push("literally".to_owned());
    }
    if contains(&percent_decoded(text, false)) || contains(&percent_decoded(text, true)) {
        found.push("percent-decoded".to_owned());
    }
    let unescaped = text.replace("\\/", "/").replace("\\\"", "\"");
    if unescaped.contains(canary) {
        found.push("JSON-unescaped".to_owned());
    }
    for (name, url_safe) in [("base64", false), ("base64url", true)] {
        let is_b64 = |c: char| {
            c.is_ascii_alphanumeric()
                || if url_safe {
                    c == '-' || c == '_'
                } else {
                    c == '+' || c == '/'
                }
        };
        for run in text.split(|c: char| !is_b64(c)) {
            for offset in 0..4.min(run.len()) {
                let mut piece = &run[offset..];
                if piece.len() % 4 == 1 {
                    piece = &piece[..piece.len() - 1];
                }
                let engine =
                    GeneralPurpose::new(if url_safe { &URL_SAFE } else { &STANDARD }, lenient);
                if let Ok(bytes) = engine.decode(piece)
                    && contains(&bytes)
                {
                    found.push(format!("{name} in {run:?}"));
                }
            }
        }
    }
    found
}
