//! Client quotas on the broker (Kafka's `QuotaManagers` in `KafkaApis`): the quotas come from the
//! metadata image (ClientQuotaRecords), josef-quota's managers measure each client, and a request
//! over its quota gets `throttle_time_ms` and a muted channel (KIP-219).
//!
//! Per request, with no quota configured, the cost is one atomic load. With quotas:
//! - Produce: the request's size counts against `producer_byte_rate` of (user, client-id);
//! - a consumer Fetch (not a follower's): `max_bytes` is capped at what the quota window holds,
//!   the records returned count against `consumer_byte_rate`, and a throttled fetch is answered
//!   empty with its bytes un-recorded (the consumer fetches them again later);
//! - every request but the inter-broker ones: the time spent polling its handler counts against
//!   `request_percentage` (Kafka counts I/O and network thread time; here the handler's time).
//! - CreateTopics, DeleteTopics, CreatePartitions: partitions against `controller_mutation_rate`
//!   (see [`crate::quota_mutation`]).
//!
//! The response carries the larger throttle; then the connection reads nothing from the client
//! until the throttle has passed (see [`Outcome::Throttled`](crate::connection::Outcome)).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use josef_metadata::{MetadataImage, MetadataProvenance};
use josef_protocol::messages::alter_client_quotas_response::{self, AlterClientQuotasResponse};
use josef_protocol::messages::{AlterClientQuotasRequest, FetchResponse};
use josef_protocol::{ApiKey, ErrorCode, RequestBody, RequestHeader, ResponseBody};
use josef_quota::{QuotaManagers, QuotaManagersConfig, QuotaStore, QuotaWindow};
use parking_lot::Mutex;

use crate::config::{ConfigError, Props};
use crate::connection::{ConnectionInfo, Outcome};
use crate::dispatch::Reply;

/// The broker's quota settings (Kafka's `QuotaConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QuotaSettings {
    /// `quota.window.num` (11) and `quota.window.size.seconds` (1).
    pub client: QuotaWindow,
    /// `controller.quota.window.num` (11) and `controller.quota.window.size.seconds` (1).
    pub controller: QuotaWindow,
}

impl QuotaSettings {
    /// Takes the settings from the broker properties.
    pub(crate) fn from_props(p: &mut Props) -> Result<Self, ConfigError> {
        let window = |p: &mut Props, num: &str, size: &str| -> Result<QuotaWindow, ConfigError> {
            let n: u32 = p.num(num, josef_quota::config::DEFAULT_QUOTA_WINDOW_NUM, 1)?;
            let s: u32 = p.num(
                size,
                josef_quota::config::DEFAULT_QUOTA_WINDOW_SIZE_SECONDS,
                1,
            )?;
            QuotaWindow::new(n, s).map_err(|e| Props::invalid(num, &n.to_string(), e.to_string()))
        };
        Ok(QuotaSettings {
            client: window(
                p,
                josef_quota::config::QUOTA_WINDOW_NUM_CONFIG,
                josef_quota::config::QUOTA_WINDOW_SIZE_SECONDS_CONFIG,
            )?,
            controller: window(
                p,
                josef_quota::config::CONTROLLER_QUOTA_WINDOW_NUM_CONFIG,
                josef_quota::config::CONTROLLER_QUOTA_WINDOW_SIZE_SECONDS_CONFIG,
            )?,
        })
    }
}

struct Inner {
    managers: QuotaManagers,
    /// The image the managers were last brought to.
    seen: Option<MetadataProvenance>,
}

/// The broker's client quota managers, kept in step with the metadata image.
pub struct BrokerQuotas {
    inner: Mutex<Inner>,
    /// Some produce, fetch or request quota was configured once (Kafka's `quotasEnabled`).
    enabled: AtomicBool,
}

impl BrokerQuotas {
    /// No quotas yet.
    pub fn new(settings: QuotaSettings) -> Self {
        BrokerQuotas {
            inner: Mutex::new(Inner {
                managers: QuotaManagers::new(QuotaManagersConfig {
                    client: settings.client,
                    controller: settings.controller,
                }),
                seen: None,
            }),
            enabled: AtomicBool::new(false),
        }
    }

