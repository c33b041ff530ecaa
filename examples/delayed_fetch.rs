//! A fetch waits in the purgatory until `fetch.min.bytes` are available below the high watermark,
//! or `fetch.max.wait.ms` passes, and then answers with whatever is there (Kafka's
//! `DelayedFetch`).
//!
//! Run with `cargo run --example delayed_fetch`.

use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use josef_timer::{DelayedOperation, Purgatory, SystemClock};

type TopicPartition = (String, i32);

/// A partition's committed (below the high watermark) batches: `(base offset, size in bytes)`.
#[derive(Default)]
struct Log {
    batches: Mutex<Vec<(i64, usize)>>,
}

impl Log {
    fn append(&self, base_offset: i64, bytes: usize) {
        self.batches
            .lock()
            .expect("log lock")
            .push((base_offset, bytes));
    }

    /// Bytes of the batches at or after `offset`.
    fn bytes_from(&self, offset: i64) -> usize {
        let batches = self.batches.lock().expect("log lock");
        batches
            .iter()
            .filter(|(base, _)| *base >= offset)
            .map(|(_, b)| b)
            .sum()
    }
}

struct DelayedFetch {
    max_wait_ms: u64,
    min_bytes: usize,
    /// Per partition: where this consumer reads from.
    positions: Vec<(TopicPartition, Arc<Log>, i64)>,
    respond: mpsc::Sender<usize>,
}

impl DelayedOperation for DelayedFetch {
    fn delay_ms(&self) -> u64 {
        self.max_wait_ms
    }

    // Enough new data over all partitions? (A real broker also completes at once when a
    // partition's leader moved or the fetch offset is out of range.)
    fn try_complete(&self) -> bool {
        let available: usize = self
            .positions
            .iter()
            .map(|(_, log, offset)| log.bytes_from(*offset))
            .sum();
        available >= self.min_bytes
    }

    // Read and answer once, whether min bytes arrived or max wait passed.
    fn on_complete(&self) {
        let bytes = self
            .positions
            .iter()
            .map(|(_, log, offset)| log.bytes_from(*offset))
            .sum();
        let _ = self.respond.send(bytes);
    }
}

fn main() {
    let fetch_purgatory: Arc<Purgatory<DelayedFetch, TopicPartition>> =
        Arc::new(Purgatory::new(Arc::new(SystemClock)));
    let reaper = fetch_purgatory.start_reaper().expect("spawn reaper");

    let tp = ("clicks".to_owned(), 3);
    let log = Arc::new(Log::default());

    let fetch = |min_bytes, max_wait_ms, offset| {
        let (tx, rx) = mpsc::channel();
        let op = DelayedFetch {
            max_wait_ms,
            min_bytes,
            positions: vec![(tp.clone(), log.clone(), offset)],
            respond: tx,
        };
        fetch_purgatory.try_complete_else_watch(op, [tp.clone()]);
        rx
    };

    // fetch.min.bytes = 1000, fetch.max.wait.ms = 500: completes on the fourth 300-byte batch.
    let start = Instant::now();
    let response = fetch(1_000, 500, 0);
    for i in 0..4 {
        std::thread::sleep(Duration::from_millis(10));
        log.append(i * 10, 300);
        // The HW moved past new data: wake the fetches waiting on this partition.
        fetch_purgatory.check_and_complete(&tp);
    }
    let bytes = response.recv().unwrap();
    println!(
        "min bytes reached after {:?}: {bytes} bytes",
        start.elapsed()
    );
    assert_eq!(bytes, 1_200);

    // Nothing new past offset 40: the fetch answers empty after max wait (100 ms).
    let start = Instant::now();
    let bytes = fetch(1_000, 100, 40).recv().unwrap();
    println!("max wait passed after {:?}: {bytes} bytes", start.elapsed());
    assert_eq!(bytes, 0);
    assert!(start.elapsed() >= Duration::from_millis(100));

    reaper.shutdown();
}
