//! From a request frame to a response frame: decode, check the version against what this broker
//! serves, route to the API's handler, encode. Malformed input closes the connection (as Kafka
//! does); ApiVersions of an unknown version gets a v0 UNSUPPORTED_VERSION answer.

use bytes::Bytes;
use josef_protocol::messages::api_versions_response::ApiVersion;
use josef_protocol::messages::ApiVersionsResponse;
use josef_protocol::{
    decode_request_frame, encode_response_frame_chunks, ApiKey, ErrorCode, FrameError, RequestBody,
    RequestHeader, ResponseBody,
};

use crate::connection::{ConnectionInfo, FrameHandler, Outcome};
use crate::handlers;
use crate::state::BrokerState;

/// The APIs this broker serves, with the versions it serves: every version josef-protocol
/// decodes for the data path, as Kafka before 4.0 (Produce v0–2 legacy message sets are
/// up-converted on append, Fetch v0–3 get their data down-converted to magic 0/1, ListOffsets v0
/// answers the legacy old_style_offsets).
pub fn served_versions(key: ApiKey) -> Option<(i16, i16)> {
    let (min, max) = key.valid_versions();
    let range = match key {
        ApiKey::Produce | ApiKey::Fetch | ApiKey::ListOffsets => (min, max),
        ApiKey::Metadata
        | ApiKey::ApiVersions
        | ApiKey::CreateTopics
        | ApiKey::DeleteTopics
        | ApiKey::CreatePartitions
        | ApiKey::FindCoordinator
        | ApiKey::DescribeConfigs
        | ApiKey::IncrementalAlterConfigs
        | ApiKey::AlterConfigs
        | ApiKey::DeleteRecords
        | ApiKey::DescribeCluster
        | ApiKey::DescribeLogDirs
        | ApiKey::InitProducerId
        | ApiKey::DescribeProducers
        | ApiKey::OffsetForLeaderEpoch => (min, max),
        _ => return handlers::extra_served_versions(key),
    };
    Some(range)
}

/// The versions served of `key` by a node that is (or is not) part of a cluster.
pub fn served_versions_of(key: ApiKey, cluster: bool) -> Option<(i16, i16)> {
    served_versions(key).or_else(|| {
        if cluster {
            handlers::cluster_served_versions(key)
        } else {
            None
        }
    })
}

/// The ApiVersions answer: every served API with its range, the transactions v2 versions only
/// when `transaction.version` is finalized at 2 or above (see [`crate::features`]), and the
/// feature itself (supported levels, and finalized unless 0). A cluster node adds the rest of its
/// features from the metadata image (`handlers::cluster::add_features`).
pub fn api_versions_body(cluster: bool, transaction_version: i16) -> ApiVersionsResponse {
    use josef_protocol::messages::api_versions_response::{
        FinalizedFeatureKey, SupportedFeatureKey,
    };
    let mut r = ApiVersionsResponse::default();
    for key in ApiKey::ALL {
        if let Some(range) = served_versions_of(key, cluster) {
            let (min, max) = crate::features::advertised_range(key, range, transaction_version);
            r.api_keys.push(ApiVersion {
                api_key: key as i16,
                min_version: min,
                max_version: max,
                ..Default::default()
            });
        }
    }
    let name = crate::features::TRANSACTION_VERSION_FEATURE;
    r.supported_features.push(SupportedFeatureKey {
        name: name.into(),
        min_version: crate::features::TRANSACTION_VERSION_MIN,
        max_version: crate::features::TRANSACTION_VERSION_MAX,
        ..Default::default()
    });
    if !cluster && transaction_version > 0 {
        r.finalized_features.push(FinalizedFeatureKey {
            name: name.into(),
            max_version_level: transaction_version,
            min_version_level: transaction_version,
            ..Default::default()
        });
    }
    r
}

/// What a handler wants sent back.
#[allow(clippy::large_enum_variant)] // built once per request, moved straight into the encoder
pub enum Reply {
    /// A response body.
    Body(ResponseBody),
    /// No response (Produce acks=0).
    None,
    /// Close the connection without answering.
    Close(String),
}