    /// Brings the quotas to `image`'s (a no-op for an image already seen).
    pub fn refresh(&self, image: &MetadataImage) {
        let mut inner = self.inner.lock();
        if inner.seen == Some(image.provenance()) {
            return;
        }
        inner.seen = Some(image.provenance());
        let target = store_of(image);
        if target == inner.managers.store {
            return;
        }
        let changes = inner.managers.sync_to(&target);
        tracing::info!(changes = changes.len(), "client quotas updated");
        let m = &inner.managers;
        let on = m.produce.quotas_enabled()
            || m.fetch.quotas_enabled()
            || m.request.quotas_enabled()
            || m.controller_mutation.quotas_enabled();
        self.enabled.store(on, Ordering::Release);
    }

    /// The configured quotas (for DescribeClientQuotas and validating AlterClientQuotas).
    pub fn store(&self) -> QuotaStore {
        self.inner.lock().managers.store.clone()
    }

    /// Starts measuring a request; `None` when no quota applies to it. Caps a consumer fetch's
    /// `max_bytes` at what its quota window holds. `size` is the request's size in bytes.
    pub fn begin(
        &self,
        state: &crate::state::BrokerState,
        conn: &ConnectionInfo,
        header: &RequestHeader,
        body: &mut RequestBody,
        size: usize,
    ) -> Option<RequestQuota> {
        if !self.enabled.load(Ordering::Acquire) {
            return None;
        }
        let api = body.api_key();
        // Inter-broker and controller traffic is exempt (Kafka: cluster actions).
        josef_quota::client_throttles_since(api)?;
        let user = conn.principal.name.clone();
        let client_id = header.client_id.as_deref().unwrap_or_default().to_string();
        let now = now_ms();
        let mut produce_throttle = 0;
        let mut consumer_fetch = false;
        let inner = &mut *self.inner.lock();
        match body {
            RequestBody::Produce(_) => {
                produce_throttle = inner.managers.produce.record_and_get_throttle_time_ms(
                    &user,
                    &client_id,
                    size as f64,
                    now,
                );
            }
            RequestBody::Fetch(r) => {
                let replica_id = if header.request_api_version >= 15 {
                    r.replica_state.replica_id
                } else {
                    r.replica_id
                };
                if replica_id >= 0 {
                    // Replication is exempt from client quotas.
                    return None;
                }
                consumer_fetch = true;
                let cap = inner
                    .managers
                    .fetch
                    .max_value_in_quota_window(&user, &client_id);
                if cap < f64::from(r.max_bytes) {
                    r.max_bytes = cap.max(1.0) as i32;
                }
            }
            _ => {}
        }
        let mutation = if inner.managers.controller_mutation.quotas_enabled() {
            crate::quota_mutation::charge(
                state,
                &mut inner.managers.controller_mutation,
                &user,
                &client_id,
                header.request_api_version,
                body,
                now,
            )
        } else {
            None
        };
        Some(RequestQuota {
            mutation,
            user,
            client_id,
            api,
            version: header.request_api_version,
            produce_throttle,
            consumer_fetch,
            time_request: inner.managers.request.quotas_enabled(),
        })
    }

