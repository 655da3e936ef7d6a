//! The borrowed [`Json`] tree and `serde_json::Value` convert both ways
//! without changing a value: a copy (`to_value`, `to_map`) equals a move
//! (`into_value`), and a `Value` made into a `Json` (`from_value`,
//! `from_map`) comes back unchanged.

use portcullis_wire::strict_json::parse_json;
use portcullis_wire::{Json, Limits, Object};
use serde_json::{Value, json};

fn sample() -> Value {
    json!({
        "s": "text",
        "e": "esc\"aped",
        "n": -12,
        "f": 0.25,
        "t": true,
        "z": null,
        "a": [1, "two", [], {}],
        "o": {"inner": {"deep": [false]}}
    })
}

#[test]
fn a_value_comes_back_unchanged_from_json() {
    let value = sample();
    assert_eq!(Json::from_value(value.clone()).to_value(), value);
    assert_eq!(Json::from_value(value.clone()).into_value(), value);
    let Value::Object(map) = value else {
        unreachable!()
    };
    assert_eq!(Object::from_map(map.clone()).to_map(), map);
    assert_eq!(Object::from_map(map.clone()).len(), map.len());
}

#[test]
fn a_copy_of_a_read_value_equals_the_value_moved_out() {
    let text = sample().to_string();
    let read = parse_json(&text, &Limits::default()).unwrap();
    assert_eq!(read.to_value(), sample());
    let Json::Object(object) = &read else {
        panic!("an object")
    };
    assert_eq!(Value::Object(object.to_map()), sample());
    assert_eq!(read.into_value(), sample());
}
