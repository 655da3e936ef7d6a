//! The `policy_load` fuzz target: arbitrary policy TOML into
//! [`Policy::from_toml`], judged by an oracle that reads the same text on its
//! own (a `toml::Table`, URLs through `url::Url` as the executor will see
//! them) and shares no code with the loader's validation.
//!
//! A policy the loader accepts must satisfy every invariant the oracle can
//! state about the raw text; a policy it refuses must be refused with an
//! error naming a field the oracle also finds at fault (for the fields the
//! oracle models exactly), and the message must name that field.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use crate::schema_loops::{Loops, same_value_loops};
use portcullis_gateway::SecretStore;
use portcullis_gateway::policy::{CredentialSource, Policy, PolicyError, TargetSpec};
use portcullis_gateway::schema::{SELF_APPLICATION, ToolSchema, UNCHECKED_FORMAT};
use toml::{Table, Value};

const FILE: &str = "fuzz-policy.toml";

/// Arbitrary bytes as policy text: never panics; an accepted policy keeps
/// the oracle's invariants; a refusal names the field at fault.
pub fn policy_load(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let loaded = Policy::from_toml(text, Path::new(FILE));
    let raw = text.parse::<Table>();
    if let Ok(raw) = &raw {
        check_schemas(raw);
    }
    match (loaded, raw) {
        (Ok(_), Err(err)) => panic!("loaded a policy that is not TOML: {err}"),
        (Ok(policy), Ok(raw)) => {
            let faults = Oracle::default().judge(&raw);
            assert!(
                faults.is_empty(),
                "loaded a policy the oracle finds at fault: {faults:?}"
            );
            check_loaded(&policy, &raw);
            check_secrets(policy);
        }
        (Err(err), raw) => check_refusal(&err, raw.ok().as_ref()),
    }
}

/// Fields whose rules the oracle states completely: a refusal at one of them
/// must match a fault the oracle found there. (URLs, hosts and schemas are
/// judged by the loader through parsers the oracle does not imitate, so a
/// refusal there is only checked for naming its field.)
const EXACT_FIELDS: &[&str] = &[
    "server.name",
    "server.max_frame_bytes",
    "server.max_depth",
    "server.max_frame_values",
    "server.max_id_bytes",
    "server.max_session_ids",
    "tools.name",
    "tools.timeout_ms",
    "tools",
    "tools.http.method",
    "tools.http.max_response_bytes",
    "tools.ssh.port",
    "tools.ssh.user",
    "tools.ssh.argv",
    "tools.ssh.argv[0]",
    "tools.ssh.max_output_bytes",
];

fn check_refusal(err: &PolicyError, raw: Option<&Table>) {
    let shown = err.to_string();
    assert!(
        shown.starts_with(FILE),
        "a refusal must name the file: {shown}"
    );
    match err {
        PolicyError::Syntax { message, .. } => {
            assert!(!message.is_empty(), "an empty syntax message");
        }
        PolicyError::Invalid {
            location, message, ..
        } => {
            assert!(!message.is_empty(), "an empty refusal for {location}");
            assert!(
                shown.contains(&location.field),
                "the refusal does not name its field {}: {shown}",
                location.field
            );
            // The oracle's TOML reader refuses some text the loader's serde
            // path reads (integers past i64 inside a schema); a refusal that
            // names the file and its field is all it can judge then.
            let Some(raw) = raw else { return };
            if location.field.starts_with("credentials.") {
                let name = &location.field["credentials.".len()..];
                let faults = Oracle::default().judge(raw);
                assert!(
                    faults.contains_key(&location.field),
                    "refused credential {name} the oracle finds sound: {shown}"
                );
            } else if location.field == "tools.http.url" && message.starts_with("port must be") {
                // A port can be refused only where the authority has one: a
                // colon after an IPv6 host's closing bracket, or any colon in
                // an authority without brackets (RFC 3986's grammar; URL
                // parsers forgive too much, e.g. an empty port, to judge the
                // digits).
                if let Some(template) = raw_url(raw, location.tool.as_deref()) {
                    // The text as written: a placeholder holds no colon, and
                    // a malformed one must not hide the colon it ends at.
                    let rest = template.split_once("://").map_or("", |(_, r)| r);
                    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
                    let has_port = match authority.strip_prefix('[') {
                        Some(inner) => inner
                            .split_once(']')
                            .is_some_and(|(_, after)| after.starts_with(':')),
                        None => authority.contains(':'),
                    };
                    assert!(
                        has_port,
                        "refused the port of {template:?}, whose authority has none: {shown}"
                    );
                }
            } else if EXACT_FIELDS.contains(&location.field.as_str()) {
                let faults = Oracle::default().judge(raw);
                assert!(
                    faults.contains_key(&location.field),
                    "refused field {} the oracle finds sound ({faults:?}): {shown}",
                    location.field
                );
            }
        }
        other => panic!("unexpected refusal kind: {other}"),
    }
}

