//! Gauges computed when `/metrics` is read, written in Prometheus's text format (version 0.0.4)
//! after the recorder's series: how a broker exposes its state (partition and leader counts,
//! log sizes) the way Kafka's JMX gauges are computed when read, so an unscraped broker pays
//! nothing for them and a deleted partition's series goes away.
//!
//! ```
//! use josef_metrics::text::{escape_label_value, write_gauge, write_header};
//!
//! let mut out = String::new();
//! write_gauge(&mut out, "kafka_server_replicamanager_leadercount", "LeaderCount", 2);
//! write_header(&mut out, "kafka_log_log_size", "Size");
//! out.push_str(&format!("kafka_log_log_size{{topic=\"{}\"}} 7\n", escape_label_value("a\"b")));
//! let want = [
//!     "# HELP kafka_server_replicamanager_leadercount LeaderCount",
//!     "# TYPE kafka_server_replicamanager_leadercount gauge",
//!     "kafka_server_replicamanager_leadercount 2",
//!     "# HELP kafka_log_log_size Size",
//!     "# TYPE kafka_log_log_size gauge",
//!     "kafka_log_log_size{topic=\"a\\\"b\"} 7",
//! ];
//! assert_eq!(out.lines().collect::<Vec<_>>(), want);
//! ```

use std::borrow::Cow;
use std::fmt::{Display, Write};

/// Appends the `# HELP` and `# TYPE ... gauge` lines of the gauge `name`; its samples follow.
pub fn write_header(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
}

/// Appends the unlabelled gauge `name` with its header and its one sample `value`.
pub fn write_gauge(out: &mut String, name: &str, help: &str, value: impl Display) {
    write_header(out, name, help);
    let _ = writeln!(out, "{name} {value}");
}

/// A label value in the text format: backslash, quote and newline escaped.
pub fn escape_label_value(v: &str) -> Cow<'_, str> {
    if !v.contains(['\\', '"', '\n']) {
        return v.into();
    }
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .into()
}

#[cfg(test)]
mod tests {
    use super::escape_label_value as escape;

    #[test]
    fn label_values_are_escaped_for_the_text_format() {
        assert_eq!(escape("orders.v1"), "orders.v1");
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
