//! The oracle's own count of the requests in flight each way, held to the
//! wrapper's cap ([`crate::wrap_harness::MAX_IN_FLIGHT`] in the harness):
//! never more than the cap in flight, and a request refused for want of
//! room only while the cap is reached.
//!
//! Client → upstream: a client request is in flight from the line the
//! upstream receives for it (or the call held back when its intent could
//! not be journaled) until the client receives its answer or the upstream
//! the client's cancellation. The count is exact but for one race the
//! wrapper allows: a call the client cancels in the same read as the call
//! is taken back unseen, yet took room while the read was judged.
//!
//! Upstream → client: the client's end of a request is seen on its input
//! before the wrapper acts on it, and the wrapper may refuse that answer
//! (then the request stays in flight). So two counts: `surely` drops a
//! request as soon as the client may have ended it (it never holds more
//! than the wrapper: the upper bound is judged on it), `maybe` only once
//! the upstream receives the answer (it never holds fewer: a refusal for
//! want of room is judged on it).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// A client request in flight to the upstream.
#[derive(Debug, Clone)]
pub(super) struct Flight {
    /// The client's id for it.
    pub(super) client_id: Value,
    /// When it went up, in ms, when the oracle knows the clock.
    pub(super) since: Option<u64>,
}

/// Client requests in flight to the upstream, by the upstream id the
/// wrapper gave them.
#[derive(Debug, Default)]
pub(super) struct ToUpstream {
    cap: usize,
    flights: BTreeMap<i64, Flight>,
}

impl ToUpstream {
    pub(super) fn new(cap: usize) -> Self {
        Self {
            cap,
            flights: BTreeMap::new(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.flights.len()
    }

    pub(super) fn cap(&self) -> usize {
        self.cap
    }

    /// The client request `client_id` went up as `upstream_id`.
    pub(super) fn went_up(&mut self, upstream_id: i64, client_id: Value, since: Option<u64>) {
        assert!(
            self.flights.len() < self.cap,
            "the client request {client_id} went up as {upstream_id} with {} already in flight (the cap is {})",
            self.flights.len(),
            self.cap
        );
        self.flights
            .insert(upstream_id, Flight { client_id, since });
    }

    /// The client received an answer for `client_id`: the request in
    /// flight under that id, if any, has ended.
    pub(super) fn answered(&mut self, client_id: &Value) -> Option<(i64, Flight)> {
        let upstream_id = self
            .flights
            .iter()
            .find(|(_, f)| f.client_id == *client_id)
            .map(|(n, _)| *n)?;
        self.flights.remove(&upstream_id).map(|f| (upstream_id, f))
    }

    /// The upstream was told to cancel `upstream_id`.
    pub(super) fn cancelled(&mut self, upstream_id: i64) -> Option<Flight> {
        self.flights.remove(&upstream_id)
    }

    /// Requests still in flight at `now` ms whose time limit of
    /// `timeout_ms` has passed.
    pub(super) fn overdue(&self, now: u64, timeout_ms: u64) -> Vec<(i64, &Flight)> {
        self.flights
            .iter()
            .filter(|(_, f)| f.since.is_some_and(|t| t.saturating_add(timeout_ms) <= now))
            .map(|(n, f)| (*n, f))
            .collect()
    }
}

/// Upstream requests in flight to the client, by the client-facing id the
/// wrapper gave them.
#[derive(Debug, Default)]
pub(super) struct ToClient {
    cap: usize,
    /// Those surely still in flight.
    surely: BTreeSet<i64>,
    /// Those that may still be in flight.
    maybe: BTreeSet<i64>,
    /// Client answers read, not yet seen reaching the upstream: line, id,
    /// the answer without its id.
    read: Vec<(u64, i64, Map<String, Value>)>,
}

impl ToClient {
    pub(super) fn new(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    /// The client was asked `id`.
    pub(super) fn asked(&mut self, id: i64) {
        assert!(
            self.surely.len() < self.cap,
            "the client was asked {id} with {} upstream requests already in flight to it (the cap is {})",
            self.surely.len(),
            self.cap
        );
        self.surely.insert(id);
        self.maybe.insert(id);
    }

    /// A new read of the client's input begins: answers of the read before
    /// that never reached the upstream were refused.
    pub(super) fn client_read_begins(&mut self) {
        self.read.clear();
    }

    /// The client's line `line` may answer `id`; `answer` is the message
    /// without its id when the oracle reads it as a valid one.
    pub(super) fn client_answers(
        &mut self,
        line: u64,
        id: i64,
        answer: Option<Map<String, Value>>,
    ) {
        self.surely.remove(&id);
        if let Some(answer) = answer
            && self.maybe.contains(&id)
        {
            self.read.push((line, id, answer));
        }
    }

    /// The wrapper refused the client's line `line`.
    pub(super) fn client_refused(&mut self, line: u64) {
        self.read.retain(|(at, _, _)| *at != line);
    }

    /// The upstream received `answer` (without its id), forwarded from
    /// the client: the first answer read that it is ends its request.
    pub(super) fn answer_went_up(&mut self, answer: &Map<String, Value>) {
        if let Some(at) = self.read.iter().position(|(_, _, a)| a == answer) {
            let (_, id, _) = self.read.remove(at);
            self.maybe.remove(&id);
        }
    }

    /// The upstream cancelled `id` and the client was told.
    pub(super) fn cancelled(&mut self, id: i64) {
        self.surely.remove(&id);
        self.maybe.remove(&id);
        self.read.retain(|(_, n, _)| *n != id);
    }

    /// The session is closing: no client answer is read any more, every
    /// upstream request in flight is answered with an error.
    pub(super) fn drained(&mut self) {
        self.surely.clear();
        self.maybe.clear();
        self.read.clear();
    }

    /// An upstream request was refused for want of room: the cap must be
    /// reached.
    pub(super) fn assert_full(&self, refused: &str) {
        assert!(
            self.maybe.len() >= self.cap,
            "the upstream's request {refused} was refused with -32603 while at most {} of its requests were in flight to the client (the cap is {})",
            self.maybe.len(),
            self.cap
        );
    }
}
