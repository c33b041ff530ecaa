//! Which request is measured against which client quota, and what a throttle does to its answer
//! (Kafka's `KafkaApis` around `QuotaManagers`):
//! - Produce: the request's size counts against `producer_byte_rate` of (user, client-id);
//! - a consumer Fetch (not a follower's): `max_bytes` is capped at what the quota window holds,
//!   the records returned count against `consumer_byte_rate`, and a throttled fetch is answered
//!   empty with its bytes un-recorded (the consumer fetches them again later);
//! - every request but the inter-broker ones: the handler's busy time counts against
//!   `request_percentage`;
//! - CreateTopics, DeleteTopics, CreatePartitions: partitions against `controller_mutation_rate`
//!   (see [`charge_mutation`]).
//!
//! The response carries the larger throttle in `throttle_time_ms`; the broker then mutes the
//! channel for that long, answering at once when the client backs off by itself (KIP-219,
//! [`RequestQuota::client_backs_off`]) and holding the answer otherwise.

use std::time::Duration;

use josef_metadata::{MetadataImage, MetadataProvenance};
use josef_protocol::messages::FetchResponse;
use josef_protocol::{ApiKey, RequestBody, ResponseBody};

use crate::client::nanos_to_percentage;
use crate::error::QuotaRecordError;
use crate::kip219::{client_throttles, client_throttles_since};
use crate::managers::{QuotaManagers, QuotaManagersConfig};
use crate::mutation_request::{
    answer_throttled_topics, charge_mutation, MutationCharge, TopicPartitionCounts,
};
use crate::store::{QuotaChange, QuotaStore};

/// Who sent a request, as quotas see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaClient<'a> {
    /// The principal's name (`ANONYMOUS` before authentication).
    pub user: &'a str,
    /// The request header's client id (empty when null).
    pub client_id: &'a str,
}

/// What [`RequestQuotas::follow_image`] changed.
#[derive(Debug, Default)]
pub struct ImageQuotaUpdate {
    /// The quotas changed (empty when the image holds the quotas already enforced).
    pub changes: Vec<QuotaChange>,
    /// The image's entries no quota entity can hold, skipped.
    pub ignored: Vec<QuotaRecordError>,
}

/// Every client quota of a broker, applied to requests and responses; the quotas follow the
/// metadata image.
///
/// ```
/// use std::time::Duration;
/// use josef_protocol::messages::{ProduceRequest, ProduceResponse};
/// use josef_protocol::{RequestBody, ResponseBody, Uuid};
/// use josef_quota::{QuotaClient, QuotaEntity, QuotaChange, RequestQuotas, TopicPartitionCounts};
///
/// struct NoTopics;
/// impl TopicPartitionCounts for NoTopics {
///     fn partition_count(&self, _: Option<&str>, _: Uuid) -> usize { 0 }
///     fn default_num_partitions(&self) -> usize { 1 }
/// }
///
/// let mut quotas = RequestQuotas::new(Default::default());
/// quotas.apply(&QuotaChange {
///     entity: QuotaEntity::ClientId("app".into()),
///     key: "producer_byte_rate".into(),
///     value: Some(1000.0),
/// });
/// let client = QuotaClient { user: "ANONYMOUS", client_id: "app" };
/// let mut produce = RequestBody::Produce(ProduceRequest::default());
/// let now = 1_700_000_000_000;
/// let q = quotas.begin(client, 9, &mut produce, 20_000, now, &NoTopics).unwrap();
/// let mut resp = ResponseBody::Produce(ProduceResponse::default());
/// let throttle = quotas.finish(&q, Duration::ZERO, Some(&mut resp), now);
/// assert!(throttle > 0);
/// let ResponseBody::Produce(p) = resp else { unreachable!() };
/// assert_eq!(p.throttle_time_ms as u64, throttle);
/// assert!(q.client_backs_off());
/// ```
#[derive(Debug, Clone)]
pub struct RequestQuotas {
    managers: QuotaManagers,
    /// The image the managers were last brought to.
    seen: Option<MetadataProvenance>,
    /// Some quota was configured once (Kafka's `quotasEnabled`).
    enabled: bool,
}

impl RequestQuotas {
    /// No quotas yet.
    pub fn new(settings: QuotaManagersConfig) -> Self {
        RequestQuotas {
            managers: QuotaManagers::new(settings),
            seen: None,
            enabled: false,
        }
    }

