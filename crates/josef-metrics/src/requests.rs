//! Kafka's RequestMetrics, measured by the connection loop: requests per API and version, and
//! per API the histograms of where a request's time went.
//!
//! What each time is here, next to Kafka's (which has network threads, a request queue, handler
//! threads and a response queue; Josef has one task per connection, handling one request at a
//! time):
//! - `TotalTimeMs`: from the read that completed the request to its response written (or to
//!   the decision that it has none).
//! - `RequestQueueTimeMs`: from that read to the handler starting: the time the request waited
//!   behind the earlier requests of its connection's pipeline (Kafka: waiting in the request
//!   queue for a handler thread).
//! - `LocalTimeMs`: the handler's first poll, i.e. the work done before the answer was ready or
//!   the request parked (in a purgatory, a coordinator, the controller channel).
//! - `RemoteTimeMs`: from parking to the answer being ready. An approximation: it includes the
//!   handler's work after waking (a delayed fetch's second read), which Kafka counts as local.
//! - `ResponseQueueTimeMs`: from the answer being ready to its write starting: time in the
//!   connection's coalescing buffer behind the next pipelined requests.
//! - `ResponseSendTimeMs`: the write that carried the response. An approximation: responses
//!   coalesced into one write all get that write's duration.
//! - `ThrottleTimeMs`: recorded by the quota path through [`record_throttle_time`]; nothing is
//!   recorded while no quota throttles.
//!
//! The handles are created on the first request of each API (and version) and kept for the
//! process, so a request costs a few clock reads and atomic adds, no allocation and no lookup.

use std::sync::OnceLock;
use std::time::Instant;

use josef_protocol::ApiKey;
use metrics::{Counter, Histogram};

/// The prefix of every RequestMetrics series (the histograms' buckets are set by it).
pub const PREFIX: &str = "kafka_network_requestmetrics_";
/// `kafka.network:type=RequestMetrics,name=RequestsPerSec,request=R,version=V`.
pub const REQUESTS: &str = "kafka_network_requestmetrics_requests_total";
/// `TotalTimeMs`.
pub const TOTAL_TIME: &str = "kafka_network_requestmetrics_totaltimems";
/// `RequestQueueTimeMs`.
pub const REQUEST_QUEUE_TIME: &str = "kafka_network_requestmetrics_requestqueuetimems";
/// `LocalTimeMs`.
pub const LOCAL_TIME: &str = "kafka_network_requestmetrics_localtimems";
/// `RemoteTimeMs`.
pub const REMOTE_TIME: &str = "kafka_network_requestmetrics_remotetimems";
/// `ThrottleTimeMs`.
pub const THROTTLE_TIME: &str = "kafka_network_requestmetrics_throttletimems";
/// `ResponseQueueTimeMs`.
pub const RESPONSE_QUEUE_TIME: &str = "kafka_network_requestmetrics_responsequeuetimems";
/// `ResponseSendTimeMs`.
pub const RESPONSE_SEND_TIME: &str = "kafka_network_requestmetrics_responsesendtimems";

/// Every histogram with its Kafka name (`kafka.network:type=RequestMetrics,name=...,request=R`).
pub const HISTOGRAMS: [(&str, &str); 7] = [
    (TOTAL_TIME, "TotalTimeMs"),
    (REQUEST_QUEUE_TIME, "RequestQueueTimeMs"),
    (LOCAL_TIME, "LocalTimeMs"),
    (REMOTE_TIME, "RemoteTimeMs"),
    (THROTTLE_TIME, "ThrottleTimeMs"),
    (RESPONSE_QUEUE_TIME, "ResponseQueueTimeMs"),
    (RESPONSE_SEND_TIME, "ResponseSendTimeMs"),
];

/// The histograms of one API.
struct Times {
    total: Histogram,
    queue: Histogram,
    local: Histogram,
    remote: Histogram,
    throttle: Histogram,
    response_queue: Histogram,
    send: Histogram,
}

/// One API's handles, created on first use.
struct ApiSlot {
    key: ApiKey,
    times: OnceLock<Times>,
    versions: Box<[OnceLock<Counter>]>,
}

impl ApiSlot {
    fn name(&self) -> String {
        format!("{:?}", self.key)
    }

