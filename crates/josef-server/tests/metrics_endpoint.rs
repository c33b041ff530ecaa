//! The Prometheus endpoint of an in-process broker (`prometheus.listener` on a free port): the
//! series of a produce, a fetch, a parked fetch and the connections, read over a plain TCP socket
//! with HTTP/1.1, with their labels and values, and how they grow.
//!
//! The metrics recorder is process-wide, so this file starts one broker per test process and
//! runs its steps in one test.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use josef_protocol::messages::fetch_request::FetchTopic;
use josef_protocol::messages::FetchRequest;
use josef_protocol::{ApiKey, ResponseBody};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;
use common::{create_topic, fetch_partition, produce_records, start_with, Client};

/// One scrape: status line and the samples, `name{labels}` (labels sorted) → value.
struct Scrape {
    status: String,
    samples: BTreeMap<String, f64>,
}

impl Scrape {
    /// The value of `name` with exactly these labels.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples.get(&key(name, labels)).copied()
    }

    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels)
            .unwrap_or_else(|| panic!("no {} in the scrape", key(name, labels)))
    }
}

fn key(name: &str, labels: &[(&str, &str)]) -> String {
    let mut l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    l.sort();
    format!("{name}{{{}}}", l.join(","))
}

/// Parses the text format: `name{a="x",b="y"} value` or `name value`.
fn parse(body: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').expect("a sample line");
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => {
                let inner = rest.strip_suffix('}').expect("closed labels");
                let pairs: Vec<(String, String)> = inner
                    .split("\",")
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (k, v) = p.split_once('=').expect("label=value");
                        (k.to_string(), v.trim_matches('"').to_string())
                    })
                    .collect();
                (n, pairs)
            }
            None => (series, Vec::new()),
        };
        let labels: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let v: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("bad value in {line}")),
        };
        out.insert(key(name, &labels), v);
    }
    out
}

/// A scrape once `name{labels}` reached `value` (at most 5 s of scrapes): a request's series are
/// recorded after its response went out (its send time is one of them), so the client can read
/// the response before the broker counted it.
async fn scrape_when(addr: SocketAddr, name: &str, labels: &[(&str, &str)], value: f64) -> Scrape {
    for _ in 0..250 {
        let s = get(addr, "/metrics").await;
        if s.get(name, labels) == Some(value) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{} never reached {value}", key(name, labels))
}

async fn get(addr: SocketAddr, path: &str) -> Scrape {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut raw = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut raw))
        .await
        .expect("an answer within 10 s")
        .unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.lines().next().unwrap().to_string();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("a Content-Length")
        .parse()
        .unwrap();
    assert_eq!(len, body.len());
    Scrape {
        status,
        samples: if head.contains("text/plain; version=0.0.4") {
            parse(body)
        } else {
            BTreeMap::new()
        },
    }
}

fn records(n: usize) -> bytes::Bytes {
    let values: Vec<Vec<u8>> = (0..n).map(|i| format!("value-{i}").into_bytes()).collect();
    type Record<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);
    let recs: Vec<Record<'_>> = values.iter().map(|v| (None, Some(v.as_slice()))).collect();
    josef_log::testing::batch(0, 1_700_000_000_000, &recs).freeze()
}

