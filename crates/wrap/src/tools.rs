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

use std::collections::{BTreeMap, BTreeSet};

use portcullis_gateway::schema::ToolSchema;
use serde_json::{Map, Value};

use crate::effect::AuditRecord;
use crate::pin::{Pin, Pins};

/// Why a `tools/call` was denied; its text is the tool error the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Denial {
    /// The tool changed since it was pinned.
    #[error(
        "denied: tool {0:?} changed since it was pinned (its listing no longer matches the pin); review it and update the pins"
    )]
    Changed(String),
    /// The tool is neither pinned nor in the policy's allowlist.
    #[error("denied: tool {0:?} is not allowed (not pinned and not in the policy's [wrap] tools)")]
    NotAllowed(String),
    /// The tool may be allowed but no `tools/list` in this session showed it.
    #[error("denied: tool {0:?} has not been listed in this session; call tools/list first")]
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
            tofu_open: pins.is_none(),
            pins: pins.unwrap_or_default(),
            trusted: BTreeMap::new(),
            pulled: BTreeSet::new(),
            allowlist,
            max_tools,
        }
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
        let mut filtered = result.clone();
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
                if let Some(old) = self.trusted.remove(name) {
                    self.schema_bytes -= old.bytes;
                }
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
        if let Some(old) = self.trusted.remove(name) {
            self.schema_bytes -= old.bytes;
        }
        let schema = def.get("inputSchema");
        let bytes = schema.map_or(0, |s| s.to_string().len());
        if self.schema_bytes + bytes > self.max_schema_bytes {
            records.push(withheld(
                name,
                "the tool schemas kept exceed their byte budget",
            ));
            return false;
        }
        let compiled = match schema {
            Some(schema @ Value::Object(_)) => ToolSchema::compile(schema.clone()),
            _ => Err("inputSchema must be an object".to_owned()),
        };
        match compiled {
            Ok(schema) => {
                self.schema_bytes += bytes;
                self.trusted
                    .insert(name.to_owned(), Trusted { pin, schema, bytes });
                true
            }
            Err(why) => {
                records.push(withheld(name, &format!("unusable inputSchema: {why}")));
                false
            }
        }
    }

    /// Whether `name` may be called with `arguments`.
    pub(crate) fn check_call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<(), Denial> {
        if self.pulled.contains(name) {
            return Err(Denial::Changed(name.to_owned()));
        }
        match self.trusted.get(name) {
            Some(t) => t
                .schema
                .check(name, arguments)
                .map(drop)
                .map_err(|e| Denial::Schema(e.to_string())),
            None if self.pins.contains_key(name)
                || self.allowlist.as_ref().is_some_and(|a| a.contains(name)) =>
            {
                Err(Denial::NotListed(name.to_owned()))
            }
            None => Err(Denial::NotAllowed(name.to_owned())),
        }
    }
}

fn withheld(tool: &str, reason: &str) -> AuditRecord {
    AuditRecord::ToolWithheld {
        tool: tool.to_owned(),
        reason: reason.to_owned(),
    }
}
