//! The `wrap_session` seed corpus goes deep: between them the seeds reach
//! a forwarded call, denied calls (rug pull, schema), quarantined upstream
//! lines, dropped responses, a timeout, a rug pull, an upstream crash, a
//! session draining after an invalid frame, a late answer to a cancelled
//! request and upstream requests refused with an error, a journal failing at
//! a call's intent, a flood of upstream junk — and each seed holds every
//! property under both session policies.

use arbitrary::Unstructured;
use portcullis_gateway::OnInvalid;
use portcullis_testkit::regressions::workspace_root;
use portcullis_testkit::wrap_harness::{
    Reached, journal_fails_at, ops, run, run_with_journal, wrap_session_both_modes,
};

fn seed_bytes(name: &str) -> Vec<u8> {
    let path = workspace_root().join("corpus/wrap_session").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn seed_ops(name: &str) -> Vec<ops::Op> {
    ops::ops(&mut Unstructured::new(&seed_bytes(name))).expect("decodes")
}

fn seed(name: &str) -> Reached {
    run(&seed_ops(name), OnInvalid::Close)
}

#[test]
fn a_call_to_a_listed_tool_reaches_the_upstream() {
    let r = seed("happy_call");
    assert_eq!(r.calls_forwarded, 1, "{r:?}");
    assert_eq!(r.calls_denied, 0);
}

#[test]
fn a_rug_pull_denies_the_call() {
    let r = seed("rug_pull");
    assert_eq!(r.counters.rug_pulls, 1, "{r:?}");
    assert_eq!((r.calls_forwarded, r.calls_denied), (0, 1));
}

#[test]
fn a_respelled_listing_is_the_same_tool() {
    let r = seed("respelled_same_tool");
    assert_eq!(r.counters.rug_pulls, 0, "{r:?}");
    assert_eq!(r.calls_forwarded, 1);
}

#[test]
fn calls_outside_the_schema_or_the_list_are_denied_and_a_valid_one_passes() {
    let r = seed("schema_denials");
    assert_eq!((r.calls_forwarded, r.calls_denied), (1, 3), "{r:?}");
}

#[test]
fn upstream_junk_is_quarantined() {
    let r = seed("upstream_junk");
    assert_eq!(r.counters.quarantined, 3, "{r:?}");
}

#[test]
fn duplicate_and_unsolicited_answers_are_dropped() {
    assert_eq!(seed("duplicate_answer").counters.dropped, 2);
}

#[test]
fn a_silent_upstream_times_out() {
    let r = seed("timeout_then_late_answer");
    assert_eq!((r.counters.timeouts, r.counters.dropped), (1, 1), "{r:?}");
}

#[test]
fn an_upstream_crash_ends_the_session() {
    let r = seed("crash_mid_request");
    assert!(r.upstream_exited, "{r:?}");
    assert_eq!(r.counters.quarantined, 1);
}

#[test]
fn an_invalid_frame_closes_only_once_the_upstream_has_answered_what_came_before() {
    let r = seed("close_drains_then_answers");
    assert_eq!(r.closed_on_invalid, Some(5), "{r:?}");
    // initialize, ping, tools/list answered by the upstream, then the
    // error frame for line 5.
    assert_eq!(r.client_lines, 5, "{r:?}");
    assert_eq!(r.counters.timeouts, 0);
}

#[test]
fn a_late_answer_to_a_cancelled_request_is_dropped() {
    let r = seed("cancelled_ask_answered_late");
    assert_eq!(r.counters.late_answers, 1, "{r:?}");
    // The second answer to the same id answers nothing.
    assert_eq!(r.closed_on_invalid, Some(4));
}

#[test]
fn upstream_requests_the_wrapper_refuses_are_answered() {
    let r = seed("upstream_asks_badly");
    assert_eq!(r.counters.dropped, 3, "{r:?}");
    assert_eq!(r.closed_on_invalid, None);
}

/// Wherever the journal fails, the call reaches the upstream only when its
/// intent was written before: a failure before the call denies it without
/// an intent, a failure on its intent denies it after one, and the harness
/// holds every property (one outcome per intent, the denial, nothing
/// forwarded after the failure) at each point.
#[test]
fn wherever_the_journal_fails_the_call_goes_up_only_after_its_intent_was_written() {
    let ops = seed_ops("happy_call");
    let mut failed_on_the_intent = 0;
    for mode in [OnInvalid::Close, OnInvalid::KeepOpen] {
        for at in 0..24 {
            let r = run_with_journal(&ops, mode, Some(at));
            assert!(
                r.journal_failed || r.calls_forwarded == 1,
                "{mode:?} {at}: {r:?}"
            );
            match (r.intents, r.calls_forwarded) {
                (0, 0) | (1, 0) => assert_eq!(r.counters.journal_denials, 1, "{r:?}"),
                (1, 1) => assert_eq!(r.counters.journal_denials, 0, "{r:?}"),
                _ => panic!("{mode:?} {at}: {r:?}"),
            }
            if (r.intents, r.calls_forwarded) == (1, 0) {
                failed_on_the_intent += 1;
            }
            assert_eq!(r.outcomes, r.intents, "{r:?}");
        }
    }
    assert_eq!(
        failed_on_the_intent, 2,
        "one point per mode fails on the intent"
    );
}

/// The seed `journal_fails_at_the_call` is `happy_call` with a last tick
/// whose bytes choose the intent's write in both runs.
#[test]
fn a_seed_chooses_where_the_journal_fails() {
    let bytes = seed_bytes("journal_fails_at_the_call");
    assert_eq!(
        (journal_fails_at(&bytes, 0), journal_fails_at(&bytes, 1)),
        (Some(3), Some(3))
    );
    let r = run_with_journal(
        &seed_ops("journal_fails_at_the_call"),
        OnInvalid::Close,
        Some(3),
    );
    assert_eq!(
        (r.intents, r.calls_forwarded, r.outcomes),
        (1, 0, 1),
        "{r:?}"
    );
    wrap_session_both_modes(&bytes);
}

/// Hundreds of blank and junk upstream lines over two intervals are a
/// handful of records.
#[test]
fn a_flood_of_upstream_junk_is_a_few_records() {
    let r = seed("upstream_flood");
    assert_eq!(r.counters.quarantined, 4 * 96 + 48, "{r:?}");
    assert!(r.records <= 6, "{r:?}");
}

/// The fuzz target runs each input under the policy its fourth-last byte
/// chooses: the seed corpus starts the fuzzer under both, with many seeds
/// each, so neither policy is left to chance mutations.
#[test]
fn the_corpus_seeds_the_fuzzer_under_both_policies() {
    use portcullis_testkit::wrap_harness::mode_of;
    let dir = workspace_root().join("corpus/wrap_session");
    let (mut close, mut keep_open) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        match mode_of(&bytes) {
            OnInvalid::Close => close += 1,
            _ => keep_open += 1,
        }
    }
    assert!(
        close >= 50 && keep_open >= 50,
        "{close} seeds fuzzed under close, {keep_open} under keep-open"
    );
    // Short inputs close; the byte's low bit chooses otherwise.
    assert_eq!(mode_of(&[1, 1, 1]), OnInvalid::Close);
    assert_eq!(mode_of(&[1, 0, 0, 0]), OnInvalid::KeepOpen);
    assert_eq!(mode_of(&[2, 1, 1, 1]), OnInvalid::Close);
}
