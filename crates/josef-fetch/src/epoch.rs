//! Session ids and epochs as a fetch request carries them (Kafka's `FetchMetadata`).

/// The session id meaning "no session" (a sessionless fetch, or a response that created none).
pub const INVALID_SESSION_ID: i32 = 0;

/// The epoch of a full fetch that asks the broker to create a new session.
pub const INITIAL_EPOCH: i32 = 0;

/// The epoch of a full fetch that closes the session it names and asks for no new one.
pub const FINAL_EPOCH: i32 = -1;

/// The epoch that follows `epoch`: FINAL stays FINAL, `i32::MAX` wraps to 1 (0 is INITIAL and
/// never an incremental epoch), anything else adds one.
///
/// ```
/// use josef_fetch::{next_epoch, FINAL_EPOCH};
/// assert_eq!(next_epoch(0), 1);
/// assert_eq!(next_epoch(i32::MAX), 1);
/// assert_eq!(next_epoch(FINAL_EPOCH), FINAL_EPOCH);
/// ```
pub fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// The session fields of a fetch request: `session_id` and `session_epoch` (v7+; older requests
/// are sessionless full fetches: id 0, epoch −1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FetchMetadata {
    /// The session id (0 = none).
    pub session_id: i32,
    /// The session epoch.
    pub epoch: i32,
}

impl FetchMetadata {
    /// The metadata of a sessionless fetch (what fetch v0–v6 mean).
    pub const SESSIONLESS: FetchMetadata = FetchMetadata {
        session_id: INVALID_SESSION_ID,
        epoch: FINAL_EPOCH,
    };

    /// Metadata with these fields.
    pub fn new(session_id: i32, epoch: i32) -> Self {
        FetchMetadata { session_id, epoch }
    }

    /// A full fetch (epoch INITIAL or FINAL): it lists every partition it wants, and closes the
    /// session it names, if any.
    pub fn is_full(&self) -> bool {
        self.epoch == INITIAL_EPOCH || self.epoch == FINAL_EPOCH
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_epoch_wraps_to_one_not_to_initial() {
        assert_eq!(next_epoch(i32::MAX), 1);
        assert_eq!(next_epoch(1), 2);
        assert_eq!(next_epoch(-7), FINAL_EPOCH);
    }

    #[test]
    fn full_means_initial_or_final_epoch() {
        assert!(FetchMetadata::new(0, 0).is_full());
        assert!(FetchMetadata::new(5, -1).is_full());
        assert!(!FetchMetadata::new(5, 1).is_full());
        assert!(!FetchMetadata::new(0, 3).is_full());
        assert!(FetchMetadata::SESSIONLESS.is_full());
    }
}
