//! A logging Kafka proxy built on josef-protocol alone: it sits between clients and one broker,
//! prints every request (api, version, correlation id, client id; for Produce, the bytes of records
//! per partition, read through the request's borrowed view) and its response size, and
//! forwards the bytes unchanged, except that the broker addresses in Metadata, FindCoordinator and
//! DescribeCluster responses are rewritten to the proxy's own, so clients keep talking through it.
//!
//! `cargo run --example logging_proxy -- LISTEN_PORT UPSTREAM_HOST:PORT` (port 0 picks a free one), then
//! e.g. `kcat -L -b 127.0.0.1:LISTEN_PORT`. One upstream broker: every advertised broker becomes
//! the proxy, which is right for a single-node cluster such as josef-broker.
//!
//! Responses come back in request order on a Kafka connection, so a queue of the requests in flight
//! tells which api and version each response answers; Produce with acks=0 gets none and is not queued.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::ProduceRequestView;
use josef_protocol::{
    decode_request_header, decode_response_frame, encode_response_frame, split_frame, ApiKey,
    DecodeView, FrameError, ResponseBody,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// Larger frames close the connection rather than size a buffer (Kafka's socket.request.max.bytes).
const MAX_FRAME: usize = 100 * 1024 * 1024;

/// What a response in flight answers: `None` for an api this crate does not know.
type InFlight = (i32, Option<(ApiKey, i16)>);

/// The requests of one connection still waiting for their response, in order.
#[derive(Default)]
struct Pending {
    queue: Mutex<VecDeque<InFlight>>,
    pushed: Notify,
}

#[tokio::main]
async fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(port), Some(upstream)) = (args.next(), args.next()) else {
        eprintln!("usage: logging_proxy LISTEN_PORT UPSTREAM_HOST:PORT");
        std::process::exit(2);
    };
    let port: u16 = port.parse().map_err(io::Error::other)?;
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let advertised = listener.local_addr()?;
    println!("proxying {advertised} -> {upstream}");
    loop {
        let (client, peer) = listener.accept().await?;
        let upstream = upstream.clone();
        tokio::spawn(async move {
            match proxy(client, peer, &upstream, advertised).await {
                Ok(()) => println!("{peer}: closed"),
                Err(e) => println!("{peer}: closed: {e}"),
            }
        });
    }
}

async fn proxy(
    client: TcpStream,
    peer: SocketAddr,
    upstream: &str,
    advertised: SocketAddr,
) -> io::Result<()> {
    let server = TcpStream::connect(upstream).await?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let pending = Arc::new(Pending::default());
    // Whichever direction ends first ends the connection.
    tokio::select! {
        r = requests(client_read, server_write, peer, pending.clone()) => r,
        r = responses(server_read, client_write, peer, advertised, pending) => r,
    }
}

/// Reads one length-prefixed frame, or `None` at a clean end of stream.
async fn read_frame(read: &mut OwnedReadHalf, buf: &mut BytesMut) -> io::Result<Option<Bytes>> {
    loop {
        match split_frame(buf, MAX_FRAME) {
            Ok(Some(frame)) => return Ok(Some(frame.freeze())),
            Ok(None) => {
                if read.read_buf(buf).await? == 0 {
                    return Ok(None);
                }
            }
            Err(e) => return Err(io::Error::other(e)),
        }
    }
}

async fn write_frame(write: &mut OwnedWriteHalf, frame: &[u8]) -> io::Result<()> {
    write.write_all(&(frame.len() as u32).to_be_bytes()).await?;
    write.write_all(frame).await
}

