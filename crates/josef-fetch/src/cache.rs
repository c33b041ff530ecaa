//! The fetch-session cache (Kafka's `FetchSessionCache` / `FetchSessionCacheShard` and
//! `FetchManager.newContext`).

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::Hash;

use josef_protocol::ErrorCode;

use crate::context::{ContextKind, FetchContext, ResponseSession, SessionTimes};
use crate::epoch::{next_epoch, FetchMetadata, FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID};
use crate::partition::{CachedPartition, PartitionFetch, PartitionOutcome};
use crate::session::FetchSession;

/// Kafka's `max.incremental.fetch.session.cache.slots` default.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;

/// How many recorded partition changes the cache keeps for change tracking. A session that has
/// not fetched while more changes than this were recorded reads all its partitions once.
pub const DEFAULT_CHANGE_LOG_CAPACITY: usize = 65_536;

/// Kafka's `MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`: a session unused this long is stale and
/// may be evicted by anyone; a younger one only by a follower.
pub const DEFAULT_EVICTION_MS: i64 = 120_000;

/// Settings of a [`FetchSessionCache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchSessionCacheConfig {
    /// `max.incremental.fetch.session.cache.slots` (0 = never create sessions).
    pub max_sessions: usize,
    /// How long a session must be unused to be stale, and how old before it can be evicted by
    /// a larger consumer session.
    pub eviction_ms: i64,
    /// Seed of the session-id generator. Ids must not repeat across broker restarts, so pass
    /// something random (e.g. from the OS); tests pass a constant to be deterministic.
    pub id_seed: u64,
}

impl Default for FetchSessionCacheConfig {
    fn default() -> Self {
        FetchSessionCacheConfig {
            max_sessions: DEFAULT_MAX_SESSIONS,
            eviction_ms: DEFAULT_EVICTION_MS,
            id_seed: 0x9e37_79b9_7f4a_7c15,
        }
    }
}

/// Eviction rank: non-privileged before privileged, then fewer partitions, then lower id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct EvictableKey {
    privileged: bool,
    size: usize,
    id: i32,
}

/// The broker's cache of incremental fetch sessions (KIP-227). Pure: no I/O, no clock (`now_ms`
/// is an argument), no locking (wrap it in a mutex to share it; keep the lock only around the
/// two calls, never across the read).
///
/// Per fetch request: [`new_context`](Self::new_context) checks the session id and epoch and
/// applies the request to the session; read the context's [`partitions`](FetchContext::partitions);
/// [`update_and_generate_response`](Self::update_and_generate_response) creates the session of a
/// full fetch, or drops the unchanged partitions of an incremental response, and gives the
/// response's `error_code` and `session_id`.
///
/// ```
/// use josef_fetch::{
///     ContextKind, FetchMetadata, FetchSessionCache, FetchSessionCacheConfig, PartitionFetch,
///     PartitionOutcome,
/// };
///
/// let mut cache: FetchSessionCache<&str> = FetchSessionCache::new(FetchSessionCacheConfig::default());
/// let outcome = |hw, records| PartitionOutcome { high_watermark: hw, has_records: records, ..Default::default() };
///
/// // A full fetch (epoch 0) of two partitions creates a session.
/// let ctx = cache.new_context(
///     FetchMetadata::new(0, 0), false, false,
///     [("a-0", PartitionFetch::new(0, 1024)), ("b-0", PartitionFetch::new(0, 1024))], [], 0,
/// );
/// let mut response = vec![("a-0", outcome(0, false)), ("b-0", outcome(0, false))];
/// let s = cache.update_and_generate_response(&ctx, 0, &mut response, |r| (&r.0, r.1));
/// assert_ne!(s.session_id, 0);
///
/// // The next request is incremental: epoch 1, nothing listed; only a-0 got data.
/// let ctx = cache.new_context(FetchMetadata::new(s.session_id, 1), false, false, [], [], 10);
/// assert!(matches!(ctx.kind(), ContextKind::Incremental { .. }));
/// assert_eq!(ctx.partitions().len(), 2);
/// let mut response = vec![("a-0", outcome(3, true)), ("b-0", outcome(0, false))];
/// let r = cache.update_and_generate_response(&ctx, 10, &mut response, |r| (&r.0, r.1));
/// assert_eq!(r.session_id, s.session_id);
/// assert_eq!(response.len(), 1); // b-0 did not change
///
/// // Replaying epoch 1 is an error.
/// let ctx = cache.new_context(FetchMetadata::new(s.session_id, 1), false, false, [], [], 20);
/// assert_eq!(ctx.session_error(), Some(josef_protocol::ErrorCode::InvalidFetchSessionEpoch));
/// ```
#[derive(Debug, Clone)]
pub struct FetchSessionCache<K> {
    config: FetchSessionCacheConfig,
    sessions: HashMap<i32, FetchSession<K>>,
    /// (last used, id) of every session: the first one is the stalest.
    last_used: BTreeSet<(i64, i32)>,
    /// Sessions a consumer's new session may evict (older than `eviction_ms`).
    evictable_by_all: BTreeSet<EvictableKey>,
    /// Sessions a follower's new session may evict (every consumer session, and old ones).
    evictable_by_privileged: BTreeSet<EvictableKey>,
    num_partitions: usize,
    rng: u64,
    evictions: u64,
    /// Change tracking on (the broker tells every partition change, see
    /// [`Self::sync_generation`]).
    tracking: bool,
    /// The last generation [`Self::sync_generation`] saw.
    generation: Option<u64>,
    /// Partitions changed, in order; `changes[i]` has sequence number `changes_start + i`.
    changes: VecDeque<K>,
    changes_start: u64,
    change_capacity: usize,
    /// Partitions handed to incremental fetches to read, over all of them.
    incremental_reads: u64,
}

