//! Transaction states and the legal transitions between them.

/// State of a transactional id, with Kafka's numeric ids (as stored in `TransactionLogValue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    /// No transaction open (after InitProducerId).
    Empty,
    /// A transaction is open: partitions have been added.
    Ongoing,
    /// EndTxn(commit) accepted; markers are being written.
    PrepareCommit,
    /// EndTxn(abort) or a timeout/fence accepted; markers are being written.
    PrepareAbort,
    /// All commit markers written.
    CompleteCommit,
    /// All abort markers written.
    CompleteAbort,
    /// The id expired and is being removed (persisted as a tombstone).
    Dead,
    /// The producer is being fenced: an in-memory step of InitProducerId and of timeouts, followed
    /// at once by PrepareAbort with the bumped epoch. Kafka never persists it.
    PrepareEpochFence,
}

impl TxnState {
    /// Every state, in id order.
    pub const ALL: [TxnState; 8] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
        TxnState::Dead,
        TxnState::PrepareEpochFence,
    ];

    /// Kafka's id for the state.
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    /// The state with Kafka id `id`.
    pub fn from_id(id: i8) -> Option<TxnState> {
        TxnState::ALL.iter().copied().find(|s| s.id() == id)
    }

    /// Kafka's name for the state, as DescribeTransactions/ListTransactions report it.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// The state named `name` (Kafka's names).
    pub fn from_name(name: &str) -> Option<TxnState> {
        TxnState::ALL.iter().copied().find(|s| s.name() == name)
    }

    /// The states from which this state may be entered (Kafka's `validPreviousStates`).
    pub fn valid_previous_states(self) -> &'static [TxnState] {
        use TxnState::*;
        match self {
            Empty => &[Empty, CompleteCommit, CompleteAbort],
            Ongoing => &[Ongoing, Empty, CompleteCommit, CompleteAbort],
            PrepareCommit => &[Ongoing],
            PrepareAbort => &[Ongoing, PrepareEpochFence],
            CompleteCommit => &[PrepareCommit],
            CompleteAbort => &[PrepareAbort],
            Dead => &[Empty, CompleteAbort, CompleteCommit],
            PrepareEpochFence => &[Ongoing],
        }
    }

    /// Whether `self -> to` is a legal transition for transaction protocol version `tv`.
    /// Transactions V2 also allows `Empty/CompleteCommit/CompleteAbort -> PrepareAbort`
    /// (an abort with no partitions added).
    ///
    /// ```
    /// use josef_txn::{TxnState, TransactionVersion};
    /// assert!(TxnState::Ongoing.can_transition_to(TxnState::PrepareCommit, TransactionVersion::V0));
    /// assert!(!TxnState::Empty.can_transition_to(TxnState::PrepareCommit, TransactionVersion::V0));
    /// assert!(TxnState::Empty.can_transition_to(TxnState::PrepareAbort, TransactionVersion::V2));
    /// ```
    pub fn can_transition_to(self, to: TxnState, tv: crate::TransactionVersion) -> bool {
        if to.valid_previous_states().contains(&self) {
            return true;
        }
        tv.supports_epoch_bump()
            && to == TxnState::PrepareAbort
            && matches!(
                self,
                TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
            )
    }

    /// Whether an id in this state may expire after `transactional.id.expiration.ms` of idleness.
    pub fn is_expiration_allowed(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }

    /// Whether a transaction is open or being completed (Ongoing, PrepareCommit, PrepareAbort).
    pub fn has_pending_transaction(self) -> bool {
        matches!(
            self,
            TxnState::Ongoing | TxnState::PrepareCommit | TxnState::PrepareAbort
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_names_round_trip() {
        for s in TxnState::ALL {
            assert_eq!(TxnState::from_id(s.id()), Some(s));
            assert_eq!(TxnState::from_name(s.name()), Some(s));
        }
        assert_eq!(TxnState::from_id(8), None);
    }
}
