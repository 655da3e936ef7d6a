//! The tool gate: which listed tools the client sees and may call, and with
//! which arguments.
//!
//! A tool is callable when a `tools/list` answer in this session showed it
//! with the definition its pin names (or it was pinned from that answer),
//! and its input schema compiled. Pins come from `--pins FILE`, or from the
//! first complete `tools/list` (trust on first use); a tool the policy's
//! `[wrap] tools` allowlist names is pinned on first sight as well. A
//! pinned tool whose definition changes is withheld from the list and its
//! calls are denied until it matches its pin again. Schemas are compiled by
//! the gateway's schema module, which closes every object that declares
//! `properties` (arguments the schema does not name are refused).
//!
//! A compiled schema is far larger than its text, and not in proportion to
//! it (a short pattern with counted repetitions compiles to hundreds of
//! kilobytes, a long property name is copied into every node below it), so
//! before a schema is compiled its cost is counted
//! ([`CompileCost::of`], one walk): a schema past the limits of one tool
//! ([`MAX_SCHEMA_NODES`], [`MAX_SCHEMA_PATTERNS`],
//! [`MAX_SCHEMA_COMPILED_BYTES`]) or past what is left of the session's
//! budget ([`BASE_COMPILED_BYTES`] plus twice the frame cap) is withheld,
//! never compiled.
//!
//! Tool names come from the client and the upstream and may be as long as
//! a frame; what reaches a message, an audit record or a log line is
//! [`bounded_name`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use portcullis_gateway::schema::{CompileCost, ToolSchema};
use serde_json::{Map, Value};

use crate::config::SchemaCompiler;
use crate::effect::AuditRecord;
use crate::pin::{Pin, Pins};

/// Nodes (JSON values: objects, arrays and scalars) one tool's input
/// schema may have; real tools' schemas have tens to a few hundred.
pub const MAX_SCHEMA_NODES: usize = 4096;
/// Regular expressions (`pattern` values, `patternProperties` keys) one
/// tool's input schema may compile.
pub const MAX_SCHEMA_PATTERNS: usize = 64;
/// Estimated compiled bytes ([`CompileCost`]) of one tool's input schema.
pub const MAX_SCHEMA_COMPILED_BYTES: usize = 8 * 1024 * 1024;
/// Estimated compiled bytes of all the input schemas a session keeps, on
/// top of twice the frame cap (the byte budget of the kept schemas): 16 MiB
/// under the default 4 MiB frame cap, where a hundred tools of forty nodes
/// each take under half of it.
pub const BASE_COMPILED_BYTES: usize = 8 * 1024 * 1024;
/// Bytes of a tool name shown in a message, an audit record or a log line.
pub const NAME_BYTES_SHOWN: usize = 128;
/// Bytes of jsonschema's words on an unusable schema kept in a record (they
/// may quote the schema).
const MAX_REASON_BYTES: usize = 512;

/// `name` as it may be shown: at most [`NAME_BYTES_SHOWN`] bytes, with
/// control and invisible characters written `\u{…}` (and `\` written
/// `\\`), and `…(N bytes)` after it when it was cut (N: the whole name's
/// length).
pub fn bounded_name(name: &str) -> String {
    let mut shown = String::new();
    let mut cut = false;
    for c in name.chars() {
        let start = shown.len();
        if c == '\\' {
            shown.push_str("\\\\");
        } else if hidden(c) {
            let _ = write!(shown, "\\u{{{:x}}}", u32::from(c));
        } else {
            shown.push(c);
        }
        if shown.len() > NAME_BYTES_SHOWN {
            shown.truncate(start);
            cut = true;
            break;
        }
    }
    if cut {
        let _ = write!(shown, "…({} bytes)", name.len());
    }
    shown
}

/// At most `max` bytes of `text` (cut at a character), `…` after it when
/// cut.
fn shortened(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let end = (0..=max)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}…", &text[..end])
}

