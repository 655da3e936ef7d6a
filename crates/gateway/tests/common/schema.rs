//! A tool schema's verdict as a model reads it: the refusal is a heading,
//! then one line per failure, each ending with the keyword that failed.

use portcullis_gateway::schema::ToolSchema;
use serde_json::{Value, json};

/// Whether `schema` accepts `args` (a JSON object).
pub fn accepts(schema: &Value, args: Value) -> bool {
    let Value::Object(args) = args else {
        panic!("arguments are an object: {args}")
    };
    ToolSchema::compile(schema.clone())
        .expect("schema compiles")
        .check("t", args)
        .is_ok()
}

/// The failure lines of the refusal `schema` gives `args` (it must refuse
/// them), once the refusal's text is a heading and exactly these lines,
/// each one line ending with its keyword.
pub fn failure_lines(schema: Value, args: Value) -> Vec<String> {
    let Value::Object(args) = args else {
        panic!("arguments are an object: {args}")
    };
    let refusal = ToolSchema::compile(schema)
        .expect("schema compiles")
        .check("t", args)
        .expect_err("must be refused");
    let text = refusal.to_string();
    let failures = refusal.failures();
    assert_eq!(text.lines().count(), failures.len() + 1, "{text}");
    let lines: Vec<String> = failures.iter().map(ToString::to_string).collect();
    for (line, failure) in lines.iter().zip(failures) {
        assert!(text.contains(line.as_str()), "{text}");
        assert!(
            line.ends_with(&format!("(`{}`)", failure.keyword)),
            "{line}"
        );
        assert!(!line.contains('\n'), "one line per failure: {line:?}");
    }
    lines
}

/// The only line of `lines`.
pub fn only(lines: Vec<String>) -> String {
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines.into_iter().next().unwrap()
}

/// An object schema whose one property `p` is described by `p`.
pub fn prop(p: Value) -> Value {
    json!({"type": "object", "properties": {"p": p}})
}