impl<K: Hash + Eq + Clone> FetchSessionCache<K> {
    /// An empty cache.
    pub fn new(config: FetchSessionCacheConfig) -> Self {
        FetchSessionCache {
            config,
            sessions: HashMap::new(),
            last_used: BTreeSet::new(),
            evictable_by_all: BTreeSet::new(),
            evictable_by_privileged: BTreeSet::new(),
            num_partitions: 0,
            rng: config.id_seed,
            evictions: 0,
            tracking: false,
            generation: None,
            changes: VecDeque::new(),
            changes_start: 0,
            change_capacity: DEFAULT_CHANGE_LOG_CAPACITY,
            incremental_reads: 0,
        }
    }

    /// Change tracking, beyond Kafka (whose incremental fetch reads every partition of the
    /// session to find the few that changed): `Some(generation)` turns it on. The caller then
    /// promises to [`record_change`](Self::record_change) every partition whose HW, log end,
    /// leadership or records change, and to bump `generation` on every other change of what a
    /// fetch may answer (topics created or deleted, configs, log start moves): a new generation
    /// makes every session read all its partitions once. An incremental fetch then reads only
    /// its session's partitions that were listed, changed or not settled
    /// ([`PartitionOutcome::settled`]), and answers exactly what Kafka would. `None` turns it
    /// off (a partition store that cannot tell its changes).
    pub fn sync_generation(&mut self, generation: Option<u64>) {
        match generation {
            None => {
                self.tracking = false;
                self.changes.clear();
            }
            Some(g) => {
                if !self.tracking || self.generation != Some(g) {
                    self.invalidate_all();
                }
                self.tracking = true;
                self.generation = Some(g);
            }
        }
    }

    /// Whether change tracking is on (callers can skip building keys for
    /// [`record_change`](Self::record_change) when it is not).
    pub fn tracks_changes(&self) -> bool {
        self.tracking
    }

    /// Records that a partition changed (see [`Self::sync_generation`]); nothing while change
    /// tracking is off. Keeps at most the change-log capacity.
    pub fn record_change(&mut self, key: K) {
        if !self.tracking {
            return;
        }
        self.changes.push_back(key);
        while self.changes.len() > self.change_capacity {
            self.changes.pop_front();
            self.changes_start += 1;
        }
    }

