//! Template text as this oracle reads it: `{name}` placeholders and
//! `{{`/`}}` literal braces, expansion with a call's arguments, and the
//! rule that a templated component must expand to something harmless.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// One piece of a template, as this module reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text (braces already unescaped).
    Lit(String),
    /// A placeholder's argument name.
    Arg(String),
}

/// A template: `{name}` placeholders, `{{`/`}}` literal braces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(pub Vec<Piece>);

impl Template {
    /// Parse template text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("{{") {
                lit.push('{');
                rest = after;
            } else if let Some(after) = rest.strip_prefix("}}") {
                lit.push('}');
                rest = after;
            } else if let Some(after) = rest.strip_prefix('{') {
                let end = after
                    .find('}')
                    .ok_or_else(|| format!("unclosed placeholder in {text:?}"))?;
                if !lit.is_empty() {
                    pieces.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                pieces.push(Piece::Arg(after[..end].to_owned()));
                rest = &after[end + 1..];
            } else {
                lit.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
        if !lit.is_empty() {
            pieces.push(Piece::Lit(lit));
        }
        Ok(Self(pieces))
    }

    pub(super) fn has_arg(&self) -> bool {
        self.0.iter().any(|p| matches!(p, Piece::Arg(_)))
    }

    pub(super) fn starts_with_arg(&self) -> bool {
        matches!(self.0.first(), Some(Piece::Arg(_)))
    }

    /// Expand with the call's arguments: the text, and the argument values
    /// that went into it. An argument that is missing or neither a string
    /// nor an integer cannot expand (such a call must have been denied).
    pub(super) fn expand(
        &self,
        args: &Map<String, Value>,
    ) -> Result<(String, Vec<String>), String> {
        let mut out = String::new();
        let mut values = Vec::new();
        for piece in &self.0 {
            match piece {
                Piece::Lit(s) => out.push_str(s),
                Piece::Arg(name) => {
                    let value = match args.get(name) {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
                        other => {
                            return Err(format!(
                                "argument {name} is {other:?}, which cannot expand"
                            ));
                        }
                    };
                    out.push_str(&value);
                    values.push(value);
                }
            }
        }
        Ok((out, values))
    }
}

fn is_control(c: char) -> bool {
    c <= '\u{1f}' || c == '\u{7f}'
}

/// A templated component must expand to something, and nothing an
/// argument brings in may be a control character: such a call must have
/// been denied.
pub(super) fn check_expansion(
    what: &str,
    template: &Template,
    text: &str,
    values: &[String],
) -> Result<(), String> {
    if !template.has_arg() {
        return Ok(());
    }
    if text.is_empty() {
        return Err(format!("{what} expands to nothing"));
    }
    if values.iter().any(|v| v.chars().any(is_control)) {
        return Err(format!(
            "{what} takes an argument holding a C0 control or DEL ({:?})",
            text
        ));
    }
    Ok(())
}

pub(super) fn write_template(t: &Template) -> String {
    let mut out = String::new();
    for piece in &t.0 {
        match piece {
            Piece::Lit(s) => out.push_str(&s.replace('{', "{{").replace('}', "}}")),
            Piece::Arg(name) => {
                let _ = write!(out, "{{{name}}}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_templated_value_with_a_control_character_or_nothing_must_be_denied() {
        let templated = Template::parse("x{a}").unwrap();
        for bad in ["\t", "\n", "\r", "\0", "\u{7f}", "a\u{1f}"] {
            let err = check_expansion("v", &templated, &format!("x{bad}"), &[bad.to_owned()])
                .unwrap_err();
            assert!(err.contains("C0 control"), "{bad:?}: {err}");
        }
        let bare = Template::parse("{a}").unwrap();
        assert!(
            check_expansion("v", &bare, "", &[String::new()])
                .unwrap_err()
                .contains("expands to nothing")
        );
        assert!(check_expansion("v", &templated, "x\u{85}", &["\u{85}".to_owned()]).is_ok());
        let literal = Template::parse("").unwrap();
        assert!(check_expansion("v", &literal, "", &[]).is_ok());
    }

    #[test]
    fn templates_parse_placeholders_and_escaped_braces() {
        assert_eq!(
            Template::parse("{{a}}-{b}c").unwrap().0,
            [
                Piece::Lit("{a}-".into()),
                Piece::Arg("b".into()),
                Piece::Lit("c".into())
            ]
        );
        assert!(Template::parse("{open").is_err());
    }
}
