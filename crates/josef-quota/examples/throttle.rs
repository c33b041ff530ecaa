//! A producer that obeys the throttle time against a 1 MB/s `producer_byte_rate`, on a simulated
//! clock: run with `cargo run -p josef-quota --example throttle`.

use josef_quota::{
    ClientQuotaManager, ClientQuotaType, QuotaEntity, QuotaWindow, ThrottledChannels,
};

fn main() {
    const QUOTA: f64 = 1_000_000.0;
    const BATCH: f64 = 64.0 * 1024.0;
    let mut produce = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
    produce.update_quota(&QuotaEntity::User("alice".into()), Some(QUOTA));
    let mut muted = ThrottledChannels::new();

    let start = 1_700_000_000_000u64;
    let mut now = start;
    let mut per_second = vec![0.0; 60];
    while now < start + 60_000 {
        // The channel is muted: nothing is read from it until its throttle ends.
        if muted.unmute_at(&"alice-connection").is_some() {
            now = muted.next_unmute_at().unwrap_or(now);
            muted.due(now);
            continue;
        }
        let throttle = produce.record_and_get_throttle_time_ms("alice", "producer-1", BATCH, now);
        per_second[((now - start) / 1000) as usize] += BATCH;
        if throttle > 0 {
            muted.throttle("alice-connection", throttle, now);
        }
        // The next batch one millisecond later, unless muted.
        now += 1;
    }
    for (second, bytes) in per_second.iter().enumerate() {
        println!(
            "{second:>2} s {:>5.2} MB {}",
            bytes / 1e6,
            "#".repeat((bytes / 2e5) as usize)
        );
    }
    let total: f64 = per_second.iter().sum();
    println!(
        "average over 60 s: {:.3} MB/s against a quota of 1 MB/s",
        total / 60.0 / 1e6
    );
}
