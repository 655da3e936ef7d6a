//! The scrubber judged by its spelling oracle (`common::spelling`): every
//! spelling the scrubber promises, written by an encoder of its own, for
//! every kind of character at every place in a credential, mixed at
//! random, in the hex and base64 forms, whole and cut anywhere at a size
//! cap. Nothing of the credential may survive, and nothing else may go.

mod common;

use common::spelling::{
    CREDENTIAL_CHARS, Rng, base64, credential, cut, every_spelling, filler, hex, random_spelling,
    whole_units,
};
use portcullis_exec::scrub::{MIN_CUT_PREFIX, REDACTED, Scrubber};

/// Seeds per randomised property of whole texts (each case is a few
/// scrubs) and of cuts (each case scrubs its text once per byte).
const CASES: u64 = 3000;
const CUT_CASES: u64 = 250;

fn spelled(s: &str, rng: &mut Rng) -> Vec<String> {
    s.chars().map(|c| random_spelling(c, rng)).collect()
}

/// One character in every spelling, at the start, inside and at the end
/// of a credential whose other characters are literal, and with every
/// character of the credential in that one spelling.
#[test]
fn every_spelling_of_every_character_anywhere_in_the_credential_is_redacted() {
    let mut rng = Rng::new(1);
    for &c in CREDENTIAL_CHARS {
        for (kind, text) in every_spelling(c) {
            for at in 0..=4 {
                let chars: Vec<char> = "k9Qz".chars().collect();
                let mut plain: Vec<String> = chars.iter().map(char::to_string).collect();
                let mut secret: String = chars.iter().collect();
                plain.insert(at, text.clone());
                secret.insert(at, c);
                if secret.trim() != secret {
                    continue;
                }
                let (left, right) = (filler(&secret, &mut rng, 2), filler(&secret, &mut rng, 2));
                let input = format!("{left}{}{right}", plain.concat());
                assert_eq!(
                    Scrubber::new(Some(&secret)).scrub(&input),
                    format!("{left}{REDACTED}{right}"),
                    "{c:?} as {kind:?} at {at}: {input:?}"
                );
            }
            let secret = format!("{c}k9{c}Qz{c}");
            if secret.trim() != secret {
                continue;
            }
            let all: String = secret
                .chars()
                .map(|d| {
                    every_spelling(d)
                        .into_iter()
                        .find(|(k, _)| *k == kind)
                        .map_or_else(|| d.to_string(), |(_, t)| t)
                })
                .collect();
            assert_eq!(
                Scrubber::new(Some(&secret)).scrub(&format!("({all})")),
                format!("({REDACTED})"),
                "every character as {kind:?}: {all:?}"
            );
        }
    }
}

/// Random credentials, each character in a spelling of its own, once or
/// twice in a text.
#[test]
fn mixed_spellings_of_random_credentials_are_redacted() {
    for seed in 0..CASES {
        let mut rng = Rng::new(seed);
        let secret = credential(&mut rng);
        let scrubber = Scrubber::new(Some(&secret));
        let len = rng.below(4);
        let left = filler(&secret, &mut rng, len);
        let len = rng.below(4);
        let right = filler(&secret, &mut rng, len);
        let len = 1 + rng.below(3);
        let middle = filler(&secret, &mut rng, len);
        let one = spelled(&secret, &mut rng).concat();
        let two = spelled(&secret, &mut rng).concat();
        assert_eq!(
            scrubber.scrub(&format!("{left}{one}{right}")),
            format!("{left}{REDACTED}{right}"),
            "seed {seed}: {secret:?} as {one:?}"
        );
        assert_eq!(
            scrubber.scrub(&format!("{left}{one}{middle}{two}{right}")),
            format!("{left}{REDACTED}{middle}{REDACTED}{right}"),
            "seed {seed}: {secret:?} as {one:?} and {two:?}"
        );
    }
}

/// The hex of the credential, either case, its digits spelled at random.
#[test]
fn hex_forms_in_any_spelling_are_redacted() {
    for seed in 0..CASES {
        let mut rng = Rng::new(seed);
        let secret = credential(&mut rng);
        let digits = hex(&secret);
        let digits = if rng.coin() {
            digits.to_ascii_uppercase()
        } else {
            digits
        };
        let text = spelled(&digits, &mut rng).concat();
        let (left, right) = (filler(&secret, &mut rng, 1), filler(&secret, &mut rng, 1));
        assert_eq!(
            Scrubber::new(Some(&secret)).scrub(&format!("{left}{text}{right}")),
            format!("{left}{REDACTED}{right}"),
            "seed {seed}: {secret:?} as {text:?}"
        );
    }
}

