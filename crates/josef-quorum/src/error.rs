//! [`QuorumError`].

/// What can go wrong in the metadata quorum.
#[derive(Debug, thiserror::Error)]
pub enum QuorumError {
    /// This node is not the leader; `leader` is the leader it knows of, if any. A proposal
    /// answered with this after it was accepted (leadership lost while it waited) may still
    /// commit: its outcome is unknown, as with Kafka's NOT_CONTROLLER after an append.
    #[error("not the leader of the metadata quorum (leader: {leader:?})")]
    NotLeader {
        /// The current leader's node id, when known.
        leader: Option<u64>,
    },
    /// The config is not usable.
    #[error("invalid quorum config: {0}")]
    InvalidConfig(String),
    /// A file of the log or of a snapshot could not be read or written.
    #[error("metadata log storage: {context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file under the log directory is damaged in a way that truncation cannot repair (a vote
    /// file that does not parse, a purged log without its snapshot).
    #[error("metadata log storage is corrupt: {0}")]
    Corrupt(String),
    /// A proposal did not commit within `propose_timeout_ms` (its outcome is unknown).
    #[error("proposal not committed within {timeout_ms} ms")]
    Timeout {
        /// The bound that passed.
        timeout_ms: u64,
    },
    /// The Raft node stopped (shut down, or a storage error made it stop).
    #[error("the metadata quorum has stopped: {0}")]
    Stopped(String),
}

impl QuorumError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        QuorumError::Io {
            context: context.into(),
            source,
        }
    }
}
