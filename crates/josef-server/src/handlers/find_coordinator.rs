//! FindCoordinator (api 10): group and transaction coordinators are always this node; the
//! internal topic is created on demand (RF 1, compacted) so the coordinator partitions exist.

use josef_protocol::messages::find_coordinator_response::Coordinator;
use josef_protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse};
use josef_protocol::{ErrorCode, StrBytes};

use crate::connection::ConnectionInfo;
use crate::state::BrokerState;
use crate::topics::{GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC};

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

fn lookup(
    state: &BrokerState,
    conn: &ConnectionInfo,
    key_type: i8,
) -> (ErrorCode, i32, String, i32) {
    let topic = match key_type {
        KEY_TYPE_GROUP => GROUP_METADATA_TOPIC,
        KEY_TYPE_TRANSACTION => TRANSACTION_STATE_TOPIC,
        _ => return (ErrorCode::InvalidRequest, -1, String::new(), -1),
    };
    if let Err(e) = state.topics.ensure_internal(topic) {
        tracing::warn!(%topic, error = %e.message, "cannot create internal topic");
        return (ErrorCode::CoordinatorNotAvailable, -1, String::new(), -1);
    }
    let (host, port) = state.advertised(conn);
    (ErrorCode::None, state.config.node_id, host, i32::from(port))
}

/// Handles a FindCoordinator request (v0–3 one key, v4+ batched).
pub fn handle(
    state: &BrokerState,
    conn: &ConnectionInfo,
    req: FindCoordinatorRequest,
    version: i16,
) -> FindCoordinatorResponse {
    let key_type = if version >= 1 {
        req.key_type
    } else {
        KEY_TYPE_GROUP
    };
    if version < 4 {
        let (code, node, host, port) = lookup(state, conn, key_type);
        return FindCoordinatorResponse {
            error_code: code.code(),
            error_message: (code != ErrorCode::None).then(|| StrBytes::from(code.name())),
            node_id: node,
            host: StrBytes::from(host),
            port,
            ..Default::default()
        };
    }
    let coordinators = req
        .coordinator_keys
        .iter()
        .map(|k| {
            let (code, node, host, port) = lookup(state, conn, key_type);
            Coordinator {
                key: k.clone(),
                node_id: node,
                host: StrBytes::from(host),
                port,
                error_code: code.code(),
                error_message: (code != ErrorCode::None).then(|| StrBytes::from(code.name())),
                ..Default::default()
            }
        })
        .collect();
    FindCoordinatorResponse {
        coordinators,
        ..Default::default()
    }
}
