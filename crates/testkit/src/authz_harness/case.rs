//! A case and its byte format (see the parent module's input format):
//! [`Case::decode`] reads any bytes (missing bytes read as zero) and
//! [`Case::encode`] writes a case back.

use super::alphabet::{HOSTILE, QUERY_KEYS, SSH_LITERALS, URL_LITERALS};

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
}
