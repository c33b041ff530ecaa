//! What only the handler's response shows: topics hidden from Metadata, groups and transactions
//! listed or described, KIP-430 authorized operations, fetch-session partitions that lost READ.

use josef_protocol::messages::*;
use josef_protocol::{ResponseBody, StrBytes};

use super::{code, BrokerView, RequestAuth, GROUP_DENIED, TOPIC_DENIED, TXN_DENIED};
use crate::{AclOperation as Op, ResourceType, AUTHORIZED_OPERATIONS_OMITTED, CLUSTER_NAME};

/// The check [`apply`] makes on a response.
#[derive(Debug, Default)]
pub(super) enum Check {
    /// Nothing: the response is the handler's.
    #[default]
    Nothing,
    /// Fetch: partitions of a session whose topic lost READ.
    Fetch,
    /// Metadata: what the response may show.
    Metadata(MetadataCheck),
    /// OffsetFetch: mark undescribable topics, or leave them out of a fetch of every offset.
    OffsetFetch(OffsetFetchCheck),
    /// DescribeGroups: groups refused, authorized operations when asked.
    DescribeGroups(bool),
    /// ConsumerGroupDescribe: groups refused, authorized operations when asked.
    ConsumerGroupDescribe(bool),
    /// ListGroups: only the groups the principal may describe.
    ListGroups,
    /// DescribeCluster: the cluster's authorized operations, when asked.
    DescribeCluster(bool),
    /// DescribeProducers: topics without READ are refused.
    DescribeProducers,
    /// DescribeTransactions: transactional ids without DESCRIBE are refused.
    DescribeTransactions,
    /// ListTransactions: only the transactional ids the principal may describe.
    ListTransactions,
}

/// Metadata's part of [`Check`].
#[derive(Debug)]
pub(super) struct MetadataCheck {
    /// The request asked for every topic.
    pub all: bool,
    /// v0 names whose refusal left an empty list, which v0 reads as "every topic": only these
    /// may be answered.
    pub only: Option<Vec<StrBytes>>,
    pub topic_ops: bool,
    pub cluster_ops: bool,
}

/// OffsetFetch's part of [`Check`].
#[derive(Debug)]
pub(super) struct OffsetFetchCheck {
    pub version: i16,
    /// v0–7: the request asked for every topic.
    pub all_topics: bool,
    /// v8+: the groups whose every topic was asked for.
    pub all_topics_of: Vec<StrBytes>,
}

/// In a DescribeGroups or ConsumerGroupDescribe answer: the groups the principal may not describe
/// become GROUP_AUTHORIZATION_FAILED entries; the others get their authorized operations if asked.
macro_rules! described_groups {
    ($auth:expr, $r:expr, $ops:expr, $group:path) => {{
        type Group = $group;
        for g in &mut $r.groups {
            if !$auth.group(Op::Describe, &g.group_id) {
                *g = Group {
                    error_code: code(GROUP_DENIED),
                    group_id: std::mem::take(&mut g.group_id),
                    authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
                    ..Default::default()
                };
            } else if $ops {
                g.authorized_operations = $auth.operations(ResourceType::Group, &g.group_id);
            }
        }
    }};
}

