//! Template expansion: a placeholder takes a string argument's text or an
//! integer's decimal text, anything else is an error, and a template that
//! is one literal or one string argument hands back that text without a copy.

use std::borrow::Cow;

use portcullis_gateway::template::{ExpandError, Template};
use portcullis_wire::Object;
use serde_json::{Map, Value, json};

fn args(value: Value) -> Object<'static> {
    let Value::Object(map) = value else {
        panic!("arguments are an object")
    };
    Object::from_map(map)
}

#[test]
fn integers_of_either_sign_expand_to_their_decimal_text() {
    let template = Template::parse("/n/{n}").unwrap();
    for (n, text) in [(json!(7), "/n/7"), (json!(-3), "/n/-3"), (json!(0), "/n/0")] {
        let arguments = args(json!({ "n": n }));
        assert_eq!(template.expand(&arguments).as_deref(), Ok(text), "{n}");
    }
}

#[test]
fn a_fraction_or_any_other_non_string_is_not_expanded() {
    let template = Template::parse("/n/{n}").unwrap();
    for n in [json!(1.5), json!(true), json!(null), json!([1]), json!({})] {
        let arguments = args(json!({ "n": n }));
        assert_eq!(
            template.expand(&arguments),
            Err(ExpandError::NotScalar("n".into())),
            "{n}"
        );
    }
    assert_eq!(
        template.expand(&Object::from_map(Map::new())),
        Err(ExpandError::Missing("n".into()))
    );
}

#[test]
fn a_template_of_one_string_argument_borrows_its_text() {
    let template = Template::parse("{name}").unwrap();
    let arguments = args(json!({ "name": "billing" }));
    let expanded = template.expand_cow(&arguments).unwrap();
    assert!(matches!(expanded, Cow::Borrowed("billing")), "{expanded:?}");
    // An integer has no text to borrow: it is written out.
    let arguments = args(json!({ "name": 12 }));
    let expanded = template.expand_cow(&arguments).unwrap();
    assert!(
        matches!(&expanded, Cow::Owned(text) if text == "12"),
        "{expanded:?}"
    );
}

#[test]
fn a_template_of_one_literal_borrows_its_text_whatever_the_arguments() {
    let template = Template::parse("v1").unwrap();
    for arguments in [json!({}), json!({ "name": "billing" })] {
        let arguments = args(arguments);
        let expanded = template.expand_cow(&arguments).unwrap();
        assert!(matches!(expanded, Cow::Borrowed("v1")), "{expanded:?}");
    }
}
