//! Request ids and the id memory of one session, bounded by configuration.
//!
//! Ids are never reused within a session, so the gateway must remember every
//! id it accepted. It never keeps the id itself (a string id can be as long
//! as a frame): a string id is remembered as the SHA-256 of a tagged
//! encoding, and integer ids as runs of consecutive values, so a client that
//! numbers its requests 1, 2, 3… costs one entry for the whole session. The
//! number of entries is capped ([`IdMemory::new`]); an id that would need an
//! entry past the cap is refused rather than forgotten, so reuse detection
//! stays exact.

use std::collections::{BTreeMap, HashSet};

use portcullis_wire::Fingerprint;
/// A JSON-RPC request id (defined by the wire layer, which reads it).
pub use portcullis_wire::Id;

/// What remembering an id did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remember {
    /// First use: remembered now.
    Fresh,
    /// Already used in this session.
    Reused,
    /// New, but the memory is full.
    Full,
}

#[derive(Debug)]
pub struct IdMemory {
    /// Digests of string ids.
    strings: HashSet<Fingerprint>,
    /// Integer ids as inclusive runs, start → end.
    runs: BTreeMap<i64, i64>,
    capacity: usize,
}

impl IdMemory {
    /// Memory for at most `capacity` entries (string ids plus integer runs).
    pub fn new(capacity: usize) -> Self {
        Self {
            strings: HashSet::new(),
            runs: BTreeMap::new(),
            capacity,
        }
    }

    /// Entries in use.
    pub fn entries(&self) -> usize {
        self.strings.len() + self.runs.len()
    }

    /// Remember `id` unless it was used before or there is no room for it.
    pub fn remember(&mut self, id: &Id) -> Remember {
        match id {
            Id::Str(s) => {
                // The tag keeps `"1"` and `1` apart whatever the encoding of
                // integers; only strings are hashed here anyway.
                let mut tagged = Vec::with_capacity(s.len() + 2);
                tagged.extend_from_slice(b"s:");
                tagged.extend_from_slice(s.as_bytes());
                let digest = Fingerprint::of(&tagged);
                if self.strings.contains(&digest) {
                    Remember::Reused
                } else if self.entries() >= self.capacity {
                    Remember::Full
                } else {
                    self.strings.insert(digest);
                    Remember::Fresh
                }
            }
            Id::Int(n) => self.remember_int(*n),
        }
    }

    fn remember_int(&mut self, n: i64) -> Remember {
        let below = self.runs.range(..=n).next_back().map(|(s, e)| (*s, *e));
        if below.is_some_and(|(_, end)| end >= n) {
            return Remember::Reused;
        }
        let extends_below = below.filter(|(_, end)| n.checked_sub(1) == Some(*end));
        let above = n
            .checked_add(1)
            .and_then(|next| self.runs.get(&next).map(|end| (next, *end)));
        match (extends_below, above) {
            (Some((start, _)), Some((next, end))) => {
                self.runs.remove(&next);
                self.runs.insert(start, end);
            }
            (Some((start, _)), None) => {
                self.runs.insert(start, n);
            }
            (None, Some((next, end))) => {
                self.runs.remove(&next);
                self.runs.insert(n, end);
            }
            (None, None) => {
                if self.entries() >= self.capacity {
                    return Remember::Full;
                }
                self.runs.insert(n, n);
            }
        }
        Remember::Fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Id {
        Id::Str(text.into())
    }

    #[test]
    fn an_integer_and_its_decimal_string_are_different_ids() {
        let mut ids = IdMemory::new(8);
        assert_eq!(ids.remember(&Id::Int(1)), Remember::Fresh);
        assert_eq!(ids.remember(&s("1")), Remember::Fresh);
        assert_eq!(ids.remember(&Id::Int(1)), Remember::Reused);
        assert_eq!(ids.remember(&s("1")), Remember::Reused);
    }

    #[test]
    fn consecutive_integer_ids_share_one_entry_in_any_order() {
        let mut ids = IdMemory::new(2);
        for n in (0..1000).chain((2000..3000).rev()) {
            assert_eq!(ids.remember(&Id::Int(n)), Remember::Fresh, "{n}");
        }
        assert_eq!(ids.entries(), 2);
        // Filling the gap merges both runs into one.
        for n in 1000..2000 {
            assert_eq!(ids.remember(&Id::Int(n)), Remember::Fresh, "{n}");
        }
        assert_eq!(ids.entries(), 1);
        for n in [0, 999, 1000, 1999, 2000, 2999] {
            assert_eq!(ids.remember(&Id::Int(n)), Remember::Reused, "{n}");
        }
    }

    #[test]
    fn runs_reach_the_ends_of_the_integer_range() {
        let mut ids = IdMemory::new(2);
        for n in [i64::MAX, i64::MAX - 1, i64::MIN, i64::MIN + 1] {
            assert_eq!(ids.remember(&Id::Int(n)), Remember::Fresh, "{n}");
        }
        assert_eq!(ids.entries(), 2);
        assert_eq!(ids.remember(&Id::Int(i64::MAX)), Remember::Reused);
        assert_eq!(ids.remember(&Id::Int(i64::MIN)), Remember::Reused);
    }

    #[test]
    fn a_full_memory_refuses_new_entries_but_still_detects_reuse() {
        let mut ids = IdMemory::new(2);
        assert_eq!(ids.remember(&s("a")), Remember::Fresh);
        assert_eq!(ids.remember(&Id::Int(10)), Remember::Fresh);
        assert_eq!(ids.remember(&s("b")), Remember::Full);
        assert_eq!(ids.remember(&Id::Int(20)), Remember::Full);
        // Extending an existing run needs no new entry.
        assert_eq!(ids.remember(&Id::Int(11)), Remember::Fresh);
        assert_eq!(ids.remember(&s("a")), Remember::Reused);
        assert_eq!(ids.remember(&Id::Int(10)), Remember::Reused);
        // A refused id was not remembered.
        assert_eq!(ids.remember(&s("b")), Remember::Full);
    }

    #[test]
    fn long_string_ids_cost_one_digest_each() {
        let mut ids = IdMemory::new(100);
        for n in 0..50 {
            let id = s(&format!("{n}{}", "x".repeat(100_000)));
            assert_eq!(ids.remember(&id), Remember::Fresh);
            assert_eq!(ids.remember(&id), Remember::Reused);
        }
        assert_eq!(ids.entries(), 50);
        assert_eq!(
            std::mem::size_of::<Fingerprint>(),
            32,
            "one digest per string id"
        );
    }
}
