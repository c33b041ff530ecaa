//! KIP-951 leader hints: a Produce (v10+) or Fetch (v16+) partition refused because this node does
//! not lead it carries the current leader and its epoch from the metadata image, and the response
//! carries that leader's endpoint on the client's listener, so the client moves on without a
//! metadata round trip (Kafka's `ReplicaManager` / `KafkaApis` do the same).

use std::collections::BTreeSet;
use std::sync::Arc;

use josef_metadata::MetadataImage;
use josef_protocol::messages::{fetch_response, produce_response, FetchResponse, ProduceResponse};
use josef_protocol::{ErrorCode, StrBytes, Uuid};

use crate::state::BrokerState;

/// A partition's leader and its epoch, as the image has them.
#[derive(Debug, Clone, Copy)]
struct Leader {
    id: i32,
    epoch: i32,
}

/// A leader's endpoint on the client's listener.
#[derive(Debug, Clone)]
struct Endpoint {
    node_id: i32,
    host: StrBytes,
    port: i32,
    rack: Option<StrBytes>,
}

/// Produce and Fetch have their own (generated) copies of the two KIP-951 structs.
macro_rules! into_response_types {
    ($m:ident) => {
        impl From<Leader> for $m::LeaderIdAndEpoch {
            fn from(l: Leader) -> Self {
                $m::LeaderIdAndEpoch {
                    leader_id: l.id,
                    leader_epoch: l.epoch,
                    ..Default::default()
                }
            }
        }

        impl From<Endpoint> for $m::NodeEndpoint {
            fn from(e: Endpoint) -> Self {
                $m::NodeEndpoint {
                    node_id: e.node_id,
                    host: e.host,
                    port: e.port,
                    rack: e.rack,
                    ..Default::default()
                }
            }
        }
    };
}

into_response_types!(produce_response);
into_response_types!(fetch_response);

/// The leaders named so far and the image they came from.
pub(super) struct LeaderHints<'a> {
    image: Arc<MetadataImage>,
    listener: &'a str,
    leaders: BTreeSet<i32>,
}

impl<'a> LeaderHints<'a> {
    /// On a cluster node only (one node leads everything it has).
    pub(super) fn new(state: &BrokerState, listener: &'a str) -> Option<Self> {
        state.cluster.as_ref()?;
        Some(LeaderHints {
            image: state.metadata_image(),
            listener,
            leaders: BTreeSet::new(),
        })
    }

    /// The partition's leader and leader epoch, when the image knows a live one with an endpoint
    /// on this listener.
    fn current_leader(&mut self, topic: &str, topic_id: Uuid, index: i32) -> Option<Leader> {
        let t = if topic.is_empty() {
            self.image.topic_by_id(topic_id)
        } else {
            self.image.topic_by_name(topic)
        }?;
        let p = t.partitions.get(&index)?;
        let b = self.image.broker(p.leader)?;
        if b.fenced || b.listener(self.listener).is_none() {
            return None;
        }
        self.leaders.insert(p.leader);
        Some(Leader {
            id: p.leader,
            epoch: p.leader_epoch,
        })
    }

    /// The endpoint of every leader named.
    fn endpoints(&self) -> Vec<Endpoint> {
        self.leaders
            .iter()
            .filter_map(|id| {
                let b = self.image.broker(*id)?;
                let e = b.listener(self.listener)?;
                Some(Endpoint {
                    node_id: *id,
                    host: StrBytes::from(e.host.as_str()),
                    port: i32::from(e.port),
                    rack: b.rack.as_deref().map(StrBytes::from),
                })
            })
            .collect()
    }
}

fn not_leader(code: i16) -> bool {
    code == ErrorCode::NotLeaderOrFollower.code()
}

/// Adds the hints to a Produce response of `version`.
pub(super) fn produce(state: &BrokerState, listener: &str, version: i16, r: &mut ProduceResponse) {
    if version < 10 {
        return;
    }
    let Some(mut hints) = LeaderHints::new(state, listener) else {
        return;
    };
    for t in &mut r.responses {
        for p in &mut t.partition_responses {
            if not_leader(p.error_code) {
                if let Some(l) = hints.current_leader(&t.name, Uuid::ZERO, p.index) {
                    p.current_leader = l.into();
                }
            }
        }
    }
    r.node_endpoints = hints.endpoints().into_iter().map(Into::into).collect();
}

/// Adds the hints to a Fetch response of `version` (NOT_LEADER_OR_FOLLOWER and
/// FENCED_LEADER_EPOCH, as Kafka).
pub(super) fn fetch(state: &BrokerState, listener: &str, version: i16, r: &mut FetchResponse) {
    if version < 16 {
        return;
    }
    let Some(mut hints) = LeaderHints::new(state, listener) else {
        return;
    };
    for t in &mut r.responses {
        for p in &mut t.partitions {
            if not_leader(p.error_code) || p.error_code == ErrorCode::FencedLeaderEpoch.code() {
                if let Some(l) = hints.current_leader(&t.topic, t.topic_id, p.partition_index) {
                    p.current_leader = l.into();
                }
            }
        }
    }
    r.node_endpoints = hints.endpoints().into_iter().map(Into::into).collect();
}