/// Every tool schema the text holds, compiled on its own whatever else the
/// policy gets wrong (the loader compiles it before judging later fields): a
/// schema the oracle finds applying itself to the same value is refused,
/// and a refusal for that reason is of a schema the oracle does not find
/// sound; a schema that compiles is held to [`check_schema_formats`].
fn check_schemas(raw: &Table) {
    let Some(tools) = raw.get("tools").and_then(Value::as_array) else {
        return;
    };
    for schema in tools.iter().filter_map(|t| t.get("input_schema")) {
        let Ok(document) = serde_json::to_value(schema) else {
            continue;
        };
        let typed_object = schema.get("type").and_then(Value::as_str) == Some("object");
        let compiled = ToolSchema::compile(document);
        match (same_value_loops(schema), &compiled) {
            (Loops::Found(path), Ok(_)) if typed_object => panic!(
                "compiled a schema that applies itself to the same value: {}",
                path.join(" -> ")
            ),
            (Loops::None, Err(why)) if why.starts_with(SELF_APPLICATION) => {
                panic!("refused a schema that reaches itself on no value: {why}")
            }
            _ => {}
        }
        if let Ok(compiled) = compiled {
            check_schema_formats(schema, &compiled);
        }
    }
}

/// The formats the oracle knows to be checked (JSON Schema 2020-12's, less
/// `idn-hostname` and `idn-email`, which the gateway does not check).
const ORACLE_CHECKED_FORMATS: [&str; 17] = [
    "date",
    "date-time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "iri",
    "iri-reference",
    "json-pointer",
    "regex",
    "relative-json-pointer",
    "time",
    "uri",
    "uri-reference",
    "uri-template",
    "uuid",
];

/// JSON Schema 2020-12 keywords whose value is one subschema, a list of
/// them, or a map of names to them.
const ONE_SUBSCHEMA: [&str; 11] = [
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
];
const SUBSCHEMA_LISTS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
const SUBSCHEMA_MAPS: [&str; 4] = [
    "$defs",
    "dependentSchemas",
    "patternProperties",
    "properties",
];

fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Each `format` keyword at a subschema position of `schema` that names a
/// format the gateway does not check, as (JSON pointer, format).
fn unchecked_formats(schema: &Value, at: &str, out: &mut Vec<(String, String)>) {
    let Some(table) = schema.as_table() else {
        return;
    };
    if let Some(format) = table.get("format").and_then(Value::as_str)
        && !ORACLE_CHECKED_FORMATS.contains(&format)
    {
        out.push((format!("{at}/format"), format.to_owned()));
    }
    for (key, value) in table {
        let here = format!("{at}/{}", pointer_segment(key));
        if ONE_SUBSCHEMA.contains(&key.as_str()) {
            unchecked_formats(value, &here, out);
        } else if SUBSCHEMA_LISTS.contains(&key.as_str()) {
            for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                unchecked_formats(item, &format!("{here}/{i}"), out);
            }
        } else if SUBSCHEMA_MAPS.contains(&key.as_str()) {
            for (name, child) in value.as_table().into_iter().flatten() {
                unchecked_formats(child, &format!("{here}/{}", pointer_segment(name)), out);
            }
        }
    }
}

