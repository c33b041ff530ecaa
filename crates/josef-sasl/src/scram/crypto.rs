//! RFC 5802's functions over the mechanism's hash.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

use super::ScramMechanism;

pub(crate) fn hmac(m: ScramMechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    match m {
        ScramMechanism::Sha256 => {
            // HMAC takes keys of any length: `new_from_slice` cannot fail.
            let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        ScramMechanism::Sha512 => {
            let mut mac = Hmac::<Sha512>::new_from_slice(key).expect("any key length");
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
    }
}

pub(crate) fn hash(m: ScramMechanism, data: &[u8]) -> Vec<u8> {
    match m {
        ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
        ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
    }
}

/// RFC 5802's `Hi(password, salt, i)`: PBKDF2 with HMAC of the mechanism's hash, the output as
/// long as the hash. Kafka applies no SASLprep: the password's UTF-8 bytes go in as they are.
pub fn hi(m: ScramMechanism, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
    let mut out = vec![0u8; m.hash_len()];
    match m {
        ScramMechanism::Sha256 => {
            pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
        }
        ScramMechanism::Sha512 => {
            pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
        }
    }
    out
}

pub(crate) fn xor(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}

/// `ClientProof = ClientKey XOR HMAC(StoredKey, AuthMessage)`, with
/// `ClientKey = HMAC(SaltedPassword, "Client Key")`.
pub fn client_proof(m: ScramMechanism, salted_password: &[u8], auth_message: &[u8]) -> Vec<u8> {
    let client_key = hmac(m, salted_password, b"Client Key");
    let stored_key = hash(m, &client_key);
    xor(&client_key, &hmac(m, &stored_key, auth_message))
}

/// `ServerSignature = HMAC(ServerKey, AuthMessage)`.
pub fn server_signature(m: ScramMechanism, server_key: &[u8], auth_message: &[u8]) -> Vec<u8> {
    hmac(m, server_key, auth_message)
}

/// `ServerKey = HMAC(SaltedPassword, "Server Key")`.
pub fn server_key(m: ScramMechanism, salted_password: &[u8]) -> Vec<u8> {
    hmac(m, salted_password, b"Server Key")
}
