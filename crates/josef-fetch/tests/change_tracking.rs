//! Change tracking: an incremental fetch reads only the partitions of its session that changed
//! (counted by what the context hands out to read), and still answers exactly the partitions a
//! session without tracking (Kafka's walk over the whole session) answers.

use std::collections::HashMap;

use josef_fetch::{
    FetchContext, FetchMetadata, FetchSessionCache, FetchSessionCacheConfig, PartitionFetch,
    PartitionOutcome,
};

type Key = (u32, i32);

/// A broker's partitions as far as a fetch sees them: the HW of each (records below it).
struct World {
    hw: HashMap<Key, i64>,
}

impl World {
    fn new(n: u32) -> Self {
        World {
            hw: (0..n).map(|i| ((i / 100, (i % 100) as i32), 0)).collect(),
        }
    }

    /// Reads what a context asks, as the broker's handler would.
    fn read(&self, ctx: &FetchContext<Key>) -> Vec<(Key, PartitionOutcome)> {
        ctx.partitions()
            .iter()
            .map(|(k, f)| {
                let hw = self.hw[k];
                (
                    *k,
                    PartitionOutcome {
                        high_watermark: hw,
                        has_records: f.fetch_offset < hw,
                        settled: f.fetch_offset >= hw,
                        ..Default::default()
                    },
                )
            })
            .collect()
    }
}

fn keys(n: u32) -> Vec<Key> {
    (0..n).map(|i| (i / 100, (i % 100) as i32)).collect()
}

fn tracked() -> FetchSessionCache<Key> {
    let mut c = FetchSessionCache::new(FetchSessionCacheConfig::default());
    c.sync_generation(Some(1));
    c
}

/// A full fetch of `parts` at offset 0; returns the session id.
fn open(cache: &mut FetchSessionCache<Key>, world: &World, parts: &[Key]) -> i32 {
    let ctx = cache.new_context(
        FetchMetadata::new(0, 0),
        false,
        false,
        parts.iter().map(|k| (*k, PartitionFetch::new(0, 1 << 20))),
        [],
        0,
    );
    let mut resp = world.read(&ctx);
    let s = cache.update_and_generate_response(&ctx, 0, &mut resp, |r| (&r.0, r.1));
    assert_ne!(s.session_id, 0);
    s.session_id
}

/// An incremental fetch listing `listed`; returns the keys answered, in order.
fn fetch(
    cache: &mut FetchSessionCache<Key>,
    world: &World,
    id: i32,
    epoch: i32,
    listed: &[(Key, i64)],
) -> Vec<Key> {
    let ctx = cache.new_context(
        FetchMetadata::new(id, epoch),
        false,
        false,
        listed
            .iter()
            .map(|(k, o)| (*k, PartitionFetch::new(*o, 1 << 20))),
        [],
        1,
    );
    let mut resp = world.read(&ctx);
    let s = cache.update_and_generate_response(&ctx, 1, &mut resp, |r| (&r.0, r.1));
    assert_eq!(s.error_code, 0);
    resp.into_iter().map(|(k, _)| k).collect()
}

#[test]
fn one_changed_partition_of_a_thousand_is_the_only_one_read() {
    let world_keys = keys(1000);
    let mut world = World::new(1000);
    let mut cache = tracked();
    let id = open(&mut cache, &world, &world_keys);
    let before = cache.incremental_reads();
    // Nothing changed: nothing to read, nothing to answer.
    assert!(fetch(&mut cache, &world, id, 1, &[]).is_empty());
    assert_eq!(cache.incremental_reads() - before, 0);
    // One partition got a record.
    let hot = world_keys[567];
    *world.hw.get_mut(&hot).unwrap() = 1;
    cache.record_change(hot);
    let before = cache.incremental_reads();
    assert_eq!(fetch(&mut cache, &world, id, 2, &[]), vec![hot]);
    assert_eq!(cache.incremental_reads() - before, 1);
    // The consumer moves its offset: the listed partition is read (and settles), nothing sent.
    let before = cache.incremental_reads();
    assert!(fetch(&mut cache, &world, id, 3, &[(hot, 1)]).is_empty());
    assert_eq!(cache.incremental_reads() - before, 1);
    let before = cache.incremental_reads();
    assert!(fetch(&mut cache, &world, id, 4, &[]).is_empty());
    assert_eq!(cache.incremental_reads() - before, 0);
    assert_eq!(cache.get(id).unwrap().pending_len(), 0);
}

