//! The fetcher's side of a fetch session (Kafka's `FetchSessionHandler`): what to put in the next
//! fetch request, full or incremental, and how a response moves the session on.
//!
//! A fetcher (a follower's replica fetcher, a consumer) keeps one handler per connection to a
//! broker. Each round it passes [`FetchSessionHandler::build`] every partition it wants to fetch
//! now, with its current fetch state; the handler compares them with what the session holds
//! (what was last sent) and returns the request's session fields and partitions: all of them for
//! a full fetch (epoch 0), only the added and changed ones plus the removed ones (to put in
//! `forgotten_topics_data`) for an incremental fetch. The broker remembers the unlisted ones.
//! The response (or the lack of one) goes to [`FetchSessionHandler::handle_response`] or
//! [`FetchSessionHandler::handle_error`]: success moves the epoch on, any top-level error or a
//! lost connection makes the next request full again.
//!
//! An incremental response carries only the partitions that have something new (records, a
//! changed high watermark or log start, an error); the fetcher keeps the state of the others as
//! it was. Partitions the fetcher leaves out of `build` (not ready, throttled) are forgotten by
//! the session and re-sent whole when they come back, as Kafka's replica fetcher does.

use std::hash::Hash;

use josef_protocol::ErrorCode;

use crate::epoch::{next_epoch, FetchMetadata, INITIAL_EPOCH, INVALID_SESSION_ID};

/// What one fetch request carries, as [`FetchSessionHandler::build`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequestData<K, D> {
    /// The request's `session_id` and `session_epoch`.
    pub metadata: FetchMetadata,
    /// The partitions to list in the request, with their fetch state: every wanted partition
    /// for a full fetch, the added and changed ones for an incremental fetch (in the order given).
    pub to_send: Vec<(K, D)>,
    /// Partitions of the session not wanted any more, with the state last sent for them: the
    /// request's `forgotten_topics_data` (always empty for a full fetch).
    pub to_forget: Vec<(K, D)>,
}

impl<K, D> FetchRequestData<K, D> {
    /// Whether this is a full fetch (lists every partition; epoch 0 or −1).
    pub fn is_full(&self) -> bool {
        self.metadata.is_full()
    }
}

/// The fetcher's state of one fetch session (Kafka's `FetchSessionHandler`), generic over the
/// partition key `K` and the per-partition fetch state `D` (whatever the request lists for a
/// partition: fetch offset, leader epoch, log start, max bytes; equal states are not re-sent).
///
/// Pure: no I/O, no clock. One handler per connection; after a reconnect call
/// [`handle_error`](Self::handle_error) so the first request on the new connection is full.
///
/// ```
/// use josef_fetch::{FetchSessionHandler, INVALID_SESSION_ID};
///
/// // Partitions named by &str, fetch state = the fetch offset.
/// let mut h = FetchSessionHandler::new();
/// let first = h.build([("a-0", 0), ("b-0", 0)]);
/// assert!(first.is_full());
/// assert_eq!(first.to_send.len(), 2);
/// // The broker created session 42; the next fetch is incremental.
/// assert!(h.handle_response(42, 0));
///
/// // a-0 got records and now fetches from 7; b-0 is unchanged and not listed.
/// let next = h.build([("a-0", 7), ("b-0", 0)]);
/// assert_eq!((next.metadata.session_id, next.metadata.epoch), (42, 1));
/// assert_eq!(next.to_send, vec![("a-0", 7)]);
/// assert!(h.handle_response(42, 0));
///
/// // Nothing changed: an incremental fetch that lists nothing.
/// let idle = h.build([("a-0", 7), ("b-0", 0)]);
/// assert!(idle.to_send.is_empty() && idle.to_forget.is_empty());
/// assert!(h.handle_response(42, 0));
///
/// // b-0 is dropped (e.g. its leader moved): forgotten.
/// let dropped = h.build([("a-0", 7)]);
/// assert_eq!(dropped.to_forget, vec![("b-0", 0)]);
///
/// // The broker lost the session (FETCH_SESSION_ID_NOT_FOUND = 70): start over, full.
/// assert!(!h.handle_response(INVALID_SESSION_ID, 70));
/// let again = h.build([("a-0", 7)]);
/// assert!(again.is_full() && again.metadata.session_id == INVALID_SESSION_ID);
/// ```
#[derive(Debug, Clone)]
pub struct FetchSessionHandler<K, D> {
    /// The session fields of the next request.
    next: FetchMetadata,
    /// The partitions the broker's session holds, with the state last sent (Kafka's
    /// `sessionPartitions`), in the order they were added.
    session: crate::PartitionMap<K, D>,
}

