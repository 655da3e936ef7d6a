//! `authz_expansion`: arbitrary tool templates from the policy grammar ×
//! argument strings biased to a hostile alphabet, through the gateway's
//! schema check and authorizer. Every call is either denied or authorized
//! as a faithful expansion ([`crate::faithful`]); nothing panics.
//!
//! # Input format
//!
//! Bytes decode into a [`Case`] (missing bytes read as zero, so every input
//! is a case), and [`Case::encode`] writes one back, so regression inputs
//! are built from a readable description rather than found by hand.
//!
//! ```text
//! header     bit 0: 0 = HTTP, 1 = SSH
//!   HTTP     bit 1 https; bits 2-3 port (none, 8080, 443, 8443); bits 4-5
//!            host (127.0.0.1, localhost, {a3}, {a3}.internal); bits 6-7
//!            method (GET, POST, PUT, DELETE)
//!            then one byte: low nibble % 5 path segments, high nibble % 4
//!            query pairs; each segment a piece list; each pair a key byte
//!            (index into QUERY_KEYS) and a piece list
//!   SSH      bit 1 port (22, 2222); bits 2-3 command; then one byte % 4
//!            more argv elements, each a piece list
//! piece list one byte: 1 + b % 3 pieces; then one byte per piece: bit 7
//!            set = placeholder {a<b & 3>}, else a literal (index b into the
//!            literal table of the kind)
//! arguments  the rest, split on 0xFF: argument a0, a1, a2, a3 (absent = "a");
//!            a byte below 0x80 is that ASCII character (controls included),
//!            0x80..=0xFE is a token of HOSTILE
//! ```
//!
//! Modules: `alphabet` (the tables bytes index into), `case` (the byte
//! format), `tool` (a case's template, arguments and policy text); this
//! file loads the policy and checks the call.

mod alphabet;
mod case;
mod tool;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use portcullis_gateway::authz::authorize;
use portcullis_gateway::{Policy, SecretStore, schema};

pub use alphabet::{COMMANDS, HOSTILE, QUERY_KEYS, SSH_LITERALS, URL_LITERALS};
pub use case::{Case, CasePiece, CaseTarget, HttpCase, SshCase};

use crate::faithful::Templates;

type Loaded = Option<Arc<(Policy, Templates)>>;

/// Policies kept per thread before the cache starts over.
const CACHED_POLICIES: usize = 4096;

/// The policy and the oracle's templates for `text`, cached: the fuzzer
/// mutates arguments far more often than templates, and loading (schema
/// compilation) would otherwise dominate an execution.
fn load(text: &str) -> Loaded {
    thread_local! {
        static CACHE: RefCell<HashMap<String, Loaded>> = RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(loaded) = cache.get(text) {
            return loaded.clone();
        }
        let loaded = Policy::from_toml(text, Path::new("authz_expansion.toml"))
            .ok()
            .map(|policy| {
                let templates = Templates::from_toml(text).unwrap_or_else(|e| {
                    panic!("the gateway loads a policy the oracle cannot read: {e}\n{text}")
                });
                Arc::new((policy, templates))
            });
        if cache.len() >= CACHED_POLICIES {
            cache.clear();
        }
        cache.insert(text.to_owned(), loaded.clone());
        loaded
    })
}

/// The harness: decode a case, load its policy (inputs whose policy the
/// loader refuses are skipped), check the call against the schema and
/// authorize it; an authorized action must be a faithful expansion.
pub fn authz_expansion(data: &[u8]) {
    check_case(&Case::decode(data));
}

/// [`authz_expansion`] on a decoded case.
pub fn check_case(case: &Case) {
    let text = case.policy_toml();
    let Some(loaded) = load(&text) else {
        return;
    };
    let (policy, templates) = &*loaded;
    let args = case.arguments();
    let tool = policy.tool("t").expect("the generated policy has tool t");
    let Ok(checked) = schema::check(tool, args.clone()) else {
        return;
    };
    if let Ok(action) = authorize(&checked, &SecretStore::default())
        && let Err(why) = templates.check(&args, &action)
    {
        panic!("{why}\n--- policy ---\n{text}");
    }
}

/// Whether the case's call is authorized (for tests that want a denial).
pub fn is_authorized(case: &Case) -> Option<bool> {
    let text = case.policy_toml();
    let loaded = load(&text)?;
    let (policy, _) = &*loaded;
    let tool = policy.tool("t")?;
    let Ok(checked) = schema::check(tool, case.arguments()) else {
        return Some(false);
    };
    Some(authorize(&checked, &SecretStore::default()).is_ok())
}

/// Defect 1 of issue 8: `DELETE http://127.0.0.1:8080/users/{a0}/avatar`
/// with a0 = `.\t.`, which passed the dot-segment check and became `..`.
pub fn dot_tab_dot_case() -> Case {
    avatar_case(".\t.")
}

/// Defect 1 of issue 8: a0 = `\t` (one character, past `minLength = 1`)
/// became an empty segment.
pub fn empty_segment_case() -> Case {
    avatar_case("\t")
}

/// Found by this harness on the gateway's first faithful-expansion builder:
/// `GET http://127.0.0.1:8080/v1?a+b=x.y+{a0}` with a0 = `z`. The policy
/// lets `+` into query literals, the builder wrote literals as is, and a
/// server's form decoding reads `+` as a space: key `a b`, value `x.y z`.
pub fn plus_in_query_literal_case() -> Case {
    let key = QUERY_KEYS
        .iter()
        .position(|k| *k == "a+b")
        .expect("a query key") as u8;
    Case {
        target: CaseTarget::Http(HttpCase {
            https: false,
            port: 1,
            host: 0,
            method: 0,
            path: vec![vec![url_literal("v1")]],
            query: vec![(
                key,
                vec![url_literal("x.y"), url_literal("+"), CasePiece::Arg(0)],
            )],
        }),
        args: vec!["z".to_owned()],
    }
}

fn url_literal(s: &str) -> CasePiece {
    CasePiece::Lit(
        URL_LITERALS
            .iter()
            .position(|l| *l == s)
            .expect("a URL literal") as u8,
    )
}

fn avatar_case(user: &str) -> Case {
    Case {
        target: CaseTarget::Http(HttpCase {
            https: false,
            port: 1,
            host: 0,
            method: 3,
            path: vec![
                vec![url_literal("users")],
                vec![CasePiece::Arg(0)],
                vec![url_literal("avatar")],
            ],
            query: Vec::new(),
        }),
        args: vec![user.to_owned()],
    }
}
