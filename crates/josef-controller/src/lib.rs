//! josef-controller (in progress).
#![deny(missing_docs)]

mod error;
mod heartbeat;
mod partition_change;
mod placement;
mod rng;

pub use error::{ApiError, ReplayError};
pub use heartbeat::{
    calculate_next_broker_state, BrokerControlState, BrokerHeartbeatManager, BrokerSession,
    HeartbeatFacts,
};
pub use partition_change::{
    ElectionStrategy, LeaderRecoveryState, PartitionChange, PartitionChangeBuilder,
    PartitionState, NO_LEADER, NO_LEADER_CHANGE,
};
pub use placement::{StripedReplicaPlacer, UsableBroker};
pub use rng::ControllerRng;