/// Every member called `format` holding a string, anywhere in `value` (a
/// schema that a `$ref` reaches may sit anywhere), as (pointer, format).
fn every_format_member(value: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::Table(table) => {
            for (key, child) in table {
                let here = format!("{at}/{}", pointer_segment(key));
                if let (true, Some(format)) = (key == "format", child.as_str()) {
                    out.push((here.clone(), format.to_owned()));
                }
                every_format_member(child, &here, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                every_format_member(item, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// A tool schema that compiles: one with a format the gateway does not
/// check at a subschema position is refused for it, and a refusal for a
/// format names the pointer of a `format` member the oracle finds
/// unchecked.
fn check_schema_formats(schema: &Value, compiled: &ToolSchema) {
    let mut unchecked = Vec::new();
    unchecked_formats(schema, "", &mut unchecked);
    match compiled.refuse_unchecked_formats() {
        Ok(()) => assert!(
            unchecked.is_empty(),
            "a schema with unchecked formats loads: {unchecked:?}"
        ),
        Err(why) => {
            let mut members = Vec::new();
            every_format_member(schema, "", &mut members);
            assert!(
                members.iter().any(|(at, format)| {
                    !ORACLE_CHECKED_FORMATS.contains(&format.as_str())
                        && why.contains(&format!(" at {at} {UNCHECKED_FORMAT}"))
                }),
                "refused a format the oracle finds checked, or at no `format`: {why}"
            );
        }
    }
}

/// The loaded model against the raw text: values kept, defaults applied,
/// every template's host reachable in the allowlist.
fn check_loaded(policy: &Policy, raw: &Table) {
    let server = raw.get("server").and_then(Value::as_table).expect("server");
    let limit = |key: &str, default: usize| {
        server
            .get(key)
            .and_then(Value::as_integer)
            .map_or(default, |n| usize::try_from(n).expect("checked range"))
    };
    assert_eq!(
        policy.server.max_frame_bytes,
        limit("max_frame_bytes", 4 << 20)
    );
    assert_eq!(policy.server.max_depth, limit("max_depth", 64));
    assert_eq!(
        policy.server.max_frame_values,
        limit("max_frame_values", 16_384)
    );
    assert_eq!(policy.server.max_id_bytes, limit("max_id_bytes", 1024));
    assert_eq!(
        policy.server.max_session_ids,
        limit("max_session_ids", 100_000)
    );
    let raw_credentials: BTreeSet<&String> = raw
        .get("credentials")
        .and_then(Value::as_table)
        .map(|c| c.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        policy.credentials.keys().collect::<BTreeSet<_>>(),
        raw_credentials
    );
    let raw_tools = tools_of(raw);
    assert_eq!(policy.tools.len(), raw_tools.len(), "every tool is kept");
    for (tool, raw_tool) in policy.tools.iter().zip(raw_tools) {
        let want = raw_tool.get("timeout_ms").and_then(Value::as_integer);
        let want = want.map_or(Duration::from_secs(30), |ms| {
            Duration::from_millis(u64::try_from(ms).expect("checked range"))
        });
        assert_eq!(tool.timeout, want, "tool {}: timeout", tool.name);
        match &tool.target {
            TargetSpec::Http(http) => {
                let raw_http = raw_tool
                    .get("http")
                    .and_then(Value::as_table)
                    .expect("http");
                assert_eq!(
                    http.method.as_str(),
                    raw_http["method"]
                        .as_str()
                        .expect("str")
                        .to_ascii_uppercase()
                );
                let allow: BTreeSet<(String, u16)> = http
                    .allow
                    .iter()
                    .map(|a| (a.host.clone(), a.port))
                    .collect();
                for entry in &http.allow {
                    let shown = entry.to_string();
                    assert_eq!(
                        url_host(&shown[..shown.rfind(':').expect("port")], entry.port),
                        Some((entry.host.clone(), entry.port)),
                        "allow entry {shown} does not read back"
                    );
                }
                check_url(&tool.name, raw_http["url"].as_str().expect("str"), &allow);
            }
            TargetSpec::Ssh(ssh) => {
                let allow: BTreeSet<(String, u16)> =
                    ssh.allow.iter().map(|a| (a.host.clone(), a.port)).collect();
                let (host, port) = url_host(&ssh.host, ssh.port).expect("ssh host parses");
                assert!(
                    allow.contains(&(host.clone(), port)),
                    "tool {}: ssh target {host}:{port} outside allow {allow:?}",
                    tool.name
                );
            }
        }
    }
}

/// The shortest credential value the scrubber redacts, and the longest
/// the gateway takes, in bytes.
const ORACLE_MIN_SECRET_BYTES: usize = 4;
const ORACLE_MAX_SECRET_BYTES: usize = 64 * 1024;

/// A credential file the harness controls, and whether its value is usable.
struct CredentialFile {
    path: std::path::PathBuf,
    usable: bool,
}

/// Credential files the harness controls: a value with surrounding
/// whitespace, a blank file, a path that does not exist, a value shorter
/// than the scrubber redacts, one a byte over the size cap, a directory, a
/// socket and `/dev/zero`. Every file credential of a loaded policy is
/// pointed at one of them (reading the policy's own paths could block on a
/// FIFO), env credentials keep their names (reading the environment has no
/// effect).
fn credential_files() -> &'static [CredentialFile] {
    type Held = (
        tempfile::TempDir,
        Option<std::os::unix::net::UnixListener>,
        Vec<CredentialFile>,
    );
    static FILES: std::sync::OnceLock<Held> = std::sync::OnceLock::new();
    &FILES
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temp dir");
            let file = |name: &str, text: &str| {
                let path = dir.path().join(name);
                std::fs::write(&path, text).expect("write");
                path
            };
            let mut files = vec![
                CredentialFile {
                    path: file("value", &format!("  {FILE_SECRET}\n")),
                    usable: true,
                },
                CredentialFile {
                    path: file("blank", " \n"),
                    usable: false,
                },
                CredentialFile {
                    path: dir.path().join("missing"),
                    usable: false,
                },
                CredentialFile {
                    path: file("short", &format!(" {SHORT_SECRET}\n")),
                    usable: false,
                },
                CredentialFile {
                    path: file("large", &"k".repeat(ORACLE_MAX_SECRET_BYTES + 1)),
                    usable: false,
                },
                CredentialFile {
                    path: dir.path().join("directory"),
                    usable: false,
                },
            ];
            std::fs::create_dir(&files[5].path).expect("mkdir");
            let socket = dir.path().join("socket");
            let listener = std::os::unix::net::UnixListener::bind(&socket).ok();
            if listener.is_some() {
                files.push(CredentialFile {
                    path: socket,
                    usable: false,
                });
            }
            let zero = std::path::PathBuf::from("/dev/zero");
            if zero.exists() {
                files.push(CredentialFile {
                    path: zero,
                    usable: false,
                });
            }
            (dir, listener, files)
        })
        .2
}

const FILE_SECRET: &str = "file-secret-7f3a";
/// Three bytes: sent in the clear and echoed back if it were ever bound.
const SHORT_SECRET: &str = "q#Z";

/// Resolving the credentials: each ends as a value or as a problem, never
/// both; a value is the trimmed file text, at least as long as the
/// scrubber redacts and at most the cap; a file that is too short, too
/// long or not a regular file is a problem naming the file; no value shows
/// in any `Debug` output or problem.
fn check_secrets(mut policy: Policy) {
    let files = credential_files();
    let mut chosen = BTreeMap::new();
    for (i, (name, source)) in policy.credentials.iter_mut().enumerate() {
        if let CredentialSource::File(path) = source {
            let file = &files[i % files.len()];
            path.clone_from(&file.path);
            chosen.insert(name.clone(), file);
        }
    }
    let store = SecretStore::from_environment(&policy);
    let bound = policy.clone().bind_secrets(store.clone());
    let shown = format!("{bound:?} {store:?}");
    assert!(
        !shown.contains(FILE_SECRET) && !shown.contains(SHORT_SECRET),
        "a credential value shows in Debug"
    );
    for (name, source) in &policy.credentials {
        let value = store.get(name);
        let problem = store.problems().get(name);
        assert!(
            value.is_some() != problem.is_some(),
            "credential {name}: exactly one of a value or a problem"
        );
        if let Some(secret) = value {
            let text = secret.expose();
            assert!(!text.is_empty() && text == text.trim());
            assert!(
                (ORACLE_MIN_SECRET_BYTES..=ORACLE_MAX_SECRET_BYTES).contains(&text.len()),
                "credential {name}: a value of {} bytes is bound",
                text.len()
            );
            match source {
                CredentialSource::File(path) => {
                    assert_eq!(text, FILE_SECRET);
                    assert_eq!(secret.path(), Some(path.as_path()));
                }
                CredentialSource::Env(_) => assert_eq!(secret.path(), None),
            }
        }
        if let Some(file) = chosen.get(name) {
            assert_eq!(
                value.is_some(),
                file.usable,
                "credential {name}: {} {}",
                file.path.display(),
                if file.usable {
                    "is not bound"
                } else {
                    "is bound"
                }
            );
            if let Some(problem) = problem {
                assert!(
                    problem.contains(&file.path.display().to_string()),
                    "credential {name}: the problem does not name its file: {problem}"
                );
            }
        }
        if let Some(problem) = problem {
            assert!(
                !problem.contains(FILE_SECRET) && !problem.contains(SHORT_SECRET),
                "a problem shows a value"
            );
        }
    }
    // Replay binds a stand-in to every credential, so authorization decides
    // as it would with all of them present.
    let stand_ins = SecretStore::stand_ins(&policy);
    assert!(stand_ins.problems().is_empty());
    for name in policy.credentials.keys() {
        assert!(
            stand_ins.get(name).is_some_and(|s| s.path().is_none()),
            "credential {name} has no stand-in"
        );
    }
}

/// The raw `tools.http.url` of the tool a refusal names (by name, or by
/// index when it has none).
fn raw_url<'t>(raw: &'t Table, tool: Option<&str>) -> Option<&'t str> {
    let tools = raw.get("tools")?.as_array()?;
    let found = tools.iter().enumerate().find(|(i, t)| {
        let name = t.get("name").and_then(toml::Value::as_str);
        tool.is_some_and(|wanted| name == Some(wanted) || wanted == i.to_string())
    });
    found?.1.get("http")?.get("url")?.as_str()
}

