//! Helpers shared by the gateway's test binaries: [`authz`] runs calls
//! through schema and authorization, [`params`] reads params as the MCP
//! stage gets them, [`schema`] reads a schema refusal's lines.

#![expect(
    dead_code,
    reason = "each test binary that includes this module uses only some of its helpers"
)]

pub mod authz;
pub mod params;
pub mod schema;