/// Characters that do not show as themselves on a terminal or in a log
/// viewer: controls, separators other than the space, and format and
/// private-use characters (bidi overrides, zero widths, tags...).
fn hidden(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            u32::from(c),
            0xAD | 0x34F
                | 0x61C
                | 0x115F..=0x1160
                | 0x17B4..=0x17B5
                | 0x180B..=0x180F
                | 0x200B..=0x200F
                | 0x202A..=0x202E
                | 0x2060..=0x206F
                | 0x3164
                | 0xE000..=0xF8FF
                | 0xFE00..=0xFE0F
                | 0xFEFF
                | 0xFFA0
                | 0xFFF0..=0xFFFB
                | 0x1D173..=0x1D17A
                | 0xE0000..=0xE0FFF
                | 0xF0000..
        )
}

/// Why a `tools/call` was denied; its text is the tool error the model
/// reads. The tool names it holds are [`bounded_name`]s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Denial {
    /// The tool changed since it was pinned.
    #[error(
        "denied: tool \"{0}\" changed since it was pinned (its listing no longer matches the pin); review it and update the pins"
    )]
    Changed(String),
    /// The tool is neither pinned nor in the policy's allowlist.
    #[error(
        "denied: tool \"{0}\" is not allowed (not pinned and not in the policy's [wrap] tools)"
    )]
    NotAllowed(String),
    /// The tool may be allowed but no `tools/list` in this session showed it.
    #[error("denied: tool \"{0}\" has not been listed in this session; call tools/list first")]
    NotListed(String),
    /// The arguments fail the pinned input schema.
    #[error("{0}")]
    Schema(String),
}

#[derive(Debug)]
struct Trusted {
    pin: Pin,
    schema: ToolSchema,
    /// Serialized size of the schema, counted against the byte budget.
    bytes: usize,
    /// Its estimated compiled size, counted against the compile budget.
    compiled: usize,
}

#[derive(Debug)]
pub(crate) struct ToolTable {
    pins: Pins,
    trusted: BTreeMap<String, Trusted>,
    pulled: BTreeSet<String>,
    allowlist: Option<BTreeSet<String>>,
    tofu_open: bool,
    max_tools: usize,
    /// Serialized bytes of the trusted schemas, and their cap: however many
    /// pages an upstream lists, what the table keeps stays within a few
    /// frames.
    schema_bytes: usize,
    max_schema_bytes: usize,
    /// Estimated compiled bytes of the trusted schemas, and their cap
    /// ([`BASE_COMPILED_BYTES`] plus the byte cap).
    compiled_bytes: usize,
    max_compiled_bytes: usize,
    compile: SchemaCompiler,
}

/// A `tools/list` result with the tools the client may see, and what
/// happened on the way.
pub(crate) struct Filtered {
    pub(crate) result: Value,
    pub(crate) records: Vec<AuditRecord>,
    pub(crate) pins_changed: bool,
}

impl ToolTable {
    pub(crate) fn new(
        pins: Option<Pins>,
        allowlist: Option<BTreeSet<String>>,
        max_tools: usize,
        max_schema_bytes: usize,
    ) -> Self {
        Self {
            schema_bytes: 0,
            max_schema_bytes,
            compiled_bytes: 0,
            max_compiled_bytes: BASE_COMPILED_BYTES.saturating_add(max_schema_bytes),
            tofu_open: pins.is_none(),
            pins: pins.unwrap_or_default(),
            trusted: BTreeMap::new(),
            pulled: BTreeSet::new(),
            allowlist,
            max_tools,
            compile: ToolSchema::compile_untrusted,
        }
    }

    /// The same table, compiling input schemas with `compile`.
    pub(crate) fn compiling_with(self, compile: SchemaCompiler) -> Self {
        Self { compile, ..self }
    }

    pub(crate) fn schema_bytes(&self) -> usize {
        self.schema_bytes
    }

    pub(crate) fn pins(&self) -> &Pins {
        &self.pins
    }