fn fetch_request(topic: &str, offset: i64, max_wait_ms: i32) -> FetchRequest {
    FetchRequest {
        replica_id: -1,
        max_wait_ms,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![fetch_partition(0, offset)],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_endpoint_serves_kafka_named_series_that_grow_with_the_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[("prometheus.listener", "127.0.0.1:0")]).await;
    let addr = b.metrics_addr().expect("the endpoint is up");

    let before = get(addr, "/metrics").await;
    assert_eq!(before.status, "HTTP/1.1 200 OK");
    assert_eq!(
        before.value(
            "kafka_controller_kafkacontroller_activecontrollercount",
            &[]
        ),
        1.0
    );
    assert_eq!(get(addr, "/other").await.status, "HTTP/1.1 404 Not Found");

    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "metered", 2).await;
    let batch = records(3);
    let size = batch.len() as f64;
    assert_eq!(
        produce_records(&mut c, 9, "metered", batch)
            .await
            .error_code,
        0
    );

    let topic = [("topic", "metered")];
    let produce = [("request", "Produce")];
    let s = scrape_when(
        addr,
        "kafka_network_requestmetrics_totaltimems_count",
        &produce,
        1.0,
    )
    .await;
    assert_eq!(
        s.value("kafka_server_brokertopicmetrics_bytesin_total", &topic),
        size
    );
    assert_eq!(
        s.value("kafka_server_brokertopicmetrics_messagesin_total", &topic),
        3.0
    );
    let produce_v9 = [("request", "Produce"), ("version", "9")];
    assert_eq!(
        s.value("kafka_network_requestmetrics_requests_total", &produce_v9),
        1.0
    );
    let create_v7 = [("request", "CreateTopics"), ("version", "7")];
    assert_eq!(
        s.value("kafka_network_requestmetrics_requests_total", &create_v7),
        1.0
    );
    for h in [
        "totaltimems",
        "requestqueuetimems",
        "localtimems",
        "remotetimems",
        "responsequeuetimems",
        "responsesendtimems",
    ] {
        let name = format!("kafka_network_requestmetrics_{h}_count");
        assert_eq!(s.value(&name, &produce), 1.0, "{name}");
    }
    let total_sum = s.value("kafka_network_requestmetrics_totaltimems_sum", &produce);
    assert!(total_sum > 0.0 && total_sum < 10_000.0, "{total_sum}");
    let inf = [("request", "Produce"), ("le", "+Inf")];
    assert_eq!(
        s.value("kafka_network_requestmetrics_totaltimems_bucket", &inf),
        1.0
    );
    let p0 = [("topic", "metered"), ("partition", "0")];
    let p1 = [("topic", "metered"), ("partition", "1")];
    assert!(s.value("kafka_log_log_size", &p0) >= size);
    assert_eq!(s.value("kafka_log_log_size", &p1), 0.0);
    assert_eq!(s.value("kafka_log_log_logendoffset", &p0), 3.0);
    assert!(s.value("kafka_server_replicamanager_partitioncount", &[]) >= 2.0);
    assert_eq!(
        s.value("kafka_server_replicamanager_partitioncount", &[]),
        s.value("kafka_server_replicamanager_leadercount", &[])
    );
    assert_eq!(
        s.value("kafka_server_replicamanager_underreplicatedpartitions", &[]),
        0.0
    );
    let plaintext = [("listener", "PLAINTEXT")];
    assert_eq!(
        s.value(
            "kafka_server_socketservermetrics_connection_count",
            &plaintext
        ),
        1.0
    );

    // A consumer fetch counts bytes out; a second produce adds to bytes and messages in.
    let ResponseBody::Fetch(f) = c.call(12, fetch_request("metered", 0, 0)).await else {
        panic!("not a fetch response")
    };
    let fetched = f.responses[0].partitions[0].records.as_ref().unwrap().len() as f64;
    assert!(fetched >= size);
    assert_eq!(
        produce_records(&mut c, 9, "metered", records(2))
            .await
            .error_code,
        0
    );
    let s2 = scrape_when(
        addr,
        "kafka_network_requestmetrics_totaltimems_count",
        &produce,
        2.0,
    )
    .await;
    assert_eq!(
        s2.value("kafka_server_brokertopicmetrics_bytesout_total", &topic),
        fetched
    );
    assert!(s2.value("kafka_server_brokertopicmetrics_bytesin_total", &topic) > size);
    assert_eq!(
        s2.value("kafka_server_brokertopicmetrics_messagesin_total", &topic),
        5.0
    );
    assert_eq!(
        s2.value("kafka_network_requestmetrics_requests_total", &produce_v9),
        2.0
    );
    assert_eq!(s2.value("kafka_log_log_logendoffset", &p0), 5.0);

    // A fetch parked at the log end shows in the Fetch purgatory until a produce wakes it; its
    // wait is remote time.
    let mut waiter = Client::connect(&b).await;
    let fetch = [("delayedOperation", "Fetch")];
    waiter
        .send(12, fetch_request("metered", 5, 10_000).into())
        .await;
    let mut parked = None;
    for _ in 0..100 {
        let s = get(addr, "/metrics").await;
        if s.get(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            &fetch,
        ) == Some(1.0)
        {
            parked = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let parked = parked.expect("the fetch parked within 2 s");
    assert_eq!(
        parked.value(
            "kafka_server_socketservermetrics_connection_count",
            &plaintext
        ),
        2.0
    );
    assert_eq!(
        produce_records(&mut c, 9, "metered", records(1))
            .await
            .error_code,
        0
    );
    let woke = tokio::time::timeout(Duration::from_secs(5), waiter.recv(ApiKey::Fetch, 12))
        .await
        .expect("the parked fetch answered once the produce arrived");
    assert!(woke.is_some());
    let fetch_api = [("request", "Fetch")];
    let s3 = scrape_when(
        addr,
        "kafka_network_requestmetrics_remotetimems_count",
        &fetch_api,
        2.0,
    )
    .await;
    assert_eq!(
        s3.value(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            &fetch
        ),
        0.0
    );
    assert_eq!(
        s3.value(
            "kafka_network_requestmetrics_remotetimems_count",
            &fetch_api
        ),
        2.0
    );
    assert!(s3.value("kafka_network_requestmetrics_remotetimems_sum", &fetch_api) > 0.0);
    drop(waiter);
    drop(c);
    documented_names_are_served(&s3);
    b.shutdown().await;
}

/// The base name of a sample (`_bucket`, `_sum`, `_count` of a histogram dropped).
fn base(name: &str) -> &str {
    ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name)
}

/// Every series docs/operations.md lists is in the scrape (ThrottleTimeMs only once a quota
/// throttles), and every series the Grafana dashboard queries is a listed one.
fn documented_names_are_served(s: &Scrape) {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let ops = std::fs::read_to_string(docs.join("operations.md")).unwrap();
    let listed: Vec<&str> = ops
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|n| n.starts_with("kafka_") || n.starts_with("josef_"))
        .collect();
    assert!(listed.len() >= 25, "{listed:?}");
    let served: std::collections::BTreeSet<&str> = s
        .samples
        .keys()
        .map(|k| k.split('{').next().unwrap())
        .flat_map(|n| [n, base(n)])
        .collect();
    for name in &listed {
        if *name != "kafka_network_requestmetrics_throttletimems" {
            assert!(served.contains(name), "{name} is documented but not served");
        }
    }
    let dashboard = std::fs::read_to_string(docs.join("grafana/josef.json")).unwrap();
    let mut queried = 0;
    for word in dashboard.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if word.starts_with("kafka_") || word.starts_with("josef_") {
            assert!(
                listed.contains(&word) || listed.contains(&base(word)),
                "the dashboard queries {word}, not documented"
            );
            queried += 1;
        }
    }
    assert!(queried >= 14, "{queried}");
}
