//! What a rejection records about a refused frame: the stage by its stable
//! name, the JSON-RPC code, a reason, and the SHA-256 of the frame — never
//! the frame. These are the fields ledgers, audit journals and `inspect
//! --json` print, so their text is part of the contract.

use portcullis_wire::frame::{FrameEvent, FrameReader};
use portcullis_wire::limits::DEFAULT_MAX_FRAME_BYTES;
use portcullis_wire::{Fingerprint, Rejection, Stage, codes};
use sha2::{Digest, Sha256};

const SHA256_OF_EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const SHA256_OF_ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

#[test]
fn a_fingerprint_is_the_sha256_of_the_frame_in_lowercase_hex() {
    assert_eq!(Fingerprint::of(b"").to_hex(), SHA256_OF_EMPTY);
    assert_eq!(Fingerprint::of(b"abc").to_hex(), SHA256_OF_ABC);
    assert_eq!(Fingerprint::of(b"abc").to_string(), SHA256_OF_ABC);
}

#[test]
fn a_fingerprint_debugs_as_its_first_sixteen_hex_digits() {
    assert_eq!(
        format!("{:?}", Fingerprint::of(b"abc")),
        "Fingerprint(ba7816bf8f01cfea)"
    );
}

#[test]
fn a_fingerprint_hashed_in_pieces_equals_the_fingerprint_of_the_whole() {
    let mut hasher = Sha256::new();
    hasher.update(b"a");
    hasher.update(b"bc");
    assert_eq!(Fingerprint::from_hasher(hasher), Fingerprint::of(b"abc"));
}

/// The fingerprint of an over-long line covers the bytes up to the one that
/// crossed the cap (the rest is discarded unread), whatever the chunking.
#[test]
fn an_over_long_line_is_fingerprinted_by_its_first_cap_plus_one_bytes() {
    let line = b"abcdefgh\n";
    let chunkings: [&[usize]; 4] = [&[9], &[3, 6], &[1, 1, 1, 1, 1, 1, 1, 1, 1], &[5, 4]];
    for sizes in chunkings {
        let mut reader = FrameReader::new(4);
        let mut seen = Vec::new();
        let mut rest: &[u8] = line;
        for &n in sizes {
            let (chunk, tail) = rest.split_at(n);
            rest = tail;
            reader.feed(chunk, |_, event| match event {
                FrameEvent::Rejected(r) => seen.push(r),
                FrameEvent::Frame(f) => panic!("accepted {f:?} over a 4-byte cap"),
            });
        }
        assert_eq!(seen.len(), 1, "chunking {sizes:?}");
        assert_eq!(seen[0].stage, Stage::Framing);
        assert_eq!(
            seen[0].fingerprint,
            Fingerprint::of(b"abcde"),
            "chunking {sizes:?}"
        );
    }
}

#[test]
fn stages_have_stable_lowercase_names_in_data_flow_order() {
    let names: Vec<&str> = Stage::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        names,
        ["framing", "utf8", "json", "rpc", "mcp", "schema", "authz"]
    );
    for stage in Stage::ALL {
        assert_eq!(stage.to_string(), stage.as_str());
    }
}

#[test]
fn a_rejection_displays_its_stage_code_and_reason() {
    let rejection = Rejection::new(Stage::Framing, codes::PARSE_ERROR, "empty line", b"\r");
    assert_eq!(
        rejection.to_string(),
        "framing stage rejected frame (-32700): empty line"
    );
    assert_eq!(rejection.fingerprint, Fingerprint::of(b"\r"));
    assert_eq!(rejection.id, None);
}

#[test]
fn a_rejection_carries_the_id_it_is_given() {
    use portcullis_wire::Id;
    let rejection =
        Rejection::new(Stage::Rpc, codes::INVALID_REQUEST, "r", b"{}").with_id(Some(Id::Int(7)));
    assert_eq!(rejection.id, Some(Id::Int(7)));
    assert_eq!(rejection.with_id(None).id, None);
}

/// JSON-RPC 2.0, section 5.1: the reserved error codes.
#[test]
fn error_codes_are_the_json_rpc_reserved_ones() {
    assert_eq!(codes::PARSE_ERROR, -32700);
    assert_eq!(codes::INVALID_REQUEST, -32600);
    assert_eq!(codes::METHOD_NOT_FOUND, -32601);
    assert_eq!(codes::INVALID_PARAMS, -32602);
    assert_eq!(codes::INTERNAL_ERROR, -32603);
}

/// The documented defaults: 4 MiB frames, depth 64, clamped to 1..=127.
#[test]
fn default_limits_are_four_mebibytes_and_depth_sixty_four() {
    use portcullis_wire::Limits;
    assert_eq!(DEFAULT_MAX_FRAME_BYTES, 4_194_304);
    let limits = Limits::default();
    assert_eq!(
        (limits.max_frame_bytes, limits.effective_depth()),
        (4_194_304, 64)
    );
    let clamp = |max_depth| {
        Limits {
            max_depth,
            ..limits
        }
        .effective_depth()
    };
    assert_eq!(
        (clamp(0), clamp(1), clamp(127), clamp(1000)),
        (1, 1, 127, 127)
    );
}
