//! The cluster contract of docs/cluster.md as data: `contract.json`, embedded here and read at run
//! time by `tests/e2e/cluster.py`, so the Rust and the Python test beds write the same files.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::{Error, Role};

/// The file both test beds read.
const CONTRACT_JSON: &str = include_str!("../contract.json");

/// A properties list in file order (a later `set` of the same key replaces the value in place).
pub type Properties = Vec<(String, String)>;

#[derive(Deserialize)]
struct Contract {
    properties: Layouts,
    timeouts: Properties,
    env: Properties,
}

#[derive(Deserialize)]
struct Layouts {
    #[serde(rename = "broker,controller")]
    combined: Properties,
    broker: Properties,
    controller: Properties,
    single: Properties,
}

fn contract() -> Result<&'static Contract, Error> {
    static PARSED: OnceLock<Result<Contract, String>> = OnceLock::new();
    PARSED
        .get_or_init(|| serde_json::from_str(CONTRACT_JSON).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| Error::Contract(e.clone()))
}

/// What a node's file says about it: the values substituted into the contract's templates.
#[derive(Debug, Clone, Default)]
pub struct NodeValues {
    /// `node.id`.
    pub node_id: i32,
    /// `controller.quorum.voters` (`id@host:port,...`).
    pub voters: String,
    /// The PLAINTEXT listener's port.
    pub client_port: Option<u16>,
    /// The CONTROLLER listener's port.
    pub controller_port: Option<u16>,
    /// The port in `advertised.listeners` (the client port unless something sits in front).
    pub advertised_port: Option<u16>,
    /// `log.dirs`.
    pub log_dirs: String,
}

/// The contract's properties for a node of `role`, its values filled in.
pub fn properties(role: Role, v: &NodeValues) -> Result<Properties, Error> {
    let layouts = &contract()?.properties;
    let template = match role {
        Role::Combined => &layouts.combined,
        Role::Broker => &layouts.broker,
        Role::Controller => &layouts.controller,
        Role::Single => &layouts.single,
    };
    let port = |p: Option<u16>| p.map(|p| p.to_string()).unwrap_or_default();
    let subs = [
        ("{node_id}", v.node_id.to_string()),
        ("{voters}", v.voters.clone()),
        ("{client_port}", port(v.client_port)),
        ("{controller_port}", port(v.controller_port)),
        (
            "{advertised_port}",
            port(v.advertised_port.or(v.client_port)),
        ),
        ("{log_dirs}", v.log_dirs.clone()),
    ];
    Ok(template
        .iter()
        .map(|(k, t)| {
            let value = subs
                .iter()
                .fold(t.clone(), |s, (from, to)| s.replace(from, to));
            (k.clone(), value)
        })
        .collect())
}

/// The lowered timeouts the tests run with (`broker.session.timeout.ms` and the like).
pub fn timeouts() -> Result<Properties, Error> {
    Ok(contract()?.timeouts.clone())
}

/// Environment variables a node gets unless the test bed's own environment sets them.
pub fn env() -> Result<Properties, Error> {
    Ok(contract()?.env.clone())
}

/// Sets `key` in `props`: replaced in place if present (so the file keeps its order), else appended.
pub fn set(props: &mut Properties, key: &str, value: &str) {
    match props.iter_mut().find(|(k, _)| k == key) {
        Some((_, v)) => *v = value.to_string(),
        None => props.push((key.to_string(), value.to_string())),
    }
}

/// The text of a properties file.
pub fn render(props: &Properties) -> String {
    props.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
}

/// The entries of a properties file as brokers write them (`meta.properties`): `key=value` lines
/// in file order, blank and `#` comment lines skipped, keys and values trimmed. A line without
/// `=` is no entry (escapes and continuation lines are not Kafka's concern there).
pub fn parse(text: &str) -> Properties {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_what_render_writes_and_skips_comments() {
        let props: Properties = vec![
            ("cluster.id".into(), "a=b".into()),
            ("node.id".into(), "3".into()),
        ];
        assert_eq!(parse(&render(&props)), props);
        let text = "#cluster.id=old\n\n! node.id=9\n version = 1 \nno entry\ncluster.id=XyZ\n";
        assert_eq!(
            parse(text),
            vec![
                ("version".to_string(), "1".to_string()),
                ("cluster.id".to_string(), "XyZ".to_string()),
            ]
        );
    }

    fn values() -> NodeValues {
        NodeValues {
            node_id: 2,
            voters: "1@127.0.0.1:1,2@127.0.0.1:2".into(),
            client_port: Some(9092),
            controller_port: Some(9093),
            advertised_port: None,
            log_dirs: "/d/node2/data".into(),
        }
    }

    fn get<'a>(p: &'a Properties, k: &str) -> Option<&'a str> {
        p.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn a_combined_node_gets_the_contract_of_docs_cluster_md() {
        let p = properties(Role::Combined, &values()).unwrap();
        let keys: Vec<&str> = p.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys[..9],
            [
                "process.roles",
                "node.id",
                "controller.quorum.voters",
                "listeners",
                "advertised.listeners",
                "controller.listener.names",
                "inter.broker.listener.name",
                "listener.security.protocol.map",
                "log.dirs"
            ]
        );
        assert_eq!(get(&p, "process.roles"), Some("broker,controller"));
        assert_eq!(get(&p, "node.id"), Some("2"));
        assert_eq!(
            get(&p, "listeners"),
            Some("PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093")
        );
        assert_eq!(
            get(&p, "advertised.listeners"),
            Some("PLAINTEXT://127.0.0.1:9092")
        );
        assert_eq!(get(&p, "log.dirs"), Some("/d/node2/data"));
        assert!(p.iter().all(|(_, v)| !v.contains('{')), "{p:?}");
    }

    #[test]
    fn role_layouts_listen_on_their_own_listeners_only() {
        let c = properties(Role::Controller, &values()).unwrap();
        assert_eq!(get(&c, "process.roles"), Some("controller"));
        assert_eq!(get(&c, "listeners"), Some("CONTROLLER://127.0.0.1:9093"));
        assert_eq!(get(&c, "advertised.listeners"), None);
        let b = properties(Role::Broker, &values()).unwrap();
        assert_eq!(get(&b, "process.roles"), Some("broker"));
        assert_eq!(get(&b, "listeners"), Some("PLAINTEXT://127.0.0.1:9092"));
        let s = properties(Role::Single, &values()).unwrap();
        assert_eq!(get(&s, "process.roles"), None);
        assert_eq!(get(&s, "controller.quorum.voters"), None);
    }

    #[test]
    fn the_lowered_timeouts_are_kafka_settings_below_the_defaults() {
        let t = timeouts().unwrap();
        assert_eq!(get(&t, "broker.session.timeout.ms"), Some("2000"));
        assert_eq!(get(&t, "broker.heartbeat.interval.ms"), Some("500"));
        assert_eq!(get(&t, "controlled.shutdown.retry.backoff.ms"), Some("500"));
        assert_eq!(t.len(), 6);
    }

    #[test]
    fn set_replaces_in_place_or_appends() {
        let mut p = vec![("a".to_string(), "1".to_string()), ("b".into(), "2".into())];
        set(&mut p, "a", "9");
        set(&mut p, "c", "3");
        assert_eq!(render(&p), "a=9\nb=2\nc=3\n");
    }
}
