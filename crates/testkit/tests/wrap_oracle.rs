//! The `wrap_session` seeds named `oracle_*` take a session to the edges
//! the oracle judges, and each holds every property under both session
//! policies: the in-flight cap each way (one request past it refused, one
//! more taken once an answer made room), trust on first use over after the
//! first complete listing, a trusted tool listed again with another input
//! schema, a request timed out at exactly its deadline, a cancellation
//! whose client id is another request's upstream id.

use arbitrary::Unstructured;
use portcullis_gateway::OnInvalid;
use portcullis_testkit::regressions::workspace_root;
use portcullis_testkit::wrap_harness::{MAX_IN_FLIGHT, Reached, ops, run, wrap_session_both_modes};

/// The seed `name` through the harness under both policies, then its run
/// under `close` with a journal that never fails.
fn seed(name: &str) -> Reached {
    let path = workspace_root().join("corpus/wrap_session").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    wrap_session_both_modes(&bytes);
    let ops = ops::ops(&mut Unstructured::new(&bytes)).expect("decodes");
    run(&ops, OnInvalid::Close)
}

fn forwarded(r: &Reached, method: &str) -> u64 {
    r.counters
        .forwarded
        .get(method)
        .copied()
        .unwrap_or_default()
}

/// Five pings while four may be in flight: the fifth is refused, and one
/// more goes up once the first is answered.
#[test]
fn the_client_fills_the_in_flight_cap() {
    assert_eq!(MAX_IN_FLIGHT, 4);
    let r = seed("oracle_in_flight_cap_client");
    assert_eq!(forwarded(&r, "ping"), 5, "{r:?}");
    // The initialize answer, the refusal, the first ping's answer.
    assert_eq!(r.counters.to_client, 3, "{r:?}");
}

/// Five upstream requests while four may be in flight to the client: the
/// fifth is refused, and one more reaches the client once it answered one.
#[test]
fn the_upstream_fills_the_in_flight_cap() {
    let r = seed("oracle_in_flight_cap_upstream");
    // The initialize answer, four requests, the one after the answer.
    assert_eq!(r.counters.to_client, 6, "{r:?}");
    assert_eq!(r.counters.dropped, 1, "the refused request: {r:?}");
}

/// A tool first listed after the first complete listing is withheld, and
/// its call denied.
#[test]
fn a_tool_new_after_the_first_complete_listing_is_denied() {
    let r = seed("oracle_tofu_closes");
    assert_eq!(forwarded(&r, "tools/list"), 2, "{r:?}");
    assert_eq!((r.calls_forwarded, r.calls_denied), (0, 1), "{r:?}");
}

/// The trusted `echo` listed again with an input schema that is not one
/// is a rug pull.
#[test]
fn a_trusted_tool_listed_with_another_schema_is_a_rug_pull() {
    let r = seed("oracle_pin_holds_the_schema");
    assert_eq!(r.counters.rug_pulls, 1, "{r:?}");
    assert_eq!((r.calls_forwarded, r.calls_denied), (0, 1), "{r:?}");
}

/// A ping, then the clock moves exactly its time limit: it times out on
/// that tick, and the upstream's answer after it is dropped as late.
#[test]
fn a_request_times_out_at_exactly_its_deadline() {
    let r = seed("oracle_deadline_exact");
    assert_eq!((r.counters.timeouts, r.counters.dropped), (1, 1), "{r:?}");
}

/// Pings 3 and 2 go up as 2 and 3, the client cancels its 2: the upstream
/// is told to cancel 3 (its 2 is the client's 3, still in flight), and its
/// answer to 3 is dropped as late.
#[test]
fn the_clients_cancellation_names_the_upstream_id() {
    let r = seed("oracle_cancel_under_upstream_id");
    assert_eq!(forwarded(&r, "ping"), 2, "{r:?}");
    // The initialize answer and the answer to the client's 3.
    assert_eq!((r.counters.to_client, r.counters.dropped), (2, 1), "{r:?}");
}
