//! Prints a partition directory the way Kafka's dump-log tool does: segments with their batches
//! (offsets, position, producer fields, CRC check), offset and time index entries, aborted
//! transactions, producer snapshots and checkpoints. Reads the files only; never modifies them.
//!
//! ```text
//! cargo run --example dump_log -- DIR [--records]
//! ```

use std::path::{Path, PathBuf};

use bytes::Bytes;
use josef::log::index::AbortedTxn;
use josef::log::naming::offset_from_file_name;
use josef::records::{Batches, DecompressLimits};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: dump_log DIR [--records]");
        std::process::exit(2);
    };
    let show_records = args.any(|a| a == "--records");
    if let Err(e) = dump(Path::new(&dir), show_records) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn dump(dir: &Path, show_records: bool) -> std::io::Result<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for path in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = std::fs::read(&path)?;
        let base = offset_from_file_name(&name);
        println!("Dumping {}", path.display());
        match (base, extension(&name)) {
            (Some(base), "log") => dump_segment(base, Bytes::from(bytes), show_records),
            (Some(base), "index") => dump_offset_index(base, &bytes),
            (Some(base), "timeindex") => dump_time_index(base, &bytes),
            (Some(_), "txnindex") => dump_txn_index(&bytes),
            (Some(base), "snapshot") => {
                println!(
                    "producer snapshot at offset {base}: {} bytes (caller's format)",
                    bytes.len()
                );
            }
            _ => match std::str::from_utf8(&bytes) {
                Ok(text) if bytes.len() < 4096 => {
                    for line in text.lines() {
                        println!("  {line}");
                    }
                }
                _ => println!("  {} bytes", bytes.len()),
            },
        }
    }
    Ok(())
}

fn extension(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or("")
}

fn dump_segment(base: i64, bytes: Bytes, show_records: bool) {
    let total = bytes.len();
    println!("Log starting offset: {base}");
    let mut position = 0usize;
    for batch in Batches::new(bytes) {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                println!("  invalid bytes at position {position} of {total}: {e}");
                return;
            }
        };
        let h = *batch.header();
        let size = h.total_size();
        println!(
            "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} producerId: {} \
             producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} isControl: {} \
             deleteHorizonMs: {:?} position: {} CreateTime: {} size: {} magic: {} compresscodec: {} \
             crc: {} isvalid: {}",
            h.base_offset,
            h.last_offset(),
            h.record_count,
            h.base_sequence,
            h.last_sequence(),
            h.producer_id,
            h.producer_epoch,
            h.partition_leader_epoch,
            h.is_transactional(),
            h.is_control(),
            h.delete_horizon_ms(),
            position,
            h.max_timestamp,
            size,
            h.magic,
            h.compression().map_or("invalid", |c| c.name()),
            h.crc,
            batch.validate_crc().is_ok(),
        );
        if show_records {
            match batch.records(&DecompressLimits::default()) {
                Ok(records) => {
                    for r in records {
                        match r {
                            Ok(r) => println!(
                                "| offset: {} CreateTime: {} keySize: {} valueSize: {} headerKeys: [{}]",
                                r.offset,
                                r.timestamp,
                                r.key.as_ref().map_or(-1, |k| k.len() as i64),
                                r.value.as_ref().map_or(-1, |v| v.len() as i64),
                                r.headers
                                    .iter()
                                    .map(|x| String::from_utf8_lossy(&x.key).into_owned())
                                    .collect::<Vec<_>>()
                                    .join(",")
                            ),
                            Err(e) => println!("| invalid record: {e}"),
                        }
                    }
                }
                Err(e) => println!("| records unreadable: {e}"),
            }
        }
        position += size;
    }
}

fn dump_offset_index(base: i64, bytes: &[u8]) {
    for (i, e) in bytes.chunks_exact(8).enumerate() {
        let rel = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
        let pos = u32::from_be_bytes([e[4], e[5], e[6], e[7]]);
        if i > 0 && rel == 0 && pos == 0 {
            println!("  ({} more preallocated zero entries)", bytes.len() / 8 - i);
            break;
        }
        println!("offset: {} position: {}", base + i64::from(rel), pos);
    }
    if !bytes.len().is_multiple_of(8) {
        println!("  ({} trailing bytes: not a whole entry)", bytes.len() % 8);
    }
}

fn dump_time_index(base: i64, bytes: &[u8]) {
    for (i, e) in bytes.chunks_exact(12).enumerate() {
        let ts = i64::from_be_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]]);
        let rel = u32::from_be_bytes([e[8], e[9], e[10], e[11]]);
        if i > 0 && ts == 0 && rel == 0 {
            println!(
                "  ({} more preallocated zero entries)",
                bytes.len() / 12 - i
            );
            break;
        }
        println!("timestamp: {} offset: {}", ts, base + i64::from(rel));
    }
    if !bytes.len().is_multiple_of(12) {
        println!("  ({} trailing bytes: not a whole entry)", bytes.len() % 12);
    }
}

fn dump_txn_index(bytes: &[u8]) {
    for e in bytes.chunks_exact(34) {
        match AbortedTxn::decode(e) {
            Some(t) => println!(
                "version: 0 producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
                t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset
            ),
            None => println!("  invalid entry"),
        }
    }
    if !bytes.len().is_multiple_of(34) {
        println!("  ({} trailing bytes: not a whole entry)", bytes.len() % 34);
    }
}
