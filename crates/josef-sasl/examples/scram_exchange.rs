//! A SCRAM-SHA-256 exchange with RFC 7677's example values, printing every message.
//!
//! Run with `cargo run -p josef-sasl --example scram_exchange`.

use std::sync::Arc;

use josef_sasl::client::ScramClient;
use josef_sasl::scram::{ScramCredential, ScramCredentials, ScramMechanism, ScramSaslServer};
use josef_sasl::{SaslServer, SaslStep};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let m = ScramMechanism::Sha256;
    // RFC 7677: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ== (base64).
    let salt = [
        0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12, 0x35, 0x8e, 0xec, 0xa0, 0x4b, 0x14, 0x12, 0x36, 0xfa,
        0x81,
    ];
    let mut store = ScramCredentials::new();
    store.insert(
        m,
        "user",
        ScramCredential::from_password(m, "pencil", &salt, 4096),
    );
    let server_nonce = || "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0".to_string();
    let mut server = ScramSaslServer::new(m, Arc::new(store), Arc::new(server_nonce));
    let mut client = ScramClient::new(m, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");

    let client_first = client.client_first();
    println!("C: {}", String::from_utf8_lossy(&client_first));
    let SaslStep::Challenge(server_first) = server.evaluate_response(&client_first, 0)? else {
        return Err("expected server-first".into());
    };
    println!("S: {}", String::from_utf8_lossy(&server_first));
    let client_final = client.client_final(&server_first)?;
    println!("C: {}", String::from_utf8_lossy(&client_final));
    let SaslStep::Complete(done) = server.evaluate_response(&client_final, 0)? else {
        return Err("expected completion".into());
    };
    println!("S: {}", String::from_utf8_lossy(&done.response));
    client.verify_server_final(&done.response)?;
    println!("authenticated as {}", done.principal);
    Ok(())
}