/// Applies `check` to the handler's response (another response type is left alone).
pub(super) fn apply(
    broker: &dyn BrokerView,
    auth: &RequestAuth,
    check: &Check,
    body: &mut ResponseBody,
) {
    match (check, body) {
        (Check::Fetch, ResponseBody::Fetch(r)) => {
            for t in &mut r.responses {
                let name = if t.topic.is_empty() {
                    broker.topic_name(t.topic_id)
                } else {
                    Some(t.topic.to_string())
                };
                if name.is_some_and(|n| !auth.topic(Op::Read, &n)) {
                    for p in &mut t.partitions {
                        *p = super::checks::fetch_partition_error(p.partition_index);
                    }
                }
            }
        }
        (Check::Metadata(m), ResponseBody::Metadata(r)) => metadata(auth, m, r),
        (Check::OffsetFetch(a), ResponseBody::OffsetFetch(r)) => offset_fetch(auth, a, r),
        (Check::DescribeGroups(ops), ResponseBody::DescribeGroups(r)) => {
            described_groups!(auth, r, *ops, describe_groups_response::DescribedGroup);
        }
        (Check::ConsumerGroupDescribe(ops), ResponseBody::ConsumerGroupDescribe(r)) => {
            described_groups!(
                auth,
                r,
                *ops,
                consumer_group_describe_response::DescribedGroup
            );
        }
        (Check::ListGroups, ResponseBody::ListGroups(r)) => {
            r.groups.retain(|g| auth.group(Op::Describe, &g.group_id));
        }
        (Check::DescribeCluster(ops), ResponseBody::DescribeCluster(r)) => {
            r.cluster_authorized_operations = if !ops {
                AUTHORIZED_OPERATIONS_OMITTED
            } else if auth.cluster(Op::Describe) {
                auth.operations(ResourceType::Cluster, CLUSTER_NAME)
            } else {
                0
            };
        }
        (Check::DescribeProducers, ResponseBody::DescribeProducers(r)) => {
            for t in r
                .topics
                .iter_mut()
                .filter(|t| !auth.topic(Op::Read, &t.name))
            {
                for p in &mut t.partitions {
                    p.error_code = code(TOPIC_DENIED);
                    p.error_message = None;
                    p.active_producers.clear();
                }
            }
        }
        (Check::DescribeTransactions, ResponseBody::DescribeTransactions(r)) => {
            for t in &mut r.transaction_states {
                if !auth.transactional_id(Op::Describe, &t.transactional_id) {
                    *t = describe_transactions_response::TransactionState {
                        error_code: code(TXN_DENIED),
                        transactional_id: std::mem::take(&mut t.transactional_id),
                        ..Default::default()
                    };
                }
            }
        }
        (Check::ListTransactions, ResponseBody::ListTransactions(r)) => {
            r.transaction_states
                .retain(|t| auth.transactional_id(Op::Describe, &t.transactional_id));
        }
        _ => {}
    }
}

fn metadata(auth: &RequestAuth, m: &MetadataCheck, r: &mut MetadataResponse) {
    if let Some(only) = &m.only {
        r.topics
            .retain(|t| t.name.as_ref().is_some_and(|n| only.contains(n)));
    }
    let mut topics = Vec::with_capacity(r.topics.len());
    for mut t in std::mem::take(&mut r.topics) {
        let Some(name) = t.name.clone() else {
            topics.push(t);
            continue;
        };
        if !auth.topic(Op::Describe, &name) {
            if !m.all {
                // Asked for by id: refused, and the name stays hidden.
                topics.push(super::checks::metadata_refused(None, t.topic_id));
            }
            continue;
        }
        if m.topic_ops && t.error_code == 0 {
            t.topic_authorized_operations = auth.operations(ResourceType::Topic, &name);
        }
        topics.push(t);
    }
    r.topics = topics;
    if m.cluster_ops {
        r.cluster_authorized_operations = auth.operations(ResourceType::Cluster, CLUSTER_NAME);
    }
}

/// The topics of an OffsetFetch answer the principal may not describe: left out when every topic
/// was asked for, else their partitions carry TOPIC_AUTHORIZATION_FAILED.
fn offset_fetch_topics<T>(
    auth: &RequestAuth,
    topics: &mut Vec<T>,
    all: bool,
    name: impl Fn(&T) -> &StrBytes,
    refuse: impl Fn(&mut T),
) {
    let describable = |t: &T| auth.topic(Op::Describe, name(t));
    if all {
        topics.retain(describable);
    }
    topics
        .iter_mut()
        .filter(|t| !describable(t))
        .for_each(refuse);
}

/// An OffsetFetch topic's partitions as TOPIC_AUTHORIZATION_FAILED, without their offsets (v0–7
/// and v8+ have a partition type each).
macro_rules! refuse_offsets {
    ($t:expr) => {
        for p in &mut $t.partitions {
            p.committed_offset = -1;
            p.committed_leader_epoch = -1;
            p.metadata = None;
            p.error_code = code(TOPIC_DENIED);
        }
    };
}

fn offset_fetch(auth: &RequestAuth, a: &OffsetFetchCheck, r: &mut OffsetFetchResponse) {
    if a.version < 8 {
        offset_fetch_topics(
            auth,
            &mut r.topics,
            a.all_topics,
            |t| &t.name,
            |t| refuse_offsets!(t),
        );
        return;
    }
    for g in &mut r.groups {
        if !auth.group(Op::Describe, &g.group_id) {
            g.topics.clear();
            g.error_code = code(GROUP_DENIED);
            continue;
        }
        offset_fetch_topics(
            auth,
            &mut g.topics,
            a.all_topics_of.contains(&g.group_id),
            |t| &t.name,
            |t| refuse_offsets!(t),
        );
    }
}
