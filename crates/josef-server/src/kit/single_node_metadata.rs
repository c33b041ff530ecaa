//! The single node's metadata view: this node at its advertised address, controller of itself,
//! leader and only replica of every partition it hosts.

use std::collections::BTreeMap;
use std::sync::Arc;

use josef_protocol::{ErrorCode, Uuid};

use super::metadata_view::{
    BrokerEndpoint, CreateTopicFuture, MetadataView, PartitionMetadata, TopicMetadata,
};
use crate::config::BrokerConfig;
use crate::connection::ConnectionInfo;
use crate::topics::{Topic, TopicManager, GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC};

/// The single node's [`MetadataView`], over its topics.
pub struct SingleNodeMetadata {
    config: Arc<BrokerConfig>,
    topics: Arc<TopicManager>,
}

impl SingleNodeMetadata {
    /// The view of `topics` on the node `config` describes.
    pub fn new(config: Arc<BrokerConfig>, topics: Arc<TopicManager>) -> Self {
        SingleNodeMetadata { config, topics }
    }

    fn describe(&self, t: &Topic) -> TopicMetadata {
        let node = self.config.node_id;
        TopicMetadata {
            name: t.name.clone(),
            topic_id: t.id,
            is_internal: t.is_internal(),
            partitions: t
                .partitions
                .iter()
                .map(|p| PartitionMetadata {
                    partition_index: p.index,
                    error: ErrorCode::None,
                    leader_id: node,
                    leader_epoch: p.leader_epoch(),
                    replica_nodes: vec![node],
                    isr_nodes: vec![node],
                    offline_replicas: vec![],
                })
                .collect(),
        }
    }
}

impl MetadataView for SingleNodeMetadata {
    fn brokers(&self, conn: &ConnectionInfo) -> Vec<BrokerEndpoint> {
        let (host, port) = self.config.advertised_for(&conn.listener, conn.bound_port);
        vec![BrokerEndpoint {
            node_id: self.config.node_id,
            host,
            port: i32::from(port),
            rack: self.config.broker_rack.clone(),
        }]
    }

    fn controller_id(&self, _conn: &ConnectionInfo) -> i32 {
        self.config.node_id
    }

    fn topics(&self, _conn: &ConnectionInfo) -> Vec<TopicMetadata> {
        self.topics.all().iter().map(|t| self.describe(t)).collect()
    }

    fn topic(&self, name: &str, _conn: &ConnectionInfo) -> Option<TopicMetadata> {
        self.topics.get(name).map(|t| self.describe(&t))
    }

    fn topic_by_id(&self, id: Uuid, _conn: &ConnectionInfo) -> Option<TopicMetadata> {
        self.topics.get_by_id(&id).map(|t| self.describe(&t))
    }

    fn create_topic<'a>(&'a self, name: &'a str) -> CreateTopicFuture<'a> {
        Box::pin(std::future::ready(self.create_now(name)))
    }
}

impl SingleNodeMetadata {
    /// The topic is created here and now, in this node's topics.
    fn create_now(&self, name: &str) -> Result<(), ErrorCode> {
        if name == GROUP_METADATA_TOPIC || name == TRANSACTION_STATE_TOPIC {
            return self
                .topics
                .ensure_internal(name)
                .map(|_| ())
                .map_err(|e| e.code);
        }
        match self
            .topics
            .create(name, self.config.num_partitions, BTreeMap::new())
        {
            Ok(_) => Ok(()),
            // Another client created it meanwhile.
            Err(e) if e.code == ErrorCode::TopicAlreadyExists => Ok(()),
            Err(e) => Err(e.code),
        }
    }
}
