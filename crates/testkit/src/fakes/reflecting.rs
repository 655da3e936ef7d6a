//! [`ReflectingUpstream`]: a loopback HTTP service that reflects the
//! request's credential, for the scrubbing tests.

use std::io::Write;
use std::net::{Ipv4Addr, Shutdown, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

use super::read_request_head;

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
#[derive(Debug)]
pub struct ReflectingUpstream {
    /// The loopback port it listens on.
    pub port: u16,
    /// Connections accepted so far.
    pub requests: Arc<AtomicUsize>,
}

impl ReflectingUpstream {
    /// Serve `template` to every connection, on a thread of its own.
    pub fn start(template: Vec<u8>) -> Self {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        let port = listener.local_addr().expect("local address").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                seen.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
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
                let _ = stream.shutdown(Shutdown::Write);
            }
        });
        Self { port, requests }
    }
}

/// `template` with the placeholders of [`ReflectingUpstream`] replaced.
fn fill(template: &[u8], authorization: &str) -> Vec<u8> {
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
