//! Timer keys of the group coordinator.

/// What a coordinator timer is for. Timers are keyed: scheduling a key again moves its
/// deadline, so there is at most one timer per member session and per group phase.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupTimerKey {
    /// A member's session (and, for new members, the parked-join limit).
    Heartbeat {
        /// The group id.
        group_id: String,
        /// The member id.
        member_id: String,
    },
    /// The end of a group's join phase (initial delay or rebalance timeout).
    Join {
        /// The group id.
        group_id: String,
    },
    /// The deadline for the members' SyncGroup after a join phase.
    Sync {
        /// The group id.
        group_id: String,
    },
    /// A consumer-protocol member's session (`group.consumer.session.timeout.ms`).
    ConsumerSession {
        /// The group id.
        group_id: String,
        /// The member id.
        member_id: String,
    },
    /// A consumer-protocol member's time to revoke partitions (its rebalance timeout).
    ConsumerRevocation {
        /// The group id.
        group_id: String,
        /// The member id.
        member_id: String,
    },
    /// A classic-protocol member of a consumer group told to rejoin (REBALANCE_IN_PROGRESS on
    /// its heartbeat) must send JoinGroup within its rebalance timeout or be fenced.
    ClassicMemberJoin {
        /// The group id.
        group_id: String,
        /// The member id.
        member_id: String,
    },
    /// A classic-protocol member of a consumer group that joined must send SyncGroup within its
    /// rebalance timeout or be fenced.
    ClassicMemberSync {
        /// The group id.
        group_id: String,
        /// The member id.
        member_id: String,
    },
    /// The periodic offset-retention sweep (`offsets.retention.check.interval.ms`).
    OffsetsRetention,
}

/// The keyed timer the coordinator schedules through (from `josef-coordinator`). The broker
/// implements it over its timing wheel and calls [`crate::GroupCoordinator::on_timer`] when a key
/// expires; the coordinator also keeps its own deadlines, so late or duplicate fires are ignored.
pub use josef_coordinator::CoordinatorTimer;

/// A timer that does nothing: for callers that drive time with
/// [`crate::GroupCoordinator::fire_next_due`] instead.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopTimer;

impl<K> CoordinatorTimer<K> for NoopTimer {
    fn schedule(&mut self, _key: K, _deadline_ms: i64) {}
    fn cancel(&mut self, _key: &K) {}
}
