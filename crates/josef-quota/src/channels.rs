//! Channels muted for their throttle time (KIP-219), the pure part of Kafka's
//! `ThrottledChannelReaper` delay queue.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

/// Channel id → the time its throttle ends. The broker mutes a channel when it sends a throttled
/// response, asks [`due`](Self::due) when its timer fires (at [`next_unmute_at`](Self::next_unmute_at)),
/// and unmutes what comes back.
///
/// A channel throttled again while muted keeps the later end (a request can be throttled by two
/// quotas, bytes and request time, and the response waits for both).
#[derive(Debug, Clone)]
pub struct ThrottledChannels<C> {
    by_time: BTreeSet<(u64, u64)>,
    by_seq: HashMap<u64, C>,
    by_channel: HashMap<C, (u64, u64)>,
    next_seq: u64,
}

impl<C: Eq + Hash + Clone> Default for ThrottledChannels<C> {
    fn default() -> Self {
        ThrottledChannels {
            by_time: BTreeSet::new(),
            by_seq: HashMap::new(),
            by_channel: HashMap::new(),
            next_seq: 0,
        }
    }
}

impl<C: Eq + Hash + Clone> ThrottledChannels<C> {
    /// No throttled channels.
    pub fn new() -> Self {
        Self::default()
    }

    /// Mutes `channel` for `throttle_time_ms` from `now_ms`; returns its unmute time. A zero
    /// throttle time mutes nothing and returns `now_ms`.
    pub fn throttle(&mut self, channel: C, throttle_time_ms: u64, now_ms: u64) -> u64 {
        let until = now_ms.saturating_add(throttle_time_ms);
        if throttle_time_ms == 0 {
            return self.unmute_at(&channel).unwrap_or(now_ms);
        }
        if let Some(&(at, seq)) = self.by_channel.get(&channel) {
            if at >= until {
                return at;
            }
            self.by_time.remove(&(at, seq));
            self.by_seq.remove(&seq);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_time.insert((until, seq));
        self.by_seq.insert(seq, channel.clone());
        self.by_channel.insert(channel, (until, seq));
        until
    }

    /// The channels whose throttle has ended by `now_ms`, earliest first; they are forgotten.
    pub fn due(&mut self, now_ms: u64) -> Vec<C> {
        let mut out = Vec::new();
        while let Some(&(at, seq)) = self.by_time.first() {
            if at > now_ms {
                break;
            }
            self.by_time.pop_first();
            if let Some(channel) = self.by_seq.remove(&seq) {
                self.by_channel.remove(&channel);
                out.push(channel);
            }
        }
        out
    }

    /// The earliest unmute time, for the broker's timer.
    pub fn next_unmute_at(&self) -> Option<u64> {
        self.by_time.first().map(|&(at, _)| at)
    }

    /// When `channel` is unmuted, if it is throttled.
    pub fn unmute_at(&self, channel: &C) -> Option<u64> {
        self.by_channel.get(channel).map(|&(at, _)| at)
    }

    /// Forgets `channel` (it was closed); true if it was throttled.
    pub fn remove(&mut self, channel: &C) -> bool {
        match self.by_channel.remove(channel) {
            Some((at, seq)) => {
                self.by_time.remove(&(at, seq));
                self.by_seq.remove(&seq);
                true
            }
            None => false,
        }
    }

    /// The number of throttled channels.
    pub fn len(&self) -> usize {
        self.by_channel.len()
    }

    /// True when no channel is throttled.
    pub fn is_empty(&self) -> bool {
        self.by_channel.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_in_order_and_later_throttle_wins() {
        let mut t = ThrottledChannels::new();
        assert_eq!(t.throttle("a", 500, 1_000), 1_500);
        assert_eq!(t.throttle("b", 100, 1_000), 1_100);
        assert_eq!(t.throttle("a", 200, 1_000), 1_500);
        assert_eq!(t.throttle("c", 0, 1_000), 1_000);
        assert_eq!(t.len(), 2);
        assert_eq!(t.next_unmute_at(), Some(1_100));
        assert!(t.due(1_099).is_empty());
        assert_eq!(t.due(1_100), vec!["b"]);
        assert_eq!(t.throttle("a", 1_000, 1_200), 2_200);
        assert!(t.due(1_500).is_empty());
        assert!(t.remove(&"a"));
        assert!(t.is_empty());
        assert_eq!(t.next_unmute_at(), None);
    }
}