#[test]
fn without_tracking_every_partition_is_read() {
    let world_keys = keys(1000);
    let world = World::new(1000);
    let mut cache = FetchSessionCache::new(FetchSessionCacheConfig::default());
    let id = open(&mut cache, &world, &world_keys);
    let before = cache.incremental_reads();
    assert!(fetch(&mut cache, &world, id, 1, &[]).is_empty());
    assert_eq!(cache.incremental_reads() - before, 1000);
}

#[test]
fn a_new_generation_or_a_lost_change_log_reads_everything_once() {
    let world_keys = keys(100);
    let world = World::new(100);
    let mut cache = tracked();
    let id = open(&mut cache, &world, &world_keys);
    cache.sync_generation(Some(2));
    let before = cache.incremental_reads();
    fetch(&mut cache, &world, id, 1, &[]);
    assert_eq!(cache.incremental_reads() - before, 100);
    let before = cache.incremental_reads();
    fetch(&mut cache, &world, id, 2, &[]);
    assert_eq!(cache.incremental_reads() - before, 0);
    // More changes than the log keeps, none of them this session's: it cannot know.
    cache.set_change_log_capacity(4);
    for i in 0..10 {
        cache.record_change((99, i));
    }
    let before = cache.incremental_reads();
    fetch(&mut cache, &world, id, 3, &[]);
    assert_eq!(cache.incremental_reads() - before, 100);
}

#[test]
fn a_woken_context_adds_what_changed_while_it_waited() {
    let world_keys = keys(100);
    let mut world = World::new(100);
    let mut cache = tracked();
    let id = open(&mut cache, &world, &world_keys);
    let mut ctx = cache.new_context(FetchMetadata::new(id, 1), false, false, [], [], 1);
    assert!(ctx.is_partial());
    assert!(ctx.partitions().is_empty());
    // The fetch parks on all 100; partition 42 gets a record meanwhile.
    *world.hw.get_mut(&world_keys[42]).unwrap() = 3;
    cache.record_change(world_keys[42]);
    cache.refresh_context(&mut ctx);
    assert_eq!(ctx.partitions().len(), 1);
    let mut resp = world.read(&ctx);
    cache.update_and_generate_response(&ctx, 1, &mut resp, |r| (&r.0, r.1));
    assert_eq!(resp.len(), 1);
}

/// Two caches, one tracking changes, one not, see the same requests and the same world: their
/// answers are the same, fetch after fetch (partitions changing, consumers moving their offsets,
/// partitions unsettled by the byte limit, forgotten and added partitions).
#[test]
fn tracked_answers_equal_kafkas_walk_over_the_whole_session() {
    let n = 300u32;
    let all = keys(n);
    let mut world = World::new(n);
    let mut plain = FetchSessionCache::new(FetchSessionCacheConfig::default());
    let mut fast = tracked();
    fast.set_change_log_capacity(64);
    let session_parts: Vec<Key> = all[..200].to_vec();
    let id_p = open(&mut plain, &world, &session_parts);
    let id_f = open(&mut fast, &world, &session_parts);
    let mut offsets: HashMap<Key, i64> = session_parts.iter().map(|k| (*k, 0)).collect();
    let mut listed: Vec<(Key, i64)> = Vec::new();
    let mut rng = 0x1234_5678_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut fast_reads = 0;
    for epoch in 1..400 {
        // A few partitions change (some not in the session); sometimes many (log overflow).
        let changes = if epoch % 50 == 0 { 100 } else { next() % 4 };
        for _ in 0..changes {
            let k = all[(next() % u64::from(n)) as usize];
            *world.hw.get_mut(&k).unwrap() += 1;
            fast.record_change(k);
        }
        let before = fast.incremental_reads();
        let a = fetch(&mut plain, &world, id_p, epoch, &listed);
        let b = fetch(&mut fast, &world, id_f, epoch, &listed);
        fast_reads += fast.incremental_reads() - before;
        assert_eq!(a, b, "epoch {epoch}");
        // The consumer takes what it got, except sometimes (it re-reads the same records).
        listed.clear();
        for k in a {
            if next() % 5 != 0 {
                offsets.insert(k, world.hw[&k]);
                listed.push((k, world.hw[&k]));
            }
        }
    }
    // The walk read 200 per fetch; tracking a small fraction of that.
    assert!(fast_reads < 399 * 200 / 5, "{fast_reads}");
}
