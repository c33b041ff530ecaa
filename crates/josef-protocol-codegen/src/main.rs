//! `cargo run -p josef-protocol-codegen -- [--specs DIR] [--out DIR]`: regenerates josef-protocol's code.
//!
//! Defaults (relative to the workspace root): specs `../shared/kafka-protocol`,
//! output `crates/josef-protocol/src/generated`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut specs = root.join("../shared/kafka-protocol");
    let mut out = root.join("crates/josef-protocol/src/generated");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--specs", Some(v)) => specs = PathBuf::from(v),
            ("--out", Some(v)) => out = PathBuf::from(v),
            _ => {
                eprintln!("usage: josef-protocol-codegen [--specs DIR] [--out DIR]");
                return ExitCode::from(2);
            }
        }
    }
    match josef_protocol_codegen::generate(&specs, &out) {
        Ok(n) => {
            println!("wrote {n} files to {}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
