//! The tokio driver runs due timer tasks and purgatory expiries without threads of its own.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use josef_timer::{tokio_driver, DelayedOperation, Purgatory, SystemClock, Timer};

#[tokio::test]
async fn driver_runs_tasks_in_order_and_is_woken_by_an_earlier_add() {
    let timer = Arc::new(Timer::new(Arc::new(SystemClock)));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio_driver::spawn(timer.clone(), move |v: u32| {
        let _ = tx.send(v);
    });
    timer.add(150, 2);
    // Give the driver time to go to sleep until the 150 ms bucket, then add an earlier one.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let start = Instant::now();
    timer.add(10, 1);
    assert_eq!(rx.recv().await, Some(1));
    assert!(
        start.elapsed() < Duration::from_millis(120),
        "not woken early"
    );
    let cancelled = timer.add(20, 99);
    assert!(timer.cancel(cancelled));
    assert_eq!(rx.recv().await, Some(2));
    driver.shutdown().await;
    assert!(timer.is_closed());
}

struct Never(Arc<AtomicUsize>);

impl DelayedOperation for Never {
    fn delay_ms(&self) -> u64 {
        20
    }
    fn try_complete(&self) -> bool {
        false
    }
    fn on_complete(&self) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[tokio::test]
async fn tokio_reaper_expires_purgatory_operations() {
    let purgatory: Arc<Purgatory<Never, &'static str>> =
        Arc::new(Purgatory::new(Arc::new(SystemClock)));
    let reaper = tokio_driver::spawn_reaper(purgatory.clone());
    let done = Arc::new(AtomicUsize::new(0));
    for _ in 0..10 {
        purgatory.try_complete_else_watch(Never(done.clone()), ["t-0"]);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while done.load(SeqCst) < 10 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(done.load(SeqCst), 10);
    assert_eq!(purgatory.num_delayed(), 0);
    reaper.shutdown().await;
}