impl<K: Hash + Eq + Clone, D: PartialEq + Clone> Default for FetchSessionHandler<K, D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq + Clone, D: PartialEq + Clone> FetchSessionHandler<K, D> {
    /// A handler with no session: the first request is full (session id 0, epoch 0), which asks
    /// the broker to create one.
    pub fn new() -> Self {
        FetchSessionHandler {
            next: FetchMetadata::new(INVALID_SESSION_ID, INITIAL_EPOCH),
            session: crate::PartitionMap::default(),
        }
    }

    /// The session fields the next request will carry.
    pub fn next_metadata(&self) -> FetchMetadata {
        self.next
    }

    /// The session's id (0 while there is none).
    pub fn session_id(&self) -> i32 {
        self.next.session_id
    }

    /// The partitions the broker's session holds (as last sent), in session order.
    pub fn session_partitions(&self) -> impl Iterator<Item = (&K, &D)> {
        self.session.iter()
    }

    /// The state last sent for `key`, if the session holds it. For a partition an incremental
    /// request did not list, this is what the broker fetches it with.
    pub fn session_partition(&self, key: &K) -> Option<&D> {
        self.session.get(key)
    }

    /// Number of partitions in the session.
    pub fn len(&self) -> usize {
        self.session.len()
    }

    /// Whether the session holds no partitions.
    pub fn is_empty(&self) -> bool {
        self.session.is_empty()
    }

    /// The next request, from every partition to fetch now with its fetch state (Kafka's
    /// `Builder.build`). Full fetch: all of `next`, which becomes the session. Incremental:
    /// `next`'s partitions new to the session or whose state differs from what was last sent
    /// (`to_send`, in `next`'s order), and the session's partitions missing from `next`
    /// (`to_forget`); the session is updated to match `next`. A key given twice counts once, with
    /// its last state.
    pub fn build(&mut self, next: impl IntoIterator<Item = (K, D)>) -> FetchRequestData<K, D> {
        let wanted: crate::PartitionMap<K, D> = next.into_iter().collect();
        if self.next.is_full() {
            self.session = wanted.clone();
            return FetchRequestData {
                metadata: self.next,
                to_send: wanted.into_iter().collect(),
                to_forget: Vec::new(),
            };
        }
        let mut to_forget = Vec::new();
        self.session.retain(|k, d| {
            let keep = wanted.contains_key(k);
            if !keep {
                to_forget.push((k.clone(), d.clone()));
            }
            keep
        });
        let mut to_send = Vec::new();
        for (k, d) in wanted {
            match self.session.get_mut(&k) {
                Some(sent) if *sent == d => {}
                Some(sent) => {
                    *sent = d.clone();
                    to_send.push((k, d));
                }
                None => {
                    self.session.insert(k.clone(), d.clone());
                    to_send.push((k, d));
                }
            }
        }
        FetchRequestData {
            metadata: self.next,
            to_send,
            to_forget,
        }
    }

