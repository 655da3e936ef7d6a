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

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use portcullis_gateway::authz::authorize;
use portcullis_gateway::{Policy, SecretStore, schema};
use serde_json::{Map, Value};

use crate::faithful::Templates;

/// Multi-character and non-ASCII tokens an argument byte 0x80..=0xFE
/// stands for: Unicode dots and slashes, full-width forms, zero-width and
/// BOM, IDNA prefixes, percent-escapes of dots, slashes and controls, and
/// strings that mean something to a shell or an IDNA mapper.
pub const HOSTILE: &[&str] = &[
    "\u{2024}",
    "\u{FF0E}",
    "\u{3002}",
    "\u{FF61}",
    "\u{FE52}",
    "\u{FF0F}",
    "\u{2215}",
    "\u{2044}",
    "\u{FF3C}",
    "\u{FE68}",
    "\u{200B}",
    "\u{200C}",
    "\u{200D}",
    "\u{2060}",
    "\u{FEFF}",
    "\u{00AD}",
    "\u{0085}",
    "\u{00A0}",
    "\u{2028}",
    "\u{2029}",
    "xn--",
    "xn--ls8h",
    "%2e",
    "%2E",
    "%2f",
    "%2F",
    "%5c",
    "%00",
    "%0a",
    "%09",
    "%25",
    "%",
    "..",
    "./",
    "../",
    "..\\",
    ".\t.",
    "\t",
    "\n",
    "\r",
    "\0",
    "\u{7f}",
    "\u{1b}",
    "\u{FF0E}\u{FF0E}",
    "127.0.0.1",
    "localhost",
    "api",
    "\u{FF11}\u{FF12}\u{FF17}",
    "LOCALHOST",
    "\u{FB00}",
    "\u{00DF}",
    "\u{0130}",
    "\u{212A}",
    "\u{2126}",
    "@",
    "#",
    "?",
    ";",
    "/",
    "\\",
    ":",
    "=",
    "&",
    "+",
    " ",
    "{",
    "}",
    "-",
    "--",
    "-oProxyCommand=",
    "${IFS}",
    "$(id)",
    "`id`",
    "'",
    "\"",
    "\u{10FFFF}",
    "\u{1F600}",
    "\u{0301}",
    "\u{202E}",
];

/// Literal pieces of path segments and query values (characters the policy
/// allows unescaped).
pub const URL_LITERALS: &[&str] = &[
    "users", "avatar", "v1", ".", "..", "a", "~", "-", "_", "x.y", "@", ":", ";", ",", "!", "$",
    "'", "(", ")", "*", "+",
];

/// Query keys.
pub const QUERY_KEYS: &[&str] = &["q", "page", "a.b", "x-y", "k~", "a+b"];

/// Literal pieces of SSH argv elements.
pub const SSH_LITERALS: &[&str] = &[
    "restart", "-u", "--lines=", "{", "}", "a b", "'", "\"", ";", "$(", "`", "|", "*", "\\", "~",
    "x", "-",
];

/// SSH commands (argv[0], always literal).
pub const COMMANDS: &[&str] = &["systemctl", "journalctl", "ls", "echo"];

const HTTP_PORTS: [Option<u16>; 4] = [None, Some(8080), Some(443), Some(8443)];
const HOSTS: [&str; 4] = ["127.0.0.1", "localhost", "{a3}", "{a3}.internal"];
const METHODS: [&str; 4] = ["GET", "POST", "PUT", "DELETE"];
const SSH_PORTS: [u16; 2] = [22, 2222];

/// One template piece, by table index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CasePiece {
    /// A literal from the kind's literal table.
    Lit(u8),
    /// Placeholder `{a<n>}`, n in 0..=3.
    Arg(u8),
}

/// An HTTP tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCase {
    /// `https` instead of `http`.
    pub https: bool,
    /// Index into (none, 8080, 443, 8443).
    pub port: u8,
    /// Index into (127.0.0.1, localhost, {a3}, {a3}.internal).
    pub host: u8,
    /// Index into (GET, POST, PUT, DELETE).
    pub method: u8,
    /// Path segments (at most 4).
    pub path: Vec<Vec<CasePiece>>,
    /// Query pairs: key index and value pieces (at most 3).
    pub query: Vec<(u8, Vec<CasePiece>)>,
}

/// An SSH tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshCase {
    /// Index into (22, 2222).
    pub port: u8,
    /// Index into [`COMMANDS`].
    pub command: u8,
    /// argv after the command (at most 3).
    pub argv: Vec<Vec<CasePiece>>,
}

/// What the tool does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseTarget {
    /// `[tools.http]`.
    Http(HttpCase),
    /// `[tools.ssh]`.
    Ssh(SshCase),
}

