//! The committed `src/generated/` is exactly what josef-protocol-codegen produces from the specs.
//! Skipped (with a message) when the shared specs directory is absent.

use std::path::Path;

#[test]
fn generated_code_matches_a_fresh_generation() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let specs = crate_dir.join("../../../shared/kafka-protocol");
    if !specs.join("messages").exists() {
        println!(
            "skipping: Kafka message specs not found at {}",
            specs.display()
        );
        return;
    }
    let committed = crate_dir.join("src/generated");
    let fresh = josef_protocol_codegen::generate_files(&specs).unwrap();
    let mut diffs = Vec::new();
    for (rel, src) in &fresh {
        match std::fs::read_to_string(committed.join(rel)) {
            Ok(old) if old == *src => {}
            Ok(_) => diffs.push(format!("differs: {}", rel.display())),
            Err(_) => diffs.push(format!("missing: {}", rel.display())),
        }
    }
    for sub in ["", "messages", "coordinator_records", "metadata_records"] {
        for e in std::fs::read_dir(committed.join(sub)).unwrap().flatten() {
            let rel = e.path().strip_prefix(&committed).unwrap().to_path_buf();
            if rel.extension().is_some_and(|x| x == "rs") && !fresh.contains_key(&rel) {
                diffs.push(format!("stale: {}", rel.display()));
            }
        }
    }
    assert!(
        diffs.is_empty(),
        "src/generated is out of date; run `cargo run -p josef-protocol-codegen`:\n{}",
        diffs.join("\n")
    );
}
