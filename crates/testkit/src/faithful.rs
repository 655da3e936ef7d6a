//! Faithful expansion: an independent judge of whether an authorized action
//! is exactly what its tool's template allows for the call's arguments.
//!
//! It shares no code with the gateway's template, policy or URL handling:
//! templates are parsed here from the policy's raw TOML text, and the
//! authorized URL is split by hand and percent-decoded with
//! `percent-encoding` (never `url::Url`'s path or query accessors), so a
//! rewrite inside the gateway's URL builder cannot hide from it.
//!
//! The rule, for HTTP: the method, scheme, host and port are the template's
//! (the host in the allowlist); no userinfo, no fragment; the path has
//! exactly the template's segments, literal segments unchanged, each
//! templated segment percent-decoding to exactly its expansion; the query
//! has exactly the template's keys in order, each value form-decoding to
//! exactly its expansion. For SSH: user, host and port are the policy's and
//! each argv element equals its expansion. In both, a call whose expansion
//! is empty, is a dot segment, or carries a C0 control or DEL must have been
//! denied.
//!
//! Modules: `template` (placeholders and expansion), `tools` (each tool's
//! template read from the policy text), `url` (host, port and
//! percent-decoding by hand), `http` and `ssh` (the rule for each kind).

mod http;
mod ssh;
mod template;
mod tools;
mod url;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use portcullis_gateway::Policy;
use serde_json::{Map, Value};

pub use template::{Piece, Template};
pub use tools::{HttpTemplate, SshTemplate, Templates, ToolTemplate};

use template::write_template;

use crate::session::SessionReport;

/// The `arguments` of the `tools/call` on 1-based input `line`, read with a
/// plain line split and lenient `serde_json` (as the reference check does).
pub fn line_arguments(input: &[u8], line: u64) -> Option<Map<String, Value>> {
    let index = usize::try_from(line).ok()?.checked_sub(1)?;
    let raw = input.split(|&b| b == b'\n').nth(index)?;
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let value: Value = serde_json::from_slice(raw).ok()?;
    match value.get("params")?.get("arguments") {
        None => Some(Map::new()),
        Some(Value::Object(args)) => Some(args.clone()),
        Some(_) => None,
    }
}

/// The templates of `policy`: from the policy text it was loaded from (its
/// source file, or the test policy), cached per source. A policy whose text
/// cannot be found (built from text under a made-up path) falls back to
/// the templates the policy kept: the raw URL text, and the SSH argv pieces
/// written back as template text.
pub fn templates_of(policy: &Policy) -> Arc<Templates> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<Templates>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = cache.get(&policy.source)
        && matches_policy(found, policy)
    {
        return Arc::clone(found);
    }
    let templates = Arc::new(resolve(policy));
    cache.insert(policy.source.clone(), Arc::clone(&templates));
    templates
}

fn resolve(policy: &Policy) -> Templates {
    let candidates = [
        read_text(&policy.source),
        Some(crate::fixtures::TEST_POLICY.to_owned()),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter_map(|text| Templates::from_toml(&text).ok())
        .find(|t| matches_policy(t, policy))
        .unwrap_or_else(|| from_loaded(policy))
}

fn read_text(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Whether `templates` describe exactly the tools of `policy` (same names,
/// same kinds, same URL text).
fn matches_policy(templates: &Templates, policy: &Policy) -> bool {
    use portcullis_gateway::policy::TargetSpec;
    templates.tools.len() == policy.tools.len()
        && policy
            .tools
            .iter()
            .all(|tool| match (templates.tool(&tool.name), &tool.target) {
                (Some(ToolTemplate::Http(t)), TargetSpec::Http(spec)) => t.url == spec.url_template,
                (Some(ToolTemplate::Ssh(t)), TargetSpec::Ssh(spec)) => {
                    t.argv.len() == spec.argv.len()
                }
                _ => false,
            })
}

fn from_loaded(policy: &Policy) -> Templates {
    use portcullis_gateway::policy::TargetSpec;
    use portcullis_gateway::template::Piece as GatewayPiece;
    let mut text = String::new();
    for tool in &policy.tools {
        let quote = |s: &str| Value::String(s.to_owned()).to_string();
        let _ = writeln!(text, "[[tools]]\nname = {}", quote(&tool.name));
        match &tool.target {
            TargetSpec::Http(spec) => {
                let allow: Vec<String> = spec.allow.iter().map(|a| quote(&a.to_string())).collect();
                let _ = writeln!(
                    text,
                    "[tools.http]\nmethod = {}\nurl = {}\nallow = [{}]",
                    quote(spec.method.as_str()),
                    quote(&spec.url_template),
                    allow.join(",")
                );
            }
            TargetSpec::Ssh(spec) => {
                let allow: Vec<String> = spec.allow.iter().map(|a| quote(&a.to_string())).collect();
                let argv: Vec<String> = spec
                    .argv
                    .iter()
                    .map(|t| {
                        let pieces =
                            t.0.iter()
                                .map(|p| match p {
                                    GatewayPiece::Lit(s) => Piece::Lit(s.clone()),
                                    GatewayPiece::Arg(n) => Piece::Arg(n.clone()),
                                })
                                .collect();
                        quote(&write_template(&Template(pieces)))
                    })
                    .collect();
                let _ = writeln!(
                    text,
                    "[tools.ssh]\nhost = {}\nport = {}\nuser = {}\nargv = [{}]\nallow = [{}]",
                    quote(&spec.host),
                    spec.port,
                    quote(&spec.user),
                    argv.join(","),
                    allow.join(",")
                );
            }
        }
    }
    Templates::from_toml(&text).unwrap_or_default()
}

/// Check every recorded action of a session against its tool's template,
/// with the arguments read back from the input line that produced it.
pub fn check_report(policy: &Policy, input: &[u8], report: &SessionReport) -> Result<(), String> {
    if report.actions.is_empty() {
        return Ok(());
    }
    let templates = templates_of(policy);
    for (entry, action) in report.journal.iter().zip(&report.actions) {
        if entry.tool != action.tool() {
            return Err(format!(
                "journal entry for line {} names {}, the executor saw {}",
                entry.line,
                entry.tool,
                action.tool()
            ));
        }
        let args = line_arguments(input, entry.line).ok_or_else(|| {
            format!(
                "line {} executed {} but holds no readable tools/call arguments",
                entry.line,
                action.tool()
            )
        })?;
        templates.check(&args, action)?;
    }
    Ok(())
}