    /// Every session reads all its partitions on its next fetch (the changes recorded so far
    /// are dropped).
    pub fn invalidate_all(&mut self) {
        // A gap of one: every session's `seen_seq` is below the new start.
        self.changes_start += self.changes.len() as u64 + 1;
        self.changes.clear();
    }

    /// Sets how many changes are kept (at least 1).
    pub fn set_change_log_capacity(&mut self, capacity: usize) {
        self.change_capacity = capacity.max(1);
    }

    /// Partitions handed to incremental fetches to read so far, over all sessions (what change
    /// tracking saves shows here: without it, every incremental fetch adds its session size).
    pub fn incremental_reads(&self) -> u64 {
        self.incremental_reads
    }

    fn change_end(&self) -> u64 {
        self.changes_start + self.changes.len() as u64
    }

    /// After a parked fetch woke up: adds to a partial context's partitions those of its session
    /// changed since the context was made (or all of them if the change log moved past it), in
    /// the session's order. Other contexts are left as they are.
    pub fn refresh_context(&mut self, context: &mut FetchContext<K>) {
        let ContextKind::Incremental { session_id, .. } = context.kind else {
            return;
        };
        if !context.partial {
            return;
        }
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        let end = self.changes_start + self.changes.len() as u64;
        let mut added = 0;
        if context.change_seq < self.changes_start || !self.tracking {
            for k in session.partitions.keys() {
                added += usize::from(session.dirty.insert(k.clone()));
            }
        } else {
            let from = (context.change_seq - self.changes_start) as usize;
            for k in self.changes.range(from..) {
                if session.partitions.contains_key(k) {
                    added += usize::from(session.dirty.insert(k.clone()));
                }
            }
        }
        context.change_seq = end;
        session.seen_seq = session.seen_seq.max(end);
        if added > 0 {
            context.partitions = pending_in_order(session);
        }
    }

    /// The settings.
    pub fn config(&self) -> &FetchSessionCacheConfig {
        &self.config
    }

    /// Number of sessions.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether there are no sessions.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Partitions over all sessions (Kafka's `NumIncrementalFetchPartitionsCached`).
    pub fn total_partitions(&self) -> usize {
        self.num_partitions
    }

    /// Sessions evicted so far.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// A session by id.
    pub fn get(&self, session_id: i32) -> Option<&FetchSession<K>> {
        self.sessions.get(&session_id)
    }

    /// Every session, in no particular order.
    pub fn sessions(&self) -> impl Iterator<Item = &FetchSession<K>> {
        self.sessions.values()
    }

    /// Removes a session; returns it if it existed.
    pub fn remove(&mut self, session_id: i32) -> Option<FetchSession<K>> {
        let session = self.sessions.remove(&session_id)?;
        self.last_used.remove(&(session.last_used_ms, session.id));
        if let Some(size) = session.cached_size {
            let key = EvictableKey {
                privileged: session.privileged,
                size,
                id: session.id,
            };
            self.evictable_by_all.remove(&key);
            self.evictable_by_privileged.remove(&key);
            self.num_partitions -= size;
        }
        Some(session)
    }