/// One generated tool and one call to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The tool.
    pub target: CaseTarget,
    /// Arguments a0..a3 (fewer = "a" for the rest).
    pub args: Vec<String>,
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = (self.pos + 1).min(self.data.len());
        b
    }

    fn pieces(&mut self, literals: usize) -> Vec<CasePiece> {
        let n = 1 + self.byte() % 3;
        (0..n)
            .map(|_| {
                let b = self.byte();
                if b & 0x80 != 0 {
                    CasePiece::Arg(b & 3)
                } else {
                    CasePiece::Lit(b % literals as u8)
                }
            })
            .collect()
    }
}

fn write_pieces(out: &mut Vec<u8>, pieces: &[CasePiece]) {
    assert!((1..=3).contains(&pieces.len()), "1 to 3 pieces");
    out.push(pieces.len() as u8 - 1);
    for piece in pieces {
        out.push(match *piece {
            CasePiece::Lit(i) => i & 0x7f,
            CasePiece::Arg(n) => 0x80 | (n & 3),
        });
    }
}

/// An argument from its bytes (see the module's input format).
fn decode_arg(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        if b < 0x80 {
            out.push(char::from(b));
        } else {
            out.push_str(HOSTILE[usize::from(b - 0x80) % HOSTILE.len()]);
        }
    }
    out
}

/// Bytes for an argument: ASCII as is, any other character as the HOSTILE
/// token that is exactly that character.
fn encode_arg(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| {
            if c.is_ascii() {
                c as u8
            } else {
                let mut buf = [0; 4];
                let token: &str = c.encode_utf8(&mut buf);
                let i = HOSTILE
                    .iter()
                    .position(|t| *t == token)
                    .unwrap_or_else(|| panic!("{c:?} is not a HOSTILE token"));
                0x80 + i as u8
            }
        })
        .collect()
}

