//! The requests handed to an executor and not yet answered, by ticket.
//!
//! Tickets are issued in increasing order, so the entries are kept sorted
//! by ticket in a deque: issuing one is a push at the back, and an
//! executor that completes roughly in order removes near the front. A
//! tree map paid a search and node bookkeeping on every call for an order
//! the tickets already have.

use std::collections::VecDeque;

use portcullis_wire::Id;

use crate::mcp::Revision;

/// What answering one in-flight request needs.
#[derive(Debug)]
pub(super) struct InFlight {
    pub(super) id: Id,
    pub(super) revision: Revision,
}

/// In-flight requests, ascending by ticket.
#[derive(Debug, Default)]
pub(super) struct Tickets {
    entries: VecDeque<(u64, InFlight)>,
}

impl Tickets {
    /// Record `ticket`, which must be greater than every ticket recorded
    /// before (the session issues them in order).
    pub(super) fn push(&mut self, ticket: u64, request: InFlight) {
        debug_assert!(self.entries.back().is_none_or(|(t, _)| *t < ticket));
        self.entries.push_back((ticket, request));
    }

    /// Take `ticket` out, if it is in flight.
    pub(super) fn remove(&mut self, ticket: u64) -> Option<InFlight> {
        let at = self
            .entries
            .binary_search_by_key(&ticket, |(t, _)| *t)
            .ok()?;
        self.entries.remove(at).map(|(_, request)| request)
    }

    /// Take out the request with this id, if one is in flight; its ticket.
    pub(super) fn remove_id(&mut self, id: &Id) -> Option<u64> {
        let at = self.entries.iter().position(|(_, f)| f.id == *id)?;
        self.entries.remove(at).map(|(ticket, _)| ticket)
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(n: i64) -> InFlight {
        InFlight {
            id: Id::Int(n),
            revision: Revision::V2025_06_18,
        }
    }

    #[test]
    fn completions_in_any_order_find_their_ticket() {
        let mut tickets = Tickets::default();
        for t in 0..8 {
            tickets.push(t, request(100 + t as i64));
        }
        for t in [3, 0, 7, 5, 1] {
            assert_eq!(
                tickets.remove(t).map(|f| f.id),
                Some(Id::Int(100 + t as i64))
            );
            assert!(tickets.remove(t).is_none(), "ticket {t} answered twice");
        }
        assert_eq!(tickets.len(), 3);
        assert_eq!(tickets.remove_id(&Id::Int(106)), Some(6));
        assert_eq!(tickets.remove_id(&Id::Int(106)), None);
        assert!(tickets.remove(99).is_none());
        assert_eq!(tickets.remove(2).map(|f| f.id), Some(Id::Int(102)));
        assert_eq!(tickets.remove(4).map(|f| f.id), Some(Id::Int(104)));
        assert_eq!(tickets.len(), 0);
    }
}
