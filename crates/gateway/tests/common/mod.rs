//! Helpers shared by the gateway's test binaries: [`authz`] runs calls
//! through schema and authorization, [`schema`] reads a schema refusal's
//! lines.

#![expect(
    dead_code,
    reason = "each test binary that includes this module uses only some of its helpers"
)]

pub mod authz;
pub mod schema;