/// The URL with each placeholder standing for a plain value: the URL parser
/// must see the template's own path (no dot segment resolved away) and,
/// when the host is literal, a host:port in the allowlist.
fn check_url(tool: &str, template: &str, allow: &BTreeSet<(String, u16)>) {
    let concrete = strip_placeholders(template, "x");
    let url = url::Url::parse(&concrete)
        .unwrap_or_else(|e| panic!("tool {tool}: loaded url {template:?} does not parse: {e}"));
    let after_scheme = &concrete[concrete.find("://").expect("scheme") + 3..];
    let path_start = after_scheme.find(['/', '?']).unwrap_or(after_scheme.len());
    let raw_path = after_scheme[path_start..]
        .split('?')
        .next()
        .unwrap_or_default();
    let raw_path = if raw_path.is_empty() { "/" } else { raw_path };
    assert_eq!(
        url.path(),
        raw_path,
        "tool {tool}: the URL parser rewrites the path of {template:?}"
    );
    let authority = &template[template.find("://").expect("scheme") + 3..];
    let authority = &authority[..authority.find(['/', '?']).unwrap_or(authority.len())];
    if !authority.contains('{') {
        let host = url.host_str().expect("http URLs have hosts").to_owned();
        let port = url.port_or_known_default().expect("http has a port");
        assert!(
            allow.contains(&(host.clone(), port)),
            "tool {tool}: url {template:?} reaches {host}:{port}, outside allow {allow:?}"
        );
    }
}