    /// Applies a response's top-level `error_code` and `session_id` (Kafka's `handleResponse`);
    /// true when the response is usable. A full fetch answered with a session id starts that
    /// session (next epoch 1); with session id 0 the broker made none and the next request is
    /// full again. An incremental fetch answered without error moves the epoch on. Any error:
    /// FETCH_SESSION_ID_NOT_FOUND starts over without a session; every other error (e.g.
    /// INVALID_FETCH_SESSION_EPOCH) closes the session and asks for a new one; either way the
    /// next request is full and the response carries no partitions to apply.
    pub fn handle_response(&mut self, session_id: i32, error_code: i16) -> bool {
        if error_code != 0 {
            self.next = if error_code == ErrorCode::FetchSessionIdNotFound.code() {
                FetchMetadata::new(INVALID_SESSION_ID, INITIAL_EPOCH)
            } else {
                FetchMetadata::new(self.next.session_id, INITIAL_EPOCH)
            };
            return false;
        }
        self.next = if self.next.is_full() {
            if session_id == INVALID_SESSION_ID {
                FetchMetadata::new(INVALID_SESSION_ID, INITIAL_EPOCH)
            } else {
                FetchMetadata::new(session_id, next_epoch(INITIAL_EPOCH))
            }
        } else {
            FetchMetadata::new(self.next.session_id, next_epoch(self.next.epoch))
        };
        true
    }

    /// No usable response (connection lost, timeout, undecodable answer; Kafka's
    /// `handleError`): the request may or may not have reached the broker, so the epoch is
    /// unknown. The next request is full and closes the session (its id with epoch 0, so the
    /// broker frees it and creates a new one).
    pub fn handle_error(&mut self) {
        self.next = FetchMetadata::new(self.next.session_id, INITIAL_EPOCH);
    }