impl Case {
    /// Decode fuzzer bytes; every input decodes.
    pub fn decode(data: &[u8]) -> Self {
        let mut r = Reader { data, pos: 0 };
        let h = r.byte();
        let target = if h & 1 == 0 {
            let counts = r.byte();
            let path = (0..(counts & 0xf) % 5)
                .map(|_| r.pieces(URL_LITERALS.len()))
                .collect();
            let query = (0..(counts >> 4) % 4)
                .map(|_| {
                    let key = r.byte() % QUERY_KEYS.len() as u8;
                    (key, r.pieces(URL_LITERALS.len()))
                })
                .collect();
            CaseTarget::Http(HttpCase {
                https: h & 2 != 0,
                port: (h >> 2) & 3,
                host: (h >> 4) & 3,
                method: h >> 6,
                path,
                query,
            })
        } else {
            let extra = r.byte() % 4;
            CaseTarget::Ssh(SshCase {
                port: (h >> 1) & 1,
                command: (h >> 2) & 3,
                argv: (0..extra).map(|_| r.pieces(SSH_LITERALS.len())).collect(),
            })
        };
        let rest = &data[r.pos..];
        let args = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split(|&b| b == 0xFF).take(4).map(decode_arg).collect()
        };
        Self { target, args }
    }

    /// The bytes that decode to this case (panics on a case outside the
    /// format: too many pieces, or an argument character that is neither
    /// ASCII nor a one-character HOSTILE token).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match &self.target {
            CaseTarget::Http(c) => {
                assert!(c.path.len() <= 4 && c.query.len() <= 3);
                out.push(
                    u8::from(c.https) << 1
                        | (c.port & 3) << 2
                        | (c.host & 3) << 4
                        | (c.method & 3) << 6,
                );
                out.push(c.path.len() as u8 | (c.query.len() as u8) << 4);
                for segment in &c.path {
                    write_pieces(&mut out, segment);
                }
                for (key, value) in &c.query {
                    out.push(*key);
                    write_pieces(&mut out, value);
                }
            }
            CaseTarget::Ssh(c) => {
                assert!(c.argv.len() <= 3);
                out.push(1 | (c.port & 1) << 1 | (c.command & 3) << 2);
                out.push(c.argv.len() as u8);
                for element in &c.argv {
                    write_pieces(&mut out, element);
                }
            }
        }
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                out.push(0xFF);
            }
            out.extend(encode_arg(arg));
        }
        out
    }

    /// The tool's template text: the URL, or the argv elements.
    pub fn template_text(&self) -> Vec<String> {
        let text = |pieces: &[CasePiece], literals: &[&str], escape: bool| -> String {
            pieces
                .iter()
                .map(|p| match *p {
                    CasePiece::Lit(i) => {
                        let lit = literals[usize::from(i) % literals.len()];
                        if escape {
                            lit.replace('{', "{{").replace('}', "}}")
                        } else {
                            lit.to_owned()
                        }
                    }
                    CasePiece::Arg(n) => format!("{{a{}}}", n & 3),
                })
                .collect()
        };
        match &self.target {
            CaseTarget::Http(c) => {
                let mut url = format!(
                    "{}://{}",
                    if c.https { "https" } else { "http" },
                    HOSTS[usize::from(c.host & 3)]
                );
                if let Some(port) = HTTP_PORTS[usize::from(c.port & 3)] {
                    url.push_str(&format!(":{port}"));
                }
                for segment in &c.path {
                    url.push('/');
                    url.push_str(&text(segment, URL_LITERALS, false));
                }
                for (i, (key, value)) in c.query.iter().enumerate() {
                    url.push(if i == 0 { '?' } else { '&' });
                    url.push_str(QUERY_KEYS[usize::from(*key) % QUERY_KEYS.len()]);
                    url.push('=');
                    url.push_str(&text(value, URL_LITERALS, false));
                }
                vec![url]
            }
            CaseTarget::Ssh(c) => std::iter::once(COMMANDS[usize::from(c.command & 3)].to_owned())
                .chain(c.argv.iter().map(|e| text(e, SSH_LITERALS, true)))
                .collect(),
        }
    }

    /// The placeholders the template uses, in order a0..a3.
    fn used(&self) -> Vec<u8> {
        let mut used = [false; 4];
        let mut mark = |pieces: &[CasePiece]| {
            for p in pieces {
                if let CasePiece::Arg(n) = p {
                    used[usize::from(n & 3)] = true;
                }
            }
        };
        match &self.target {
            CaseTarget::Http(c) => {
                if c.host >= 2 {
                    mark(&[CasePiece::Arg(3)]);
                }
                c.path.iter().for_each(|s| mark(s));
                c.query.iter().for_each(|(_, v)| mark(v));
            }
            CaseTarget::Ssh(c) => c.argv.iter().for_each(|e| mark(e)),
        }
        (0..4u8).filter(|&n| used[usize::from(n)]).collect()
    }

    /// The call's arguments: exactly the placeholders the template uses.
    pub fn arguments(&self) -> Map<String, Value> {
        self.used()
            .into_iter()
            .map(|n| {
                let value = self
                    .args
                    .get(usize::from(n))
                    .cloned()
                    .unwrap_or_else(|| "a".to_owned());
                (format!("a{n}"), Value::String(value))
            })
            .collect()
    }

    /// The policy: one tool `t`, every placeholder a required string of at
    /// least one character and nothing else (no pattern), so the schema
    /// hides nothing from the authorizer.
    pub fn policy_toml(&self) -> String {
        let quote = |s: &str| Value::String(s.to_owned()).to_string();
        let list = |items: &[String]| {
            items
                .iter()
                .map(|s| quote(s))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut text = String::from("[server]\nname = \"authz\"\n\n[[tools]]\nname = \"t\"\n");
        match &self.target {
            CaseTarget::Http(c) => {
                let port =
                    HTTP_PORTS[usize::from(c.port & 3)].unwrap_or(if c.https { 443 } else { 80 });
                let allow: Vec<String> = ["127.0.0.1", "localhost", "api.internal", "[::1]"]
                    .iter()
                    .map(|h| format!("{h}:{port}"))
                    .collect();
                text.push_str(&format!(
                    "[tools.http]\nmethod = {}\nurl = {}\nallow = [{}]\n",
                    quote(METHODS[usize::from(c.method & 3)]),
                    quote(&self.template_text()[0]),
                    list(&allow)
                ));
            }
            CaseTarget::Ssh(c) => {
                let port = SSH_PORTS[usize::from(c.port & 1)];
                text.push_str(&format!(
                    "[tools.ssh]\nhost = \"127.0.0.1\"\nport = {port}\nuser = \"deploy\"\nargv = [{}]\nallow = [\"127.0.0.1:{port}\"]\n",
                    list(&self.template_text())
                ));
            }
        }
        let used: Vec<String> = self.used().iter().map(|n| format!("a{n}")).collect();
        text.push_str(&format!(
            "[tools.input_schema]\ntype = \"object\"\nrequired = [{}]\n",
            list(&used)
        ));
        for name in &used {
            text.push_str(&format!(
                "properties.{name} = {{ type = \"string\", minLength = 1 }}\n"
            ));
        }
        text
    }
}

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
    let lit = |s: &str| {
        CasePiece::Lit(
            URL_LITERALS
                .iter()
                .position(|l| *l == s)
                .expect("a URL literal") as u8,
        )
    };
    Case {
        target: CaseTarget::Http(HttpCase {
            https: false,
            port: 1,
            host: 0,
            method: 3,
            path: vec![
                vec![lit("users")],
                vec![CasePiece::Arg(0)],
                vec![lit("avatar")],
            ],
            query: Vec::new(),
        }),
        args: vec![user.to_owned()],
    }
}