/// A base64 stream holding the credential after 0 to 6 other bytes and
/// before 0 to 6 more: everything from the stream's encoding.
struct Base64Case {
    secret: String,
    /// The encoded characters, each spelled.
    units: Vec<String>,
    /// The first character that holds a bit of the credential.
    first: usize,
    /// The first character that holds bits of the credential only.
    core: usize,
    /// Past the last character that holds a bit of it.
    end: usize,
}

fn base64_case(rng: &mut Rng) -> Base64Case {
    let secret = credential(rng);
    let before: Vec<u8> = (0..rng.below(7)).map(|_| rng.next_u64() as u8).collect();
    let after: Vec<u8> = (0..rng.below(7)).map(|_| rng.next_u64() as u8).collect();
    let mut stream = before.clone();
    stream.extend_from_slice(secret.as_bytes());
    stream.extend_from_slice(&after);
    let encoded = base64(&stream, rng.coin(), rng.coin());
    let units = spelled(&encoded, rng);
    let first_bit = 8 * before.len();
    let end_bit = 8 * (before.len() + secret.len());
    Base64Case {
        secret,
        units,
        first: first_bit / 6,
        core: first_bit.div_ceil(6),
        end: end_bit.div_ceil(6),
    }
}

/// Every base64 character that holds a bit of the credential goes, the
/// characters around it stay (in every spelling of each).
#[test]
fn base64_of_a_stream_holding_the_credential_keeps_no_bit_of_it() {
    for seed in 0..CASES {
        let mut rng = Rng::new(seed);
        let case = base64_case(&mut rng);
        let (left, right) = (
            filler(&case.secret, &mut rng, 1),
            filler(&case.secret, &mut rng, 1),
        );
        let text = case.units.concat();
        assert_eq!(
            Scrubber::new(Some(&case.secret)).scrub(&format!("{left}{text}{right}")),
            format!(
                "{left}{}{REDACTED}{}{right}",
                case.units[..case.first].concat(),
                case.units[case.end..].concat()
            ),
            "seed {seed}: {:?} in {text:?}",
            case.secret
        );
    }
}

/// Cut after every byte of `units` (a form of `secret`, written after
/// `left`): once the cut keeps `MIN_CUT_PREFIX` whole characters of the
/// form, all of it is redacted; before that, a form spelled literally is
/// left alone.
fn assert_cuts(secret: &str, left: &str, units: &[String], what: &str) {
    let scrubber = Scrubber::new(Some(secret));
    let text = format!("{left}{}", units.concat());
    let literal = units.iter().all(|u| u.chars().count() == 1);
    for at in left.len() + 1..text.len() {
        let shown = cut(&text, at);
        let whole = whole_units(units, shown.len().saturating_sub(left.len()));
        let got = scrubber.scrub_cut(shown);
        if whole >= MIN_CUT_PREFIX {
            assert_eq!(
                got,
                format!("{left}{REDACTED}"),
                "{what}: {secret:?} cut after {at} bytes of {text:?}"
            );
        } else if literal {
            assert_eq!(got, shown, "{what}: {secret:?} cut after {at} bytes");
        }
    }
}

#[test]
fn a_cut_anywhere_in_a_spelled_credential_keeps_no_prefix_of_it() {
    for seed in 0..CUT_CASES {
        let mut rng = Rng::new(seed);
        let secret = credential(&mut rng);
        let len = rng.below(3);
        let left = filler(&secret, &mut rng, len);
        let units = spelled(&secret, &mut rng);
        assert_cuts(&secret, &left, &units, &format!("seed {seed}"));
        let literal: Vec<String> = secret.chars().map(String::from).collect();
        assert_cuts(&secret, &left, &literal, &format!("seed {seed}, literal"));
        let digits = spelled(&hex(&secret).to_ascii_uppercase(), &mut rng);
        assert_cuts(&secret, &left, &digits, &format!("seed {seed}, hex"));
    }
}

#[test]
fn a_cut_anywhere_in_base64_keeps_no_bit_of_the_credential_before_it() {
    for seed in 0..CUT_CASES {
        let mut rng = Rng::new(seed);
        let case = base64_case(&mut rng);
        let left = filler(&case.secret, &mut rng, 1);
        // Cuts inside the characters that hold only bits of the
        // credential (a cut past them leaves a whole match).
        let units = &case.units[..case.end - 1];
        let scrubber = Scrubber::new(Some(&case.secret));
        let text = format!("{left}{}", units.concat());
        let core_at = left.len() + units[..case.core].concat().len();
        for at in core_at + 1..=text.len() {
            let shown = cut(&text, at);
            if whole_units(&units[case.core..], shown.len() - core_at) < MIN_CUT_PREFIX {
                continue;
            }
            assert_eq!(
                scrubber.scrub_cut(shown),
                format!("{left}{}{REDACTED}", units[..case.first].concat()),
                "seed {seed}: {:?} cut after {at} bytes of {text:?}",
                case.secret
            );
        }
    }
}
