//! acks=all: a produce request waits in the purgatory until the high watermark of every partition
//! it wrote reaches the end of its records, or `request.timeout.ms` passes (Kafka's
//! `DelayedProduce`).
//!
//! Run with `cargo run --example delayed_produce`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use josef_timer::{DelayedOperation, Purgatory, SystemClock};

type TopicPartition = (String, i32);

/// The leader's view of a partition: its log end offset and high watermark.
#[derive(Default)]
struct Partition {
    leo: AtomicI64,
    hw: AtomicI64,
}

#[derive(Debug, PartialEq)]
enum Error {
    None,
    RequestTimedOut,
}

/// One produce request with acks=all, appended locally and now waiting for the followers.
struct DelayedProduce {
    timeout_ms: u64,
    /// Per partition: the offset the high watermark must reach (last offset written + 1).
    required: Vec<(TopicPartition, Arc<Partition>, i64)>,
    respond: mpsc::Sender<Vec<(TopicPartition, Error)>>,
}

impl DelayedOperation for DelayedProduce {
    fn delay_ms(&self) -> u64 {
        self.timeout_ms
    }

    // Complete once every partition is replicated far enough. (A real broker also completes early
    // with an error when it stops being the leader.)
    fn try_complete(&self) -> bool {
        self.required
            .iter()
            .all(|(_, p, required)| p.hw.load(SeqCst) >= *required)
    }

    // Runs exactly once, on success or on timeout: answer per partition.
    fn on_complete(&self) {
        let response = self
            .required
            .iter()
            .map(|(tp, p, required)| {
                let error = if p.hw.load(SeqCst) >= *required {
                    Error::None
                } else {
                    Error::RequestTimedOut
                };
                (tp.clone(), error)
            })
            .collect();
        let _ = self.respond.send(response);
    }

    fn on_expiration(&self) {
        println!("  (produce expired: counted in the expired-requests metric)");
    }
}

fn main() {
    let produce_purgatory: Arc<Purgatory<DelayedProduce, TopicPartition>> =
        Arc::new(Purgatory::new(Arc::new(SystemClock)));
    let reaper = produce_purgatory.start_reaper().expect("spawn reaper");

    let tp = ("orders".to_owned(), 0);
    let partitions: HashMap<TopicPartition, Arc<Partition>> =
        [(tp.clone(), Arc::new(Partition::default()))].into();
    let partition = partitions[&tp].clone();

    // Produce 10 records; the leader appends them at offsets 0..=9 and must wait for HW = 10.
    let produce = |records: i64, timeout_ms| {
        let last = partition.leo.fetch_add(records, SeqCst) + records;
        let (tx, rx) = mpsc::channel();
        let op = DelayedProduce {
            timeout_ms,
            required: vec![(tp.clone(), partition.clone(), last)],
            respond: tx,
        };
        // Returns true if it completed at once (HW already there, e.g. a single-replica ISR).
        produce_purgatory.try_complete_else_watch(op, [tp.clone()]);
        rx
    };

    let start = Instant::now();
    let response = produce(10, 1_000);
    // The follower fetches in two steps; after each, the leader moves the HW and checks the
    // partition's waiters, as `ReplicaManager` does after a follower fetch.
    for hw in [4, 10] {
        std::thread::sleep(Duration::from_millis(20));
        partition.hw.store(hw, SeqCst);
        let completed = produce_purgatory.check_and_complete(&tp);
        println!("HW -> {hw}: {completed} produce request(s) completed");
    }
    let answer = response.recv().unwrap();
    println!("acks=all answered after {:?}: {answer:?}", start.elapsed());
    assert_eq!(answer, vec![(tp.clone(), Error::None)]);

    // The follower stalls: the next request times out after its 100 ms.
    let start = Instant::now();
    let response = produce(5, 100);
    let answer = response.recv().unwrap();
    println!(
        "stalled follower, answered after {:?}: {answer:?}",
        start.elapsed()
    );
    assert_eq!(answer, vec![(tp, Error::RequestTimedOut)]);
    assert!(start.elapsed() >= Duration::from_millis(100));

    reaper.shutdown();
}
