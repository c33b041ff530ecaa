//! Classic group state: the state machine, members and the bookkeeping of a rebalance.

mod group;
mod member;

pub use group::ClassicGroup;
pub use member::ClassicMember;

/// Classic group states (`ClassicGroupState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupState {
    /// No members; offsets may still exist.
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment.
    CompletingRebalance,
    /// Assignment distributed.
    Stable,
    /// Removed or unloaded.
    Dead,
}

impl GroupState {
    /// Kafka's name of the state (what ListGroups / DescribeGroups return).
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    /// States a group may enter `self` from (Dead may be entered from any state).
    pub fn valid_previous_states(self) -> &'static [GroupState] {
        use GroupState::*;
        match self {
            Empty => &[PreparingRebalance],
            PreparingRebalance => &[Stable, CompletingRebalance, Empty],
            CompletingRebalance => &[PreparingRebalance],
            Stable => &[CompletingRebalance],
            Dead => &[Empty, PreparingRebalance, CompletingRebalance, Stable, Dead],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GroupState::*;

    #[test]
    fn state_transition_table_matches_kafka() {
        assert_eq!(Empty.valid_previous_states(), &[PreparingRebalance]);
        assert!(PreparingRebalance.valid_previous_states().contains(&Stable));
        assert!(PreparingRebalance.valid_previous_states().contains(&Empty));
        assert!(PreparingRebalance
            .valid_previous_states()
            .contains(&CompletingRebalance));
        assert_eq!(
            CompletingRebalance.valid_previous_states(),
            &[PreparingRebalance]
        );
        assert_eq!(Stable.valid_previous_states(), &[CompletingRebalance]);
        assert_eq!(Dead.valid_previous_states().len(), 5);
    }
}
