//! The delay queue of buckets (the role of the `DelayQueue` in Kafka's `SystemTimer`): which buckets
//! of each wheel level wait for their expiration, and which one expires first.
//!
//! A binary heap of `(expiration, bucket)` costs a push and a logarithmic pop per bucket, which is
//! most of the work per timer when buckets hold about one timer each (few live timers). Here each
//! level has an occupancy bitmap of its buckets plus a summary bitmap of its non-empty words, and the
//! soonest queued bucket of each level is cached. Queueing is setting a bit; taking the soonest bucket
//! is a find-first-set from the taken bucket onwards, around the wheel, which visits at most
//! `wheel_size / 4096 + 2` words, never one per tick.
//!
//! Why "from the taken bucket onwards" is expiration order: every queued bucket of a level expires in
//! `[t, t + interval)` where `t` is the soonest one's expiration and `interval` the level's span (the
//! wheel only queues a deadline within one span of its clock, and its clock never passes a queued
//! expiration), and bucket `i` holds expiration `e` with `(e / tick) % wheel_size == i`, so walking
//! the buckets circularly from the soonest one meets the queued expirations in increasing order.

/// Expiration meaning "nothing queued".
const EMPTY: u64 = u64::MAX;

pub(crate) struct BucketQueue {
    /// Buckets per level.
    size: u32,
    /// Bitmap words per level (`ceil(size / 64)`).
    words: usize,
    /// Summary words per level (`ceil(words / 64)`).
    summary_words: usize,
    /// Bit `i` of level `l` (word `l * words + i / 64`) is set while bucket `i` of level `l` is queued.
    bits: Vec<u64>,
    /// Bit `w` of level `l` is set while bitmap word `w` of level `l` is not zero (kept only when a
    /// level has more than one word).
    summary: Vec<u64>,
    /// Per level, the soonest queued expiration, or `EMPTY`.
    soonest: Vec<u64>,
    /// Per level, the bucket of `soonest`.
    soonest_index: Vec<u32>,
    /// The soonest queued expiration of all levels and its level (the lowest level on a tie).
    top: (u64, usize),
    /// The same over the levels above the base wheel: taking a base-wheel bucket (the most frequent
    /// case) then needs no pass over the levels.
    upper: (u64, usize),
}

impl BucketQueue {
    pub(crate) fn new(size: u32) -> Self {
        let words = (size as usize).div_ceil(64);
        BucketQueue {
            size,
            words,
            summary_words: words.div_ceil(64),
            bits: Vec::new(),
            summary: Vec::new(),
            soonest: Vec::new(),
            soonest_index: Vec::new(),
            top: (EMPTY, 0),
            upper: (EMPTY, 0),
        }
    }

    /// Makes room for one more wheel level, with nothing queued.
    pub(crate) fn add_level(&mut self) {
        self.bits.resize(self.bits.len() + self.words, 0);
        self.summary
            .resize(self.summary.len() + self.summary_words, 0);
        self.soonest.push(EMPTY);
        self.soonest_index.push(0);
    }

    /// Expiration of the soonest queued bucket.
    #[inline]
    pub(crate) fn peek(&self) -> Option<u64> {
        (self.top.0 != EMPTY).then_some(self.top.0)
    }

    /// Queues bucket `index` of `level`, which is not queued, under `expiration`.
    #[inline(always)]
    pub(crate) fn push(&mut self, level: usize, index: u32, expiration: u64) {
        debug_assert!(expiration != EMPTY && index < self.size);
        let w = (index / 64) as usize;
        let word = &mut self.bits[level * self.words + w];
        debug_assert!(*word & (1 << (index % 64)) == 0, "bucket queued twice");
        *word |= 1 << (index % 64);
        if self.words > 1 {
            // Unconditional (no branch to mispredict): the word is not zero now.
            self.summary[level * self.summary_words + w / 64] |= 1 << (w % 64);
        }
        self.lower(level, index, expiration);
    }

