//! Shared helpers: authorized actions from policy text.

#![allow(dead_code)]

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

/// An upstream that answers every connection with a response template in
/// which placeholders are replaced by what the request carried, the way an
/// echo service, an error page or a redirect reflects the credential:
///
/// - `{{AUTHORIZATION}}`: the `Authorization` header value as received;
/// - `{{AUTHORIZATION_JSON}}`: the same as a JSON string body with `/`
///   escaped as `\/` (as PHP writes it);
/// - `{{AUTHORIZATION_PERCENT}}`: every byte but ASCII letters and digits
///   as `%XX`;
/// - `{{AUTHORIZATION_BASE64}}`: standard base64 of the header value;
/// - `{{TOKEN}}`: the value after `Bearer `;
/// - `{{TOKEN_PERCENT_LOWER}}`: that value, percent-encoded with lowercase
///   hex;
/// - `{{TOKEN_BASIC}}`: standard base64 of `user:<token>`;
/// - `{{TOKEN_BASE64URL}}`: URL-safe base64 of the token, no padding;
/// - `{{CONTENT_LENGTH}}`: the length of the body (what follows the first
///   blank line) after the replacements.
///
/// The connection is closed after the response.
pub struct ReflectingUpstream {
    pub port: u16,
    pub requests: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl ReflectingUpstream {
    pub fn start(template: Vec<u8>) -> Self {
        use std::io::Write;
        use std::sync::atomic::Ordering;
        let listener =
            std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).expect("bind");
        let port = listener.local_addr().expect("local address").port();
        let requests = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                seen.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let head = read_request_head(&mut stream);
                let authorization = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("authorization")
                            .then(|| value.trim().to_owned())
                    })
                    .unwrap_or_default();
                let _ = stream.write_all(&fill(&template, &authorization));
                let _ = stream.flush();
                let _ = stream.shutdown(std::net::Shutdown::Write);
            }
        });
        Self { port, requests }
    }
}

fn read_request_head(stream: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// `template` with the placeholders of [`ReflectingUpstream`] replaced.
pub fn fill(template: &[u8], authorization: &str) -> Vec<u8> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let token = authorization
        .strip_prefix("Bearer ")
        .unwrap_or(authorization);
    let percent = |s: &str, lower: bool| -> String {
        s.bytes()
            .map(|b| match (b.is_ascii_alphanumeric(), lower) {
                (true, _) => char::from(b).to_string(),
                (false, false) => format!("%{b:02X}"),
                (false, true) => format!("%{b:02x}"),
            })
            .collect()
    };
    let json = serde_json::to_string(authorization)
        .expect("a string")
        .replace('/', "\\/");
    let text = String::from_utf8_lossy(template)
        .replace("{{AUTHORIZATION_JSON}}", &json[1..json.len() - 1])
        .replace("{{AUTHORIZATION_PERCENT}}", &percent(authorization, false))
        .replace("{{AUTHORIZATION_BASE64}}", &STANDARD.encode(authorization))
        .replace("{{AUTHORIZATION}}", authorization)
        .replace("{{TOKEN_PERCENT_LOWER}}", &percent(token, true))
        .replace("{{TOKEN_BASIC}}", &STANDARD.encode(format!("user:{token}")))
        .replace("{{TOKEN_BASE64URL}}", &URL_SAFE_NO_PAD.encode(token))
        .replace("{{TOKEN}}", token);
    let body_len = text
        .split_once("\r\n\r\n")
        .map_or(0, |(_, body)| body.len());
    text.replace("{{CONTENT_LENGTH}}", &body_len.to_string())
        .into_bytes()
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
