//! Kafka's broker metrics for a broker built from the Josef crates, in Prometheus form, and the
//! `/metrics` endpoint that serves them.
//!
//! Series are named after Kafka's MBeans in Prometheus style: the MBean
//! `kafka.<domain>:type=<Type>,name=<Name>[,tag=...]` becomes `kafka_<domain>_<type>_<name>`
//! lower-cased, a `...PerSec` meter becomes a `_total` counter (the rate is the scraper's job),
//! and the tags stay labels with Kafka's names (`request`, `version`, `delayedOperation`,
//! `listener`, `topic`, `partition`).
//!
//! - [`Recorder`]: installs the Prometheus recorder as the process's `metrics` recorder and
//!   renders it; libraries (josef-partition) count through the `metrics` facade only, and with no
//!   recorder installed every handle is a no-op.
//! - [`requests`]: Kafka's RequestMetrics (requests per API and version, per-API latency
//!   histograms), measured by a [`RequestTimer`] per request.
//! - [`ConnectionGauge`] and [`InPurgatory`]: open connections per listener and operations
//!   waiting in a purgatory, held for as long as the thing they count lives.
//! - [`text`]: writing gauges computed at scrape time (a broker's state: partition counts, log
//!   sizes) in the text format, after the recorder's series.
//! - [`MetricsServer`] (with [`route()`]): just enough HTTP/1.x for a scraper, serving what a
//!   [`MetricsSource`] renders.
//!
//! The recorder is global to the process: one per process, shared by every broker started in it
//! (tests). A recorder installed by an embedding program first is left alone (the endpoint then
//! shows only what the source appends).
//!
//! ```
//! use std::time::Instant;
//! use josef_metrics::{Recorder, RequestTimer};
//!
//! let recorder = Recorder::install();
//! // A Produce v9 request frame starts with its api key and version.
//! drop(RequestTimer::start(&[0, 0, 0, 9], Instant::now()));
//! let text = recorder.render();
//! assert!(text.contains(
//!     "kafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"9\"} 1"
//! ));
//! ```
#![deny(missing_docs)]

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod connections;
mod purgatory;
mod recorder;
pub mod requests;
pub mod route;
mod server;
pub mod text;

pub use connections::{ConnectionGauge, CONNECTION_COUNT, CONNECTION_CREATION};
pub use purgatory::{InPurgatory, PURGATORY_SIZE};
pub use recorder::{enabled, Recorder};
pub use requests::{record_throttle_time, RequestTimer};
pub use route::{route, Route};
pub use server::{bind, MetricsServer, MetricsSource};
