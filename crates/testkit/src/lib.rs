//! Shared test machinery for Portcullis.
//!
//! [`recorder::Recorder`] stands in for the dangerous part (the executor)
//! and records every action it is handed; it and the replay driver live in
//! `portcullis_gateway::replay` and are re-exported here.
//! [`session::run_session`] drives the sans-IO gateway exactly as the
//! binary's driver does and checks stdout with the transcript checker on
//! every call. [`reference`] is a
//! deliberately simple, independent judge of which frames may execute.
//! [`mcp_schema`] validates stdout against the official MCP schemas when
//! `MCP_SCHEMA_DIR` is set. [`harness`] has one function per fuzz target;
//! fuzz targets, bolero and proptest properties and regression replay all
//! call them.

#![forbid(unsafe_code)]

pub mod authz_harness;
pub mod canary;
pub mod faithful;
pub mod fakes;
pub mod fixtures;
pub mod harness;
pub mod json_arbitrary;
pub mod mcp_schema;
pub mod memory;
pub mod model;
pub mod policy_harness;
pub mod recorder;
pub mod reference;
pub mod regressions;
pub mod schema_closure;
pub mod schema_loops;
pub mod schema_nesting;
pub mod session;
pub mod transcript_harness;
pub mod wrap_harness;

pub use recorder::Recorder;
pub use session::{Chunking, SessionReport, run_session};
