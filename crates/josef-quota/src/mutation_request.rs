//! `controller_mutation_rate` (KIP-599) applied to CreateTopics, DeleteTopics and
//! CreatePartitions: each topic is charged its partitions (created, deleted or added) before the
//! request is handled or forwarded. From CreateTopics v6, DeleteTopics v5 and CreatePartitions v3
//! the quota is strict: a topic met while the client's bucket is below zero is taken out of the
//! request and answered THROTTLING_QUOTA_EXCEEDED; older versions are handled whole and only
//! throttled.
//!
//! Kafka charges in the controller, after a topic passed validation; a broker that forwards to a
//! controller which does not learn the principal charges before, so a topic refused for another
//! reason is charged too.

use josef_protocol::messages::{
    create_partitions_response, create_topics_response, delete_topics_response,
};
use josef_protocol::{ErrorCode, RequestBody, ResponseBody, StrBytes, Uuid};

use crate::mutation::{is_strict, ControllerMutationQuotaManager};

/// What the mutation quota needs to know of the cluster's topics.
pub trait TopicPartitionCounts {
    /// The partitions of the topic `name`, or of the topic with `id` when there is no name; 0 for
    /// a topic that does not exist.
    fn partition_count(&self, name: Option<&str>, id: Uuid) -> usize;
    /// `num.partitions`: what a CreateTopics topic with neither a count nor assignments gets.
    fn default_num_partitions(&self) -> usize;
}

/// A topic taken out of a request by a strict quota.
#[derive(Debug, Clone)]
struct ThrottledTopic {
    name: Option<StrBytes>,
    id: Uuid,
}

/// What the mutation quota did to one request.
#[derive(Debug, Default)]
pub struct MutationCharge {
    /// Topics refused with THROTTLING_QUOTA_EXCEEDED.
    throttled: Vec<ThrottledTopic>,
    /// The throttle time for the response.
    pub throttle_ms: u64,
}

impl MutationCharge {
    /// The topics taken out of the request (answered THROTTLING_QUOTA_EXCEEDED).
    pub fn throttled_topics(&self) -> usize {
        self.throttled.len()
    }
}

/// Charges the topics of a mutation request of `user` / `client_id` at `version` to `manager`,
/// taking out of `body` the topics a strict quota refuses; `None` for other requests and for
/// `validate_only` creations.
pub fn charge_mutation(
    topics: &dyn TopicPartitionCounts,
    manager: &mut ControllerMutationQuotaManager,
    user: &str,
    client_id: &str,
    version: i16,
    body: &mut RequestBody,
    now_ms: u64,
) -> Option<MutationCharge> {
    let mut quota = manager.new_quota_for(user, client_id, is_strict(body.api_key(), version));
    let mut out = MutationCharge::default();
    let mut take = |permits: usize, name: Option<StrBytes>, id: Uuid| -> bool {
        let ok = manager.record(&mut quota, permits as f64, now_ms).is_ok();
        if !ok {
            out.throttled.push(ThrottledTopic { name, id });
        }
        ok
    };
    match body {
        RequestBody::CreateTopics(r) if !r.validate_only => {
            let default = topics.default_num_partitions().max(1);
            r.topics.retain(|t| {
                let permits = match (t.num_partitions, t.assignments.len()) {
                    (_, n) if n > 0 => n,
                    (n, _) if n > 0 => n as usize,
                    _ => default,
                };
                take(permits, Some(t.name.clone()), Uuid::default())
            });
        }
        RequestBody::CreatePartitions(r) if !r.validate_only => {
            r.topics.retain(|t| {
                let now = topics.partition_count(Some(t.name.as_str()), Uuid::default());
                let permits = usize::try_from(t.count).unwrap_or(0).saturating_sub(now);
                take(permits, Some(t.name.clone()), Uuid::default())
            });
        }
        RequestBody::DeleteTopics(r) => {
            r.topic_names.retain(|n| {
                let permits = topics.partition_count(Some(n.as_str()), Uuid::default());
                take(permits, Some(n.clone()), Uuid::default())
            });
            r.topics.retain(|t| {
                let permits = topics.partition_count(t.name.as_deref(), t.topic_id);
                take(permits, t.name.clone(), t.topic_id)
            });
        }
        _ => return None,
    }
    out.throttle_ms = quota.throttle_time_ms(now_ms);
    Some(out)
}

const MESSAGE: &str = "The throttling quota has been exceeded.";

/// Adds THROTTLING_QUOTA_EXCEEDED results for the topics the quota took out of the request.
pub fn answer_throttled_topics(charge: &MutationCharge, resp: &mut ResponseBody) {
    let code = ErrorCode::ThrottlingQuotaExceeded.code();
    for t in &charge.throttled {
        match resp {
            ResponseBody::CreateTopics(r) => {
                r.topics.push(create_topics_response::CreatableTopicResult {
                    name: t.name.clone().unwrap_or_default(),
                    error_code: code,
                    error_message: Some(MESSAGE.into()),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                })
            }
            ResponseBody::CreatePartitions(r) => {
                r.results
                    .push(create_partitions_response::CreatePartitionsTopicResult {
                        name: t.name.clone().unwrap_or_default(),
                        error_code: code,
                        error_message: Some(MESSAGE.into()),
                        ..Default::default()
                    })
            }
            ResponseBody::DeleteTopics(r) => {
                r.responses
                    .push(delete_topics_response::DeletableTopicResult {
                        name: t.name.clone(),
                        topic_id: t.id,
                        error_code: code,
                        error_message: Some(MESSAGE.into()),
                        ..Default::default()
                    })
            }
            _ => {}
        }
    }
}
