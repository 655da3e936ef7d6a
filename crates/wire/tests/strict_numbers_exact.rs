//! The integer rule when a frame mixes a big double (`1e22`, which serde_json
//! reads as an integral float) with integer-syntax tokens: only the text can
//! tell them apart, and strings that merely look like numbers never count.
//! Also: which member names a reason may show.

use portcullis_wire::strict_json::{display_name, parse_value};
use portcullis_wire::{Limits, Stage};

fn accepted(text: &str) {
    if let Err(r) = parse_value(text, &Limits::default()) {
        panic!("{text}: refused: {}", r.reason);
    }
}

fn refused_as_unsafe_integer(text: &str) {
    let rejection = parse_value(text, &Limits::default()).expect_err(text);
    assert_eq!(rejection.stage, Stage::Json, "{text}");
    assert!(
        rejection.reason.contains("beyond ±(2^53−1)"),
        "{text}: {}",
        rejection.reason
    );
}

#[test]
fn a_big_double_beside_safe_integers_is_accepted() {
    accepted("[1e22]");
    accepted("[1e22,9007199254740991]");
    accepted("[1e22,-9007199254740991]");
    accepted("[9007199254740991,1E22,0,-1]");
    accepted("[1e22,1.0,1.5e300,-1.0e+28]");
    accepted(r#"{"a":1e22,"b":[1234567890123456]}"#);
}

#[test]
fn a_big_double_does_not_excuse_an_unsafe_integer_anywhere_in_the_frame() {
    refused_as_unsafe_integer("[1e22,100000000000000000000]");
    refused_as_unsafe_integer("[100000000000000000000,1e22]");
    refused_as_unsafe_integer("[1e22,-100000000000000000000]");
    refused_as_unsafe_integer(r#"{"a":"x","b":[1e22,{"c":123456789012345678901234567890}]}"#);
    refused_as_unsafe_integer(&format!("[1e22,{}]", "9".repeat(60)));
}

#[test]
fn number_lookalikes_inside_strings_are_not_numbers() {
    accepted(r#"[1e22,"100000000000000000000"]"#);
    accepted(r#"[1e22,"-100000000000000000000"]"#);
    accepted(r#"{"100000000000000000000":1e22}"#);
    // An escaped quote does not end the string.
    accepted(r#"[1e22,"a\"100000000000000000000"]"#);
    accepted(r#"[1e22,"a\\",1]"#);
    refused_as_unsafe_integer(r#"[1e22,"a\\",100000000000000000000]"#);
    refused_as_unsafe_integer(r#"["a\"",1e22,100000000000000000000]"#);
}

#[test]
fn an_integral_double_too_long_for_64_bits_is_refused_on_its_own() {
    refused_as_unsafe_integer("100000000000000000000");
    refused_as_unsafe_integer("-100000000000000000000");
    refused_as_unsafe_integer(r#"{"a":100000000000000000000}"#);
}

#[test]
fn names_that_look_like_identifiers_are_shown_others_withheld() {
    let shown = |name: &str| display_name(name).into_owned();
    assert_eq!(shown("tools/call"), "\"tools/call\"");
    assert_eq!(shown("a_$./-:@Z9"), "\"a_$./-:@Z9\"");
    let sixty_four = "k".repeat(64);
    assert_eq!(shown(&sixty_four), format!("\"{sixty_four}\""));
    for withheld in [
        "",
        "has space",
        "quote\"",
        "ünï",
        "new\nline",
        &"k".repeat(65),
    ] {
        assert_eq!(shown(withheld), "(name withheld)", "{withheld:?}");
    }
}

#[test]
fn a_duplicate_key_reason_shows_the_name_only_when_it_looks_like_one() {
    let reason = |text: &str| parse_value(text, &Limits::default()).unwrap_err().reason;
    assert!(reason(r#"{"key":1,"key":2}"#).contains("duplicate object key \"key\""));
    let secret = reason(r#"{"s3cr3t value":1,"s3cr3t value":2}"#);
    assert!(
        secret.contains("duplicate object key (name withheld)"),
        "{secret}"
    );
    assert!(!secret.contains("s3cr3t"), "{secret}");
}

#[test]
fn depth_counts_the_top_level_value_as_one() {
    let limits = |max_depth| Limits {
        max_depth,
        ..Limits::default()
    };
    assert!(parse_value("[[1]]", &limits(2)).is_ok());
    assert!(parse_value("[[1]]", &limits(1)).is_err());
    assert!(parse_value(r#"{"a":{}}"#, &limits(2)).is_ok());
    assert!(parse_value(r#"{"a":{}}"#, &limits(1)).is_err());
    assert!(parse_value("1", &limits(1)).is_ok());
    let deep = format!("{}{}", "[".repeat(64), "]".repeat(64));
    assert!(parse_value(&deep, &Limits::default()).is_ok());
    let deeper = format!("{}{}", "[".repeat(65), "]".repeat(65));
    assert!(parse_value(&deeper, &Limits::default()).is_err());
}
