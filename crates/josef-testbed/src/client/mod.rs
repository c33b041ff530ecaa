//! Just enough of a Kafka client for a test bed: tell a node is up, create a topic, produce,
//! fetch, read a partition's leader and ISR. One request per connection, blocking, with
//! timeouts, over josef-protocol's frame codec.

mod data;
mod txn;

pub use data::{
    agreed_partition, create_in_sync_topic, create_topic, create_topic_assigned, fetch, partition,
    produce, read_all, Fetched, PartitionState, Produced, Record,
};
pub use txn::{
    fetch_read_committed, init_producer_id, partition_leader, transaction_coordinator,
    txn_retriable, TXN_RETRIABLE,
};

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::{
    ApiVersionsRequest, MetadataRequest, MetadataResponse, RequestHeader,
};
use josef_protocol::{decode_response_frame, encode_request_frame, RequestBody, ResponseBody};

use crate::Error;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A response bigger than this is no answer a test bed expects (and no allocation it makes).
const MAX_RESPONSE: usize = 64 << 20;

/// Sends `body` at `version` to `addr` on a fresh connection and returns the response body.
pub fn call(addr: SocketAddr, version: i16, body: RequestBody) -> Result<ResponseBody, Error> {
    let fail = |reason: String| Error::Request { addr, reason };
    let key = body.api_key();
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id: 1,
        client_id: Some("josef-testbed".into()),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_request_frame(&header, &body, &mut buf).map_err(|e| fail(e.to_string()))?;
    let io = |e: std::io::Error| fail(e.to_string());
    let mut s = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).map_err(io)?;
    s.set_read_timeout(Some(READ_TIMEOUT)).map_err(io)?;
    s.set_write_timeout(Some(READ_TIMEOUT)).map_err(io)?;
    s.write_all(&buf).map_err(io)?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).map_err(io)?;
    let len = usize::try_from(i32::from_be_bytes(len))
        .ok()
        .filter(|l| *l <= MAX_RESPONSE)
        .ok_or_else(|| fail(format!("bad response size {len:?}")))?;
    let mut frame = vec![0u8; len];
    s.read_exact(&mut frame).map_err(io)?;
    decode_response_frame(key, version, Bytes::from(frame))
        .map(|(_, b)| b)
        .map_err(|e| fail(e.to_string()))
}

/// Whether `addr` answers ApiVersions v0 with error code 0 (what "ready" means here).
pub fn api_versions_ok(addr: SocketAddr) -> bool {
    matches!(
        call(addr, 0, ApiVersionsRequest::default().into()),
        Ok(ResponseBody::ApiVersions(r)) if r.error_code == 0
    )
}

/// The Metadata (v12, all topics, no auto-creation) of the node at `addr`.
pub fn metadata(addr: SocketAddr) -> Result<MetadataResponse, Error> {
    let req = MetadataRequest {
        topics: None,
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    match call(addr, 12, req.into())? {
        ResponseBody::Metadata(m) => Ok(m),
        other => Err(Error::Request {
            addr,
            reason: format!("not a Metadata response: {other:?}"),
        }),
    }
}

/// The broker ids the node at `addr` lists in its Metadata, sorted.
pub fn broker_ids(addr: SocketAddr) -> Result<Vec<i32>, Error> {
    let mut ids: Vec<i32> = metadata(addr)?.brokers.iter().map(|b| b.node_id).collect();
    ids.sort_unstable();
    Ok(ids)
}
