//! Kafka's own stock properties files (their keys and values, in `config/kafka-stock/`) parse to
//! a broker configuration with warnings only, and the broker binary starts from Kafka's
//! `server.properties` and answers ApiVersions.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use josef_server::config::{read_properties_file, BrokerConfig, ConfigError, ConfigWarning};

fn stock(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/kafka-stock")
        .join(name)
}

fn load(name: &str) -> BTreeMap<String, String> {
    read_properties_file(&stock(name)).unwrap()
}

/// Parses, checks that no setting is warned about twice and that the warnings are of the
/// "accepted" kinds; returns the config and the warned keys.
fn parse_with_warnings_only(props: BTreeMap<String, String>) -> (BrokerConfig, Vec<String>) {
    let (c, warnings) = BrokerConfig::from_properties_with_warnings(props.clone())
        .unwrap_or_else(|e| panic!("{e}"));
    let keys: Vec<String> = warnings.iter().map(|w| w.key().to_string()).collect();
    let mut dedup = keys.clone();
    dedup.dedup();
    assert_eq!(dedup, keys, "one warning per setting");
    for w in &warnings {
        assert!(props.contains_key(w.key()), "{w}");
        assert!(
            matches!(
                w,
                ConfigWarning::NotUsed { .. } | ConfigWarning::Shadowed { .. }
            ),
            "{w}"
        );
    }
    (c, keys)
}

#[test]
fn every_stock_file_is_here() {
    let mut names: Vec<String> = std::fs::read_dir(stock(""))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".properties"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "kafka4-broker.properties",
            "kafka4-controller.properties",
            "kraft-broker.properties",
            "kraft-controller.properties",
            "kraft-reconfig-server.properties",
            "kraft-server.properties",
            "server.properties",
        ]
    );
}

#[test]
fn zookeeper_mode_server_properties_is_a_single_node() {
    let (c, warned) = parse_with_warnings_only(load("server.properties"));
    assert_eq!(c.node_id, 0, "broker.id=0 is the node id");
    assert!(c.cluster.is_none());
    assert_eq!(c.log_dirs, [PathBuf::from("/tmp/kafka-logs")]);
    assert_eq!(c.group_initial_rebalance_delay_ms, 0);
    assert_eq!(
        warned,
        [
            "num.io.threads",
            "num.network.threads",
            "socket.receive.buffer.bytes",
            "socket.send.buffer.bytes",
            "zookeeper.connect",
            "zookeeper.connection.timeout.ms",
        ]
    );
}

#[test]
fn kraft_combined_server_properties_is_a_one_voter_cluster() {
    let (c, warned) = parse_with_warnings_only(load("kraft-server.properties"));
    let cl = c.cluster.as_ref().unwrap();
    assert!(cl.is_broker() && cl.is_controller());
    assert_eq!(cl.voters.len(), 1);
    assert_eq!(c.offsets_topic_replication_factor, 1);
    assert!(warned.contains(&"share.coordinator.state.topic.min.isr".to_string()));
}

#[test]
fn a_combined_or_controller_node_bootstrapping_from_itself_parses() {
    for name in [
        "kraft-reconfig-server.properties",
        "kraft-controller.properties",
        "kafka4-controller.properties",
    ] {
        let (c, _) = parse_with_warnings_only(load(name));
        let cl = c.cluster.unwrap();
        assert_eq!(cl.voters.len(), 1, "{name}");
        assert_eq!(cl.voters[0].id, c.node_id, "{name}");
        assert_eq!(cl.voters[0].address(), "localhost:9093", "{name}");
    }
}

/// A broker-only node of a dynamic quorum needs the voter ids, which Kafka reads from the
/// controllers; Josef asks for `controller.quorum.voters` (the one line added here).
#[test]
fn a_broker_only_node_needs_the_voters() {
    for name in ["kraft-broker.properties", "kafka4-broker.properties"] {
        let mut props = load(name);
        let e = BrokerConfig::from_properties(props.clone()).unwrap_err();
        assert!(
            matches!(&e, ConfigError::Invalid { key, .. } if key == "controller.quorum.bootstrap.servers"),
            "{name}: {e}"
        );
        props.insert("controller.quorum.voters".into(), "1@localhost:9093".into());
        let (c, warned) = parse_with_warnings_only(props);
        assert!(!c.cluster.unwrap().is_controller());
        assert!(warned.contains(&"controller.quorum.bootstrap.servers".to_string()));
    }
}

/// Kills the child when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_binary_starts_from_kafkas_server_properties_and_answers_api_versions() {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_josef-broker"))
        .arg(stock("server.properties"))
        .args(["--listeners", "PLAINTEXT://127.0.0.1:0"])
        .arg("--log-dirs")
        .arg(dir.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    let stdout = running.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("listening on ") {
                let _ = tx.send(addr.to_string());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the broker prints `listening on` within 30 s");

    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let header = josef_protocol::RequestHeader {
        request_api_key: josef_protocol::ApiKey::ApiVersions as i16,
        request_api_version: 3,
        correlation_id: 42,
        client_id: Some("stock-config-test".into()),
        ..Default::default()
    };
    let body: josef_protocol::RequestBody = josef_protocol::messages::ApiVersionsRequest {
        client_software_name: "josef-test".into(),
        client_software_version: "1".into(),
        ..Default::default()
    }
    .into();
    let mut buf = bytes::BytesMut::new();
    josef_protocol::encode_request_frame(&header, &body, &mut buf).unwrap();
    std::io::Write::write_all(&mut s, &buf).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let n = i32::from_be_bytes(len);
    assert!((1..1 << 20).contains(&n), "frame length {n}");
    let mut frame = vec![0u8; n as usize];
    s.read_exact(&mut frame).unwrap();
    let (h, b) = josef_protocol::decode_response_frame(
        josef_protocol::ApiKey::ApiVersions,
        3,
        bytes::Bytes::from(frame),
    )
    .unwrap();
    assert_eq!(h.correlation_id, 42);
    let josef_protocol::ResponseBody::ApiVersions(r) = b else {
        panic!("not an ApiVersions answer")
    };
    assert_eq!(r.error_code, 0);
    assert!(!r.api_keys.is_empty());

    // The warnings went to stderr, one line per unused setting.
    let _ = running.0.kill();
    let _ = running.0.wait();
    // Killed and reaped: its stderr is at end of file.
    let mut err = String::new();
    running
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let lines = |needle: &str| err.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(lines("setting `zookeeper.connect` is not used"), 1, "{err}");
    assert_eq!(
        lines("setting `num.network.threads` is not used"),
        1,
        "{err}"
    );
}
