//! The seams a builder plugs their own parts into, each a small trait designed from what the
//! handlers ask of it and documented with the Kafka rules every method keeps:
//!
//! - [`PartitionStore`]: the partitions the partition handlers read and write (ListOffsets,
//!   Produce (one [`PartitionStore::produce`] per partition, by default composed of the
//!   settings, append and delayed-operation calls), Fetch, OffsetForLeaderEpoch,
//!   DescribeProducers, WriteTxnMarkers, DeleteRecords; a
//!   follower's fetch and the delayed operations still need josef-partition's partition, which
//!   the store hands out). Josef's is the
//!   [`TopicManager`](crate::topics::TopicManager) over josef-partition; a builder wraps it or
//!   brings another.
//! - [`MetadataView`]: the brokers, topics and leaders Metadata and DescribeCluster report.
//!   Josef's single node has [`SingleNodeMetadata`]; a cluster node has [`ClusterMetadata`]
//!   over its `josef-metadata` image ([`ImageMetadata`] is one image, for a builder's own).
//!   FindCoordinator names the leader of a coordinator partition from it too.
//!
//! What stays on the [`TopicManager`](crate::topics::TopicManager) itself is the storage
//! owner's admin path, not a per-partition operation: creating and deleting topics and
//! partitions, log dirs, topic configs (which it applies to the partitions it opened), and the
//! coordinators' own partitions (their shards load from its `__consumer_offsets` and
//! `__transaction_state` logs). A builder's store answers the partition APIs; topics reach it
//! through whatever creates them in their system.
//! - [`GroupCoordinator`] and [`TxnCoordinator`]: the group and transaction APIs, one method
//!   per API over the request as the client sent it (Kafka's `GroupCoordinator` and
//!   `TransactionCoordinator` interfaces). Josef's are [`JosefGroupCoordinator`] and
//!   [`JosefTxnCoordinator`], over the state's [`GroupService`](crate::groups::GroupService)
//!   (josef-group's pure state machine, sharded by `__consumer_offsets` partition) and
//!   [`TxnService`](crate::txns::TxnService) (josef-txn's, by `__transaction_state` partition),
//!   with producer ids from josef-sequencer's `ProducerIdManager` over a
//!   `ProducerIdBlockStore` (a builder's own block store is that trait).
//!   Their background work (loading a coordinator partition when its leadership arrives,
//!   timers) is theirs too: the broker calls the `tick` of the coordinators set
//!   ([`BrokerState::tick_coordinators`](crate::state::BrokerState::tick_coordinators)), so
//!   under a builder's coordinator Josef's shards are never loaded. KIP-890's produce
//!   verification asks the transaction coordinator set on the state (with the broker-to-broker
//!   AddPartitionsToTxn request) when this broker coordinates the id. What a builder's
//!   coordinator does not replace: FindCoordinator names the leader of the coordinator
//!   partition from the [`MetadataView`], and the transaction markers a builder's coordinator
//!   decides are its own to send (Josef's marker sender serves Josef's coordinator).
//!
//! Every trait is held as `Arc<dyn Trait>` on the state ([`BrokerState::with_partition_store`],
//! [`BrokerState::with_metadata_view`], `with_group_coordinator`, `with_txn_coordinator`): a handler costs one indirect call per partition or
//! topic, next to a lock and a hash lookup inside every implementation, while a type parameter
//! on `BrokerState` would reach every handler, the connection loop and the cluster runtime.
//!
//! [`BrokerState::with_partition_store`]: crate::state::BrokerState::with_partition_store
//! [`BrokerState::with_metadata_view`]: crate::state::BrokerState::with_metadata_view

mod cluster_metadata;
pub mod coordinators;
mod josef_coordinators;
pub mod metadata_view;
pub mod partition_store;
mod single_node_metadata;
mod topic_manager_store;

pub use cluster_metadata::{ClusterMetadata, ImageMetadata};
pub use coordinators::{GroupCoordinator, TxnCoordinator};
pub use josef_coordinators::{JosefGroupCoordinator, JosefTxnCoordinator};
pub use metadata_view::MetadataView;
pub use partition_store::PartitionStore;
pub use single_node_metadata::SingleNodeMetadata;