    /// Finishes measuring a request whose handler took `busy`: records the fetched bytes and the
    /// handler time, empties a throttled fetch, and sets the response's `throttle_time_ms`.
    /// Returns the throttle.
    pub fn finish(
        &self,
        q: &RequestQuota,
        busy: Duration,
        mut resp: Option<&mut ResponseBody>,
    ) -> u64 {
        let now = now_ms();
        let mut inner = self.inner.lock();
        let m = &mut inner.managers;
        let request_throttle = if q.time_request {
            let percent = josef_quota::nanos_to_percentage(busy.as_nanos() as u64);
            m.request
                .record_and_get_throttle_time_ms(&q.user, &q.client_id, percent, now)
        } else {
            0
        };
        let mut throttle = request_throttle.max(q.produce_throttle);
        if let (true, Some(ResponseBody::Fetch(f))) = (q.consumer_fetch, resp.as_deref()) {
            let bytes = fetched_bytes(f) as f64;
            let fetch_throttle =
                m.fetch
                    .record_and_get_throttle_time_ms(&q.user, &q.client_id, bytes, now);
            throttle = throttle.max(fetch_throttle);
            if throttle > 0 {
                // The consumer gets nothing now, so the bytes do not count.
                m.fetch.unrecord(&q.user, &q.client_id, bytes, now);
            }
        }
        drop(inner);
        if let Some(m) = &q.mutation {
            throttle = throttle.max(m.throttle_ms);
            if let Some(resp) = resp.as_deref_mut() {
                crate::quota_mutation::answer_throttled(m, resp);
            }
        }
        if throttle == 0 {
            return 0;
        }
        let ms = i32::try_from(throttle).unwrap_or(i32::MAX);
        if let Some(resp) = resp {
            if let ResponseBody::Fetch(f) = resp {
                *f = FetchResponse {
                    session_id: f.session_id,
                    ..Default::default()
                };
            }
            set_throttle_time_ms(resp, ms);
        }
        throttle
    }
}

impl BrokerQuotas {
    /// The connection's next step for a measured request: as without quotas, or
    /// [`Outcome::Throttled`] when over a quota.
    pub fn outcome(
        &self,
        q: &RequestQuota,
        busy: Duration,
        reply: Reply,
        encode: impl FnOnce(&ResponseBody) -> Outcome,
    ) -> Outcome {
        let (throttle, response) = match reply {
            Reply::Body(mut resp) => {
                let t = self.finish(q, busy, Some(&mut resp));
                (t, Some(encode(&resp)))
            }
            Reply::None => (self.finish(q, busy, None), None),
            Reply::Close(reason) => return Outcome::Close(reason),
        };
        let response = match response {
            Some(Outcome::Respond(frame)) => Some(frame),
            Some(other) => return other,
            None => None,
        };
        if throttle == 0 {
            return response.map_or(Outcome::NoResponse, Outcome::Respond);
        }
        crate::metrics::requests::record_throttle_time(
            q.api,
            i32::try_from(throttle).unwrap_or(i32::MAX),
        );
        Outcome::Throttled {
            response,
            throttle: Duration::from_millis(throttle),
            client_backs_off: q.client_backs_off(),
        }
    }
}

/// What [`BrokerQuotas::begin`] learnt of a request.
#[derive(Debug)]
pub struct RequestQuota {
    user: String,
    client_id: String,
    api: ApiKey,
    version: i16,
    produce_throttle: u64,
    consumer_fetch: bool,
    time_request: bool,
    mutation: Option<crate::quota_mutation::MutationCharge>,
}

impl RequestQuota {
    /// True when the client of this request backs off by itself (KIP-219): answer at once, then
    /// mute; else the answer waits for the throttle.
    pub fn client_backs_off(&self) -> bool {
        josef_quota::client_throttles(self.api, self.version)
    }
}

/// Keeps `quotas` in step with a cluster node's metadata image as it changes.
pub fn spawn_image_watch(
    quotas: std::sync::Arc<BrokerQuotas>,
    mut images: tokio::sync::watch::Receiver<MetadataImage>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let image = images.borrow_and_update().clone();
            quotas.refresh(&image);
            if images.changed().await.is_err() {
                return;
            }
        }
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Runs `fut`, adding the time spent inside its polls to `busy` (the handler's own time, not the
/// time it waited for data or a coordinator).
pub async fn timed<F: std::future::Future>(fut: F, busy: &mut Duration) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        let start = Instant::now();
        let r = fut.as_mut().poll(cx);
        *busy += start.elapsed();
        r
    })
    .await
}

fn fetched_bytes(f: &FetchResponse) -> usize {
    f.responses
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| p.records.as_ref().map_or(0, |r| r.len()))
        .sum()
}

/// The client quotas of `image` as a store.
pub fn store_of(image: &MetadataImage) -> QuotaStore {
    let mut store = QuotaStore::new();
    for (entity, quotas) in image.client_quotas() {
        for (key, value) in quotas {
            let components = entity.iter().map(|(t, n)| (t.as_str(), n.as_deref()));
            if let Err(e) = store.insert_components(components, key, *value) {
                tracing::warn!(error = %e, "client quota ignored");
            }
        }
    }
    store
}