    /// Filter one `tools/list` result. `None` when it is not a result with
    /// a `tools` array.
    pub(crate) fn filter(&mut self, result: &Map<String, Value>) -> Option<Filtered> {
        let tools = result.get("tools")?.as_array()?;
        let mut records = Vec::new();
        let mut pins_changed = false;
        let mut kept = Vec::new();
        let mut seen = BTreeSet::new();
        for tool in tools {
            let Some(def) = tool.as_object() else {
                records.push(withheld("(not an object)", "a tool must be an object"));
                continue;
            };
            let Some(name) = def.get("name").and_then(Value::as_str) else {
                records.push(withheld("(no name)", "a tool must have a string name"));
                continue;
            };
            if !seen.insert(name.to_owned()) {
                records.push(withheld(name, "listed twice in one answer"));
                continue;
            }
            if self.judge(name, def, &mut records, &mut pins_changed) {
                kept.push(tool.clone());
            }
        }
        if !result.contains_key("nextCursor") && self.tofu_open {
            // Trust on first use is over: the pins are what they will be
            // held to from now on, so they are written even when empty.
            self.tofu_open = false;
            pins_changed = true;
        }
        // The listing is the largest thing the upstream sends: only what is
        // kept of it is copied, never the whole of it once more.
        let mut filtered: Map<String, Value> = result
            .iter()
            .filter(|(key, _)| *key != "tools")
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        filtered.insert("tools".into(), Value::Array(kept));
        Some(Filtered {
            result: Value::Object(filtered),
            records,
            pins_changed,
        })
    }

    /// Whether the client sees `def`, updating pins and trust.
    fn judge(
        &mut self,
        name: &str,
        def: &Map<String, Value>,
        records: &mut Vec<AuditRecord>,
        pins_changed: &mut bool,
    ) -> bool {
        let pin = Pin::of(def);
        match self.pins.get(name).copied() {
            Some(pinned) if pinned != pin => {
                self.untrust(name);
                if self.pulled.insert(name.to_owned()) {
                    records.push(AuditRecord::RugPull {
                        tool: name.to_owned(),
                        pinned,
                        seen: pin,
                    });
                }
                false
            }
            Some(_) => {
                self.pulled.remove(name);
                self.trust(name, pin, def, records)
            }
            None => {
                let may_pin = match &self.allowlist {
                    Some(allow) => allow.contains(name),
                    None => self.tofu_open,
                };
                if !may_pin {
                    records.push(withheld(
                        name,
                        "not pinned and not in the policy's [wrap] tools",
                    ));
                    return false;
                }
                if self.pins.len() >= self.max_tools {
                    records.push(withheld(name, "too many tools pinned already"));
                    return false;
                }
                if !self.trust(name, pin, def, records) {
                    return false;
                }
                self.pins.insert(name.to_owned(), pin);
                records.push(AuditRecord::Pinned {
                    tool: name.to_owned(),
                    pin,
                });
                *pins_changed = true;
                true
            }
        }
    }

    fn trust(
        &mut self,
        name: &str,
        pin: Pin,
        def: &Map<String, Value>,
        records: &mut Vec<AuditRecord>,
    ) -> bool {
        if self.trusted.get(name).is_some_and(|t| t.pin == pin) {
            return true;
        }
        self.untrust(name);
        let schema = match def.get("inputSchema") {
            Some(schema @ Value::Object(_)) => schema,
            _ => {
                records.push(withheld(
                    name,
                    "unusable inputSchema: inputSchema must be an object",
                ));
                return false;
            }
        };
        let cost = CompileCost::of(schema);
        if let Some(limit) = self.past_a_limit(&cost) {
            records.push(withheld(name, &limit));
            return false;
        }
        let bytes = schema.to_string().len();
        if self.schema_bytes + bytes > self.max_schema_bytes {
            records.push(withheld(
                name,
                "the tool schemas kept exceed their byte budget",
            ));
            return false;
        }
        match (self.compile)(schema.clone()) {
            Ok(schema) => {
                self.schema_bytes += bytes;
                self.compiled_bytes += cost.bytes;
                let trusted = Trusted {
                    pin,
                    schema,
                    bytes,
                    compiled: cost.bytes,
                };
                self.trusted.insert(name.to_owned(), trusted);
                true
            }
            Err(why) => {
                let why = shortened(&why, MAX_REASON_BYTES);
                records.push(withheld(name, &format!("unusable inputSchema: {why}")));
                false
            }
        }
    }