    /// Bucket `index` of `level`, already queued, now expires at `expiration` (earlier than before,
    /// and still within the bucket's own tick, so the buckets' order is unchanged).
    #[inline(always)]
    pub(crate) fn lower(&mut self, level: usize, index: u32, expiration: u64) {
        let soonest = &mut self.soonest[level];
        if expiration < *soonest {
            *soonest = expiration;
            self.soonest_index[level] = index;
            if level > 0
                && (expiration < self.upper.0
                    || (expiration == self.upper.0 && level < self.upper.1))
            {
                self.upper = (expiration, level);
            }
            if expiration < self.top.0 || (expiration == self.top.0 && level < self.top.1) {
                self.top = (expiration, level);
            }
        }
    }

    /// Takes the soonest queued bucket off the queue: `(expiration, level, index)`.
    /// `expiration_of(level, index)` gives the expiration a queued bucket is queued under.
    #[inline(always)]
    pub(crate) fn pop(
        &mut self,
        expiration_of: impl Fn(usize, u32) -> u64,
    ) -> Option<(u64, usize, u32)> {
        let (expiration, level) = self.top;
        if expiration == EMPTY {
            return None;
        }
        let index = self.soonest_index[level];
        let w = (index / 64) as usize;
        let word = &mut self.bits[level * self.words + w];
        *word &= !(1 << (index % 64));
        if self.words > 1 {
            // Clears the word's summary bit if the word is now zero, without a branch.
            let emptied = u64::from(*word == 0);
            self.summary[level * self.summary_words + w / 64] &= !(emptied << (w % 64));
        }
        self.soonest[level] = match self.next_from(level, index + 1) {
            Some(next) => {
                self.soonest_index[level] = next;
                expiration_of(level, next)
            }
            None => EMPTY,
        };
        if level > 0 {
            // The minimum (expiration, level) as one u128 key: a branch-free minimum over the
            // levels (which level wins is data-dependent, a branch per level would often be
            // mispredicted).
            let key = self.soonest[1..]
                .iter()
                .enumerate()
                .map(|(l, &e)| (u128::from(e) << 64) | (l + 1) as u128)
                .min()
                .unwrap_or(u128::from(EMPTY) << 64);
            self.upper = ((key >> 64) as u64, key as u64 as usize);
        }
        // The base wheel wins a tie.
        let base = self.soonest[0];
        self.top = if base <= self.upper.0 {
            (base, 0)
        } else {
            self.upper
        };
        Some((expiration, level, index))
    }

    /// The first queued bucket of `level` at or after `start` (at most `size`), going around the
    /// wheel.
    #[inline(always)]
    fn next_from(&self, level: usize, start: u32) -> Option<u32> {
        if self.words == 1 {
            // Wheels of up to 64 buckets (Kafka's has 20): one word, no summary needed.
            let word = self.bits[level];
            if word == 0 {
                return None;
            }
            let ahead = word & u64::MAX.checked_shl(start).unwrap_or(0);
            return Some(if ahead != 0 { ahead } else { word }.trailing_zeros());
        }
        if self.summary_words == 1 {
            // Up to 4096 buckets: one summary word.
            let start = if start >= self.size { 0 } else { start };
            let bits = &self.bits[level * self.words..][..self.words];
            let w = (start / 64) as usize;
            let word = bits[w] & (u64::MAX << (start % 64));
            if word != 0 {
                return Some(w as u32 * 64 + word.trailing_zeros());
            }
            let summary = self.summary[level];
            // The first non-empty word after `w`, else (around the wheel) the first non-empty one,
            // which may be `w` itself with bits before `start`.
            let after = summary & u64::MAX.checked_shl(w as u32 + 1).unwrap_or(0);
            let words = if after != 0 { after } else { summary };
            if words == 0 {
                return None;
            }
            let w = words.trailing_zeros() as usize;
            return Some(w as u32 * 64 + bits[w].trailing_zeros());
        }
        self.next_from_wide(level, start)
    }

    fn next_from_wide(&self, level: usize, start: u32) -> Option<u32> {
        self.first_at_or_after(level, start)
            .or_else(|| self.first_at_or_after(level, 0))
    }

