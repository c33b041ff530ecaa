//! The seams a builder plugs their own parts into, each a small trait designed from what the
//! handlers ask of it and documented with the Kafka rules every method keeps:
//!
//! - [`PartitionStore`]: the partitions the data-path handlers read and write (ListOffsets,
//!   Produce, Fetch; a follower's fetch and the delayed operations still need josef-partition's
//!   partition, which the store hands out). Josef's is the
//!   [`TopicManager`](crate::topics::TopicManager) over josef-partition; a builder wraps it or
//!   brings another.
//! - [`MetadataView`]: the brokers, topics and leaders the Metadata API reports. Josef's single
//!   node has [`SingleNodeMetadata`]; a cluster node answers from its metadata image
//!   (`handlers/cluster.rs`, not yet through this trait).
//! - Coordinators: not a trait here yet. The seam is the pair of services on
//!   [`BrokerState`](crate::state::BrokerState), [`GroupService`](crate::groups::GroupService)
//!   (josef-group's pure state machine, sharded by `__consumer_offsets` partition) and
//!   [`TxnService`](crate::txns::TxnService) (josef-txn's, by `__transaction_state` partition),
//!   with producer ids from josef-sequencer's `ProducerIdManager` over a
//!   `ProducerIdBlockStore` (a builder's own block store is that trait). The group and
//!   transaction handlers call the services' methods, and the services persist through the
//!   partition logs; there is no plug-in point yet, so replacing a coordinator means replacing
//!   its service.
//!
//! Both traits are held as `Arc<dyn Trait>` on the state ([`BrokerState::with_partition_store`],
//! [`BrokerState::with_metadata_view`]): a handler costs one indirect call per partition or
//! topic, next to a lock and a hash lookup inside every implementation, while a type parameter
//! on `BrokerState` would reach every handler, the connection loop and the cluster runtime.
//!
//! [`BrokerState::with_partition_store`]: crate::state::BrokerState::with_partition_store
//! [`BrokerState::with_metadata_view`]: crate::state::BrokerState::with_metadata_view

pub mod metadata_view;
pub mod partition_store;
mod single_node_metadata;
mod topic_manager_store;

pub use metadata_view::MetadataView;
pub use partition_store::PartitionStore;
pub use single_node_metadata::SingleNodeMetadata;
