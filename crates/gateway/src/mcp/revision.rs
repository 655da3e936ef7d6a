//! MCP revisions and eras.
//!
//! Two eras share one wire. **Legacy** revisions (`2025-06-18`,
//! `2025-11-25`) negotiate once with `initialize`. The **modern** revision
//! (`2026-07-28`) has no handshake: every request carries
//! `_meta["io.modelcontextprotocol/protocolVersion"]` and
//! `_meta["io.modelcontextprotocol/clientCapabilities"]`, and
//! `server/discover` advertises what the server supports.

use portcullis_wire::codes::INVALID_PARAMS;
use portcullis_wire::{Json, Object, Skim};

use super::Refusal;

/// Legacy revisions this gateway speaks, oldest first.
pub const LEGACY_VERSIONS: [&str; 2] = ["2025-06-18", "2025-11-25"];
/// Modern revisions this gateway speaks.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];
/// `_meta` key carrying the modern protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key carrying the modern client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// How the gateway reads `params`: of `_meta` it reads only these two
/// members ([`era_of`], [`modern_meta`]); a client's progress token, trace
/// context and anything else there are checked by every strict JSON rule
/// and dropped unbuilt.
pub const META_SKIM: Skim = Skim {
    member: "_meta",
    keep: &[META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES],
};
/// Error code for an unsupported modern protocol version.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Methods that are requests; sent as notifications they are invalid.
pub const REQUEST_METHODS: [&str; 5] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "server/discover",
];

/// Which handshake model a session uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` once, then requests.
    Legacy,
    /// Per-request `_meta`, `server/discover`.
    Modern,
}

/// A negotiated (legacy) or declared (modern) revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Revision {
    /// 2025-06-18
    V2025_06_18,
    /// 2025-11-25
    V2025_11_25,
    /// 2026-07-28
    V2026_07_28,
}

impl Revision {
    /// The date string.
    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parse a date string this gateway supports.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "2025-06-18" => Some(Revision::V2025_06_18),
            "2025-11-25" => Some(Revision::V2025_11_25),
            "2026-07-28" => Some(Revision::V2026_07_28),
            _ => None,
        }
    }

    /// Whether an error response may omit `id` (it may never be `null`).
    pub fn allows_error_without_id(self) -> bool {
        self >= Revision::V2025_11_25
    }

    /// The era of this revision.
    pub fn era(self) -> Era {
        match self {
            Revision::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }
}

/// The era a request announces by its shape.
pub fn era_of(method: &str, params: Option<&Object<'_>>) -> Era {
    let has_modern_meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Json::as_object)
        .is_some_and(|m| m.contains_key(META_PROTOCOL_VERSION));
    if method == "server/discover" || (method != "initialize" && has_modern_meta) {
        Era::Modern
    } else {
        Era::Legacy
    }
}

/// The legacy negotiation rule: the client's version if we speak it, else
/// our latest legacy version.
pub fn negotiate(requested: &str) -> Revision {
    match Revision::parse(requested) {
        Some(r) if r.era() == Era::Legacy => r,
        _ => Revision::V2025_11_25,
    }
}

/// Check a modern request's `_meta` and return its revision.
pub fn modern_meta(params: Option<&Object<'_>>) -> Result<Revision, Refusal> {
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Json::as_object)
        .ok_or_else(|| {
            Refusal::new(
                INVALID_PARAMS,
                "missing required params._meta (protocol version and client capabilities)",
            )
        })?;
    let version = match meta.get(META_PROTOCOL_VERSION) {
        Some(Json::String(v)) => v,
        Some(_) => {
            return Err(Refusal::new(
                INVALID_PARAMS,
                format!("_meta[{META_PROTOCOL_VERSION}] must be a string"),
            ));
        }
        None => {
            return Err(Refusal::new(
                INVALID_PARAMS,
                format!("missing required _meta[{META_PROTOCOL_VERSION}]"),
            ));
        }
    };
    if !meta
        .get(META_CLIENT_CAPABILITIES)
        .is_some_and(Json::is_object)
    {
        return Err(Refusal::new(
            INVALID_PARAMS,
            format!("missing required _meta[{META_CLIENT_CAPABILITIES}] object"),
        ));
    }
    match Revision::parse(version) {
        Some(r) if r.era() == Era::Modern => Ok(r),
        _ => Err(Refusal {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            message: "unsupported protocol version".into(),
            data: Some(serde_json::json!({
                "supported": MODERN_VERSIONS,
                "requested": version.as_ref(),
            })),
            id: None,
        }),
    }
}