    /// Kafka's `FetchManager.newContext`: applies a request's session fields and partitions.
    ///
    /// - Full fetch (epoch 0 or −1): the session it names, if any, is closed. Epoch −1 gives a
    ///   sessionless context; epoch 0 a full one, which creates a session when the response is
    ///   generated (if the cache has room or can evict).
    /// - Incremental fetch (epoch ≥ 1): unknown id → FETCH_SESSION_ID_NOT_FOUND; epoch other
    ///   than the session's → INVALID_FETCH_SESSION_EPOCH; topic-id use other than the
    ///   session's (`uses_topic_ids`: the request is v13+) → FETCH_SESSION_TOPIC_ID_ERROR.
    ///   Otherwise the listed partitions are added or updated, the forgotten ones removed, the
    ///   session is touched and its epoch advanced. A session left empty is closed and the
    ///   fetch runs sessionless.
    pub fn new_context(
        &mut self,
        metadata: FetchMetadata,
        uses_topic_ids: bool,
        is_follower: bool,
        fetch_data: impl IntoIterator<Item = (K, PartitionFetch)>,
        forgotten: impl IntoIterator<Item = K>,
        now_ms: i64,
    ) -> FetchContext<K> {
        if metadata.is_full() {
            if metadata.session_id != INVALID_SESSION_ID {
                self.remove(metadata.session_id);
            }
            if metadata.epoch == FINAL_EPOCH {
                return FetchContext {
                    kind: ContextKind::Sessionless,
                    partitions: fetch_data.into_iter().collect(),
                    change_seq: 0,
                    partial: false,
                    session_times: None,
                };
            }
            // A full fetch names each partition once; a repeat replaces the earlier one in place.
            let partitions: crate::PartitionMap<K, PartitionFetch> =
                fetch_data.into_iter().collect();
            return FetchContext {
                kind: ContextKind::Full {
                    is_follower,
                    uses_topic_ids,
                },
                partitions: partitions.into_iter().collect(),
                change_seq: self.change_end(),
                partial: false,
                session_times: None,
            };
        }
        let error = |e| FetchContext {
            kind: ContextKind::SessionError(e),
            partitions: Vec::new(),
            change_seq: 0,
            partial: false,
            session_times: None,
        };
        let Some(session) = self.sessions.get_mut(&metadata.session_id) else {
            return error(ErrorCode::FetchSessionIdNotFound);
        };
        if session.epoch != metadata.epoch {
            return error(ErrorCode::InvalidFetchSessionEpoch);
        }
        if session.uses_topic_ids != uses_topic_ids {
            return error(ErrorCode::FetchSessionTopicIdError);
        }
        let fetch_data: Vec<(K, PartitionFetch)> = fetch_data.into_iter().collect();
        session.update(fetch_data.iter().cloned(), forgotten);
        if session.is_empty() {
            self.remove(metadata.session_id);
            return FetchContext {
                kind: ContextKind::Sessionless,
                partitions: fetch_data,
                change_seq: 0,
                partial: false,
                session_times: None,
            };
        }
        let end = self.changes_start + self.changes.len() as u64;
        let partial = self.tracking;
        let partitions: Vec<(K, PartitionFetch)> = if partial {
            // Listed partitions are read (new parameters), and those changed since the last
            // fetch; all of them if the change log no longer reaches back that far.
            for (k, _) in &fetch_data {
                session.dirty.insert(k.clone());
            }
            if session.seen_seq < self.changes_start {
                session.dirty.extend(session.partitions.keys().cloned());
            } else {
                let from = (session.seen_seq - self.changes_start) as usize;
                for k in self.changes.range(from..) {
                    if session.partitions.contains_key(k) {
                        session.dirty.insert(k.clone());
                    }
                }
            }
            session.seen_seq = end;
            pending_in_order(session)
        } else {
            session
                .partitions
                .iter()
                .map(|(k, c)| (k.clone(), c.request))
                .collect()
        };
        self.incremental_reads += partitions.len() as u64;
        let session_times = SessionTimes {
            created_ms: session.creation_ms,
            previous_fetch_ms: session.last_used_ms,
        };
        session.epoch = next_epoch(session.epoch);
        let next = session.epoch;
        self.touch(metadata.session_id, now_ms);
        FetchContext {
            kind: ContextKind::Incremental {
                session_id: metadata.session_id,
                next_epoch: next,
            },
            partitions,
            change_seq: end,
            partial,
            session_times: Some(session_times),
        }
    }