/// `{name}` placeholders replaced by `with`, `{{`/`}}` by a brace.
fn strip_placeholders(template: &str, with: &str) -> String {
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                }
                out.push_str(with);
            }
            c => out.push(c),
        }
    }
    out
}

/// Placeholder names of a template as the oracle reads it, or `None` when
/// its braces do not pair up.
fn placeholders(template: &str) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
            }
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next()? {
                        '}' => break,
                        c if c.is_ascii_alphanumeric() || c == '_' || c == '-' => name.push(c),
                        _ => return None,
                    }
                }
                if name.is_empty() {
                    return None;
                }
                names.push(name);
            }
            '}' => return None,
            _ => {}
        }
    }
    Some(names)
}

/// `host:port` as the URL parser reads it (lowercased, IPv4 canonical,
/// IPv6 bracketed), or `None` when it is not a plain host.
fn url_host(host: &str, port: u16) -> Option<(String, u16)> {
    let bracketed = host.starts_with('[') && host.ends_with(']');
    if host.is_empty() || (host.contains(['/', '?', '#', '@', ':', '\\']) && !bracketed) {
        return None;
    }
    let url = url::Url::parse(&format!("http://{host}/")).ok()?;
    Some((url.host_str()?.to_owned(), port))
}

fn tools_of(raw: &Table) -> Vec<&Table> {
    raw.get("tools")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_table).collect())
        .unwrap_or_default()
}

