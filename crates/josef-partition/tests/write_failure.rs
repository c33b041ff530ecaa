//! A write that fails on I/O takes the partition's log offline for writes until a restart
//! (Kafka takes the log dir offline): the failed append may be in the log with the LEO moved
//! while the producer state has nothing of it, so the client's retry of the same idempotent
//! batch must not be appended a second time (docs/reliability.md, disk faults). Here the write
//! itself succeeds and the fsync after it fails (`flush.messages=1`), on `MemoryStorage`.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use josef_log::storage::{IndexFile, MemoryStorage, Storage, StorageFile};
use josef_log::testing::TestBatch;
use josef_log::{BatchHeader, Log, LogConfig, PartitionState};
use josef_partition::{ClientBatch, Partition};
use josef_protocol::{ErrorCode, Uuid};
use josef_sequencer::ProducerStateConfig;

/// `MemoryStorage` whose `.log` files fail `sync_data` while `fail_sync` is set.
#[derive(Debug)]
struct FailingSync {
    inner: MemoryStorage,
    fail_sync: Arc<AtomicBool>,
}

#[derive(Debug)]
struct FailingSyncFile {
    inner: Box<dyn StorageFile>,
    fail_sync: Arc<AtomicBool>,
}

impl StorageFile for FailingSyncFile {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn read_bytes_at(&self, len: usize, offset: u64) -> io::Result<Bytes> {
        self.inner.read_bytes_at(len, offset)
    }
    fn write_all_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        self.inner.write_all_at(parts, offset)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        if self.fail_sync.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected fsync failure"));
        }
        self.inner.sync_data()
    }
    fn modified_ms(&self) -> io::Result<i64> {
        self.inner.modified_ms()
    }
}

impl Storage for FailingSync {
    fn open_file(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        let inner = self.inner.open_file(path, create)?;
        Ok(Box::new(FailingSyncFile {
            inner,
            fail_sync: self.fail_sync.clone(),
        }))
    }
    fn open_index(&self, path: &Path) -> io::Result<(Box<dyn IndexFile>, bool)> {
        self.inner.open_index(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read(path)
    }
    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.inner.write_atomically(path, bytes)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.remove_dir_all(dir)
    }
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.read_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn sync_file_system(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_file_system(dir)
    }
}

fn open(storage: &Arc<dyn Storage>) -> Partition {
    let config = LogConfig {
        flush_messages: 1,
        ..LogConfig::default()
    };
    let log = Log::open_in(
        storage.clone(),
        "/mem/t-0",
        config,
        0,
        PartitionState::Standalone,
    )
    .unwrap();
    Partition::single_replica_from_log(log, "t", 0, Uuid::ZERO, ProducerStateConfig::default(), 0)
        .unwrap()
}

fn produce(p: &Partition, b: BytesMut) -> Result<(i64, i64), ErrorCode> {
    let h = BatchHeader::parse(&b).unwrap();
    p.append_from_client(ClientBatch::Owned(b), &h, -1, 1, 1)
        .map(|r| (r.base_offset, r.last_offset))
        .map_err(|e| e.code)
}

fn idempotent(sequence: i32) -> BytesMut {
    TestBatch::new(0)
        .producer(8, 0, sequence)
        .record(1, None, Some(b"v"))
        .build()
}

#[test]
fn a_write_that_failed_on_io_is_not_appended_again_by_its_retry() {
    let fail_sync = Arc::new(AtomicBool::new(false));
    let storage: Arc<dyn Storage> = Arc::new(FailingSync {
        inner: MemoryStorage::new(),
        fail_sync: fail_sync.clone(),
    });
    let p = open(&storage);
    assert_eq!(produce(&p, idempotent(0)), Ok((0, 0)));

    // The batch is written, the fsync after it fails: the client is told KAFKA_STORAGE_ERROR.
    fail_sync.store(true, Ordering::SeqCst);
    assert_eq!(
        produce(&p, idempotent(1)),
        Err(ErrorCode::KafkaStorageError)
    );
    assert_eq!(p.log_end_offset(), 2, "the write itself went through");

    // The disk works again, but the log stays offline: the retry (and anything else) is refused
    // instead of being appended a second time.
    fail_sync.store(false, Ordering::SeqCst);
    assert_eq!(
        produce(&p, idempotent(1)),
        Err(ErrorCode::KafkaStorageError)
    );
    assert_eq!(
        produce(&p, idempotent(2)),
        Err(ErrorCode::KafkaStorageError)
    );
    assert_eq!(p.log_end_offset(), 2);
    assert!(p.write_failure().is_some());

    // A restart recovers the log from its files: the retry is known as a duplicate of offset 1.
    assert!(p.close().is_err(), "an offline log is not closed cleanly");
    let p = open(&storage);
    assert_eq!(produce(&p, idempotent(1)), Ok((1, 1)));
    assert_eq!(produce(&p, idempotent(2)), Ok((2, 2)));
}
