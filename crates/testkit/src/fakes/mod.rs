//! Fake services on loopback for the tests that exercise real executors and
//! the built binary: nothing here ships in a production crate.
//!
//! - [`FakeHttp`]: an HTTP service that answers `status ok for <path>`,
//!   counts connections and keeps every request head;
//! - [`ReflectingUpstream`]: an HTTP service that reflects the request's
//!   `Authorization` header into a response template, the way an echo
//!   service, an error page or a redirect leaks a credential;
//! - [`ScriptedHttp`]: an HTTP server that answers every connection the
//!   same scripted way ([`Reply`]), down to never answering;
//! - [`LocalSshd`]: a private OpenSSH server on `127.0.0.1`.

mod http;
mod local_sshd;
mod reflecting;
mod scripted;

use std::io::Read;
use std::net::TcpStream;

pub use http::FakeHttp;
pub use local_sshd::{LocalSshd, LocalSshdError, SSHD, toml_string};
pub use reflecting::ReflectingUpstream;
pub use scripted::{Reply, ScriptedHttp, response};

/// The request head (up to and including the blank line, at most 64 KiB),
/// read a byte at a time so nothing of a body is consumed.
fn read_request_head(stream: &mut TcpStream) -> String {
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