    /// Forgets the session entirely: the next request is full without a session id (use when
    /// the broker on the other end changed, so the old id means nothing there).
    pub fn reset(&mut self) {
        self.next = FetchMetadata::new(INVALID_SESSION_ID, INITIAL_EPOCH);
        self.session.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::epoch::FINAL_EPOCH;
    use proptest::prelude::*;

    const NOT_FOUND: i16 = 70;
    const BAD_EPOCH: i16 = 71;

    fn established() -> FetchSessionHandler<u32, i64> {
        let mut h = FetchSessionHandler::new();
        h.build([(1, 0), (2, 0), (3, 0)]);
        assert!(h.handle_response(9, 0));
        h
    }

    #[test]
    fn first_request_is_full_and_creates_a_session() {
        let mut h: FetchSessionHandler<u32, i64> = FetchSessionHandler::new();
        let r = h.build([(1, 5), (2, 6)]);
        assert_eq!(r.metadata, FetchMetadata::new(0, 0));
        assert_eq!(r.to_send, vec![(1, 5), (2, 6)]);
        assert!(r.to_forget.is_empty());
        assert!(h.handle_response(9, 0));
        assert_eq!(h.next_metadata(), FetchMetadata::new(9, 1));
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn unchanged_partitions_are_not_listed() {
        let mut h = established();
        let r = h.build([(1, 0), (2, 0), (3, 0)]);
        assert_eq!(r.metadata, FetchMetadata::new(9, 1));
        assert!(r.to_send.is_empty() && r.to_forget.is_empty());
    }

    #[test]
    fn changed_added_and_removed_partitions() {
        let mut h = established();
        let r = h.build([(2, 4), (3, 0), (4, 0)]);
        assert_eq!(r.to_send, vec![(2, 4), (4, 0)]);
        assert_eq!(r.to_forget, vec![(1, 0)]);
        assert_eq!(h.session_partition(&2), Some(&4));
        assert_eq!(h.session_partition(&1), None);
    }

    #[test]
    fn epoch_moves_on_with_each_success() {
        let mut h = established();
        for epoch in 1..5 {
            assert_eq!(h.build([(1, 0)]).metadata.epoch, epoch);
            assert!(h.handle_response(9, 0));
        }
    }

    #[test]
    fn session_not_found_starts_over_without_an_id() {
        let mut h = established();
        h.build([(1, 1)]);
        assert!(!h.handle_response(0, NOT_FOUND));
        let r = h.build([(1, 1), (2, 0)]);
        assert_eq!(r.metadata, FetchMetadata::new(0, 0));
        assert_eq!(r.to_send.len(), 2);
    }

    #[test]
    fn other_errors_close_the_session_and_ask_for_a_new_one() {
        let mut h = established();
        h.build([(1, 1)]);
        assert!(!h.handle_response(9, BAD_EPOCH));
        let r = h.build([(1, 1), (2, 0)]);
        assert_eq!(r.metadata, FetchMetadata::new(9, 0));
        assert!(r.is_full());
        assert_eq!(r.to_send, vec![(1, 1), (2, 0)]);
    }

    #[test]
    fn connection_loss_makes_the_next_request_full() {
        let mut h = established();
        h.build([(1, 3)]);
        h.handle_error();
        let r = h.build([(1, 3), (2, 0)]);
        assert_eq!(r.metadata, FetchMetadata::new(9, 0));
        assert_eq!(r.to_send, vec![(1, 3), (2, 0)]);
    }

    #[test]
    fn full_response_without_session_stays_full() {
        let mut h: FetchSessionHandler<u32, i64> = FetchSessionHandler::new();
        h.build([(1, 0)]);
        assert!(h.handle_response(0, 0));
        assert!(h.build([(1, 0)]).is_full());
    }

    #[test]
    fn reset_drops_the_id_and_the_partitions() {
        let mut h = established();
        h.reset();
        assert!(h.is_empty());
        assert_eq!(h.next_metadata(), FetchMetadata::new(0, 0));
        assert_ne!(h.next_metadata().epoch, FINAL_EPOCH);
    }

    #[derive(Debug, Clone)]
    enum Step {
        Build(Vec<(u8, u8)>),
        Ok,
        Err(i16),
        Lost,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => proptest::collection::vec((0u8..8, 0u8..3), 0..8).prop_map(Step::Build),
            3 => Just(Step::Ok),
            1 => prop_oneof![Just(NOT_FOUND), Just(BAD_EPOCH), Just(1i16)].prop_map(Step::Err),
            1 => Just(Step::Lost),
        ]
    }

    proptest! {
        /// A broker that applies every request the way `FetchSessionCache` does ends up with
        /// exactly the partitions and states the handler believes it has, and an incremental
        /// request never lists a partition whose state the broker already holds.
        #[test]
        fn broker_view_matches_handler(steps in proptest::collection::vec(step(), 0..40)) {
            let mut h: FetchSessionHandler<u8, u8> = FetchSessionHandler::new();
            let mut broker: Option<indexmap::IndexMap<u8, u8>> = None;
            let mut pending: Option<FetchRequestData<u8, u8>> = None;
            for s in steps {
                match s {
                    Step::Build(next) => {
                        if pending.take().is_some() {
                            // A fetcher answers every request before the next: no answer is a
                            // lost one.
                            h.handle_error();
                        }
                        let r = h.build(next);
                        if !r.is_full() {
                            let b = broker.as_ref().expect("incremental only with a session");
                            for (k, d) in &r.to_send {
                                prop_assert_ne!(b.get(k), Some(d));
                            }
                        }
                        pending = Some(r);
                    }
                    Step::Ok => {
                        let Some(r) = pending.take() else { continue };
                        let id = if r.is_full() {
                            broker = Some(r.to_send.iter().cloned().collect());
                            7
                        } else {
                            let b = broker.as_mut().expect("session");
                            for (k, d) in &r.to_send { b.insert(*k, *d); }
                            for (k, _) in &r.to_forget { b.shift_remove(k); }
                            r.metadata.session_id
                        };
                        prop_assert!(h.handle_response(id, 0));
                        let b = broker.as_ref().expect("session");
                        let mine: indexmap::IndexMap<u8, u8> =
                            h.session_partitions().map(|(k, d)| (*k, *d)).collect();
                        prop_assert_eq!(mine.len(), b.len());
                        for (k, d) in b { prop_assert_eq!(mine.get(k), Some(d)); }
                    }
                    Step::Err(code) => {
                        if pending.take().is_some() {
                            prop_assert!(!h.handle_response(0, code));
                            prop_assert!(h.next_metadata().is_full());
                        }
                    }
                    Step::Lost => {
                        pending = None;
                        h.handle_error();
                        prop_assert!(h.next_metadata().is_full());
                    }
                }
            }
        }
    }
}
