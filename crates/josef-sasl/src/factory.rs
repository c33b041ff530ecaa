//! Creates mechanism sessions by name, from what a listener configured.

use std::fmt;
use std::sync::Arc;

use crate::error::SaslError;
use crate::mechanism::{SaslMechanism, SaslServer};
use crate::nonce::NonceSource;
use crate::oauthbearer::{OAuthBearerSaslServer, OAuthBearerValidator};
use crate::plain::{PlainSaslServer, PlainUsers};
use crate::scram::{ScramCredentialStore, ScramMechanism, ScramSaslServer};

/// The mechanisms a listener can run, with what each needs: PLAIN users, a SCRAM credential store
/// and nonce source, an OAUTHBEARER validator.
#[derive(Clone, Default)]
pub struct SaslServerFactory {
    plain: Option<Arc<PlainUsers>>,
    scram: Option<(Arc<dyn ScramCredentialStore>, Arc<dyn NonceSource>)>,
    oauthbearer: Option<Arc<dyn OAuthBearerValidator>>,
}

impl fmt::Debug for SaslServerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslServerFactory")
            .field("mechanisms", &self.supported().collect::<Vec<_>>())
            .finish()
    }
}

impl SaslServerFactory {
    /// A factory with no mechanism.
    pub fn new() -> Self {
        Self::default()
    }

    /// Enables PLAIN with these users.
    pub fn with_plain(mut self, users: PlainUsers) -> Self {
        self.plain = Some(Arc::new(users));
        self
    }

    /// Enables SCRAM-SHA-256 and SCRAM-SHA-512 over `store`, with server nonces from `nonces`.
    pub fn with_scram(
        mut self,
        store: Arc<dyn ScramCredentialStore>,
        nonces: Arc<dyn NonceSource>,
    ) -> Self {
        self.scram = Some((store, nonces));
        self
    }

    /// Enables OAUTHBEARER with `validator`.
    pub fn with_oauthbearer(mut self, validator: Arc<dyn OAuthBearerValidator>) -> Self {
        self.oauthbearer = Some(validator);
        self
    }

    /// True when sessions of `m` can be created.
    pub fn supports(&self, m: SaslMechanism) -> bool {
        match m {
            SaslMechanism::Plain => self.plain.is_some(),
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => self.scram.is_some(),
            SaslMechanism::OAuthBearer => self.oauthbearer.is_some(),
        }
    }

    /// The mechanisms sessions can be created for.
    pub fn supported(&self) -> impl Iterator<Item = SaslMechanism> + '_ {
        SaslMechanism::ALL.into_iter().filter(|m| self.supports(*m))
    }

    /// A new session of the mechanism named `name` (exact match), or UNSUPPORTED_SASL_MECHANISM.
    pub fn create(&self, name: &str) -> Result<Box<dyn SaslServer>, SaslError> {
        let unsupported = || SaslError::UnsupportedMechanism {
            mechanism: name.to_string(),
        };
        let m = SaslMechanism::from_name(name).ok_or_else(unsupported)?;
        Ok(match m {
            SaslMechanism::Plain => Box::new(PlainSaslServer::new(
                self.plain.clone().ok_or_else(unsupported)?,
            )),
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
                let (store, nonces) = self.scram.clone().ok_or_else(unsupported)?;
                let h = if m == SaslMechanism::ScramSha256 {
                    ScramMechanism::Sha256
                } else {
                    ScramMechanism::Sha512
                };
                Box::new(ScramSaslServer::new(h, store, nonces))
            }
            SaslMechanism::OAuthBearer => Box::new(OAuthBearerSaslServer::new(
                self.oauthbearer.clone().ok_or_else(unsupported)?,
            )),
        })
    }
}