/// The oracle: faults it finds in the raw text, by field (the loader's
/// field names, so a refusal can be matched).
#[derive(Default)]
struct Oracle {
    faults: BTreeMap<String, String>,
}

fn in_range(v: Option<&Value>, lo: i64, hi: i64) -> bool {
    v.is_none_or(|v| v.as_integer().is_some_and(|n| (lo..=hi).contains(&n)))
}

fn plain_name(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

impl Oracle {
    fn fault(&mut self, field: impl Into<String>, why: &str) {
        self.faults
            .entry(field.into())
            .or_insert_with(|| why.to_owned());
    }

    fn judge(mut self, raw: &Table) -> BTreeMap<String, String> {
        let server = raw.get("server").and_then(Value::as_table);
        let server = server.cloned().unwrap_or_default();
        if server
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(|n| n.trim().is_empty())
        {
            self.fault("server.name", "empty");
        }
        let ranges = [
            ("max_frame_bytes", 256, 64 << 20),
            ("max_depth", 4, 127),
            ("max_frame_values", 64, 1 << 20),
            ("max_id_bytes", 16, 65_536),
            ("max_session_ids", 1, 100_000_000),
        ];
        for (key, lo, hi) in ranges {
            if !in_range(server.get(key), lo, hi) {
                self.fault(format!("server.{key}"), "out of range");
            }
        }
        let credentials = raw
            .get("credentials")
            .and_then(Value::as_table)
            .cloned()
            .unwrap_or_default();
        for (name, c) in &credentials {
            let set = |k: &str| {
                c.get(k)
                    .and_then(Value::as_str)
                    .is_some_and(|v| !v.is_empty())
            };
            let present = |k: &str| c.get(k).is_some();
            let one = (set("env") && !present("file")) || (set("file") && !present("env"));
            if !one {
                self.fault(format!("credentials.{name}"), "not exactly one source");
            }
        }
        let mut names = BTreeSet::new();
        for tool in tools_of(raw) {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            if !plain_name(name, 128) || !names.insert(name.to_owned()) {
                self.fault("tools.name", "bad or duplicate name");
            }
            if !in_range(tool.get("timeout_ms"), 1, 600_000) {
                self.fault("tools.timeout_ms", "out of range");
            }
            match (tool.get("http"), tool.get("ssh")) {
                (Some(Value::Table(http)), None) => self.http(http, &credentials),
                (None, Some(Value::Table(ssh))) => self.ssh(ssh, &credentials),
                _ => self.fault("tools", "not exactly one target"),
            }
            self.placeholders(tool);
            let mut unchecked = Vec::new();
            if let Some(schema) = tool.get("input_schema") {
                unchecked_formats(schema, "", &mut unchecked);
            }
            if !unchecked.is_empty() {
                self.fault("tools.input_schema", "a format the gateway does not check");
            }
        }
        self.faults
    }

    fn credential(&mut self, section: &str, t: &Table, credentials: &Table) {
        if let Some(c) = t.get("credential").and_then(Value::as_str)
            && !credentials.contains_key(c)
        {
            self.fault(format!("{section}.credential"), "undefined credential");
        }
    }

    fn allow(&mut self, field: &str, t: &Table) -> BTreeSet<(String, u16)> {
        let entries: Vec<&str> = t
            .get("allow")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if entries.is_empty() {
            self.fault(field, "empty allow");
        }
        let mut out = BTreeSet::new();
        for entry in entries {
            let parsed = entry.rsplit_once(':').and_then(|(h, p)| {
                // Digits only, as a URL writes a port.
                let digits = !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
                let port = p.parse::<u16>().ok().filter(|p| *p != 0 && digits)?;
                url_host(h, port)
            });
            match parsed {
                Some(hp) => {
                    out.insert(hp);
                }
                None => self.fault(field, "not host:port"),
            }
        }
        out
    }

    fn http(&mut self, http: &Table, credentials: &Table) {
        let method = http
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let known = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
        if !known.contains(&method.to_ascii_uppercase().as_str()) {
            self.fault("tools.http.method", "unknown method");
        }
        self.allow("tools.http.allow", http);
        if !in_range(http.get("max_response_bytes"), 1, 64 << 20) {
            self.fault("tools.http.max_response_bytes", "out of range");
        }
        let url = http.get("url").and_then(Value::as_str).unwrap_or_default();
        let lits_ok = |s: &str| {
            strip_placeholders(s, "")
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~!$'()*+,;:@".contains(&b))
        };
        match url.split_once("://") {
            Some(("http" | "https", rest)) if !rest.contains('#') => {
                let end = rest.find(['/', '?']).unwrap_or(rest.len());
                let (authority, tail) = rest.split_at(end);
                if authority.contains('@') {
                    self.fault("tools.http.url", "user info");
                }
                let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
                for segment in path.split('/').skip(1) {
                    if matches!(segment, "." | "..") || !lits_ok(segment) {
                        self.fault("tools.http.url", "dot segment or escaping");
                    }
                }
                for pair in query.split('&').filter(|_| tail.contains('?')) {
                    match pair.split_once('=') {
                        Some((k, v)) if !k.is_empty() && lits_ok(k) && !k.contains('{') => {
                            if !lits_ok(v) {
                                self.fault("tools.http.url", "query escaping");
                            }
                        }
                        _ => self.fault("tools.http.url", "query pair"),
                    }
                }
            }
            _ => self.fault("tools.http.url", "scheme or fragment"),
        }
        self.credential("tools.http", http, credentials);
    }

    fn ssh(&mut self, ssh: &Table, credentials: &Table) {
        let port = ssh.get("port").and_then(Value::as_integer).unwrap_or(22);
        if port == 0 {
            self.fault("tools.ssh.port", "zero");
        }
        let user = ssh.get("user").and_then(Value::as_str).unwrap_or_default();
        if !plain_name(user, usize::MAX) || user.starts_with('-') {
            self.fault("tools.ssh.user", "not plain");
        }
        let allow = self.allow("tools.ssh.allow", ssh);
        let host = ssh.get("host").and_then(Value::as_str).unwrap_or_default();
        match url_host(host, u16::try_from(port).unwrap_or(0)) {
            Some(target) if allow.contains(&target) => {}
            _ => self.fault("tools.ssh.allow", "target outside allow"),
        }
        let argv: Vec<&str> = ssh
            .get("argv")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match argv.first() {
            None => self.fault("tools.ssh.argv", "empty"),
            Some(cmd) if placeholders(cmd).is_some_and(|p| !p.is_empty()) => {
                self.fault("tools.ssh.argv[0]", "placeholder command");
            }
            Some(_) => {}
        }
        if !in_range(ssh.get("max_output_bytes"), 1, 64 << 20) {
            self.fault("tools.ssh.max_output_bytes", "out of range");
        }
        self.credential("tools.ssh", ssh, credentials);
    }

    /// Every placeholder names a required string or integer property.
    fn placeholders(&mut self, tool: &Table) {
        // Each template with the field a malformed one is refused under.
        let templates: Vec<(String, &str)> = match (tool.get("http"), tool.get("ssh")) {
            (Some(Value::Table(h)), _) => h
                .get("url")
                .and_then(Value::as_str)
                .map(|url| ("tools.http.url".to_owned(), url))
                .into_iter()
                .collect(),
            (_, Some(Value::Table(s))) => s
                .get("argv")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .enumerate()
                        .map(|(i, arg)| (format!("tools.ssh.argv[{i}]"), arg))
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let schema = tool.get("input_schema").and_then(Value::as_table);
        for (field, template) in templates {
            let Some(names) = placeholders(template) else {
                self.fault(field, "unpaired braces");
                continue;
            };
            for name in names {
                let required = schema
                    .and_then(|s| s.get("required"))
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|v| v.as_str() == Some(&name)));
                let typed = schema
                    .and_then(|s| s.get("properties"))
                    .and_then(|p| p.get(&name))
                    .and_then(|p| p.get("type"))
                    .and_then(Value::as_str)
                    .is_some_and(|t| t == "string" || t == "integer");
                if !required || !typed {
                    self.fault("placeholder", "not a required string or integer");
                }
            }
        }
    }
}
