//! The tables a case's bytes index into: literal pieces of each kind,
//! query keys, commands, hosts, ports and methods, and the hostile tokens
//! an argument byte 0x80..=0xFE stands for.

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

pub(super) const HTTP_PORTS: [Option<u16>; 4] = [None, Some(8080), Some(443), Some(8443)];
pub(super) const HOSTS: [&str; 4] = ["127.0.0.1", "localhost", "{a3}", "{a3}.internal"];
pub(super) const METHODS: [&str; 4] = ["GET", "POST", "PUT", "DELETE"];
pub(super) const SSH_PORTS: [u16; 2] = [22, 2222];
