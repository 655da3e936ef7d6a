//! What a case means: its tool's template text, the call's arguments and
//! the policy TOML that declares the tool.

use serde_json::{Map, Value};

use super::alphabet::{
    COMMANDS, HOSTS, HTTP_PORTS, METHODS, QUERY_KEYS, SSH_LITERALS, SSH_PORTS, URL_LITERALS,
};
use super::case::{Case, CasePiece, CaseTarget};

impl Case {
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
