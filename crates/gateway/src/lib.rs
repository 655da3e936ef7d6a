//! The Portcullis gateway core: a sans-IO MCP session that decides, frame by
//! frame, what may become an action.
//!
//! Data flow, one module per stage: the wire crate yields an `RpcMessage`;
//! [`mcp`] fixes the era and lifecycle and routes methods; [`schema`] checks
//! tool arguments against the policy's compiled input schema, yielding a
//! [`schema::CheckedCall`]; [`authz`] expands templates as data, checks the
//! allowlist and credential, and is the only place an
//! [`authz::AuthorizedAction`] can be made; [`executor::Executor`] takes
//! nothing else. [`gateway::Gateway`] is the state machine that ties them
//! together and returns [`gateway::Effect`]s; [`ledger`] keeps rejections
//! and executions apart. [`policy`] loads and validates the TOML policy.

#![forbid(unsafe_code)]

pub mod authz;
pub mod executor;
pub mod gateway;
mod ids;
pub mod ledger;
pub mod mcp;
pub mod policy;
pub mod reply;
pub mod schema;
pub mod secrets;
pub mod template;

pub use authz::{ActionTarget, AuthorizedAction, HttpRequest, SshCommand};
pub use executor::{Executor, Outcome};
pub use gateway::{CloseReason, Config, Effect, Gateway, Ticket};
pub use ledger::{Counters, Drained, JournalEntry, Ledger, RejectionRecord};
pub use policy::{OnDenied, OnInvalid, Policy, PolicyError};
pub use secrets::{Secret, SecretStore};
