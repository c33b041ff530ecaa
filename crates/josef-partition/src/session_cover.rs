//! Followers on incremental fetch sessions (KIP-227): how a leader keeps their caught-up time
//! without reading their idle partitions.
//!
//! Kafka's leader reads every partition of a follower's fetch session on each fetch, so each
//! fetch refreshes the follower's fetch time and caught-up time (`Replica.updateFetchState`) on
//! every partition. A leader with change tracking reads only the partitions that changed: an idle
//! partition the follower has fully replicated is not touched for as long as it stays idle. Its
//! follower state would then age, and the first append after a long idle period would find the
//! follower "not caught up for `replica.lag.time.max.ms`" and shrink the ISR, although the
//! follower fetched all along.
//!
//! So a follower read that leaves the follower at the leader's log end, in a fetch session,
//! records a [`SessionCover`]: from then on, every fetch of that session counts as a fetch of
//! this partition at the same offsets (which is what Kafka's read would have found: nothing
//! changed, or the partition would have been read). The broker keeps the time of each session's
//! last fetch (one value per session, updated once per fetch, not per partition); the leader folds
//! it into the follower's fetch and caught-up times when it needs them
//! ([`crate::ReplicationState::apply_session_fetches`]: before the ISR shrink check and before
//! the next explicit read of the partition). The cover ends when a read leaves the follower
//! behind, when the follower forgets the partition from its session (it stopped fetching it:
//! backoff, throttle, moved leader), on a failed read, on a new leader epoch, or when the
//! session is gone (its clock then answers nothing).
//!
//! Kafka's per-fetch read also retries the ISR expansion of a follower outside the ISR; a covered
//! follower whose expansion was refused at its last read (not yet eligible, another ISR change in
//! flight) is retried by the ISR task instead
//! ([`crate::ReplicationState::maybe_expand_isr_for_covered`]), and promptly by the partition
//! event the leader raises when its ISR change leaves pending or its ineligible replicas change
//! (the sessions then read the partition again).

/// A follower's fetch session that covers a partition: it is in the session and was last read at
/// the leader's log end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionCover {
    /// The session id.
    pub session_id: i32,
    /// When the session was created (ids are random and may be reused once freed: the pair
    /// names one session).
    pub created_ms: i64,
}
