//! Measures heap bytes per live timer with a counting allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicUsize, Ordering};

use josef_timer::TimingWheel;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::SeqCst);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::SeqCst);
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes of wheel state per live timer, beyond the task itself: slab entry, amortised slab growth,
/// buckets and the delay queue's bitmaps. The target is at most 64.
#[test]
fn memory_per_live_timer_is_at_most_64_bytes_beyond_the_task() {
    type Task = NonZeroU64; // 8 bytes, like a Box or an Arc
    for &n in &[1_000usize, 100_000, 1_000_000] {
        let before = LIVE.load(Ordering::SeqCst);
        let mut wheel: TimingWheel<Task> = TimingWheel::new(1, 20, 0).unwrap();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..n as u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // request timeouts spread over 30 s
            wheel.add(1 + x % 30_000, NonZeroU64::new(i + 1).unwrap());
        }
        let bytes = LIVE.load(Ordering::SeqCst) - before;
        let per_timer = bytes as f64 / n as f64;
        let beyond = per_timer - std::mem::size_of::<Task>() as f64;
        println!(
            "{n} live timers: {bytes} bytes, {per_timer:.1} bytes/timer, {beyond:.1} beyond the task \
             (slab entry {} bytes incl. task)",
            TimingWheel::<Task>::slot_bytes()
        );
        assert!(beyond <= 64.0, "{beyond} bytes per timer beyond the task");
        // with the slab presized, only the entry itself (24 bytes + task) and the buckets remain
        drop(wheel);
    }
    assert_eq!(TimingWheel::<NonZeroU64>::slot_bytes(), 32);
}
