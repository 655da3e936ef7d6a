//! The sans-IO core of `portcullis wrap`: the strict boundary of
//! `portcullis mcp`, put in front of any existing stdio MCP server and
//! applied in both directions.
//!
//! [`Wrap`] is a state machine like the gateway's: client bytes, upstream
//! bytes, end of input on either side, the clock and a journal that cannot
//! be written go in; [`Effect`]s come out (write to the client, write to the
//! upstream, forward a `tools/call` once its intent is journaled, quarantine
//! an upstream line, audit, pins changed, close the upstream's input, end).
//! Modules in data-flow order: [`client`] judges the client's frames and
//! routes them, [`tools`] is the tool gate (allowlist, [`pin`]s, pinned
//! input schemas), [`canonical`] the form of a call's arguments its intent
//! hashes, [`upstream`] judges the upstream's lines, [`flood`] aggregates
//! their quarantines and drops, [`encode`] writes the canonical encoding of
//! what was judged, [`session`] holds the shared state (id tables,
//! deadlines, the journal's state) and the ways a session ends, [`config`]
//! its settings.

#![forbid(unsafe_code)]

pub mod canonical;
pub mod client;
pub mod config;
pub mod effect;
pub mod encode;
pub mod flood;
pub mod pin;
pub mod session;
pub mod tools;
pub mod upstream;

pub use config::Config;
pub use effect::{
    AnsweredBy, AuditRecord, Counters, Dropped, Effect, End, Intent, Outcome, Quarantined,
};
pub use encode::Line;
pub use pin::{Pin, Pins, parse_pins, render_pins};
pub use session::{JOURNAL_DENIAL, Wrap};
pub use tools::Denial;
