//! Fake services on loopback for the tests that exercise real executors and
//! the built binary: nothing here ships in a production crate.
//!
//! - [`FakeHttp`]: an HTTP service that answers `status ok for <path>`,
//!   counts connections and keeps every request head;
//! - [`ReflectingUpstream`]: an HTTP service that reflects the request's
//!   `Authorization` header into a response template, the way an echo
//!   service, an error page or a redirect leaks a credential;
//! - [`LocalSshd`]: a private OpenSSH server on `127.0.0.1`.

mod http;
mod local_sshd;
mod reflecting;

pub use http::FakeHttp;
pub use local_sshd::{LocalSshd, LocalSshdError, SSHD, toml_string};
pub use reflecting::ReflectingUpstream;
