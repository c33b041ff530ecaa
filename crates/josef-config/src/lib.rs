//! Reading Kafka's own broker configuration files, for any broker built from the Josef crates:
//! [`properties`] parses `server.properties` with `java.util.Properties` rules, and
//! [`kafka_names`] knows every Kafka broker setting name (to warn about the ones a broker does not
//! use and to suggest the intended name for a misspelt one); [`settings`] takes a broker's settings
//! apart, each library its own, and [`listener`] reads `listener.security.protocol.map` and
//! listener-prefixed settings (`listener.name.<listener>.<setting>`).
//!
//! ```
//! let map = josef_config::properties::parse("node.id = 1\nlog.dirs: /tmp/k\\\n  afka\n").unwrap();
//! assert_eq!(map["log.dirs"], "/tmp/kafka");
//! assert!(josef_config::kafka_names::is_kafka_config_name("num.network.threads"));
//! assert_eq!(josef_config::kafka_names::suggest("num.partitons").as_deref(), Some("num.partitions"));
//! ```

#![deny(missing_docs)]

pub mod kafka_names;
pub mod listener;
pub mod properties;
pub mod settings;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