    /// The first queued bucket of `level` in `start..size`.
    #[inline]
    fn first_at_or_after(&self, level: usize, start: u32) -> Option<u32> {
        if start >= self.size {
            return None;
        }
        let bits = &self.bits[level * self.words..][..self.words];
        let w = (start / 64) as usize;
        let word = bits[w] & (u64::MAX << (start % 64));
        if word != 0 {
            return Some(w as u32 * 64 + word.trailing_zeros());
        }
        // The next non-zero word after `w`, found through the summary.
        let summary = &self.summary[level * self.summary_words..][..self.summary_words];
        let from = w + 1;
        let mut s = from / 64;
        if s >= summary.len() {
            return None;
        }
        let mut sword = summary[s] & (u64::MAX << (from % 64));
        loop {
            if sword != 0 {
                let w = s * 64 + sword.trailing_zeros() as usize;
                return Some(w as u32 * 64 + bits[w].trailing_zeros());
            }
            s += 1;
            if s == summary.len() {
                return None;
            }
            sword = summary[s];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Drives the queue like the wheel does and checks it against a sorted set of (expiration,
    /// level). As in the wheel: a level's tick is `size^level`; a bucket is queued for a tick `v`
    /// between one and `size - 1` ticks ahead of the level's clock, at index `v % size`, under an
    /// expiration within that tick, which may later be lowered within that tick; popping the soonest
    /// bucket moves every level's clock to its expiration.
    fn check(size: u32, levels: usize, ops: &[(u8, u64)]) {
        let mut q = BucketQueue::new(size);
        for _ in 0..levels {
            q.add_level();
        }
        let size64 = u64::from(size);
        let tick = |l: usize| size64.pow(l as u32);
        let mut clock = vec![0u64; levels];
        let mut model: BTreeSet<(u64, usize)> = BTreeSet::new();
        let mut exp = vec![vec![EMPTY; size as usize]; levels];
        for &(kind, x) in ops {
            if kind % 4 != 0 {
                let l = (x % levels as u64) as usize;
                let rest = x / levels as u64;
                let t = tick(l);
                let v = clock[l] / t + 1 + rest % (size64 - 1);
                let e = v * t + (rest / size64) % t;
                let i = (v % size64) as usize;
                if exp[l][i] == EMPTY {
                    exp[l][i] = e;
                    q.push(l, i as u32, e);
                    model.insert((e, l));
                } else if e < exp[l][i] {
                    assert_eq!(exp[l][i] / t, v, "one tick per bucket in the window");
                    model.remove(&(exp[l][i], l));
                    exp[l][i] = e;
                    q.lower(l, i as u32, e);
                    model.insert((e, l));
                }
            } else {
                let got = q.pop(|l, i| exp[l][i as usize]);
                let want = model.pop_first();
                assert_eq!(got.map(|(e, l, _)| (e, l)), want);
                if let Some((e, l, i)) = got {
                    assert_eq!(exp[l][i as usize], e);
                    exp[l][i as usize] = EMPTY;
                    for (lc, c) in clock.iter_mut().enumerate() {
                        *c = (*c).max(e - e % tick(lc));
                    }
                }
            }
            assert_eq!(q.peek(), model.first().map(|&(e, _)| e));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn pops_in_expiration_order(
            size in prop_oneof![
                Just(2u32), Just(3), Just(20), Just(64), Just(65), Just(200), Just(4096), Just(5000)
            ],
            levels in 1usize..4,
            ops in proptest::collection::vec((any::<u8>(), any::<u64>()), 1..2_000),
        ) {
            check(size, levels, &ops);
        }
    }

    #[test]
    fn finds_buckets_across_summary_words() {
        // 8192 buckets: 128 bitmap words, 2 summary words
        let mut q = BucketQueue::new(8192);
        q.add_level();
        q.push(0, 8000, 8000);
        q.push(0, 5, 8192 + 5);
        assert_eq!(
            q.pop(|_, i| if i == 5 { 8197 } else { 8000 }),
            Some((8000, 0, 8000))
        );
        assert_eq!(q.peek(), Some(8197));
        assert_eq!(q.pop(|_, _| unreachable!()), Some((8197, 0, 5)));
        assert_eq!(q.peek(), None);
        assert_eq!(q.pop(|_, _| unreachable!()), None);
    }
}