    /// Kafka's `updateAndGenerateResponseData`, once the partitions have been read. `responses`
    /// holds one entry per partition read (any type: `view` gives its key and outcome).
    ///
    /// - Session error: `responses` is cleared; the error goes to the top level, session id 0.
    /// - Sessionless: everything is sent, session id 0.
    /// - Full: tries to create a session of the responded partitions (session id 0 if the cache
    ///   is full and nothing can be evicted).
    /// - Incremental: keeps only the partitions that must be sent
    ///   ([`CachedPartition::must_respond`]) and remembers what is sent; partitions with records
    ///   move to the back of the session's order. If the session's epoch moved meanwhile (a
    ///   duplicate request) the answer is INVALID_FETCH_SESSION_EPOCH with no partitions; if the
    ///   session was evicted meanwhile, FETCH_SESSION_ID_NOT_FOUND.
    pub fn update_and_generate_response<T>(
        &mut self,
        context: &FetchContext<K>,
        now_ms: i64,
        responses: &mut Vec<T>,
        mut view: impl FnMut(&T) -> (&K, PartitionOutcome),
    ) -> ResponseSession {
        match context.kind {
            ContextKind::SessionError(e) => {
                responses.clear();
                ResponseSession {
                    error_code: e.code(),
                    session_id: INVALID_SESSION_ID,
                }
            }
            ContextKind::Sessionless => ResponseSession {
                error_code: 0,
                session_id: INVALID_SESSION_ID,
            },
            ContextKind::Full {
                is_follower,
                uses_topic_ids,
            } => {
                let mut dirty = HashSet::new();
                let tracking = self.tracking;
                let session_id =
                    self.maybe_create_session(now_ms, is_follower, responses.len(), || {
                        let requested: HashMap<&K, &PartitionFetch> =
                            context.partitions.iter().map(|(k, p)| (k, p)).collect();
                        let mut map = crate::PartitionMap::with_capacity_and_hasher(
                            responses.len(),
                            Default::default(),
                        );
                        for r in responses.iter() {
                            let (key, outcome) = view(r);
                            if let Some(req) = requested.get(key) {
                                map.insert(
                                    key.clone(),
                                    CachedPartition::with_response(**req, &outcome),
                                );
                                if tracking && !outcome.settled {
                                    dirty.insert(key.clone());
                                }
                            }
                        }
                        (map, uses_topic_ids)
                    });
                if let Some(session) = self.sessions.get_mut(&session_id) {
                    session.seen_seq = context.change_seq;
                    session.dirty = dirty;
                }
                ResponseSession {
                    error_code: 0,
                    session_id,
                }
            }
            ContextKind::Incremental {
                session_id,
                next_epoch,
            } => {
                let Some(session) = self.sessions.get_mut(&session_id) else {
                    responses.clear();
                    return ResponseSession {
                        error_code: ErrorCode::FetchSessionIdNotFound.code(),
                        session_id: INVALID_SESSION_ID,
                    };
                };
                if session.epoch != next_epoch {
                    responses.clear();
                    return ResponseSession {
                        error_code: ErrorCode::InvalidFetchSessionEpoch.code(),
                        session_id,
                    };
                }
                let mut to_back: Vec<K> = Vec::new();
                let mut i = 0;
                let tracking = context.partial;
                responses.retain(|r| {
                    let (key, outcome) = view(r);
                    // Responses come in the context's order, which is the session's: try the
                    // same index before hashing the key.
                    let cached = match session.partitions.get_index_mut(i) {
                        Some((k, c)) if k == key => Some(c),
                        _ => session.partitions.get_mut(key),
                    };
                    i += 1;
                    match cached {
                        Some(cached) => {
                            let must = cached.must_respond(&outcome, true);
                            if tracking {
                                if outcome.settled {
                                    session.dirty.remove(key);
                                } else {
                                    session.dirty.insert(key.clone());
                                }
                            }
                            if must && outcome.has_records {
                                to_back.push(key.clone());
                            }
                            must
                        }
                        // Not in the session (the caller read something it was not asked):
                        // send it, there is nothing to compare with.
                        None => true,
                    }
                });
                for key in to_back {
                    if let Some(i) = session.partitions.get_index_of(&key) {
                        let last = session.partitions.len() - 1;
                        session.partitions.move_index(i, last);
                    }
                }
                ResponseSession {
                    error_code: 0,
                    session_id,
                }
            }
        }
    }

