//! Prints a node's metadata log, one line per record:
//! `cargo run -p josef-quorum --example dump_metadata_log -- DATA_DIR/__cluster_metadata-0`.

use std::path::PathBuf;

use josef_metadata::MetadataRecord;
use josef_quorum::{read_log_dir, StoredPayload};

fn main() {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: dump_metadata_log METADATA_LOG_DIR");
        std::process::exit(2);
    };
    let (entries, damage) = match read_log_dir(&dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    for e in entries {
        let at = format!("{:>6} t{} n{}", e.index, e.term, e.leader);
        match e.payload {
            StoredPayload::Blank => println!("{at} (leader's first entry)"),
            StoredPayload::Membership(v) => println!("{at} membership {v:?}"),
            StoredPayload::Records(rs) => {
                for raw in rs {
                    match MetadataRecord::decode(&raw) {
                        Ok(r) => println!("{at} {r:?}"),
                        Err(err) => println!("{at} undecodable ({err}): {} bytes", raw.len()),
                    }
                }
            }
        }
    }
    if let Some(why) = damage {
        println!("(read stopped: {why})");
    }
}
