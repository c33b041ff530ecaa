//! Generator of josef-protocol's Rust code from Apache Kafka's JSON message specs.
//!
//! [`generate_files`] reads `messages/*.json`, `coordinator-records/*.json` and `metadata-records/*.json`
//! under a specs directory and returns every generated file (path relative to the output directory → formatted Rust source);
//! [`generate`] writes them. The binary (`cargo run -p josef-protocol-codegen -- [--specs DIR] [--out DIR]`)
//! is a thin wrapper, and josef-protocol's tests call [`generate_files`] to check that the committed code is
//! up to date.
//!
//! `version-overlay.json` (see [`overlay`]) raises a few messages to versions newer than the specs,
//! where Kafka added a version with the previous version's shape.
//!
//! Naming: one module per spec file (`ProduceRequest` → `produce_request`), structs keep the spec's names,
//! fields are the snake_case of the spec's names, and a Rust keyword gets a trailing underscore
//! (`Type` → `type_`).
#![deny(missing_docs)]

pub mod emit;
pub mod overlay;
pub mod spec;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use spec::{Kind, Spec};

fn read_specs(dir: &Path) -> Result<Vec<Spec>, String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let mut specs = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        let stem = p
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        specs.push(spec::parse_spec(&stem, &text)?);
    }
    Ok(specs)
}

/// Generates every file from the specs in `specs_dir` (which holds `messages/`, `coordinator-records/` and
/// `metadata-records/`).
/// Keys are paths relative to the output directory; values are rustfmt-formatted sources.
pub fn generate_files(specs_dir: &Path) -> Result<BTreeMap<PathBuf, String>, String> {
    let mut messages = read_specs(&specs_dir.join("messages"))?;
    let overlay = overlay::parse(overlay::VERSION_OVERLAY)?;
    for s in &mut messages {
        overlay::apply(s, &overlay)?;
    }
    let records = read_specs(&specs_dir.join("coordinator-records"))?;
    let metadata = read_specs(&specs_dir.join("metadata-records"))?;
    let mut files = BTreeMap::new();

    for s in &messages {
        files.insert(
            PathBuf::from("messages").join(format!("{}.rs", emit::module_name(&s.name))),
            emit::emit_module(s)?,
        );
    }
    let msg_refs: Vec<&Spec> = messages.iter().collect();
    files.insert(
        PathBuf::from("messages/mod.rs"),
        emit::emit_mod(
            "Every request, response, header and data message of the Kafka protocol.",
            &msg_refs,
        ),
    );
    for s in &records {
        files.insert(
            PathBuf::from("coordinator_records").join(format!("{}.rs", emit::module_name(&s.name))),
            emit::emit_module(s)?,
        );
    }
    let rec_refs: Vec<&Spec> = records.iter().collect();
    files.insert(
        PathBuf::from("coordinator_records/mod.rs"),
        emit::emit_mod(
            "Keys and values of the group, share-group and transaction coordinators' log records.",
            &rec_refs,
        ),
    );
    for s in &metadata {
        files.insert(
            PathBuf::from("metadata_records").join(format!("{}.rs", emit::module_name(&s.name))),
            emit::emit_module(s)?,
        );
    }
    let meta_refs: Vec<&Spec> = metadata.iter().collect();
    files.insert(
        PathBuf::from("metadata_records/mod.rs"),
        emit::emit_mod(
            "The records of the KRaft metadata log (`__cluster_metadata`): topics, partitions, brokers, configs, ...",
            &meta_refs,
        ),
    );

    let mut apis = Vec::new();
    for req in messages.iter().filter(|s| s.kind == Kind::Request) {
        let name = req.name.trim_end_matches("Request").to_string();
        let resp = messages
            .iter()
            .find(|s| s.kind == Kind::Response && s.api_key == req.api_key)
            .ok_or_else(|| format!("no response for {}", req.name))?;
        if resp.name != format!("{name}Response") {
            return Err(format!("response of {} is named {}", req.name, resp.name));
        }
        if resp.valid != req.valid || resp.flexible != req.flexible {
            return Err(format!(
                "{} and {} disagree on versions",
                req.name, resp.name
            ));
        }
        apis.push(emit::Api {
            name,
            request: req,
            response: resp,
        });
    }
    apis.sort_by_key(|a| a.request.api_key);
    files.insert(PathBuf::from("api_key.rs"), emit::emit_api_key(&apis));
    files.insert(PathBuf::from("bodies.rs"), emit::emit_bodies(&apis));
    files.insert(
        PathBuf::from("throttle_time.rs"),
        emit::emit_throttle_time(&apis),
    );
    files.insert(
        PathBuf::from("mod.rs"),
        "//! Code generated from Kafka's message specs by josef-protocol-codegen. Do not edit.\n\n\
         mod api_key;\nmod bodies;\npub mod coordinator_records;\npub mod messages;\npub mod metadata_records;\nmod throttle_time;\n\n\
         pub use api_key::ApiKey;\npub use bodies::{RequestBody, RequestBodyView, ResponseBody, ResponseBodyView};\n"
            .to_string(),
    );

    let mut all: Vec<(&str, &Spec)> = messages.iter().map(|s| ("messages", s)).collect();
    all.extend(records.iter().map(|s| ("coordinator_records", s)));
    all.extend(metadata.iter().map(|s| ("metadata_records", s)));
    files.insert(
        PathBuf::from(TEST_VALUES_PATH),
        emit::emit_test_values(&all, &apis)?,
    );
    rustfmt_all(files)
}

