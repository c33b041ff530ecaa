//! `meta.properties` in each log dir (KRaft version 1: `version`, `cluster.id`, `node.id`,
//! `directory.id`), and small file helpers (write via `.tmp`, fsync, rename).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use crate::config::parse_properties;

/// Why a log dir's identity cannot be established.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    /// File-system error.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file exists but is not a valid version-1 meta.properties.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// The identity a log dir records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaProperties {
    /// 22-character base64url cluster id.
    pub cluster_id: String,
    /// The node that owns the dir.
    pub node_id: i32,
    /// 22-character base64url id of this dir.
    pub directory_id: String,
}

const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Kafka's `Uuid.toString`: base64url without padding (22 characters for 16 bytes).
pub fn uuid_to_base64(bytes: &[u8; 16]) -> String {
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(URL_SAFE[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Inverse of [`uuid_to_base64`]; `None` if the text is not 22 base64url characters.
pub fn uuid_from_base64(s: &str) -> Option<[u8; 16]> {
    if s.len() != 22 {
        return None;
    }
    let mut acc: u32 = 0;
    let mut bits = 0;
    let mut out = Vec::with_capacity(16);
    for c in s.bytes() {
        let v = URL_SAFE.iter().position(|&x| x == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out.try_into().ok()
}

/// A fresh random id as Kafka prints it. Kafka never hands out ids whose base64 starts with '-'.
pub fn random_base64_uuid() -> String {
    loop {
        let s = uuid_to_base64(uuid::Uuid::new_v4().as_bytes());
        if !s.starts_with('-') {
            return s;
        }
    }
}

/// Writes `contents` to `path` through `<path>.tmp`, fsync, rename, then fsyncs the directory so
/// the rename itself survives a crash.
pub fn write_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(match path.extension() {
        Some(e) => format!("{}.tmp", e.to_string_lossy()),
        None => "tmp".to_string(),
    });
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> MetaError + '_ {
    move |source| MetaError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Reads `meta.properties` of `dir`, if there is one.
pub fn read_meta(dir: &Path) -> Result<Option<BTreeMap<String, String>>, MetaError> {
    let path = dir.join("meta.properties");
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_properties(&text)
            .map(Some)
            .map_err(|line| MetaError::Invalid {
                path: path.display().to_string(),
                reason: format!("line {line} is not key=value"),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(&path)(e)),
    }
}

/// Makes sure every log dir exists and carries a `meta.properties` for `node_id`, all with the same
/// cluster id (a fresh one if no dir has any). Returns the identity of each dir, in order.
pub fn ensure_meta(
    dirs: &[std::path::PathBuf],
    node_id: i32,
) -> Result<Vec<MetaProperties>, MetaError> {
    ensure_meta_with(dirs, node_id, None)
}

/// Like [`ensure_meta`], for a cluster node: `cluster_id` is the id of the cluster the node
/// joined (from the metadata log); a dir that names another cluster fails the start.
pub fn ensure_meta_with(
    dirs: &[std::path::PathBuf],
    node_id: i32,
    cluster_id_of_cluster: Option<&str>,
) -> Result<Vec<MetaProperties>, MetaError> {
    let mut existing = Vec::new();
    let mut cluster_id: Option<String> = None;
    for dir in dirs {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let meta = read_meta(dir)?;
        if let Some(m) = &meta {
            let path = dir.join("meta.properties").display().to_string();
            let invalid = |reason: String| MetaError::Invalid {
                path: path.clone(),
                reason,
            };
            let version = m.get("version").map(String::as_str).unwrap_or("");
            if version != "1" {
                return Err(invalid(format!(
                    "version {version:?} is not supported (Josef writes version=1)"
                )));
            }
            let nid = m
                .get("node.id")
                .and_then(|v| v.parse::<i32>().ok())
                .ok_or_else(|| invalid("missing node.id".into()))?;
            if nid != node_id {
                return Err(invalid(format!(
                    "belongs to node.id {nid}, but this broker is node.id {node_id}"
                )));
            }
            let cid = m
                .get("cluster.id")
                .cloned()
                .ok_or_else(|| invalid("missing cluster.id".into()))?;
            match &cluster_id {
                Some(c) if *c != cid => {
                    return Err(invalid(format!(
                        "cluster.id {cid} differs from {c} found in another log dir"
                    )))
                }
                _ => cluster_id = Some(cid),
            }
        }
        existing.push(meta);
    }
    if let (Some(mine), Some(theirs)) = (&cluster_id, cluster_id_of_cluster) {
        if mine != theirs {
            return Err(MetaError::Invalid {
                path: dirs[0].join("meta.properties").display().to_string(),
                reason: format!(
                    "this data dir belongs to cluster {mine}, but the metadata quorum is cluster {theirs}"
                ),
            });
        }
    }
    let cluster_id = cluster_id
        .or_else(|| cluster_id_of_cluster.map(str::to_string))
        .unwrap_or_else(random_base64_uuid);
    let mut out = Vec::new();
    for (dir, meta) in dirs.iter().zip(existing) {
        let directory_id = meta
            .as_ref()
            .and_then(|m| m.get("directory.id").cloned())
            .filter(|d| uuid_from_base64(d).is_some());
        let needs_write = directory_id.is_none();
        let props = MetaProperties {
            cluster_id: cluster_id.clone(),
            node_id,
            directory_id: directory_id.unwrap_or_else(random_base64_uuid),
        };
        if needs_write {
            let text = format!(
                "#\n#Written by josef-broker\nversion=1\ncluster.id={}\nnode.id={}\ndirectory.id={}\n",
                props.cluster_id, props.node_id, props.directory_id
            );
            let path = dir.join("meta.properties");
            write_atomically(&path, text.as_bytes()).map_err(io_err(&path))?;
        }
        out.push(props);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_uuid_round_trips_in_22_chars() {
        for _ in 0..50 {
            let u = *uuid::Uuid::new_v4().as_bytes();
            let s = uuid_to_base64(&u);
            assert_eq!(s.len(), 22);
            assert_eq!(uuid_from_base64(&s), Some(u));
        }
        // Kafka's Uuid.ZERO_UUID prints as AAAAAAAAAAAAAAAAAAAAAA.
        assert_eq!(uuid_to_base64(&[0; 16]), "AAAAAAAAAAAAAAAAAAAAAA");
    }

    #[test]
    fn meta_properties_is_written_once_and_kept() {
        let d = tempfile::tempdir().unwrap();
        let dirs = vec![d.path().join("a"), d.path().join("b")];
        let first = ensure_meta(&dirs, 3).unwrap();
        assert_eq!(first[0].cluster_id, first[1].cluster_id);
        assert_ne!(first[0].directory_id, first[1].directory_id);
        let text = std::fs::read_to_string(dirs[0].join("meta.properties")).unwrap();
        assert!(text.contains("version=1"));
        assert!(text.contains("node.id=3"));
        let again = ensure_meta(&dirs, 3).unwrap();
        assert_eq!(first, again);
    }

    #[test]
    fn meta_properties_of_another_node_fails_the_start() {
        let d = tempfile::tempdir().unwrap();
        let dirs = vec![d.path().to_path_buf()];
        ensure_meta(&dirs, 1).unwrap();
        let e = ensure_meta(&dirs, 2).unwrap_err();
        assert!(e.to_string().contains("node.id 1"));
    }

    #[test]
    fn a_data_dir_of_another_cluster_fails_the_start_naming_both() {
        let d = tempfile::tempdir().unwrap();
        let dirs = vec![d.path().to_path_buf()];
        let ours = ensure_meta_with(&dirs, 1, Some("clusterA0000000000000A")).unwrap();
        assert_eq!(ours[0].cluster_id, "clusterA0000000000000A");
        let before = std::fs::read_to_string(d.path().join("meta.properties")).unwrap();
        let e = ensure_meta_with(&dirs, 1, Some("clusterB0000000000000B")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("clusterA0000000000000A") && msg.contains("clusterB0000000000000B"),
            "{msg}"
        );
        // Refused, not rewritten: the dir still names its own cluster.
        let after = std::fs::read_to_string(d.path().join("meta.properties")).unwrap();
        assert_eq!(before, after);
        // The same cluster still starts.
        assert!(ensure_meta_with(&dirs, 1, Some("clusterA0000000000000A")).is_ok());
    }
}