/// The AlterClientQuotas answer with `code` on every entry (the controller could not be reached,
/// the records could not be written).
pub fn alter_error_response(
    req: &AlterClientQuotasRequest,
    code: ErrorCode,
) -> AlterClientQuotasResponse {
    AlterClientQuotasResponse {
        entries: req
            .entries
            .iter()
            .map(|e| alter_client_quotas_response::EntryData {
                error_code: code.code(),
                entity: e
                    .entity
                    .iter()
                    .map(|c| alter_client_quotas_response::EntityData {
                        entity_type: c.entity_type.clone(),
                        entity_name: c.entity_name.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

macro_rules! throttle_field {
    ($body:expr, $ms:expr, $($api:ident),* $(,)?) => {
        match $body {
            $(ResponseBody::$api(r) => r.throttle_time_ms = $ms,)*
            _ => {}
        }
    };
}

/// Sets the top-level `throttle_time_ms` of a response that has one.
pub fn set_throttle_time_ms(body: &mut ResponseBody, ms: i32) {
    throttle_field!(
        body,
        ms,
        AddOffsetsToTxn,
        AddPartitionsToTxn,
        AlterClientQuotas,
        AlterConfigs,
        AlterPartitionReassignments,
        AlterReplicaLogDirs,
        AlterUserScramCredentials,
        ApiVersions,
        ConsumerGroupDescribe,
        ConsumerGroupHeartbeat,
        CreateAcls,
        CreateDelegationToken,
        CreatePartitions,
        CreateTopics,
        DeleteAcls,
        DeleteGroups,
        DeleteRecords,
        DeleteTopics,
        DescribeAcls,
        DescribeClientQuotas,
        DescribeCluster,
        DescribeConfigs,
        DescribeDelegationToken,
        DescribeGroups,
        DescribeLogDirs,
        DescribeProducers,
        DescribeTopicPartitions,
        DescribeTransactions,
        DescribeUserScramCredentials,
        ElectLeaders,
        EndTxn,
        ExpireDelegationToken,
        Fetch,
        FindCoordinator,
        GetTelemetrySubscriptions,
        Heartbeat,
        IncrementalAlterConfigs,
        InitProducerId,
        JoinGroup,
        LeaveGroup,
        ListClientMetricsResources,
        ListGroups,
        ListOffsets,
        ListPartitionReassignments,
        ListTransactions,
        Metadata,
        OffsetCommit,
        OffsetDelete,
        OffsetFetch,
        OffsetForLeaderEpoch,
        Produce,
        PushTelemetry,
        RenewDelegationToken,
        ShareAcknowledge,
        ShareFetch,
        ShareGroupDescribe,
        ShareGroupHeartbeat,
        SyncGroup,
        TxnOffsetCommit,
        UpdateFeatures,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use josef_metadata::{MetadataDelta, MetadataRecord};
    use josef_protocol::messages::ProduceResponse;
    use josef_quota::QuotaChange;

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
        let q = BrokerQuotas::new(QuotaSettings::default());
        assert!(!q.enabled.load(Ordering::Acquire));
        let change = QuotaChange {
            entity: josef_quota::QuotaEntity::ClientId(josef_quota::EntityName::from("slow")),
            key: "producer_byte_rate".into(),
            value: Some(1024.0),
        };
        let image = image_with(std::slice::from_ref(&change), 1);
        q.refresh(&image);
        assert!(q.enabled.load(Ordering::Acquire));
        assert_eq!(
            q.store().get(&change.entity, "producer_byte_rate"),
            Some(1024.0)
        );
        assert_eq!(store_of(&image), q.store());
    }

    #[test]
    fn throttle_time_is_set_on_responses_that_carry_it() {
        let mut r = ResponseBody::Produce(ProduceResponse::default());
        set_throttle_time_ms(&mut r, 42);
        let ResponseBody::Produce(p) = r else {
            unreachable!()
        };
        assert_eq!(p.throttle_time_ms, 42);
    }
}