    /// Brings the quotas to `image`'s; `None` for an image already seen.
    pub fn follow_image(&mut self, image: &MetadataImage) -> Option<ImageQuotaUpdate> {
        if self.seen == Some(image.provenance()) {
            return None;
        }
        self.seen = Some(image.provenance());
        let (target, ignored) = QuotaStore::from_image(image);
        if target == self.managers.store {
            return Some(ImageQuotaUpdate {
                changes: Vec::new(),
                ignored,
            });
        }
        let changes = self.managers.sync_to(&target);
        self.update_enabled();
        Some(ImageQuotaUpdate { changes, ignored })
    }

    /// Applies one change (for a broker that does not follow a metadata image).
    pub fn apply(&mut self, change: &QuotaChange) {
        self.managers.apply(change);
        self.update_enabled();
    }

    fn update_enabled(&mut self) {
        let m = &self.managers;
        self.enabled = m.produce.quotas_enabled()
            || m.fetch.quotas_enabled()
            || m.request.quotas_enabled()
            || m.controller_mutation.quotas_enabled();
    }

    /// Some produce, fetch, request or mutation quota is configured; without one,
    /// [`begin`](Self::begin) measures nothing.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The configured quotas (for DescribeClientQuotas and validating AlterClientQuotas).
    pub fn store(&self) -> &QuotaStore {
        &self.managers.store
    }

    /// The managers, for the quotas not tied to a request (connection creation rates).
    pub fn managers(&self) -> &QuotaManagers {
        &self.managers
    }

    /// Counts a connection `ip` opened at `now_ms` against its `connection_creation_rate`
    /// (KIP-612): keep it, or close it after the throttle time.
    pub fn record_ip_connection(
        &mut self,
        ip: std::net::IpAddr,
        now_ms: u64,
    ) -> crate::IpConnectionDecision {
        self.managers.ip_connections.record_connection(ip, now_ms)
    }

    /// Starts measuring a request of `client` at `version`, `size` bytes on the wire; `None` when
    /// no quota applies to it. Caps a consumer fetch's `max_bytes` at what its quota window holds
    /// and takes out of a strict mutation request the topics its quota refuses.
    pub fn begin(
        &mut self,
        client: QuotaClient<'_>,
        version: i16,
        body: &mut RequestBody,
        size: usize,
        now_ms: u64,
        topics: &dyn TopicPartitionCounts,
    ) -> Option<RequestQuota> {
        if !self.enabled {
            return None;
        }
        let api = body.api_key();
        // Inter-broker and controller traffic is exempt (Kafka: cluster actions).
        client_throttles_since(api)?;
        let (user, client_id) = (client.user, client.client_id);
        let mut produce_throttle = 0;
        let mut consumer_fetch = false;
        let m = &mut self.managers;
        match body {
            RequestBody::Produce(_) => {
                produce_throttle =
                    m.produce
                        .record_and_get_throttle_time_ms(user, client_id, size as f64, now_ms);
            }
            RequestBody::Fetch(r) => {
                let replica_id = if version >= 15 {
                    r.replica_state.replica_id
                } else {
                    r.replica_id
                };
                if replica_id >= 0 {
                    // Replication is exempt from client quotas.
                    return None;
                }
                consumer_fetch = true;
                let cap = m.fetch.max_value_in_quota_window(user, client_id);
                if cap < f64::from(r.max_bytes) {
                    r.max_bytes = cap.max(1.0) as i32;
                }
            }
            _ => {}
        }
        let mutation = if m.controller_mutation.quotas_enabled() {
            charge_mutation(
                topics,
                &mut m.controller_mutation,
                user,
                client_id,
                version,
                body,
                now_ms,
            )
        } else {
            None
        };
        Some(RequestQuota {
            mutation,
            user: user.to_owned(),
            client_id: client_id.to_owned(),
            api,
            version,
            produce_throttle,
            consumer_fetch,
            time_request: m.request.quotas_enabled(),
        })
    }

