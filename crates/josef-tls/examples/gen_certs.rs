//! Writes a test PKI for the TLS examples in `config/security/`: a CA, a server certificate for
//! `localhost` / `127.0.0.1` (key and chain in one PEM file, as `ssl.keystore.location` takes it)
//! and a client certificate `CN=alice,O=josef` for mTLS. Pure Rust (rcgen), no openssl CLI.
//!
//! `cargo run -p josef-tls --example gen_certs -- ./josef-certs`

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "./josef-certs".into()),
    );
    std::fs::create_dir_all(&dir)?;
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "josef example CA");
    let ca = ca_params.self_signed(&ca_key)?;
    let server_key = rcgen::KeyPair::generate()?;
    let server = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])?
        .signed_by(&server_key, &ca, &ca_key)?;
    let client_key = rcgen::KeyPair::generate()?;
    let mut client_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::OrganizationName, "josef");
    dn.push(rcgen::DnType::CommonName, "alice");
    client_params.distinguished_name = dn;
    let client = client_params.signed_by(&client_key, &ca, &ca_key)?;
    std::fs::write(dir.join("ca.pem"), ca.pem())?;
    std::fs::write(
        dir.join("server.pem"),
        format!("{}{}", server_key.serialize_pem(), server.pem()),
    )?;
    std::fs::write(dir.join("client.pem"), client.pem())?;
    std::fs::write(dir.join("client-key.pem"), client_key.serialize_pem())?;
    println!(
        "wrote ca.pem, server.pem, client.pem, client-key.pem to {}",
        dir.display()
    );
    Ok(())
}