async fn requests(
    mut from_client: OwnedReadHalf,
    mut to_server: OwnedWriteHalf,
    peer: SocketAddr,
    pending: Arc<Pending>,
) -> io::Result<()> {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    while let Some(frame) = read_frame(&mut from_client, &mut buf).await? {
        let mut header_bytes = frame.clone();
        let in_flight = match decode_request_header(&mut header_bytes) {
            Ok((api_key, header)) => {
                println!(
                    "{peer} -> {} v{} correlation {} client {:?}",
                    api_key.name(),
                    header.request_api_version,
                    header.correlation_id,
                    header.client_id.as_deref().unwrap_or("")
                );
                // The body is read through its borrowed view: nothing is allocated or copied to
                // learn the acks and where the records go.
                let mut body: &[u8] = &header_bytes;
                let produce = (api_key == ApiKey::Produce)
                    .then(|| ProduceRequestView::decode_view(&mut body, header.request_api_version))
                    .and_then(Result::ok);
                if let Some(p) = &produce {
                    for topic in p.topic_data.iter() {
                        for partition in topic.partition_data.iter() {
                            let bytes = partition.records.map_or(0, <[u8]>::len);
                            println!("    {}[{}]: {bytes} bytes", topic.name, partition.index);
                        }
                    }
                }
                let acks_zero = produce.is_some_and(|p| p.acks == 0);
                (!acks_zero).then_some((
                    header.correlation_id,
                    Some((api_key, header.request_api_version)),
                ))
            }
            // The broker answers these itself (an error, or a v0 ApiVersions): forward untouched.
            Err(FrameError::UnsupportedVersion { api_key, header }) => {
                println!(
                    "{peer} -> {} v{} (unsupported here) correlation {}",
                    api_key.name(),
                    header.request_api_version,
                    header.correlation_id
                );
                Some((header.correlation_id, None))
            }
            Err(e) => {
                println!("{peer} -> unreadable request ({e}), forwarded as is");
                let correlation_id = frame
                    .get(4..8)
                    .map_or(-1, |b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                Some((correlation_id, None))
            }
        };
        if let Some(entry) = in_flight {
            pending.queue.lock().expect("not poisoned").push_back(entry);
            pending.pushed.notify_one();
        }
        write_frame(&mut to_server, &frame).await?;
    }
    Ok(())
}

async fn responses(
    mut from_server: OwnedReadHalf,
    mut to_client: OwnedWriteHalf,
    peer: SocketAddr,
    advertised: SocketAddr,
    pending: Arc<Pending>,
) -> io::Result<()> {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    while let Some(frame) = read_frame(&mut from_server, &mut buf).await? {
        // The request is queued before it is forwarded, so its entry is there or about to be.
        let (correlation_id, api) = loop {
            let notified = pending.pushed.notified();
            if let Some(entry) = pending.queue.lock().expect("not poisoned").pop_front() {
                break entry;
            }
            notified.await;
        };
        let rewritten = api.and_then(|(key, version)| rewrite(key, version, &frame, advertised));
        let out: &[u8] = rewritten.as_deref().unwrap_or(&frame);
        println!(
            "{peer} <- correlation {correlation_id}: {} bytes{}",
            out.len(),
            if rewritten.is_some() {
                " (broker addresses rewritten)"
            } else {
                ""
            }
        );
        write_frame(&mut to_client, out).await?;
    }
    Ok(())
}

/// Points every broker address in a response at the proxy; `None` leaves the frame as it is.
fn rewrite(api_key: ApiKey, version: i16, frame: &Bytes, proxy: SocketAddr) -> Option<BytesMut> {
    if !matches!(
        api_key,
        ApiKey::Metadata | ApiKey::FindCoordinator | ApiKey::DescribeCluster
    ) {
        return None;
    }
    let (header, mut body) = decode_response_frame(api_key, version, frame.clone()).ok()?;
    let host = proxy.ip().to_string();
    let port = i32::from(proxy.port());
    match &mut body {
        ResponseBody::Metadata(m) => m.brokers.iter_mut().for_each(|b| {
            b.host = host.as_str().into();
            b.port = port;
        }),
        ResponseBody::FindCoordinator(f) => {
            // v0–v3 answer one key at the top level, v4+ a list of coordinators.
            if f.node_id >= 0 {
                f.host = host.as_str().into();
                f.port = port;
            }
            f.coordinators.iter_mut().for_each(|c| {
                if c.node_id >= 0 {
                    c.host = host.as_str().into();
                    c.port = port;
                }
            });
        }
        ResponseBody::DescribeCluster(d) => d.brokers.iter_mut().for_each(|b| {
            b.host = host.as_str().into();
            b.port = port;
        }),
        _ => return None,
    }
    let mut out = BytesMut::new();
    encode_response_frame(header.correlation_id, api_key, version, &body, &mut out).ok()?;
    // encode_response_frame writes the length prefix; write_frame adds its own.
    Some(out.split_off(4))
}
