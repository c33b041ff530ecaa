//! josef-server over a transport of your own: a whole broker (here on in-memory storage) serving
//! one connection that is an in-memory pipe rather than a socket. Any `AsyncRead + AsyncWrite`
//! stream works the same way (a QUIC stream, a Unix socket, a test harness).
//!
//! ```text
//! cargo run -p josef-server --example in_memory_transport
//! ```

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::{ApiVersionsRequest, RequestHeader};
use josef_protocol::{decode_response_frame, encode_request_frame, ApiKey, ResponseBody};
use josef_server::config::BrokerConfig;
use josef_server::connection::{serve_connection, ConnectionInfo, ConnectionLimits};
use josef_server::log_storage::LogStorage;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let apis = run().await?;
    println!("served over an in-memory pipe: ApiVersions lists {apis} APIs");
    Ok(())
}

/// Starts the broker, serves the pipe, asks ApiVersions over it; returns how many APIs it lists.
pub async fn run() -> Result<usize, Box<dyn std::error::Error>> {
    // A broker as josef-broker would start it, its logs in memory, its listener on a free port
    // (TCP still works beside the pipe).
    let dir = tempfile::tempdir()?;
    let mut config = BrokerConfig {
        log_dirs: vec![dir.path().to_path_buf()],
        log_storage: LogStorage::Memory,
        ..BrokerConfig::default()
    };
    config.listeners[0].port = 0;
    let broker = josef_server::Broker::start(config).await?;

    // The transport: one end for the broker, one for the client.
    let (mut client, server_end) = tokio::io::duplex(64 * 1024);
    let stop = CancellationToken::new();
    let l = &broker.listeners()[0];
    let info = ConnectionInfo::new(l.name.clone(), l.addr.port(), "127.0.0.1:1".parse()?);
    let limits = ConnectionLimits::default();
    tokio::spawn(serve_connection(
        server_end,
        info,
        Arc::clone(broker.state()),
        limits,
        stop.clone(),
    ));

    // Kafka's protocol over it: ApiVersions v3.
    let header = RequestHeader {
        request_api_key: ApiKey::ApiVersions as i16,
        request_api_version: 3,
        correlation_id: 1,
        client_id: Some("example".into()),
        ..Default::default()
    };
    let mut frame = BytesMut::new();
    encode_request_frame(&header, &ApiVersionsRequest::default().into(), &mut frame)?;
    client.write_all(&frame).await?;
    let mut len = [0u8; 4];
    client.read_exact(&mut len).await?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    client.read_exact(&mut body).await?;
    let (_, response) = decode_response_frame(ApiKey::ApiVersions, 3, Bytes::from(body))?;
    let ResponseBody::ApiVersions(versions) = response else {
        return Err("not an ApiVersions response".into());
    };
    if versions.error_code != 0 {
        return Err(format!("ApiVersions error {}", versions.error_code).into());
    }
    stop.cancel();
    broker.shutdown().await;
    Ok(versions.api_keys.len())
}
