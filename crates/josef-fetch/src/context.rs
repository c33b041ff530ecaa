//! What a fetch request turned into once the session cache has seen it (Kafka's `FetchContext`).

use josef_protocol::ErrorCode;

use crate::partition::PartitionFetch;

/// The kind of a [`FetchContext`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextKind {
    /// The session part of the request was wrong: answer with this top-level error, session id
    /// 0 and no partitions (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH or
    /// FETCH_SESSION_TOPIC_ID_ERROR).
    SessionError(ErrorCode),
    /// No session: read the listed partitions and answer all of them with session id 0.
    Sessionless,
    /// A full fetch that will try to create a session when its response is generated.
    Full {
        /// The request came from a follower (its session is privileged).
        is_follower: bool,
        /// The request names topics by id (v13+).
        uses_topic_ids: bool,
    },
    /// An incremental fetch on a session.
    Incremental {
        /// The session.
        session_id: i32,
        /// The session's epoch after this request (checked again when the response is built,
        /// so a duplicate request that overtook this one is detected).
        next_epoch: i32,
    },
}

/// A fetch request after the session cache has applied it: which partitions to read, with which
/// parameters, and how to build the response. Created by
/// [`crate::FetchSessionCache::new_context`], finished by
/// [`crate::FetchSessionCache::update_and_generate_response`].
#[derive(Debug, Clone)]
pub struct FetchContext<K> {
    pub(crate) kind: ContextKind,
    pub(crate) partitions: Vec<(K, PartitionFetch)>,
    /// The cache's change sequence when the context was made (its reads see every change
    /// recorded before it).
    pub(crate) change_seq: u64,
    /// Whether `partitions` are only the session's changed ones (change tracking).
    pub(crate) partial: bool,
    /// Incremental: the session's creation time and its previous fetch time.
    pub(crate) session_times: Option<SessionTimes>,
}

/// When an incremental fetch's session was created and when it fetched before this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionTimes {
    /// The session's creation time (with its id, names the session).
    pub created_ms: i64,
    /// The time of the session's previous fetch (before this request touched it).
    pub previous_fetch_ms: i64,
}

impl<K> FetchContext<K> {
    /// The kind of context.
    pub fn kind(&self) -> ContextKind {
        self.kind
    }

    /// The partitions to read, in the order to read them. For an incremental fetch these are
    /// all the session's partitions (with the parameters the session remembers, updated by the
    /// request); for a full or sessionless fetch, the request's partitions; none after a session
    /// error.
    pub fn partitions(&self) -> &[(K, PartitionFetch)] {
        &self.partitions
    }

    /// Whether [`partitions`](Self::partitions) is only the part of an incremental session that
    /// may have changed (change tracking on). A fetch that parks must then wait on all of the
    /// session's partitions (see [`crate::FetchSession::partitions`]) and, once woken, call
    /// [`crate::FetchSessionCache::refresh_context`] to add what changed meanwhile.
    pub fn is_partial(&self) -> bool {
        self.partial
    }

    /// For an incremental fetch: when its session was created and last fetched before it.
    pub fn session_times(&self) -> Option<SessionTimes> {
        self.session_times
    }

    /// The top-level error of a session error context.
    pub fn session_error(&self) -> Option<ErrorCode> {
        match self.kind {
            ContextKind::SessionError(e) => Some(e),
            _ => None,
        }
    }
}

/// The session fields of a fetch response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseSession {
    /// Top-level error code (0, or a session error).
    pub error_code: i16,
    /// The session id to send (0 = no session).
    pub session_id: i32,
}
