//! Client sides of the mechanisms: the single messages for tests and tools, and
//! [`SaslClientExchange`], the whole PLAIN / SCRAM login a broker runs towards another broker's
//! SASL listener.

mod exchange;
mod scram;

pub use exchange::{ClientStep, SaslClientError, SaslClientExchange};

pub use crate::oauthbearer::message::client_initial_response as oauthbearer_client_response;
pub use crate::oauthbearer::unsecured_token;
pub use scram::{ScramClient, ScramClientError};

/// A PLAIN message `authzid NUL user NUL password`.
pub fn plain_message(authorization_id: &str, username: &str, password: &str) -> Vec<u8> {
    format!("{authorization_id}\0{username}\0{password}").into_bytes()
}
