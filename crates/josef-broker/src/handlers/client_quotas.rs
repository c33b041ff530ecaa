//! AlterClientQuotas (49) and DescribeClientQuotas (48). A cluster node forwards Alter to the
//! controller (see `handlers::handle`); a single node validates with josef-quota's store, the
//! same rules the controller runs, and appends the ClientQuotaRecords to its local metadata.
//! Describe reads the metadata image on either kind of node.

use josef_metadata::MetadataRecord;
use josef_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use josef_protocol::ErrorCode;

use crate::quotas::{alter_error_response, store_of};
use crate::state::BrokerState;

/// AlterClientQuotas on a single node.
pub fn alter(state: &BrokerState, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse {
    let Some(local) = &state.local_metadata else {
        return alter_error_response(&req, ErrorCode::UnknownServerError);
    };
    let outcome = store_of(&local.image()).alter_client_quotas(&req);
    let mut response = outcome.response;
    if outcome.records.is_empty() {
        return response;
    }
    let records: Vec<MetadataRecord> = outcome
        .records
        .into_iter()
        .map(MetadataRecord::ClientQuota)
        .collect();
    match local.append(&records) {
        Ok(image) => state.quotas.refresh(&image),
        Err(e) => {
            tracing::error!(error = %e, "client quotas not written");
            for entry in response.entries.iter_mut().filter(|e| e.error_code == 0) {
                entry.error_code = ErrorCode::UnknownServerError.code();
                entry.error_message = Some(e.to_string().into());
            }
        }
    }
    response
}

/// DescribeClientQuotas, from the metadata image.
pub fn describe(
    state: &BrokerState,
    req: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    store_of(&state.metadata_image()).describe_client_quotas(&req)
}
