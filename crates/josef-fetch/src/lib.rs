//! Kafka's incremental fetch sessions (KIP-227) as a pure library: the broker-side cache of
//! fetch sessions (Kafka's `FetchSession.scala`), for any broker built on Josef.
//!
//! A consumer that fetches the same partitions over and over sends a *full* fetch once (epoch
//! 0), gets a session id, and then sends *incremental* fetches (epoch 1, 2, …) that list only the
//! partitions whose parameters changed; the broker answers with only the partitions that have
//! something new. [`FetchSessionCache`] keeps those sessions: ids, epochs, the per-partition
//! parameters and what was last sent, with Kafka's eviction rules
//! (`max.incremental.fetch.session.cache.slots`, stale sessions first, then the smallest).
//!
//! The fetcher's side is [`FetchSessionHandler`] (Kafka's `FetchSessionHandler`): given the
//! partitions to fetch each round, it builds the full or incremental request and follows the
//! session through the responses (a follower's replica fetcher uses it).
//!
//! No I/O, no threads, no clock: `now_ms` is an argument. The cache is generic over the
//! partition key; [`TopicIdPartition`] and the helpers [`request_partitions`],
//! [`forgotten_partitions`] and [`request_metadata`] read a josef-protocol `FetchRequest`.
//!
//! ```
//! use josef_fetch::{FetchMetadata, FetchSessionCache, PartitionFetch, PartitionOutcome};
//!
//! let mut cache = FetchSessionCache::new(Default::default());
//! let ctx = cache.new_context(FetchMetadata::new(0, 0), false, false,
//!     [(("t", 0), PartitionFetch::new(0, 1 << 20))], [], 1_000);
//! // ... read ctx.partitions() from the log ...
//! let mut read = vec![(("t", 0), PartitionOutcome { high_watermark: 10, has_records: true, ..Default::default() })];
//! let session = cache.update_and_generate_response(&ctx, 1_000, &mut read, |r| (&r.0, r.1));
//! assert_eq!(cache.get(session.session_id).unwrap().epoch(), 1);
//! ```
#![deny(missing_docs)]

mod cache;
mod context;
mod epoch;
mod handler;
mod key;
mod partition;
mod session;

/// The insertion-ordered map of sessions and builders, hashed with a per-process seed (foldhash):
/// a follower builds one over every partition it follows per fetch, and SipHash over the keys
/// was most of its hashing cost.
pub(crate) type PartitionMap<K, V> = indexmap::IndexMap<K, V, foldhash::fast::RandomState>;

pub use cache::{
    FetchSessionCache, FetchSessionCacheConfig, DEFAULT_CHANGE_LOG_CAPACITY, DEFAULT_EVICTION_MS,
    DEFAULT_MAX_SESSIONS,
};
pub use context::{ContextKind, FetchContext, ResponseSession, SessionTimes};
pub use epoch::{next_epoch, FetchMetadata, FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID};
pub use handler::{FetchRequestData, FetchSessionHandler};
pub use key::{
    forgotten_partitions, request_metadata, request_partitions, uses_topic_ids, TopicIdPartition,
};
pub use partition::{CachedPartition, PartitionFetch, PartitionOutcome};
pub use session::{FetchSession, SessionUpdate};

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
