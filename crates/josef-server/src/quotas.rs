//! Client quotas on the broker: josef-quota's [`RequestQuotas`] decide, this module feeds them
//! the clock, the metadata image and the topics, and turns a throttle into the connection's
//! [`Outcome::Throttled`] (KIP-219).
//!
//! Per request, with no quota configured, the cost is one atomic load.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use josef_metadata::MetadataImage;
use josef_protocol::{RequestBody, RequestHeader, ResponseBody, Uuid};
use josef_quota::{QuotaClient, QuotaStore, RequestQuota, RequestQuotas, TopicPartitionCounts};
use parking_lot::Mutex;

use crate::connection::{ConnectionInfo, Outcome};
use crate::dispatch::Reply;
use crate::state::BrokerState;

/// Kept here so that callers of the broker's earlier paths still compile.
pub use josef_quota::{alter_error_response, QuotaSettings};

/// The broker's client quota managers, kept in step with the metadata image.
pub struct BrokerQuotas {
    inner: Mutex<RequestQuotas>,
    /// Mirrors [`RequestQuotas::enabled`], read without the lock.
    enabled: AtomicBool,
}

impl BrokerQuotas {
    /// No quotas yet.
    pub fn new(settings: QuotaSettings) -> Self {
        BrokerQuotas {
            inner: Mutex::new(RequestQuotas::new(settings)),
            enabled: AtomicBool::new(false),
        }
    }

    /// Brings the quotas to `image`'s (a no-op for an image already seen).
    pub fn refresh(&self, image: &MetadataImage) {
        let mut inner = self.inner.lock();
        let Some(update) = inner.follow_image(image) else {
            return;
        };
        for e in &update.ignored {
            tracing::warn!(error = %e, "client quota ignored");
        }
        if update.changes.is_empty() {
            return;
        }
        tracing::info!(changes = update.changes.len(), "client quotas updated");
        self.enabled.store(inner.enabled(), Ordering::Release);
    }

    /// Counts a connection `ip` opened at `now_ms` against its `connection_creation_rate`:
    /// `Some(delay)` when it is over the rate and is to be closed after `delay`.
    pub fn ip_connection_throttle(
        &self,
        ip: std::net::IpAddr,
        now_ms: u64,
    ) -> Option<std::time::Duration> {
        match self.inner.lock().record_ip_connection(ip, now_ms) {
            josef_quota::IpConnectionDecision::Accept => None,
            josef_quota::IpConnectionDecision::CloseAfter { throttle_time_ms } => {
                Some(std::time::Duration::from_millis(throttle_time_ms))
            }
        }
    }

    /// The configured quotas (for DescribeClientQuotas and validating AlterClientQuotas).
    pub fn store(&self) -> QuotaStore {
        self.inner.lock().store().clone()
    }

    /// Starts measuring a request; `None` when no quota applies to it. `size` is the request's
    /// size in bytes.
    pub fn begin(
        &self,
        state: &BrokerState,
        conn: &ConnectionInfo,
        header: &RequestHeader,
        body: &mut RequestBody,
        size: usize,
    ) -> Option<RequestQuota> {
        if !self.enabled.load(Ordering::Acquire) {
            return None;
        }
        let client = QuotaClient {
            user: &conn.principal.name,
            client_id: header.client_id.as_deref().unwrap_or_default(),
        };
        self.inner.lock().begin(
            client,
            header.request_api_version,
            body,
            size,
            now_ms(),
            &BrokerTopics(state),
        )
    }

    /// The connection's next step for a measured request whose handler was busy for `busy`: as
    /// without quotas, or [`Outcome::Throttled`] when over a quota.
    pub fn outcome(
        &self,
        q: &RequestQuota,
        busy: Duration,
        reply: Reply,
        encode: impl FnOnce(&ResponseBody) -> Outcome,
    ) -> Outcome {
        let finish =
            |resp: Option<&mut ResponseBody>| self.inner.lock().finish(q, busy, resp, now_ms());
        let (throttle, response) = match reply {
            Reply::Body(mut resp) => {
                let t = finish(Some(&mut resp));
                (t, Some(encode(&resp)))
            }
            Reply::None => (finish(None), None),
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
            q.api(),
            i32::try_from(throttle).unwrap_or(i32::MAX),
        );
        Outcome::Throttled {
            response,
            throttle: Duration::from_millis(throttle),
            client_backs_off: q.client_backs_off(),
        }
    }
}

/// The topics a mutation quota charges for: the metadata image's on a cluster node, the topic
/// manager's on a single node.
struct BrokerTopics<'a>(&'a BrokerState);

impl TopicPartitionCounts for BrokerTopics<'_> {
    fn partition_count(&self, name: Option<&str>, id: Uuid) -> usize {
        let state = self.0;
        if state.cluster.is_some() {
            let image = state.metadata_image();
            let topic = match name {
                Some(n) => image.topic_by_name(n),
                None => image.topic_by_id(id),
            };
            return topic.map_or(0, |t| t.partitions.len());
        }
        let topic = match name {
            Some(n) => state.topics.get(n),
            None => state.topics.get_by_id(&id),
        };
        topic.map_or(0, |t| t.partitions.len())
    }

    fn default_num_partitions(&self) -> usize {
        usize::try_from(self.0.config.num_partitions.max(1)).unwrap_or(1)
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

/// The client quotas of `image` as a store (entries no quota entity can hold are logged and
/// skipped).
pub fn store_of(image: &MetadataImage) -> QuotaStore {
    let (store, ignored) = QuotaStore::from_image(image);
    for e in &ignored {
        tracing::warn!(error = %e, "client quota ignored");
    }
    store
}

#[cfg(test)]
mod tests {
    use super::*;
    use josef_metadata::{MetadataDelta, MetadataProvenance, MetadataRecord};
    use josef_quota::{EntityName, QuotaChange, QuotaEntity};

    #[test]
    fn refresh_turns_the_lock_free_switch_on() {
        let q = BrokerQuotas::new(QuotaSettings::default());
        assert!(!q.enabled.load(Ordering::Acquire));
        let change = QuotaChange {
            entity: QuotaEntity::ClientId(EntityName::from("slow")),
            key: "producer_byte_rate".into(),
            value: Some(1024.0),
        };
        let mut d = MetadataDelta::new(&MetadataImage::empty());
        d.replay(&MetadataRecord::ClientQuota(change.to_record()))
            .unwrap();
        let image = d.apply(MetadataProvenance {
            last_offset: 1,
            last_epoch: 0,
        });
        q.refresh(&image);
        assert!(q.enabled.load(Ordering::Acquire));
        assert_eq!(
            q.store().get(&change.entity, "producer_byte_rate"),
            Some(1024.0)
        );
        assert_eq!(store_of(&image), q.store());
    }
}
