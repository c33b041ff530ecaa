//! The append path allocates per batch at most, never per record: a counting allocator measures
//! `append_as_leader` of batches of 1 and of 1,000 records (same segment, no roll).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use josef_log::testing::batch;
use josef_log::{Log, LogConfig, TimestampType};

struct Counting;

thread_local! {
    // Counted per thread, so other tests' threads never disturb a measurement.
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

fn batch_of(records: usize) -> bytes::BytesMut {
    let v = [b'v'; 8];
    let recs: Vec<_> = (0..records).map(|_| (None, Some(&v[..]))).collect();
    batch(0, 1_000, &recs)
}

/// Allocations of one append of a batch of `records` records (built beforehand).
fn measure(log: &mut Log, records: usize, now_ms: i64) -> usize {
    let b = batch_of(records);
    let before = allocs();
    let info = log
        .append_as_leader(b, 0, now_ms, TimestampType::CreateTime)
        .unwrap();
    let n = allocs() - before;
    drop(info);
    n
}

#[test]
fn append_allocates_per_batch_never_per_record() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), LogConfig::default(), 0).unwrap();
    // Warm up: first entries, the leader epoch, lazily opened files and index mappings (made by
    // the first index entry, past `index.interval.bytes`).
    for i in 0..4 {
        measure(&mut log, 1_000, 1_000 + i);
    }
    let one: Vec<usize> = (0..5).map(|i| measure(&mut log, 1, 2_000 + i)).collect();
    let many: Vec<usize> = (0..5)
        .map(|i| measure(&mut log, 1_000, 3_000 + i))
        .collect();
    let max_one = *one.iter().max().unwrap();
    let max_many = *many.iter().max().unwrap();
    // Index entries every index.interval.bytes go to the mmap: no allocation either.
    assert_eq!(
        max_many, max_one,
        "1,000-record batches allocate more than 1-record ones: {many:?} vs {one:?}"
    );
    assert!(max_one <= 2, "allocations per appended batch: {one:?}");
    eprintln!("allocations per append: 1 record {one:?}, 1000 records {many:?}");
}