    fn untrust(&mut self, name: &str) {
        if let Some(old) = self.trusted.remove(name) {
            self.schema_bytes -= old.bytes;
            self.compiled_bytes -= old.compiled;
        }
    }

    /// The limit a schema of `cost` is past, in words, if any.
    fn past_a_limit(&self, cost: &CompileCost) -> Option<String> {
        const MIB: usize = 1024 * 1024;
        if cost.nodes > MAX_SCHEMA_NODES {
            return Some(format!(
                "inputSchema has {} nodes, past the limit of {MAX_SCHEMA_NODES} per tool",
                cost.nodes
            ));
        }
        if cost.patterns > MAX_SCHEMA_PATTERNS {
            return Some(format!(
                "inputSchema has {} regular expressions, past the limit of {MAX_SCHEMA_PATTERNS} per tool",
                cost.patterns
            ));
        }
        if cost.bytes > MAX_SCHEMA_COMPILED_BYTES {
            return Some(format!(
                "inputSchema would take about {} KiB compiled, past the limit of {} MiB per tool",
                cost.bytes / 1024,
                MAX_SCHEMA_COMPILED_BYTES / MIB
            ));
        }
        if self.compiled_bytes + cost.bytes > self.max_compiled_bytes {
            return Some(format!(
                "the compiled tool schemas would pass their budget of {} KiB per session ({} MiB + 2 × max_frame_bytes)",
                self.max_compiled_bytes / 1024,
                BASE_COMPILED_BYTES / MIB
            ));
        }
        None
    }

    /// Whether `name` may be called with `arguments`.
    pub(crate) fn check_call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<(), Denial> {
        if self.pulled.contains(name) {
            return Err(Denial::Changed(bounded_name(name)));
        }
        match self.trusted.get(name) {
            Some(t) => t
                .schema
                .check(&bounded_name(name), arguments)
                .map(drop)
                .map_err(|e| Denial::Schema(e.to_string())),
            None if self.pins.contains_key(name)
                || self.allowlist.as_ref().is_some_and(|a| a.contains(name)) =>
            {
                Err(Denial::NotListed(bounded_name(name)))
            }
            None => Err(Denial::NotAllowed(bounded_name(name))),
        }
    }
}

