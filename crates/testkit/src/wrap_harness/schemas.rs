//! Tool input schemas compiled once per thread for every session the
//! harness runs. It runs thousands of sessions a
//! second over a handful of schemas, and compiling one cost about a tenth
//! of a session. A compilation is a function of the schema's value, so a
//! session handed a copy of an earlier compilation of the same value acts
//! exactly as one that compiled it; the key is the value's serde_json text
//! (members sorted), which no other value shares.

use std::cell::RefCell;
use std::collections::HashMap;

use portcullis_gateway::schema::ToolSchema;
use serde_json::Value;

/// Schemas whose text is longer are compiled every time: the pool's are a
/// hundred bytes, and a long one may compile to megabytes.
const MAX_KEPT_TEXT: usize = 512;
/// Compilations kept at most; all are dropped when one more comes.
const MAX_KEPT: usize = 16;

type Compiled = Result<ToolSchema, String>;

thread_local! {
    static KEPT: RefCell<HashMap<String, Compiled>> = RefCell::new(HashMap::new());
}

/// [`ToolSchema::compile_untrusted`], reusing this thread's earlier
/// compilation of the same schema.
pub fn compile(schema: Value) -> Compiled {
    let text = schema.to_string();
    if text.len() > MAX_KEPT_TEXT {
        return ToolSchema::compile_untrusted(schema);
    }
    if let Some(kept) = KEPT.with_borrow(|kept| kept.get(&text).cloned()) {
        return kept;
    }
    let compiled = ToolSchema::compile_untrusted(schema);
    KEPT.with_borrow_mut(|kept| {
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(text, compiled.clone());
    });
    compiled
}

/// Whether this thread keeps a compilation of `schema`.
pub fn is_kept(schema: &Value) -> bool {
    KEPT.with_borrow(|kept| kept.contains_key(&schema.to_string()))
}

#[cfg(test)]
mod tests {
    use arbitrary::Unstructured;
    use portcullis_gateway::OnInvalid;
    use serde_json::json;

    use super::*;
    use crate::wrap_harness::ops::{ops, tool_defs};
    use crate::wrap_harness::run;

    /// A kept compilation gives the verdicts a fresh one gives, refusals
    /// included.
    #[test]
    fn a_kept_compilation_judges_as_a_fresh_one() {
        let schema = json!({"type":"object","properties":{"n":{"type":"integer","maximum":3}}});
        for _ in 0..2 {
            let kept = compile(schema.clone()).unwrap();
            let fresh = ToolSchema::compile_untrusted(schema.clone()).unwrap();
            for arguments in [json!({"n": 2}), json!({"n": 4}), json!({"m": 1}), json!({})] {
                let arguments = arguments.as_object().unwrap().clone();
                assert_eq!(
                    kept.check("t", arguments.clone()),
                    fresh.check("t", arguments)
                );
            }
        }
        assert!(is_kept(&schema));
        let unusable = json!({"type":"string"});
        assert_eq!(
            compile(unusable.clone()).unwrap_err(),
            ToolSchema::compile_untrusted(unusable.clone()).unwrap_err()
        );
        assert_eq!(
            compile(unusable.clone()).unwrap_err(),
            ToolSchema::compile_untrusted(unusable).unwrap_err()
        );
    }

    /// The sessions the harness runs compile through it: after a session
    /// that listed `echo`, its schema is kept.
    #[test]
    fn the_harness_sessions_compile_through_it() {
        let echo = tool_defs()[0]["inputSchema"].clone();
        assert!(!is_kept(&echo));
        // The `happy_call` seed: `echo` and `add` listed, `echo` called.
        let bytes = [
            0, 4, 0, 0, 2, 8, 0, 0, 0, 1, 0, 3, 1, 2, 0, 5, 2, 2, 8, 1, 0, 2, 0, 3, 1, 0, 6, 3, 0,
            0, 2, 8, 2, 0, 0, 1, 18, 19,
        ];
        let reached = run(
            &ops(&mut Unstructured::new(&bytes)).unwrap(),
            OnInvalid::Close,
        );
        assert_eq!(reached.calls_forwarded, 1, "{reached:?}");
        assert!(is_kept(&echo));
    }
}