    /// Finishes measuring a request whose handler was busy for `busy`: records the fetched bytes
    /// and the busy time, answers the topics a mutation quota took out, empties a throttled
    /// fetch, and sets the response's `throttle_time_ms`. Returns the throttle in ms.
    pub fn finish(
        &mut self,
        q: &RequestQuota,
        busy: Duration,
        mut resp: Option<&mut ResponseBody>,
        now_ms: u64,
    ) -> u64 {
        let m = &mut self.managers;
        let request_throttle = if q.time_request {
            let percent = nanos_to_percentage(u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX));
            m.request
                .record_and_get_throttle_time_ms(&q.user, &q.client_id, percent, now_ms)
        } else {
            0
        };
        let mut throttle = request_throttle.max(q.produce_throttle);
        if let (true, Some(ResponseBody::Fetch(f))) = (q.consumer_fetch, resp.as_deref()) {
            let bytes = fetched_bytes(f) as f64;
            let fetch_throttle =
                m.fetch
                    .record_and_get_throttle_time_ms(&q.user, &q.client_id, bytes, now_ms);
            throttle = throttle.max(fetch_throttle);
            if throttle > 0 {
                // The consumer gets nothing now, so the bytes do not count.
                m.fetch.unrecord(&q.user, &q.client_id, bytes, now_ms);
            }
        }
        if let Some(charge) = &q.mutation {
            throttle = throttle.max(charge.throttle_ms);
            if let Some(resp) = resp.as_deref_mut() {
                answer_throttled_topics(charge, resp);
            }
        }
        if throttle == 0 {
            return 0;
        }
        if let Some(resp) = resp {
            if let ResponseBody::Fetch(f) = resp {
                *f = FetchResponse {
                    session_id: f.session_id,
                    ..Default::default()
                };
            }
            resp.set_throttle_time_ms(i32::try_from(throttle).unwrap_or(i32::MAX));
        }
        throttle
    }
}

/// What [`RequestQuotas::begin`] learnt of a request.
#[derive(Debug)]
pub struct RequestQuota {
    user: String,
    client_id: String,
    api: ApiKey,
    version: i16,
    produce_throttle: u64,
    consumer_fetch: bool,
    time_request: bool,
    mutation: Option<MutationCharge>,
}

impl RequestQuota {
    /// The API of the request.
    pub fn api(&self) -> ApiKey {
        self.api
    }

    /// True when the client of this request backs off by itself (KIP-219): answer at once, then
    /// mute; else the answer waits for the throttle.
    pub fn client_backs_off(&self) -> bool {
        client_throttles(self.api, self.version)
    }

    /// What the mutation quota did to the request (CreateTopics, CreatePartitions, DeleteTopics
    /// with a mutation quota configured).
    pub fn mutation(&self) -> Option<&MutationCharge> {
        self.mutation.as_ref()
    }
}

fn fetched_bytes(f: &FetchResponse) -> usize {
    f.responses
        .iter()
        .flat_map(|t| &t.partitions)
        // Records read as a file slice (sent with sendfile) count as much as records in memory.
        .map(|p| {
            p.records.as_ref().map_or(0, |r| r.len())
                + p.records_file.as_ref().map_or(0, |f| f.len())
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EntityName, QuotaEntity};
    use josef_metadata::{MetadataDelta, MetadataRecord};

    fn image_with(changes: &[QuotaChange], offset: u64) -> MetadataImage {
        let mut d = MetadataDelta::new(&MetadataImage::empty());
        for c in changes {
            d.replay(&MetadataRecord::ClientQuota(c.to_record()))
                .unwrap();
        }
        d.apply(MetadataProvenance {
            last_offset: offset,
            last_epoch: 0,
        })
    }

    #[test]
    fn refresh_turns_quotas_on_and_store_of_reads_the_image() {
        let mut q = RequestQuotas::new(QuotaManagersConfig::default());
        assert!(!q.enabled());
        let change = QuotaChange {
            entity: QuotaEntity::ClientId(EntityName::from("slow")),
            key: "producer_byte_rate".into(),
            value: Some(1024.0),
        };
        let image = image_with(std::slice::from_ref(&change), 1);
        let update = q.follow_image(&image).unwrap();
        assert_eq!(update.changes, vec![change.clone()]);
        assert!(update.ignored.is_empty());
        assert!(q.enabled());
        assert_eq!(
            q.store().get(&change.entity, "producer_byte_rate"),
            Some(1024.0)
        );
        assert_eq!(&QuotaStore::from_image(&image).0, q.store());
        // The same image again is a no-op.
        assert!(q.follow_image(&image).is_none());
    }
}
