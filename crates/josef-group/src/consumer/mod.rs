//! The consumer group protocol (KIP-848): groups whose assignment the coordinator computes and
//! members reach incrementally by heartbeats.
//!
//! Epochs: the *group epoch* is bumped whenever the target must be computed again (a member
//! joins, leaves or changes its subscription; subscribed topics change); the *target assignment
//! epoch* is the group epoch the target was computed at; each member has a *member epoch*
//! (and its previous one) that reaches the target epoch once the member has revoked what it
//! must give up ([`MemberState::UnrevokedPartitions`]) and been given what others released
//! ([`MemberState::UnreleasedPartitions`]). See [`reconcile`] and `docs/groups.md`.
//!
//! The handlers are on [`crate::GroupCoordinator`]: `consumer_group_heartbeat`,
//! `consumer_group_describe`, `on_topics_changed`. Classic-protocol members (JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup) can be members of a consumer group too, and a group changes protocol
//! online under `group.consumer.migration.policy` (see `migration.rs` and `classic_members.rs`). The state is built only by applying
//! [`crate::record::ConsumerRecord`]s, so replaying them rebuilds it.

pub mod api;
mod classic_members;
mod group;
mod handlers;
mod member;
mod migration;
pub mod reconcile;
mod types;
pub mod wire;

pub use group::ConsumerGroup;
pub use member::{ConsumerMember, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH};
pub use types::{
    assignment_len, contains, is_subset, normalize, Assignment, ConsumerGroupState, MemberState,
    SubscribedTopic, TopicImage, TopicInfo,
};

/// Compiles a subscription regex as Kafka matches it: RE2 syntax, against the whole name.
pub fn compile_regex(re: &str) -> Result<regex::Regex, regex::Error> {
    regex::RegexBuilder::new(&format!("^(?:{re})$"))
        .size_limit(1 << 20)
        .build()
}