fn encode(header: &RequestHeader, key: ApiKey, body: &ResponseBody) -> Outcome {
    // Records (Fetch) are referenced, not copied: they go out with one vectored write.
    match encode_response_frame_chunks(header.correlation_id, key, header.request_api_version, body)
    {
        Ok(frame) => Outcome::Respond(frame),
        Err(e) => Outcome::Close(format!(
            "cannot encode {key:?} v{} response: {e}",
            header.request_api_version
        )),
    }
}

fn unsupported_api_versions(correlation_id: i32) -> Outcome {
    let body = ApiVersionsResponse {
        error_code: ErrorCode::UnsupportedVersion.code(),
        api_keys: vec![ApiVersion {
            api_key: ApiKey::ApiVersions as i16,
            min_version: served_versions(ApiKey::ApiVersions).map_or(0, |r| r.0),
            max_version: served_versions(ApiKey::ApiVersions).map_or(0, |r| r.1),
            ..Default::default()
        }],
        ..Default::default()
    };
    match encode_response_frame_chunks(
        correlation_id,
        ApiKey::ApiVersions,
        0,
        &ResponseBody::ApiVersions(body),
    ) {
        Ok(frame) => Outcome::Respond(frame),
        Err(e) => Outcome::Close(e.to_string()),
    }
}

impl FrameHandler for BrokerState {
    async fn handle(&self, conn: &ConnectionInfo, frame: Bytes) -> Outcome {
        if let Some(node) = &self.cluster {
            node.initial_catch_up().await;
        }
        // ApiVersions accepts every version: an unknown one is answered at v0 with
        // UNSUPPORTED_VERSION, before the rest of the (maybe unparsable) header is read.
        if frame.len() >= 8 {
            let key = i16::from_be_bytes([frame[0], frame[1]]);
            let version = i16::from_be_bytes([frame[2], frame[3]]);
            if key == ApiKey::ApiVersions as i16 {
                let (min, max) = served_versions(ApiKey::ApiVersions).unwrap_or((0, 0));
                if version < min || version > max {
                    let corr = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
                    return unsupported_api_versions(corr);
                }
            }
        }
        let size = frame.len();
        let (header, mut body) = match decode_request_frame(frame) {
            Ok(x) => x,
            Err(FrameError::MalformedBody {
                api_key: ApiKey::ApiVersions,
                header,
                ..
            }) => {
                // Kafka answers an unparsable ApiVersions body with INVALID_REQUEST... but a v0
                // response is what every client can read; keep it simple and close like others.
                return Outcome::Close(format!(
                    "malformed ApiVersions v{} request",
                    header.request_api_version
                ));
            }
            Err(e) => return Outcome::Close(e.to_string()),
        };
        let key = body.api_key();
        let version = header.request_api_version;
        match served_versions_of(key, self.cluster.is_some()) {
            Some((min, max)) if version >= min && version <= max => {}
            _ => {
                return Outcome::Close(format!("{key:?} v{version} is not served"));
            }
        }
        tracing::trace!(
            ?key,
            version,
            correlation_id = header.correlation_id,
            "request"
        );
        if let Some(quota) = self.quotas.begin(self, conn, &header, &mut body, size) {
            let mut busy = std::time::Duration::ZERO;
            let reply =
                crate::quotas::timed(handlers::handle(self, conn, &header, body), &mut busy).await;
            return self
                .quotas
                .outcome(&quota, busy, reply, |resp| encode(&header, key, resp));
        }
        match handlers::handle(self, conn, &header, body).await {
            Reply::Body(resp) => encode(&header, key, &resp),
            Reply::None => Outcome::NoResponse,
            Reply::Close(reason) => Outcome::Close(reason),
        }
    }
}

/// Convenience for handlers: turn a typed body into a [`Reply`].
pub fn reply(body: impl Into<ResponseBody>) -> Reply {
    Reply::Body(body.into())
}

#[allow(dead_code)]
fn _assert_request_body_is_send(b: RequestBody) -> impl Send {
    b
}
