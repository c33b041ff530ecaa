//! Member id generation. Kafka names a member `clientId-UUID` (or `groupInstanceId-UUID`); the
//! UUID comes from a trait so tests and simulations are deterministic.

/// Source of the UUID part of new member ids.
pub trait MemberIdGenerator {
    /// A fresh UUID in its canonical text form.
    fn next_uuid(&mut self) -> String;
}

/// Random v4 UUIDs, what a real broker uses.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomMemberIds;

impl MemberIdGenerator for RandomMemberIds {
    fn next_uuid(&mut self) -> String {
        uuid::Uuid::new_v4().to_string()
    }
}

/// Deterministic UUID-shaped ids from a seed (splitmix64), for tests and simulations.
///
/// ```
/// use josef_group::{MemberIdGenerator, SeededMemberIds};
/// let mut a = SeededMemberIds::new(7);
/// let mut b = SeededMemberIds::new(7);
/// assert_eq!(a.next_uuid(), b.next_uuid());
/// assert_eq!(a.next_uuid().len(), 36);
/// ```
#[derive(Debug, Clone)]
pub struct SeededMemberIds {
    state: u64,
}

impl SeededMemberIds {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SeededMemberIds { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl MemberIdGenerator for SeededMemberIds {
    fn next_uuid(&mut self) -> String {
        let hi = self.next_u64() as u128;
        let lo = self.next_u64() as u128;
        uuid::Uuid::from_u128((hi << 64) | lo).to_string()
    }
}
