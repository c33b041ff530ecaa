//! SASL on the CONTROLLER listener, as processes of the built binary started by the test bed:
//! three combined nodes whose CONTROLLER listener is SASL_PLAINTEXT with PLAIN
//! (`sasl.mechanism.controller.protocol=PLAIN`, the login in the listener's JAAS entry). The
//! metadata quorum (Raft), registration, heartbeats, forwarded CreateTopics and AlterPartition all
//! go through that listener, which serves nothing to a connection that has not logged in, so the
//! cluster forming, the three brokers registering and an RF=3 topic taking an acks=all produce
//! with `min.insync.replicas=3` prove every one of them logs in. A fourth, broker-only node with
//! a wrong controller password never follows the log nor registers, logs why, and the others
//! serve on.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use josef_testbed::{BrokerCommand, Cluster, ClusterBuilder};

/// Bound of each wait for the cluster to act.
const SETTLE: Duration = Duration::from_secs(30);

const PEER_FAILED: &str = "authentication to a cluster peer failed";
const REFUSED: &str = "SASL authentication on the controller listener failed";

fn jaas(password: &str) -> String {
    format!(
        r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" password="{password}" user_controller="ctl-secret";"#
    )
}

fn bed() -> ClusterBuilder {
    Cluster::builder()
        .command(BrokerCommand::new(env!("CARGO_BIN_EXE_josef-broker")))
        .timeouts([
            ("broker.session.timeout.ms", "3000"),
            ("broker.heartbeat.interval.ms", "500"),
            ("controller.quorum.election.timeout.ms", "1000"),
        ])
        .property(
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        )
        .property("listener.name.controller.sasl.enabled.mechanisms", "PLAIN")
        .property("sasl.mechanism.controller.protocol", "PLAIN")
        .property(
            "listener.name.controller.plain.sasl.jaas.config",
            jaas("ctl-secret"),
        )
        .property("connection.failed.authentication.delay.ms", "0")
        .property("min.insync.replicas", "3")
}

fn wait_until(timeout: Duration, cond: impl FnMut() -> bool) -> bool {
    josef_testbed::wait_until(timeout, Duration::from_millis(100), cond)
}

fn brokers_seen(addr: SocketAddr) -> Vec<i32> {
    josef_testbed::client::broker_ids(addr).unwrap_or_default()
}

#[test]
fn a_sasl_plaintext_controller_listener_carries_the_quorum_and_the_controller_requests() {
    let mut cluster = bed()
        .combined(3)
        .brokers(1)
        .node_property(
            4,
            "listener.name.controller.plain.sasl.jaas.config",
            jaas("wrong"),
        )
        .build()
        .unwrap();
    for id in 1..=4 {
        cluster.node_mut(id).unwrap().launch().unwrap();
    }
    let addr = |c: &Cluster, id: i32| c.node(id).unwrap().client_addr().unwrap();
    let (a1, a2, a3) = (addr(&cluster, 1), addr(&cluster, 2), addr(&cluster, 3));

    // The quorum forms and the three combined nodes register, through the SASL listener.
    let ok = wait_until(SETTLE, || {
        [a1, a2, a3].iter().all(|a| {
            let ids = brokers_seen(*a);
            [1, 2, 3].iter().all(|id| ids.contains(id))
        })
    });
    assert!(
        ok,
        "brokers 1, 2, 3 registered (seen from 1: {:?})\n{}",
        brokers_seen(a1),
        cluster.logs(40)
    );

    // RF=3 created through node 1 (forwarded to the active controller), acks=all with
    // min.insync.replicas=3: the leader's ISR is whole, so AlterPartition went through too.
    let topic = "ctl-sasl";
    let mut code = None;
    let created = wait_until(SETTLE, || {
        code = josef_testbed::client::create_topic(a1, topic, 1, 3, &[]).ok();
        matches!(code, Some(0) | Some(36))
    });
    assert!(created, "CreateTopics: {code:?}\n{}", cluster.logs(40));
    let mut produced = None;
    let ok = wait_until(SETTLE, || {
        let Some(leader) = josef_testbed::client::partition(a1, topic, 0)
            .ok()
            .flatten()
            .filter(|p| p.leader > 0 && p.isr.len() == 3)
        else {
            return false;
        };
        let at = addr(&cluster, leader.leader);
        produced = josef_testbed::client::produce(
            at,
            topic,
            0,
            -1,
            Duration::from_secs(10),
            &[b"over sasl"],
        )
        .ok();
        produced.as_ref().is_some_and(|p| p.error_code == 0)
    });
    assert!(ok, "acks=all produce: {produced:?}\n{}", cluster.logs(40));

    // Node 4 logs in with a wrong password: it never gets the metadata log nor registers (by
    // now it would have, with the others), it says why, the controllers say they refused it, and
    // nobody else failed a login.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        assert!(!brokers_seen(a2).contains(&4), "node 4 registered");
        std::thread::sleep(Duration::from_millis(300));
    }
    let logged = wait_until(SETTLE, || {
        cluster.node(4).unwrap().log().contains(PEER_FAILED)
            && (1..=3).any(|id| cluster.node(id).unwrap().log().contains(REFUSED))
    });
    assert!(logged, "the refused login logged\n{}", cluster.logs(40));
    assert!(
        cluster
            .node(4)
            .unwrap()
            .log()
            .contains("Invalid username or password"),
        "{}",
        cluster.logs(40)
    );
    for id in 1..=4 {
        let n = cluster.node_mut(id).unwrap();
        assert!(n.is_running(), "node {id} exited\n{}", n.log());
        assert!(!n.log().contains("panicked"), "node {id} panicked");
        if id <= 3 {
            assert!(
                !n.log().contains(PEER_FAILED),
                "node {id} failed a login\n{}",
                n.log()
            );
        }
    }
    // The others serve on: another topic through another node.
    let mut code = None;
    let created = wait_until(SETTLE, || {
        code = josef_testbed::client::create_topic(a3, "ctl-sasl-2", 1, 3, &[]).ok();
        matches!(code, Some(0) | Some(36))
    });
    assert!(
        created,
        "CreateTopics after: {code:?}\n{}",
        cluster.logs(40)
    );
}
