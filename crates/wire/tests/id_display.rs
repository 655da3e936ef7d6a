//! How an id reads in diagnostics (`portcullis inspect`, `portcullis check`):
//! a string id quoted and escaped, so `"7"` and `7` never look alike and a
//! control character cannot break the line; an integer id bare.

use portcullis_wire::rpc::Id;

#[test]
fn a_string_id_displays_quoted_and_escaped() {
    assert_eq!(Id::Str("req-1".into()).to_string(), r#""req-1""#);
    assert_eq!(Id::Str("7".into()).to_string(), r#""7""#);
    assert_eq!(Id::Str("a\nb\"c".into()).to_string(), r#""a\nb\"c""#);
}

#[test]
fn an_integer_id_displays_bare() {
    assert_eq!(Id::Int(7).to_string(), "7");
    assert_eq!(
        Id::Int(-9_007_199_254_740_991).to_string(),
        "-9007199254740991"
    );
}
