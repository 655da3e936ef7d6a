//! The Portcullis gateway core: a sans-IO MCP session that decides, frame by
//! frame, what may become an action.
//!
//! One frame's path, one module per stage, in order:
//!
//! ```text
//! bytes ─▶ portcullis_wire (frame → utf8 → strict_json → rpc) -> RpcMessage
//!       ─▶ mcp::admit(&mut SessionState, RpcMessage)    -> McpRequest | Refusal
//!       ─▶ schema::check_arguments(&ToolSpec, arguments) -> CheckedCall | SchemaError
//!       ─▶ authz::authorize(&CheckedCall, &SecretStore) -> AuthorizedAction | Denial
//!       ─▶ Effect::Execute { ticket, line, action }     ─▶ executor::Executor
//! ```
//!
//! [`session::Gateway`] is the state machine that sequences the stages and
//! returns [`effect::Effect`]s (`Write`, `Execute`, `Rejected`, `Cancel`,
//! `Close`); a driver carries them out and never reads the session's state.
//! [`id`] is the request-id memory the MCP stage consults; [`reply`] builds
//! results; [`ledger`] has the records a driver sinks and the counters the
//! session keeps. [`policy`] loads and validates the TOML policy,
//! [`template`] parses its URL and argv templates, [`host`] normalizes
//! hosts for both policy and authorization, and [`secrets`] resolves its
//! credentials. [`replay`] is the sans-IO driver with a
//! [`replay::Recorder`] in place of the executor (`portcullis replay` and
//! the test harnesses).

#![forbid(unsafe_code)]

pub mod authz;
pub mod effect;
pub mod executor;
pub mod host;
pub mod id;
pub mod ledger;
pub mod mcp;
pub mod policy;
pub mod replay;
pub mod reply;
pub mod schema;
pub mod secrets;
pub mod session;
pub mod template;

pub use authz::{ActionTarget, AuthorizedAction, HttpRequest, SshCommand};
pub use effect::{CloseReason, Effect, Frame, Ticket};
pub use executor::{Executor, Outcome};
pub use ledger::{Counters, JournalEntry, RejectionRecord};
pub use policy::{BoundPolicy, OnDenied, OnInvalid, Policy, PolicyError};
pub use secrets::{Secret, SecretStore};
pub use session::{Config, Gateway};
