//! Templates from the policy (`{arg}` placeholders), parsed once at load.
//!
//! A template is kept as pieces, never as a string to be formatted: expansion
//! yields one plain string per URL component or argv element, and the caller
//! turns those into data (a URI's text, an argv vector).

use std::borrow::Cow;
use std::collections::BTreeSet;

use portcullis_wire::{Json, Object};

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text.
    Lit(String),
    /// The value of a named argument.
    Arg(String),
}

/// A template: literal text and placeholders in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(pub Vec<Piece>);

/// Why a template does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// A placeholder name holds a character other than ASCII letters,
    /// digits, `_` and `-`.
    #[error("invalid character {0:?} in placeholder name")]
    InvalidCharacter(char),
    /// A `{` without its `}`.
    #[error("unclosed placeholder")]
    Unclosed,
    /// `{}`.
    #[error("empty placeholder {{}}")]
    EmptyPlaceholder,
    /// A lone `}`.
    #[error("unmatched '}}' (write '}}}}' for a brace)")]
    UnmatchedClose,
}

/// Why a template could not be expanded with a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// The named argument is absent.
    Missing(String),
    /// The named argument is neither a string nor an integer.
    NotScalar(String),
}

impl Template {
    /// Parse `{name}` placeholders; `{{` and `}}` stand for literal braces.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    lit.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    lit.push('}');
                }
                '{' => {
                    let mut name = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '-' => {
                                name.push(c)
                            }
                            Some(c) => {
                                return Err(TemplateError::InvalidCharacter(c));
                            }
                            None => return Err(TemplateError::Unclosed),
                        }
                    }
                    if name.is_empty() {
                        return Err(TemplateError::EmptyPlaceholder);
                    }
                    if !lit.is_empty() {
                        pieces.push(Piece::Lit(std::mem::take(&mut lit)));
                    }
                    pieces.push(Piece::Arg(name));
                }
                '}' => {
                    return Err(TemplateError::UnmatchedClose);
                }
                c => lit.push(c),
            }
        }
        if !lit.is_empty() || pieces.is_empty() {
            pieces.push(Piece::Lit(lit));
        }
        Ok(Self(pieces))
    }

    /// Names of the arguments the template uses.
    pub fn args(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|p| match p {
            Piece::Arg(name) => Some(name.as_str()),
            Piece::Lit(_) => None,
        })
    }

    /// Whether the template is one literal.
    pub fn literal(&self) -> Option<&str> {
        match self.0.as_slice() {
            [Piece::Lit(s)] => Some(s),
            _ => None,
        }
    }

    /// Expand with schema-checked arguments. Integers and strings expand to
    /// their text; any other type (or a missing argument) is an error, since
    /// the policy validator only lets required string or integer properties
    /// into templates.
    pub fn expand(&self, args: &Object<'_>) -> Result<String, ExpandError> {
        self.expand_escaped(args, |text, out| out.push_str(text))
    }

    /// [`Template::expand`], borrowing the text when the template is one
    /// literal or one string argument (the common case, and no copy).
    pub fn expand_cow<'a>(&'a self, args: &'a Object<'_>) -> Result<Cow<'a, str>, ExpandError> {
        match self.0.as_slice() {
            [Piece::Lit(s)] => Ok(Cow::Borrowed(s)),
            [Piece::Arg(name)] => match args.get(name) {
                Some(Json::String(s)) => Ok(Cow::Borrowed(s)),
                _ => self.expand(args).map(Cow::Owned),
            },
            _ => self.expand(args).map(Cow::Owned),
        }
    }

    /// Expand, passing each argument's text through `escape` (literal
    /// pieces are copied as written: the policy validator keeps them free of
    /// anything that needs escaping).
    pub fn expand_escaped(
        &self,
        args: &Object<'_>,
        escape: impl Fn(&str, &mut String),
    ) -> Result<String, ExpandError> {
        let mut out = String::new();
        self.expand_escaped_into(args, &mut out, escape)?;
        Ok(out)
    }

    /// [`Template::expand_escaped`], appending to `out` (on an error `out`
    /// may hold part of the expansion).
    pub fn expand_escaped_into(
        &self,
        args: &Object<'_>,
        out: &mut String,
        escape: impl Fn(&str, &mut String),
    ) -> Result<(), ExpandError> {
        for piece in &self.0 {
            match piece {
                Piece::Lit(s) => out.push_str(s),
                Piece::Arg(name) => match args.get(name) {
                    Some(Json::String(s)) => escape(s, out),
                    Some(Json::Number(n)) if n.is_i64() || n.is_u64() => {
                        escape(&n.to_string(), out)
                    }
                    Some(_) => return Err(ExpandError::NotScalar(name.clone())),
                    None => return Err(ExpandError::Missing(name.clone())),
                },
            }
        }
        Ok(())
    }

    /// Whether the template is one placeholder and nothing else.
    pub fn is_one_arg(&self) -> bool {
        matches!(self.0.as_slice(), [Piece::Arg(_)])
    }

    /// Whether the template starts with a placeholder.
    pub fn starts_with_arg(&self) -> bool {
        matches!(self.0.first(), Some(Piece::Arg(_)))
    }
}

/// All argument names used by a set of templates.
pub fn used_args<'a>(templates: impl IntoIterator<Item = &'a Template>) -> BTreeSet<String> {
    templates
        .into_iter()
        .flat_map(|t| t.args().map(str::to_owned).collect::<Vec<_>>())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_malformed_template_names_its_fault_in_the_policy_error_text() {
        let cases = [
            (
                "/a/{na.me}",
                TemplateError::InvalidCharacter('.'),
                "invalid character '.' in placeholder name",
            ),
            ("/a/{name", TemplateError::Unclosed, "unclosed placeholder"),
            (
                "/a/{}",
                TemplateError::EmptyPlaceholder,
                "empty placeholder {}",
            ),
            (
                "/a/}",
                TemplateError::UnmatchedClose,
                "unmatched '}' (write '}}' for a brace)",
            ),
        ];
        for (text, variant, message) in cases {
            let err = Template::parse(text).expect_err(text);
            assert_eq!(err, variant, "{text}");
            assert_eq!(err.to_string(), message, "{text}");
        }
    }

    #[test]
    fn doubled_braces_are_literal_braces() {
        let t = Template::parse("{{x}}").unwrap();
        assert_eq!(t.literal(), Some("{x}"));
    }
}
