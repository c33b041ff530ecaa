//! SASL on a connection of a SASL_PLAINTEXT or SASL_SSL listener: the broker's glue around
//! josef-sasl's [`SaslGate`] (which runs the exchange over request frames), mapping its answers
//! to the connection's [`Outcome`] and its principal to [`ConnectionInfo::principal`]; and the
//! SCRAM credential store over the metadata image a listener is built with.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use josef_sasl::gate::{Answer, SaslGate};
use josef_sasl::scram::{ScramCredential, ScramCredentialStore, ScramMechanism};
use josef_sasl::SaslListener;

pub use josef_sasl::settings::SaslConfigError;

use crate::connection::{ConnectionInfo, Outcome};
use crate::security_config::SaslSettings;

/// Where SCRAM credentials come from: the metadata image in force when a login starts.
pub type ImageSource = Arc<dyn Fn() -> Arc<josef_metadata::MetadataImage> + Send + Sync>;

/// SCRAM credentials of the metadata image's UserScramCredentialRecords.
struct ImageScramStore {
    image: ImageSource,
}

impl ScramCredentialStore for ImageScramStore {
    fn scram_credential(&self, m: ScramMechanism, username: &str) -> Option<ScramCredential> {
        let image = (self.image)();
        let r = image
            .scram_credentials()
            .get(&(username.to_string(), m.mechanism_type()))?;
        Some(ScramCredential {
            salt: r.salt.to_vec(),
            stored_key: r.stored_key.to_vec(),
            server_key: r.server_key.to_vec(),
            iterations: u32::try_from(r.iterations).ok()?,
        })
    }
}

/// Builds the SASL side of one listener, SCRAM over the image's credentials.
pub fn listener(
    settings: &SaslSettings,
    image: ImageSource,
) -> Result<Arc<SaslListener>, SaslConfigError> {
    if !settings.has_implemented_mechanism() {
        tracing::warn!(
            mechanisms = ?settings.enabled_mechanisms,
            "no enabled SASL mechanism is one Josef implements (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER): every login on this listener fails; set sasl.enabled.mechanisms"
        );
    }
    let nonces = Arc::new(|| josef_sasl::kafka_nonce(rand::random()));
    settings.listener(Arc::new(ImageScramStore { image }), nonces)
}

/// The authorizer's principal of a SASL or TLS principal.
pub fn authorizer_principal(p: &josef_sasl::KafkaPrincipal) -> josef_authorizer::KafkaPrincipal {
    josef_authorizer::KafkaPrincipal::new(p.principal_type.clone(), p.name.clone())
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// What the connection does with a frame.
pub enum Gate {
    /// Hand it to the request handler.
    Handle,
    /// Answer (or close) without the handler.
    Answer(Outcome),
}

/// The SASL state of one connection.
#[derive(Debug)]
pub struct SaslConnection {
    gate: SaslGate,
}

fn outcome(answer: Answer) -> Outcome {
    match answer {
        Answer::Respond(frame) => Outcome::Respond(frame),
        Answer::RespondAndClose { frame, close } => Outcome::RespondAndClose {
            frame,
            reason: format!("SASL: {:?}", close.reason),
            delay: Duration::from_millis(close.delay_ms.max(0) as u64),
        },
        Answer::NoResponse => Outcome::NoResponse,
        Answer::Close(why) => Outcome::Close(why.to_string()),
    }
}

impl SaslConnection {
    /// A new connection of `listener`.
    pub fn new(listener: &Arc<SaslListener>) -> Self {
        SaslConnection {
            gate: SaslGate::new(listener),
        }
    }

    /// The largest frame the connection may read now (`sasl.server.max.receive.size` before
    /// authentication).
    pub fn max_receive_size(&self) -> Option<usize> {
        self.gate.max_receive_size()
    }

    /// Whether the connection has authenticated (and is not re-authenticating).
    pub fn is_authenticated(&self) -> bool {
        self.gate.principal().is_some()
    }

    /// Decides about one frame; sets `info.principal` once authenticated.
    pub fn on_frame(&mut self, info: &mut ConnectionInfo, frame: &Bytes) -> Gate {
        match self.gate.on_frame(frame, now_ms()) {
            josef_sasl::gate::Gate::Handle => Gate::Handle,
            josef_sasl::gate::Gate::Answer(a) => {
                // The principal changes only on frames the gate answers.
                if let Some(p) = self.gate.principal() {
                    info.principal = authorizer_principal(p);
                }
                Gate::Answer(outcome(a))
            }
        }
    }
}
