//! `ssl.principal.mapping.rules` from arbitrary text (`josef_sasl::ssl_principal`): the input is
//! split at the first NUL into the rule list and a DN. Nothing may panic; a parsed list maps every
//! DN to a name or to a typed no-match.
#![no_main]

use josef_sasl::ssl_principal::SslPrincipalMapper;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (rules, dn) = text.split_once('\0').unwrap_or((&text, "CN=a,O=b"));
    if let Ok(m) = SslPrincipalMapper::parse(rules) {
        let _ = m.name(dn);
        // The printed form is what was given: it parses again.
        assert!(SslPrincipalMapper::parse(&m.to_string()).is_ok());
    }
});
