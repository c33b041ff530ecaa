//! `max.connections.per.ip` and `listener.name.<l>.max.connections` on a running broker, over
//! real TCP connections (Kafka's `ConnectionQuotas`).

use std::time::Duration;

use josef_protocol::messages::ApiVersionsRequest;
use josef_protocol::ApiKey;

mod common;
use common::{start_with, Client};

async fn answers(c: &mut Client, within: Duration) -> bool {
    c.send(3, ApiVersionsRequest::default().into()).await;
    matches!(
        tokio::time::timeout(within, c.recv(ApiKey::ApiVersions, 3)).await,
        Ok(Some(_))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_over_max_connections_per_ip_is_closed_and_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[("max.connections.per.ip", "2")]).await;
    let mut one = Client::connect(&b).await;
    let mut two = Client::connect(&b).await;
    assert!(answers(&mut one, Duration::from_secs(10)).await);
    assert!(answers(&mut two, Duration::from_secs(10)).await);
    let mut three = Client::connect(&b).await;
    assert!(
        three.closed().await,
        "the third connection from 127.0.0.1 is closed"
    );
    // Closing one frees the address's slot.
    drop(one);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let mut again = Client::connect(&b).await;
        if answers(&mut again, Duration::from_secs(2)).await {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no slot after a close"
        );
    }
    assert!(answers(&mut two, Duration::from_secs(10)).await);
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_at_max_connections_serves_the_next_one_after_a_close() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(
        dir.path(),
        &[("listener.name.plaintext.max.connections", "1")],
    )
    .await;
    let mut first = Client::connect(&b).await;
    assert!(answers(&mut first, Duration::from_secs(10)).await);
    // Connected by the kernel, not accepted: no answer while the first is open.
    let mut second = Client::connect(&b).await;
    second.send(3, ApiVersionsRequest::default().into()).await;
    assert!(
        tokio::time::timeout(
            Duration::from_millis(500),
            second.recv(ApiKey::ApiVersions, 3)
        )
        .await
        .is_err(),
        "served beyond the listener's limit"
    );
    drop(first);
    let answered =
        tokio::time::timeout(Duration::from_secs(10), second.recv(ApiKey::ApiVersions, 3))
            .await
            .expect("served once the first closed");
    assert!(answered.is_some());
    b.shutdown().await;
}

/// KIP-612: an address over its `connection_creation_rate` client quota (set through
/// AlterClientQuotas) gets its new connections closed after the throttle time, unserved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_over_its_connection_creation_rate_has_new_connections_closed() {
    use josef_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
    use josef_protocol::messages::AlterClientQuotasRequest;
    use josef_protocol::ResponseBody;
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[]).await;
    let mut admin = Client::connect(&b).await;
    let req = AlterClientQuotasRequest {
        entries: vec![EntryData {
            entity: vec![EntityData {
                entity_type: "ip".into(),
                entity_name: Some("127.0.0.1".into()),
                ..Default::default()
            }],
            ops: vec![OpData {
                key: "connection_creation_rate".into(),
                value: 1.0,
                remove: false,
                ..Default::default()
            }],
            ..Default::default()
        }],
        validate_only: false,
        ..Default::default()
    };
    let ResponseBody::AlterClientQuotas(r) = admin.call(1, req).await else {
        panic!("not an AlterClientQuotas response")
    };
    assert_eq!(
        r.entries[0].error_code, 0,
        "{:?}",
        r.entries[0].error_message
    );
    // Fifty connections at once is far over 1 per second: the later ones are closed unserved.
    let mut clients = Vec::new();
    for _ in 0..50 {
        clients.push(Client::connect(&b).await);
    }
    let mut closed = 0;
    for c in clients.iter_mut().rev().take(5) {
        if c.closed().await {
            closed += 1;
        }
    }
    assert_eq!(closed, 5, "the last five of fifty connections are closed");
    // The connection opened before the quota is still served.
    assert!(answers(&mut admin, Duration::from_secs(10)).await);
    b.shutdown().await;
}
