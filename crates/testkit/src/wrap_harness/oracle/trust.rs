//! The oracle's own model of which tools the client may be shown, from
//! docs/wrap.md ("Pins: the rug-pull defence"):
//!
//! - a tool is held to the definition it was pinned with: its `name`,
//!   `description`, `inputSchema` and `annotations` (an absent member stays
//!   absent), compared as values, so key order and number spelling do not
//!   count;
//! - with a pins file only the pinned tools are shown, each only while it
//!   matches its pin; without one, the tools of the session's first
//!   complete `tools/list` (the pages up to the first without
//!   `nextCursor`) are pinned, and trust on first use is over;
//! - a tool the policy's `[wrap] tools` names is pinned on first sight.
//!
//! The oracle judges what the client is shown: every tool of a listing it
//! receives is pinned and matches its pin, or may be pinned now.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::normalized;

/// The members of a tool definition a pin holds.
const PINNED: [&str; 4] = ["name", "description", "inputSchema", "annotations"];

/// What a pin holds of `tool`, as a value with numbers normalized.
pub(super) fn pinned_part(tool: &Value) -> Value {
    let part: Map<String, Value> = PINNED
        .iter()
        .filter_map(|k| tool.get(*k).map(|v| ((*k).to_owned(), normalized(v))))
        .collect();
    Value::Object(part)
}

/// The tools the client may be shown.
#[derive(Debug)]
pub(super) struct Trust {
    /// What each pinned tool is held to.
    pinned: HashMap<String, Value>,
    /// The policy's `[wrap] tools`, if any.
    allowlist: Option<HashSet<String>>,
    /// Tools are pinned from what is listed until the first complete
    /// listing (no pins file).
    tofu_open: bool,
}

impl Default for Trust {
    fn default() -> Self {
        Self {
            pinned: HashMap::new(),
            allowlist: None,
            tofu_open: true,
        }
    }
}

impl Trust {
    /// The session starts with pins made from `tools` (a pins file).
    pub(super) fn held_to(&mut self, tools: &[Value]) {
        self.tofu_open = false;
        for tool in tools {
            let name = tool["name"].as_str().expect("a pinned tool has a name");
            self.pinned.insert(name.to_owned(), pinned_part(tool));
        }
    }

    /// The policy lets `names` through while they are not pinned.
    pub(super) fn allow(&mut self, names: &[&str]) {
        self.allowlist = Some(names.iter().map(|n| (*n).to_owned()).collect());
    }

    /// The client was shown `tools` in answer to its `tools/list`;
    /// `complete` when the answer has no `nextCursor`.
    pub(super) fn shown(&mut self, tools: &[Value], complete: bool, line: &str) {
        let mut names = HashSet::new();
        for tool in tools {
            let name = tool["name"].as_str().unwrap_or_else(|| {
                panic!("the client was shown a tool without a string name: {line}")
            });
            assert!(
                names.insert(name),
                "the client was shown {name:?} twice in one listing: {line}"
            );
            let part = pinned_part(tool);
            match self.pinned.get(name) {
                Some(pin) => assert_eq!(
                    &part, pin,
                    "the client was shown {name:?} while its definition differs from its pin: {line}"
                ),
                None => {
                    let may_pin = match &self.allowlist {
                        Some(allow) => allow.contains(name),
                        None => self.tofu_open,
                    };
                    assert!(
                        may_pin,
                        "the client was shown {name:?}, neither pinned nor allowed, after trust on first use was over: {line}"
                    );
                    self.pinned.insert(name.to_owned(), part);
                }
            }
        }
        if complete {
            self.tofu_open = false;
        }
    }

    /// Whether `tool`, as the upstream last listed it, matches its pin.
    pub(super) fn matches_pin(&self, tool: &Value) -> bool {
        let name = tool["name"].as_str().unwrap_or_default();
        self.pinned
            .get(name)
            .is_some_and(|pin| *pin == pinned_part(tool))
    }
}
