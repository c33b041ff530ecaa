//! AlterClientQuotas (49) and DescribeClientQuotas (48). A cluster node forwards Alter to the
//! controller (see `handlers::handle`); a single node validates with josef-quota's store, the
//! same rules the controller runs, and appends the ClientQuotaRecords to its local metadata.
//! Describe reads the metadata image on either kind of node.

use josef_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use josef_protocol::ErrorCode;
use josef_quota::{alter_error_response, fail_accepted_entries};

use crate::quotas::store_of;
use crate::state::BrokerState;

/// AlterClientQuotas on a single node.
pub fn alter(state: &BrokerState, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse {
    let Some(local) = &state.local_metadata else {
        return alter_error_response(&req, ErrorCode::UnknownServerError);
    };
    let outcome = store_of(&local.image()).alter_client_quotas(&req);
    let records = outcome.metadata_records();
    let mut response = outcome.response;
    if records.is_empty() {
        return response;
    }
    match local.append(&records) {
        Ok(image) => state.quotas.refresh(&image),
        Err(e) => {
            tracing::error!(error = %e, "client quotas not written");
            fail_accepted_entries(&mut response, ErrorCode::UnknownServerError, &e.to_string());
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