    /// Kafka's `maybeCreateSession`: a new session if there is room or one can be evicted
    /// ([`Self::try_evict`]); returns its id, or 0.
    fn maybe_create_session(
        &mut self,
        now_ms: i64,
        privileged: bool,
        size: usize,
        create: impl FnOnce() -> (crate::PartitionMap<K, CachedPartition>, bool),
    ) -> i32 {
        let room = self.sessions.len() < self.config.max_sessions
            || self.try_evict(
                EvictableKey {
                    privileged,
                    size,
                    id: 0,
                },
                now_ms,
            );
        if !room {
            return INVALID_SESSION_ID;
        }
        let (partitions, uses_topic_ids) = create();
        let id = self.new_session_id();
        self.sessions.insert(
            id,
            FetchSession {
                id,
                privileged,
                partitions,
                uses_topic_ids,
                creation_ms: now_ms,
                last_used_ms: now_ms,
                epoch: next_epoch(INITIAL_EPOCH),
                cached_size: None,
                indexed_old: false,
                seen_seq: 0,
                dirty: HashSet::new(),
            },
        );
        self.last_used.insert((now_ms, id));
        self.touch(id, now_ms);
        id
    }

    /// Kafka's `tryEvict`: evicts the stalest session if unused for more than `eviction_ms`;
    /// otherwise the lowest-ranked evictable session (consumer before follower, fewer
    /// partitions, lower id) if the new session ranks at least as high. A consumer can only
    /// evict sessions older than `eviction_ms`; a follower also any consumer session.
    fn try_evict(&mut self, new: EvictableKey, now_ms: i64) -> bool {
        let Some(&(last_used, stalest)) = self.last_used.first() else {
            return false;
        };
        let victim = if now_ms - last_used > self.config.eviction_ms {
            stalest
        } else {
            let set = if new.privileged {
                &self.evictable_by_privileged
            } else {
                &self.evictable_by_all
            };
            match set.first() {
                // The new session's id is 0: it must rank strictly higher by (privileged, size).
                Some(k) if new >= *k => k.id,
                _ => return false,
            }
        };
        self.remove(victim);
        self.evictions += 1;
        true
    }

    /// Kafka's `touch`: updates a session's last-used time and its place in the eviction
    /// indexes (a session becomes evictable by consumers once older than `eviction_ms`).
    fn touch(&mut self, session_id: i32, now_ms: i64) {
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        self.last_used.remove(&(session.last_used_ms, session.id));
        session.last_used_ms = now_ms;
        self.last_used.insert((now_ms, session.id));
        let size = session.partitions.len();
        let old_enough = now_ms - session.creation_ms > self.config.eviction_ms;
        if session.cached_size == Some(size) && session.indexed_old == old_enough {
            // Same rank and same evictability as at the last touch: the indexes are right
            // (the steady state of a consumer, so skip four set operations per fetch).
            return;
        }
        if let Some(old) = session.cached_size {
            let key = EvictableKey {
                privileged: session.privileged,
                size: old,
                id: session.id,
            };
            self.evictable_by_all.remove(&key);
            self.evictable_by_privileged.remove(&key);
            self.num_partitions -= old;
        }
        session.cached_size = Some(size);
        session.indexed_old = old_enough;
        let key = EvictableKey {
            privileged: session.privileged,
            size,
            id: session.id,
        };
        if !session.privileged || old_enough {
            self.evictable_by_privileged.insert(key);
        }
        if old_enough {
            self.evictable_by_all.insert(key);
        }
        self.num_partitions += size;
    }

    /// A random id in 1..=i32::MAX not in use (splitmix64 over the configured seed).
    fn new_session_id(&mut self) -> i32 {
        loop {
            self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let id = (z >> 33) as i32; // 31 bits: never negative
            if id != INVALID_SESSION_ID && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }
}

/// The session's pending (dirty) partitions with their parameters, in the session's order;
/// drops pending entries of partitions no longer in the session.
fn pending_in_order<K: Hash + Eq + Clone>(
    session: &mut FetchSession<K>,
) -> Vec<(K, PartitionFetch)> {
    let partitions = &session.partitions;
    session.dirty.retain(|k| partitions.contains_key(k));
    let mut idx: Vec<usize> = session
        .dirty
        .iter()
        .filter_map(|k| partitions.get_index_of(k))
        .collect();
    idx.sort_unstable();
    idx.into_iter()
        .filter_map(|i| partitions.get_index(i))
        .map(|(k, c)| (k.clone(), c.request))
        .collect()
}
