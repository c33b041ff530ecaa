//! The controller's own deterministic random numbers (SplitMix64), so that placement and topic ids
//! depend only on the configured seed and the sequence of requests, never on the OS.

use josef_protocol::Uuid;

/// A SplitMix64 generator: small, fast, and fully determined by its seed.
///
/// ```
/// use josef_controller::ControllerRng;
/// let mut a = ControllerRng::new(7);
/// let mut b = ControllerRng::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerRng {
    state: u64,
}

impl ControllerRng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        ControllerRng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        if bound == 0 {
            return 0;
        }
        // Multiply-shift reduction: unbiased enough for placement, and cheap.
        ((u128::from(self.next_u64()) * bound as u128) >> 64) as usize
    }

    /// Fisher–Yates shuffle of `items`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }

    /// A random topic id that is neither zero nor Kafka's reserved metadata topic id (1).
    pub fn topic_id(&mut self) -> Uuid {
        loop {
            let id = Uuid::from_u64_pair(self.next_u64(), self.next_u64());
            if id.as_u128() > 1 {
                return id;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_shuffles_are_permutations() {
        let mut a = ControllerRng::new(42);
        let mut b = ControllerRng::new(42);
        let mut c = ControllerRng::new(43);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        let mut v: Vec<u32> = (0..20).collect();
        a.shuffle(&mut v);
        let mut sorted = v.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..20).collect::<Vec<_>>());
        for _ in 0..1000 {
            assert!(a.below(3) < 3);
        }
        assert_eq!(a.below(0), 0);
        assert!(a.topic_id().as_u128() > 1);
    }
}
