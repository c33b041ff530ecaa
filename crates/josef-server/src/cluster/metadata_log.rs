//! The committed metadata log as this node sees it (Kafka's `MetadataLoader` +
//! `QuorumMetaLogListener`): every committed batch, in log order, is decoded once and replayed into
//! the node's [`MetadataImage`] and, on a controller, handed in the same order to the controller's
//! event loop ([`ControllerEvents::replay`]), so a controller's state is always the replay of
//! committed records.

use std::sync::Arc;

use bytes::Bytes;
use josef_metadata::{MetadataDelta, MetadataImage, MetadataRecord};
use parking_lot::Mutex;
use tokio::sync::watch;

use super::event_loop::ControllerEvents;

/// What a node holds of the metadata log.
pub struct MetadataLog {
    inner: Mutex<Inner>,
    image_tx: watch::Sender<MetadataImage>,
    applied_tx: watch::Sender<u64>,
    /// The controller's event loop (controller nodes), fed every committed batch.
    controller: Option<ControllerEvents>,
}

struct Inner {
    image: MetadataImage,
    applied: u64,
}

impl MetadataLog {
    /// An empty log; `controller` is set on controller nodes.
    pub fn new(controller: Option<ControllerEvents>) -> Arc<Self> {
        let image = MetadataImage::empty();
        let (image_tx, _) = watch::channel(image.clone());
        let (applied_tx, _) = watch::channel(0);
        Arc::new(MetadataLog {
            inner: Mutex::new(Inner { image, applied: 0 }),
            image_tx,
            applied_tx,
            controller,
        })
    }

    /// The newest committed image.
    pub fn image(&self) -> MetadataImage {
        self.inner.lock().image.clone()
    }

    /// Image updates, newest first.
    pub fn subscribe_image(&self) -> watch::Receiver<MetadataImage> {
        self.image_tx.subscribe()
    }

    /// The last applied metadata offset (Raft index).
    pub fn applied(&self) -> u64 {
        self.inner.lock().applied
    }

    /// Applied-offset updates.
    pub fn subscribe_applied(&self) -> watch::Receiver<u64> {
        self.applied_tx.subscribe()
    }

    /// Waits until the applied offset reaches `offset`.
    pub async fn wait_applied(&self, offset: u64) {
        let mut rx = self.subscribe_applied();
        let _ = rx.wait_for(|a| *a >= offset).await;
    }

    /// Applies one committed batch.
    pub fn apply_batch(&self, index: u64, term: u64, batch: &[Bytes]) {
        let image = {
            let mut inner = self.inner.lock();
            if index <= inner.applied && inner.applied != 0 {
                return; // replayed already
            }
            let mut delta = MetadataDelta::new(&inner.image);
            let mut records = Vec::with_capacity(batch.len());
            for raw in batch {
                let record = match MetadataRecord::decode(raw) {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::error!(index, error = %e, "undecodable metadata record skipped");
                        continue;
                    }
                };
                if let Err(e) = delta.replay(&record) {
                    tracing::error!(index, error = %e, "metadata record not applicable");
                }
                records.push(record);
            }
            // Under the lock, so batches reach the loop in log order; before `applied` moves,
            // so whoever waits for `applied` and then queues an event finds it replayed.
            if let Some(c) = &self.controller {
                c.replay(index, records);
            }
            inner.image = delta.apply(josef_metadata::MetadataProvenance {
                last_offset: index,
                last_epoch: term,
            });
            inner.applied = index;
            inner.image.clone()
        };
        self.image_tx.send_replace(image);
        self.applied_tx.send_replace(index);
    }

    /// The image as a snapshot: the term of its last entry, then its records, each
    /// length-prefixed.
    pub fn snapshot(&self) -> (u64, Vec<u8>) {
        let inner = self.inner.lock();
        let mut out = Vec::new();
        out.extend_from_slice(&inner.image.provenance().last_epoch.to_be_bytes());
        for r in inner.image.to_records() {
            let Ok(bytes) = r.encode() else {
                tracing::error!(
                    record = r.type_name(),
                    "cannot encode a record for the snapshot"
                );
                continue;
            };
            out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            out.extend_from_slice(&bytes);
        }
        (inner.applied, out)
    }

    /// Replaces the state with a snapshot taken at `index`.
    pub fn install_snapshot(&self, index: u64, data: &[u8]) {
        let mut records = Vec::new();
        if data.len() < 8 {
            tracing::error!(index, "metadata snapshot too short; ignored");
            return;
        }
        let term = u64::from_be_bytes(data[..8].try_into().expect("8 bytes"));
        let mut rest = &data[8..];
        while rest.len() >= 4 {
            let n = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            if rest.len() - 4 < n {
                tracing::error!(index, "truncated metadata snapshot");
                break;
            }
            records.push(Bytes::copy_from_slice(&rest[4..4 + n]));
            rest = &rest[4 + n..];
        }
        {
            let mut inner = self.inner.lock();
            inner.image = MetadataImage::empty();
            inner.applied = 0;
            if let Some(c) = &self.controller {
                c.reset();
            }
        }
        self.apply_batch(index, term, &records);
    }
}
