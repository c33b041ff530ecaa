//! Property tests of the deferred queue and the manual timer against simple models.

use josef_coordinator::{CoordinatorTimer, DeferredResponses, ManualTimer};
use proptest::prelude::*;
use std::collections::BTreeMap;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn deferred_release_returns_exactly_offsets_below_hw(
        offsets in proptest::collection::vec(0i64..50, 0..40),
        hws in proptest::collection::vec(0i64..60, 1..10),
    ) {
        let mut q = DeferredResponses::new();
        for (i, o) in offsets.iter().enumerate() {
            q.push(*o, (*o, i));
        }
        let mut released: Vec<(i64, usize)> = Vec::new();
        let mut hw_seen = 0;
        for hw in hws {
            hw_seen = hw_seen.max(hw);
            let out = q.release(hw_seen);
            for w in out.windows(2) {
                prop_assert!(w[0].0 <= w[1].0);
            }
            for (o, _) in &out {
                prop_assert!(*o < hw_seen);
            }
            released.extend(out);
        }
        let rest = q.fail_all();
        for (o, _) in &rest {
            prop_assert!(*o >= hw_seen);
        }
        prop_assert_eq!(released.len() + rest.len(), offsets.len());
    }

    #[test]
    fn manual_timer_matches_model(ops in proptest::collection::vec((0u8..3, 0u8..8, 0i64..100), 0..60)) {
        let mut t = ManualTimer::new();
        let mut model: BTreeMap<u8, i64> = BTreeMap::new();
        for (op, key, v) in ops {
            match op {
                0 => { t.schedule(key, v); model.insert(key, v); }
                1 => { t.cancel(&key); model.remove(&key); }
                _ => {
                    let fired = t.poll_expired(v);
                    let mut expected: Vec<(i64, u8)> =
                        model.iter().filter(|(_, d)| **d <= v).map(|(k, d)| (*d, *k)).collect();
                    expected.sort_by_key(|e| e.0);
                    model.retain(|_, d| *d > v);
                    let mut got_sorted: Vec<u8> = fired.clone();
                    got_sorted.sort();
                    let mut exp_keys: Vec<u8> = expected.iter().map(|e| e.1).collect();
                    exp_keys.sort();
                    prop_assert_eq!(got_sorted, exp_keys);
                    // Fired in deadline order.
                    let deadlines: Vec<i64> = fired.iter().map(|k| expected.iter().find(|e| e.1 == *k).unwrap().0).collect();
                    for w in deadlines.windows(2) { prop_assert!(w[0] <= w[1]); }
                }
            }
            prop_assert_eq!(t.len(), model.len());
            prop_assert_eq!(t.next_deadline(), model.values().min().copied());
        }
    }
}
