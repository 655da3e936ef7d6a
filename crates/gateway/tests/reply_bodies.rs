//! The result bodies a client reads, per revision: what `initialize`,
//! `server/discover`, `ping`, `tools/list` and `tools/call` answer, and the
//! standard text of each JSON-RPC error code. Also the revision table these
//! depend on.

mod common;

use std::path::Path;

use common::params::object;
use portcullis_gateway::Policy;
use portcullis_gateway::mcp::{Era, Revision, era_of, negotiate};
use portcullis_gateway::reply;
use serde_json::{Value, json};

const LEGACY: [Revision; 2] = [Revision::V2025_06_18, Revision::V2025_11_25];
const MODERN: Revision = Revision::V2026_07_28;

fn policy(server_extra: &str) -> Policy {
    let text = format!(
        "[server]\nname = \"gw\"\nversion = \"1.2.3\"\n{server_extra}\n\
         [[tools]]\nname = \"status\"\ntitle = \"Service status\"\ndescription = \"Reads it\"\n\
         [tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:1/x\"\nallow = [\"127.0.0.1:1\"]\n\
         [tools.input_schema]\ntype = \"object\"\n\
         [[tools]]\nname = \"bare\"\n\
         [tools.http]\nmethod = \"GET\"\nurl = \"http://127.0.0.1:1/y\"\nallow = [\"127.0.0.1:1\"]\n\
         [tools.input_schema]\ntype = \"object\"\n"
    );
    Policy::from_toml(&text, Path::new("p.toml")).unwrap()
}

#[test]
fn initialize_names_the_revision_the_server_and_its_tool_capability() {
    for revision in LEGACY {
        let body = reply::initialize(&policy(""), revision);
        assert_eq!(
            body,
            json!({
                "protocolVersion": revision.as_str(),
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "gw", "version": "1.2.3"},
            })
        );
    }
    let body = reply::initialize(
        &policy("instructions = \"Be brief\""),
        Revision::V2025_11_25,
    );
    assert_eq!(body["instructions"], "Be brief");
}

#[test]
fn discover_lists_the_modern_versions_and_is_cacheable() {
    let body = reply::discover(&policy("instructions = \"Be brief\""), MODERN);
    assert_eq!(
        body,
        json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": false}},
            "cacheScope": "public",
            "ttlMs": 300_000,
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "gw", "version": "1.2.3"}},
            "instructions": "Be brief",
            "resultType": "complete",
        })
    );
    assert!(
        reply::discover(&policy(""), MODERN)
            .get("instructions")
            .is_none()
    );
}

#[test]
fn only_modern_results_say_they_are_complete() {
    for revision in LEGACY {
        assert_eq!(reply::empty(revision), json!({}));
    }
    assert_eq!(reply::empty(MODERN), json!({"resultType": "complete"}));
}

#[test]
fn tools_list_shows_each_tool_with_its_optional_title_and_description() {
    let policy = policy("");
    for revision in LEGACY {
        let body = reply::tools_list(&policy, revision);
        assert_eq!(
            body,
            json!({"tools": [
                {
                    "name": "status",
                    "title": "Service status",
                    "description": "Reads it",
                    "inputSchema": policy.tools[0].schema.document(),
                },
                {"name": "bare", "inputSchema": policy.tools[1].schema.document()},
            ]})
        );
    }
    let modern = reply::tools_list(&policy, MODERN);
    assert_eq!(modern["cacheScope"], "public");
    assert_eq!(modern["ttlMs"], 300_000);
    assert_eq!(modern["resultType"], "complete");
    assert_eq!(modern["tools"].as_array().map(Vec::len), Some(2));
}

#[test]
fn a_tool_result_is_one_text_block_with_its_error_flag() {
    for (revision, is_error) in [
        (Revision::V2025_06_18, true),
        (Revision::V2025_11_25, false),
    ] {
        assert_eq!(
            reply::call_tool(revision, "out", is_error),
            json!({"content": [{"type": "text", "text": "out"}], "isError": is_error})
        );
    }
    assert_eq!(
        reply::call_tool(MODERN, "", false),
        json!({"content": [{"type": "text", "text": ""}], "isError": false, "resultType": "complete"})
    );
}

#[test]
fn each_error_code_has_its_standard_message() {
    let cases = [
        (-32700, "Parse error"),
        (-32600, "Invalid Request"),
        (-32601, "Method not found"),
        (-32602, "Invalid params"),
        (-32022, "Unsupported protocol version"),
        (-32603, "Internal error"),
        (-1, "Internal error"),
    ];
    for (code, message) in cases {
        assert_eq!(reply::standard_message(code), message, "{code}");
    }
}

#[test]
fn revisions_parse_from_and_print_as_their_dates_in_order() {
    let all = [
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ];
    for revision in all {
        assert_eq!(Revision::parse(revision.as_str()), Some(revision));
    }
    assert_eq!(
        all.map(Revision::as_str),
        ["2025-06-18", "2025-11-25", "2026-07-28"]
    );
    assert!(all.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(Revision::parse("2024-11-05"), None);
    assert_eq!(Revision::parse(""), None);
}

#[test]
fn only_2025_11_25_and_later_may_omit_an_error_id() {
    assert!(!Revision::V2025_06_18.allows_error_without_id());
    assert!(Revision::V2025_11_25.allows_error_without_id());
    assert!(Revision::V2026_07_28.allows_error_without_id());
}

#[test]
fn eras_and_legacy_negotiation() {
    assert_eq!(Revision::V2025_06_18.era(), Era::Legacy);
    assert_eq!(Revision::V2025_11_25.era(), Era::Legacy);
    assert_eq!(Revision::V2026_07_28.era(), Era::Modern);
    assert_eq!(negotiate("2025-06-18"), Revision::V2025_06_18);
    assert_eq!(negotiate("2025-11-25"), Revision::V2025_11_25);
    assert_eq!(negotiate("2026-07-28"), Revision::V2025_11_25);
    assert_eq!(negotiate("1999-01-01"), Revision::V2025_11_25);
}

#[test]
fn a_request_announces_the_modern_era_by_discover_or_by_its_meta() {
    let meta = |version: Value| {
        object(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": version}}))
    };
    let modern = meta(json!("2026-07-28"));
    assert_eq!(era_of("server/discover", None), Era::Modern);
    assert_eq!(era_of("tools/call", Some(&modern)), Era::Modern);
    assert_eq!(era_of("ping", Some(&modern)), Era::Modern);
    // `initialize` is the legacy handshake whatever it carries.
    assert_eq!(era_of("initialize", Some(&modern)), Era::Legacy);
    assert_eq!(era_of("tools/call", None), Era::Legacy);
    let other_meta = object(json!({"_meta": {"other": 1}}));
    assert_eq!(era_of("tools/call", Some(&other_meta)), Era::Legacy);
    let not_object = object(json!({"_meta": "x"}));
    assert_eq!(era_of("tools/call", Some(&not_object)), Era::Legacy);
}