    fn times(&self) -> &Times {
        self.times.get_or_init(|| {
            let h = |n: &'static str| metrics::histogram!(n, "request" => self.name());
            Times {
                total: h(TOTAL_TIME),
                queue: h(REQUEST_QUEUE_TIME),
                local: h(LOCAL_TIME),
                remote: h(REMOTE_TIME),
                throttle: h(THROTTLE_TIME),
                response_queue: h(RESPONSE_QUEUE_TIME),
                send: h(RESPONSE_SEND_TIME),
            }
        })
    }

    fn count(&self, version: i16) {
        let Some(cell) = usize::try_from(version)
            .ok()
            .and_then(|v| self.versions.get(v))
        else {
            return;
        };
        cell.get_or_init(|| {
            metrics::counter!(REQUESTS, "request" => self.name(), "version" => version.to_string())
        })
        .increment(1);
    }
}

/// Slots by api key.
static SLOTS: OnceLock<Box<[Option<ApiSlot>]>> = OnceLock::new();

fn slots() -> &'static [Option<ApiSlot>] {
    SLOTS.get_or_init(|| {
        let max = ApiKey::ALL.iter().map(|k| *k as i16).max().unwrap_or(0);
        (0..=max)
            .map(|i| {
                ApiKey::from_i16(i).map(|key| ApiSlot {
                    key,
                    times: OnceLock::new(),
                    versions: (0..=key.valid_versions().1.max(0))
                        .map(|_| OnceLock::new())
                        .collect(),
                })
            })
            .collect()
    })
}

fn slot(api_key: i16) -> Option<&'static ApiSlot> {
    if !crate::enabled() {
        return None;
    }
    slots().get(usize::try_from(api_key).ok()?)?.as_ref()
}

fn ms(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64() * 1000.0
}

/// Records a request's throttle time (the quota path calls this with the `throttle_time_ms`
/// it answered).
pub fn record_throttle_time(api_key: ApiKey, throttle_time_ms: i32) {
    if let Some(s) = slot(api_key as i16) {
        s.times()
            .throttle
            .record(f64::from(throttle_time_ms.max(0)));
    }
}

struct Timing {
    slot: &'static ApiSlot,
    received: Instant,
    started: Instant,
    parked: Option<Instant>,
    ready: Option<Instant>,
    sending: Option<Instant>,
}

/// The timing of one request through the connection loop; its times are recorded when it is
/// dropped (after its response was written, or at once for a request without one). Inert with
/// metrics off or for a frame that is not a known API.
pub struct RequestTimer(Option<Timing>);

impl RequestTimer {
    /// A request frame (api key and version first) completed by a read at `received`: counts it
    /// and starts its handler's clock.
    pub fn start(frame: &[u8], received: Instant) -> Self {
        let (Some(k), Some(v)) = (frame.get(0..2), frame.get(2..4)) else {
            return RequestTimer(None);
        };
        let Some(slot) = slot(i16::from_be_bytes([k[0], k[1]])) else {
            return RequestTimer(None);
        };
        slot.count(i16::from_be_bytes([v[0], v[1]]));
        RequestTimer(Some(Timing {
            slot,
            received,
            started: Instant::now(),
            parked: None,
            ready: None,
            sending: None,
        }))
    }

    /// The handler's first poll did not finish: it waits on something.
    pub fn parked(&mut self) {
        if let Some(t) = &mut self.0 {
            t.parked = Some(Instant::now());
        }
    }

    /// The handler finished: the response (if any) is ready.
    pub fn ready(&mut self) {
        if let Some(t) = &mut self.0 {
            t.ready = Some(Instant::now());
        }
    }

    /// Whether it measures anything (metrics on, a known API).
    pub fn is_active(&self) -> bool {
        self.0.is_some()
    }

    /// The write carrying the response starts at `at`.
    pub fn sending(&mut self, at: Instant) {
        if let Some(t) = &mut self.0 {
            t.sending = Some(at);
        }
    }
}

impl Drop for RequestTimer {
    fn drop(&mut self) {
        let Some(t) = &self.0 else {
            return;
        };
        let now = Instant::now();
        let ready = t.ready.unwrap_or(now);
        let sending = t.sending.unwrap_or(now);
        let local_end = t.parked.unwrap_or(ready);
        let times = t.slot.times();
        times.total.record(ms(t.received, now));
        times.queue.record(ms(t.received, t.started));
        times.local.record(ms(t.started, local_end));
        times.remote.record(ms(local_end, ready));
        times.response_queue.record(ms(ready, sending));
        times.send.record(ms(sending, now));
    }
}