/// Where the random-value builders for josef-protocol's property and differential tests go, relative to
/// the output directory (`src/generated/../../tests/generated/values.rs`).
pub const TEST_VALUES_PATH: &str = "../../tests/generated/values.rs";

/// A path inside the scratch directory for `rel`, which may start with `..`.
fn scratch_name(rel: &Path) -> PathBuf {
    rel.components()
        .map(|c| match c {
            std::path::Component::ParentDir => "up".into(),
            other => other.as_os_str().to_os_string(),
        })
        .collect()
}

/// Formats all files with one `rustfmt` run over a scratch directory (much faster than one process per
/// file).
fn rustfmt_all(files: BTreeMap<PathBuf, String>) -> Result<BTreeMap<PathBuf, String>, String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let scratch =
        std::env::temp_dir().join(format!("josef-codegen-{}-{nanos}", std::process::id()));
    let result = (|| {
        let mut paths = Vec::new();
        for (rel, src) in &files {
            let p = scratch.join(scratch_name(rel));
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            std::fs::write(&p, src).map_err(|e| format!("{}: {e}", p.display()))?;
            paths.push(p);
        }
        let output =
            Command::new(std::env::var("RUSTFMT").unwrap_or_else(|_| "rustfmt".to_string()))
                .args(["--edition", "2021"])
                .args(&paths)
                .output()
                .map_err(|e| format!("cannot run rustfmt: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "rustfmt failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        let mut out = BTreeMap::new();
        for rel in files.keys() {
            let p = scratch.join(scratch_name(rel));
            out.insert(
                rel.clone(),
                std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?,
            );
        }
        Ok(out)
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// Generates every file and writes it under `out_dir`, removing stale `.rs` files there.
pub fn generate(specs_dir: &Path, out_dir: &Path) -> Result<usize, String> {
    let files = generate_files(specs_dir)?;
    for sub in [
        "",
        "messages",
        "coordinator_records",
        "metadata_records",
        "../../tests/generated",
    ] {
        let d = out_dir.join(sub);
        if let Ok(entries) = std::fs::read_dir(&d) {
            for e in entries.flatten() {
                let p = e.path();
                let rel = Path::new(sub).join(p.file_name().unwrap_or_default());
                if p.extension().is_some_and(|x| x == "rs") && !files.contains_key(&rel) {
                    std::fs::remove_file(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                }
            }
        }
    }
    for (rel, src) in &files {
        let p = out_dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let unchanged = std::fs::read_to_string(&p)
            .map(|old| old == *src)
            .unwrap_or(false);
        if !unchanged {
            std::fs::write(&p, src).map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    Ok(files.len())
}