fn withheld(tool: &str, reason: &str) -> AuditRecord {
    AuditRecord::ToolWithheld {
        tool: tool.to_owned(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use portcullis_gateway::schema::TEXT_FACTOR;
    use serde_json::json;

    use super::*;

    const FRAME: usize = 4 * 1024 * 1024;

    fn table() -> ToolTable {
        ToolTable::new(None, None, 4096, 2 * FRAME)
    }

    /// One complete listing of `tools`; the names shown and the reasons of
    /// the tools withheld.
    fn list(table: &mut ToolTable, tools: Vec<Value>) -> (Vec<String>, Vec<String>) {
        let result = json!({ "tools": tools });
        let filtered = table.filter(result.as_object().unwrap()).unwrap();
        let shown = filtered.result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        let withheld = filtered
            .records
            .iter()
            .filter_map(|r| match r {
                AuditRecord::ToolWithheld { reason, .. } => Some(reason.clone()),
                _ => None,
            })
            .collect();
        (shown, withheld)
    }

    fn tool(name: &str, schema: Value) -> Value {
        json!({ "name": name, "inputSchema": schema })
    }

    fn properties(n: usize, each: impl Fn(usize) -> Value) -> Value {
        let map: Map<String, Value> = (0..n).map(|i| (format!("p{i}"), each(i))).collect();
        json!({ "type": "object", "properties": map })
    }

    /// What a real server lists: a few string and number arguments with
    /// descriptions, some required (about forty nodes).
    fn ordinary(name: &str) -> Value {
        let described = |t: &str| json!({"type": t, "description": "The thing this argument names, in a few words"});
        tool(
            name,
            json!({
                "type": "object",
                "properties": {
                    "owner": described("string"), "repo": described("string"),
                    "title": described("string"), "body": described("string"),
                    "head": described("string"), "base": described("string"),
                    "draft": described("boolean"), "number": described("integer"),
                    "labels": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["owner", "repo", "title"],
            }),
        )
    }

    #[test]
    fn a_short_plain_name_is_shown_as_it_is() {
        assert_eq!(bounded_name("get_weather"), "get_weather");
        assert_eq!(bounded_name("wetter_für_köln"), "wetter_für_köln");
    }

    /// The space is the one separator that shows as itself; a no-break or
    /// em space looks like it and is escaped.
    #[test]
    fn a_space_shows_and_other_spaces_are_escaped() {
        assert_eq!(bounded_name("get weather"), "get weather");
        assert_eq!(bounded_name("get\u{a0}weather"), "get\\u{a0}weather");
        assert_eq!(bounded_name("get\u{2003}weather"), "get\\u{2003}weather");
    }

    /// The bytes the table reports are those of the schemas it keeps, so
    /// the session's memory bound is judged on what is really held.
    #[test]
    fn the_schema_bytes_are_those_of_the_schemas_kept() {
        let mut t = table();
        let tools = [ordinary("a"), ordinary("b")];
        let expected: usize = tools
            .iter()
            .map(|t| t["inputSchema"].to_string().len())
            .sum();
        let (shown, _) = list(&mut t, tools.to_vec());
        assert_eq!(shown, ["a", "b"]);
        assert_eq!(t.schema_bytes(), expected);
    }

    /// Schemas that fill the byte budget exactly are kept; one byte less
    /// of budget withholds the last.
    #[test]
    fn the_schema_byte_budget_is_reached_but_not_passed() {
        let tools = [ordinary("a"), ordinary("b")];
        let bytes: usize = tools
            .iter()
            .map(|t| t["inputSchema"].to_string().len())
            .sum();
        let mut exact = ToolTable::new(None, None, 4096, bytes);
        let (shown, withheld) = list(&mut exact, tools.to_vec());
        assert_eq!(shown, ["a", "b"], "{withheld:?}");
        let mut short = ToolTable::new(None, None, 4096, bytes - 1);
        let (shown, withheld) = list(&mut short, tools.to_vec());
        assert_eq!(shown, ["a"]);
        assert_eq!(withheld, ["the tool schemas kept exceed their byte budget"]);
    }

    /// A tool whose definition changed under its pin lets go of what its
    /// schema held, compiled and as text.
    #[test]
    fn a_pulled_tool_gives_back_its_schema_budget() {
        let mut t = table();
        let (shown, _) = list(&mut t, vec![ordinary("a")]);
        assert_eq!(shown, ["a"]);
        assert!(t.schema_bytes() > 0 && t.compiled_bytes > 0);
        let mut changed = ordinary("a");
        changed["description"] = json!("now something else");
        let (shown, _) = list(&mut t, vec![changed]);
        assert!(shown.is_empty());
        assert_eq!((t.schema_bytes(), t.compiled_bytes), (0, 0));
    }

    /// The limits per tool are reached but not passed: a schema of
    /// exactly the node or the pattern limit is kept (scalars for the
    /// nodes, the cheapest to compile, so no other limit binds first).
    #[test]
    fn a_schema_at_a_limit_per_tool_is_kept() {
        let values: Vec<usize> = (0..MAX_SCHEMA_NODES - 5).collect();
        let nodes = json!({"type": "object", "properties": {"p": {"enum": values}}});
        assert_eq!(CompileCost::of(&nodes).nodes, MAX_SCHEMA_NODES);
        let (shown, withheld) = list(&mut table(), vec![tool("nodes", nodes)]);
        assert_eq!(shown, ["nodes"], "{withheld:?}");
        let patterns = properties(
            MAX_SCHEMA_PATTERNS,
            |i| json!({"type": "string", "pattern": format!("^a{i}$")}),
        );
        assert_eq!(CompileCost::of(&patterns).patterns, MAX_SCHEMA_PATTERNS);
        let (shown, withheld) = list(&mut table(), vec![tool("patterns", patterns)]);
        assert_eq!(shown, ["patterns"], "{withheld:?}");
    }

    /// A schema whose estimated compiled size is exactly `bytes`, and one
    /// six bytes over: a long description, its length tuned after enough
    /// empty properties make the rest a multiple of six.
    fn schema_compiling_to(bytes: usize) -> (Value, Value) {
        let with = |properties: usize, description: usize| {
            let mut schema = self::properties(properties, |_| json!({}));
            schema["description"] = json!("d".repeat(description));
            schema
        };
        let properties = (0..6)
            .find(|&p| (bytes - CompileCost::of(&with(p, 0)).bytes).is_multiple_of(TEXT_FACTOR))
            .expect("some count of properties leaves a multiple of six");
        let length = (bytes - CompileCost::of(&with(properties, 0)).bytes) / TEXT_FACTOR;
        (with(properties, length), with(properties, length + 1))
    }

    /// The compiled-size limit of one tool is reached but not passed.
    #[test]
    fn a_schema_compiling_to_exactly_the_limit_of_one_tool_is_kept() {
        let (at, over) = schema_compiling_to(MAX_SCHEMA_COMPILED_BYTES);
        assert_eq!(CompileCost::of(&at).bytes, MAX_SCHEMA_COMPILED_BYTES);
        let (shown, withheld) = list(&mut table(), vec![tool("at", at)]);
        assert_eq!(shown, ["at"], "{withheld:?}");
        let (shown, withheld) = list(&mut table(), vec![tool("over", over)]);
        assert!(shown.is_empty());
        assert!(
            withheld[0].contains("past the limit of 8 MiB per tool"),
            "{withheld:?}"
        );
    }

    /// The compiled budget of a session is reached but not passed: tools
    /// that fill it exactly are all kept, and with a byte less the last
    /// is withheld.
    #[test]
    fn tools_compiling_to_exactly_the_session_budget_are_kept() {
        let each = CompileCost::of(&ordinary("t")["inputSchema"]).bytes;
        let count = BASE_COMPILED_BYTES / each + 8;
        let total = count * each;
        let tools: Vec<Value> = (0..count).map(|i| ordinary(&format!("t{i}"))).collect();
        let text: usize = tools
            .iter()
            .map(|t| t["inputSchema"].to_string().len())
            .sum();
        // The budget is the base plus the schema byte cap, which must hold
        // the text of every schema.
        let cap = total - BASE_COMPILED_BYTES;
        assert!(cap > text, "{cap} {text}");
        let (shown, withheld) = list(&mut ToolTable::new(None, None, 4096, cap), tools.clone());
        assert_eq!(shown.len(), count, "{withheld:?}");
        let (shown, withheld) = list(&mut ToolTable::new(None, None, 4096, cap - 1), tools);
        assert_eq!(shown.len(), count - 1);
        assert!(
            withheld[0].contains("would pass their budget"),
            "{withheld:?}"
        );
    }

    thread_local! {
        static COMPILED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn counting(schema: Value) -> Result<ToolSchema, String> {
        COMPILED.set(COMPILED.get() + 1);
        ToolSchema::compile_untrusted(schema)
    }

    /// A tool listed again unchanged keeps its compiled schema: a server
    /// that lists over and over makes the wrapper compile nothing more.
    #[test]
    fn a_tool_listed_again_unchanged_is_not_compiled_again() {
        COMPILED.set(0);
        let mut t = table().compiling_with(counting);
        for _ in 0..3 {
            let (shown, _) = list(&mut t, vec![ordinary("a"), ordinary("b")]);
            assert_eq!(shown, ["a", "b"]);
        }
        assert_eq!(COMPILED.get(), 2);
    }

    #[test]
    fn a_long_name_is_cut_to_its_bound_and_says_how_long_it_was() {
        let name = "n".repeat(500_000);
        let shown = bounded_name(&name);
        assert_eq!(shown, format!("{}…(500000 bytes)", "n".repeat(128)));
        // Cut at a character, never inside one.
        let name = "é".repeat(100);
        let shown = bounded_name(&name);
        assert_eq!(shown, format!("{}…(200 bytes)", "é".repeat(64)));
    }

    #[test]
    fn control_and_invisible_characters_are_escaped() {
        assert_eq!(bounded_name("a\u{1b}[31mb"), "a\\u{1b}[31mb");
        assert_eq!(bounded_name("a\nb\tc\rd"), "a\\u{a}b\\u{9}c\\u{d}d");
        assert_eq!(bounded_name("evil\u{202e}txt"), "evil\\u{202e}txt");
        assert_eq!(bounded_name("zero\u{200b}width"), "zero\\u{200b}width");
        assert_eq!(bounded_name("back\\slash"), "back\\\\slash");
        // An escape is never cut in half.
        let shown = bounded_name(&"\u{1}".repeat(100));
        assert!(shown.starts_with("\\u{1}"), "{shown}");
        let kept = shown.split('…').next().unwrap();
        assert!(
            kept.len() <= NAME_BYTES_SHOWN && kept.ends_with("\\u{1}"),
            "{shown}"
        );
    }

    #[test]
    fn a_denial_shows_a_bounded_name() {
        let t = table();
        let name = format!("x\u{7}{}", "y".repeat(10_000));
        let text = t.check_call(&name, Map::new()).unwrap_err().to_string();
        assert!(text.len() < 300, "{text}");
        assert!(
            text.contains("x\\u{7}yyy") && text.contains("…(10002 bytes)"),
            "{text}"
        );
    }

    #[test]
    fn a_schema_past_the_node_limit_is_withheld_without_compiling_it() {
        let mut t = table();
        let wide = tool("wide", properties(MAX_SCHEMA_NODES, |_| json!({})));
        let (shown, withheld) = list(&mut t, vec![wide, ordinary("ok")]);
        assert_eq!(shown, ["ok"]);
        assert_eq!(withheld.len(), 1);
        assert!(
            withheld[0].contains("nodes, past the limit of 4096 per tool"),
            "{withheld:?}"
        );
        assert!(t.check_call("wide", Map::new()).is_err());
    }

    #[test]
    fn a_schema_past_the_pattern_limit_is_withheld() {
        let mut t = table();
        let patterns = tool(
            "patterns",
            properties(
                MAX_SCHEMA_PATTERNS + 1,
                |i| json!({"type": "string", "pattern": format!("^a{i}$")}),
            ),
        );
        let (shown, withheld) = list(&mut t, vec![patterns]);
        assert!(shown.is_empty());
        assert!(
            withheld[0].contains("65 regular expressions, past the limit of 64 per tool"),
            "{withheld:?}"
        );
        let keys = tool(
            "keys",
            json!({"type": "object", "patternProperties": properties(65, |_| json!({}))["properties"]}),
        );
        let (_, withheld) = list(&mut table(), vec![keys]);
        assert!(withheld[0].contains("regular expressions"), "{withheld:?}");
    }

    /// `^(\w{1,50}){1,50}$` is 20 bytes of text and hundreds of kilobytes
    /// of automaton: a pattern past the size limit is refused as one.
    #[test]
    fn a_pattern_that_compiles_huge_is_refused() {
        let mut t = table();
        let heavy = tool(
            "heavy",
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^(\\w{1,50}){1,50}$"}}}),
        );
        let (shown, withheld) = list(&mut t, vec![heavy]);
        assert!(shown.is_empty());
        assert!(withheld[0].contains("is not a \"regex\""), "{withheld:?}");
        assert_eq!(t.compiled_bytes, 0);
        assert_eq!(t.schema_bytes(), 0);
    }

    /// Each compiled node keeps a copy of its location: a long name high
    /// up is paid for by every node below it.
    #[test]
    fn long_names_nested_deep_are_withheld_past_the_compiled_limit_of_one_tool() {
        let mut t = table();
        let mut schema = properties(300, |_| json!({"type": "string"}));
        for _ in 0..20 {
            schema = json!({"type": "object", "properties": {"k".repeat(2000): schema}});
        }
        let (shown, withheld) = list(&mut t, vec![tool("deep", schema)]);
        assert!(shown.is_empty());
        assert!(
            withheld[0].contains("KiB compiled, past the limit of 8 MiB per tool"),
            "{withheld:?}"
        );
    }

    #[test]
    fn the_session_budget_holds_however_many_tools_are_listed_and_a_pulled_tool_frees_its_share() {
        // Each tool is within every limit of one tool (about 2 MiB).
        let big = |i: usize| {
            tool(
                &format!("big{i}"),
                properties(600, |_| json!({"type": "string", "minLength": 1})),
            )
        };
        let mut t = ToolTable::new(None, None, 4096, 2 * 1024 * 1024);
        let (shown, withheld) = list(&mut t, (0..40).map(big).collect());
        assert!(!shown.is_empty() && shown.len() < 40, "{shown:?}");
        assert_eq!(shown.len() + withheld.len(), 40);
        assert!(
            withheld.iter().all(|r| r.contains(
                "the compiled tool schemas would pass their budget of 10240 KiB per session (8 MiB + 2 × max_frame_bytes)"
            )),
            "{withheld:?}"
        );
        assert!(t.compiled_bytes <= t.max_compiled_bytes);
        let full = t.compiled_bytes;
        // A pinned tool that comes back changed is no longer kept, nor
        // charged.
        let mut changed = big(0);
        changed["description"] = json!("changed");
        let (_, _) = list(&mut t, vec![changed]);
        assert!(t.compiled_bytes < full);
        assert!(t.compiled_bytes + CompileCost::of(&big(0)["inputSchema"]).bytes <= full);
    }

    /// Real servers' schemas are far inside the limits: a hundred ordinary
    /// tools take under half of the default budget.
    #[test]
    fn a_hundred_ordinary_tools_fit_in_half_the_default_budget() {
        let mut t = table();
        let tools: Vec<Value> = (0..100).map(|i| ordinary(&format!("t{i}"))).collect();
        let nodes = CompileCost::of(&tools[0]["inputSchema"]).nodes;
        assert!((30..=60).contains(&nodes), "{nodes} nodes");
        let (shown, withheld) = list(&mut t, tools);
        assert_eq!(shown.len(), 100, "{withheld:?}");
        assert_eq!(t.max_compiled_bytes, 16 * 1024 * 1024);
        assert!(
            t.compiled_bytes < t.max_compiled_bytes / 2,
            "{} of {}",
            t.compiled_bytes,
            t.max_compiled_bytes
        );
    }

    /// The table compiles with the compiler it is given: its refusal is
    /// the tool's.
    #[test]
    fn the_table_compiles_with_the_compiler_it_is_given() {
        let mut t = table().compiling_with(|_| Err("refused by this compiler".into()));
        let (shown, withheld) = list(&mut t, vec![ordinary("t")]);
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(withheld, ["unusable inputSchema: refused by this compiler"]);
    }
}
