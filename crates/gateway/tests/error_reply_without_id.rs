//! A frame refused before any id could be read is answered with an error
//! that omits the id only when both allow it: the session closes after it
//! (`on_invalid = "close"`) and the negotiated revision permits an error
//! without an id (2025-11-25 and later). Otherwise nothing is written.

use portcullis_gateway::OnInvalid;
use portcullis_gateway::mcp::{SessionState, admit};
use portcullis_gateway::session::error_reply;
use portcullis_wire::{Limits, parse_message_borrowed};

/// A session that negotiated `revision` (or none yet).
fn session(revision: Option<&str>) -> SessionState {
    let mut state = SessionState::new(64, 1024);
    if let Some(revision) = revision {
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{revision}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
        );
        let message = parse_message_borrowed(&init, &Limits::default()).unwrap();
        admit(&mut state, message).unwrap();
        assert_eq!(
            state.revision().map(|r| r.as_str().to_owned()).as_deref(),
            Some(revision)
        );
    }
    state
}

#[test]
fn an_error_omits_the_id_only_when_closing_under_a_revision_that_allows_it() {
    let unreadable = parse_message_borrowed("{", &Limits::default()).unwrap_err();
    assert_eq!(unreadable.id, None);
    for revision in [None, Some("2025-06-18"), Some("2025-11-25")] {
        for on_invalid in [OnInvalid::Close, OnInvalid::KeepOpen] {
            let mut state = session(revision);
            let reply = error_reply(&mut state, on_invalid, &unreadable, None);
            let may_omit = on_invalid == OnInvalid::Close && revision == Some("2025-11-25");
            assert_eq!(reply.is_some(), may_omit, "{revision:?} {on_invalid:?}");
            if let Some((id, error)) = reply {
                assert_eq!(id, None);
                assert_eq!(error.code, unreadable.code);
            }
        }
    }
}
