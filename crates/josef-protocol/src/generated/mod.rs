//! Code generated from Kafka's message specs by josef-protocol-codegen. Do not edit.

mod api_key;
mod bodies;
pub mod coordinator_records;
pub mod messages;
pub mod metadata_records;
mod throttle_time;

pub use api_key::ApiKey;
pub use bodies::{RequestBody, RequestBodyView, ResponseBody, ResponseBodyView};
