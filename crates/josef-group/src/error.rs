//! Kafka error codes the group coordinator answers with, and the crate's own errors.

/// A Kafka protocol error as the group coordinator returns it (Kafka's `Errors` enum, the
/// subset this crate produces). [`Errors::code`] gives the wire code.
///
/// ```
/// use josef_group::Errors;
/// assert_eq!(Errors::MemberIdRequired.code(), 79);
/// assert_eq!(Errors::from_code(27), Some(Errors::RebalanceInProgress));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[allow(missing_docs)] // the variant names are Kafka's error names
pub enum Errors {
    #[error("NONE")]
    None,
    #[error("UNKNOWN_SERVER_ERROR")]
    UnknownServerError,
    #[error("UNKNOWN_TOPIC_OR_PARTITION")]
    UnknownTopicOrPartition,
    #[error("OFFSET_METADATA_TOO_LARGE")]
    OffsetMetadataTooLarge,
    #[error("COORDINATOR_LOAD_IN_PROGRESS")]
    CoordinatorLoadInProgress,
    #[error("COORDINATOR_NOT_AVAILABLE")]
    CoordinatorNotAvailable,
    #[error("NOT_COORDINATOR")]
    NotCoordinator,
    #[error("ILLEGAL_GENERATION")]
    IllegalGeneration,
    #[error("INCONSISTENT_GROUP_PROTOCOL")]
    InconsistentGroupProtocol,
    #[error("INVALID_GROUP_ID")]
    InvalidGroupId,
    #[error("UNKNOWN_MEMBER_ID")]
    UnknownMemberId,
    #[error("INVALID_SESSION_TIMEOUT")]
    InvalidSessionTimeout,
    #[error("REBALANCE_IN_PROGRESS")]
    RebalanceInProgress,
    #[error("INVALID_COMMIT_OFFSET_SIZE")]
    InvalidCommitOffsetSize,
    #[error("UNSUPPORTED_VERSION")]
    UnsupportedVersion,
    #[error("INVALID_REQUEST")]
    InvalidRequest,
    #[error("INVALID_PRODUCER_EPOCH")]
    InvalidProducerEpoch,
    #[error("NON_EMPTY_GROUP")]
    NonEmptyGroup,
    #[error("GROUP_ID_NOT_FOUND")]
    GroupIdNotFound,
    #[error("MEMBER_ID_REQUIRED")]
    MemberIdRequired,
    #[error("GROUP_MAX_SIZE_REACHED")]
    GroupMaxSizeReached,
    #[error("FENCED_INSTANCE_ID")]
    FencedInstanceId,
    #[error("GROUP_SUBSCRIBED_TO_TOPIC")]
    GroupSubscribedToTopic,
    #[error("UNSTABLE_OFFSET_COMMIT")]
    UnstableOffsetCommit,
    #[error("UNRELEASED_INSTANCE_ID")]
    UnreleasedInstanceId,
    #[error("FENCED_MEMBER_EPOCH")]
    FencedMemberEpoch,
    #[error("UNSUPPORTED_ASSIGNOR")]
    UnsupportedAssignor,
    #[error("STALE_MEMBER_EPOCH")]
    StaleMemberEpoch,
    #[error("INVALID_REGULAR_EXPRESSION")]
    InvalidRegularExpression,
}

impl Errors {
    const TABLE: [(Errors, i16); 29] = [
        (Errors::None, 0),
        (Errors::UnknownServerError, -1),
        (Errors::UnknownTopicOrPartition, 3),
        (Errors::OffsetMetadataTooLarge, 12),
        (Errors::CoordinatorLoadInProgress, 14),
        (Errors::CoordinatorNotAvailable, 15),
        (Errors::NotCoordinator, 16),
        (Errors::IllegalGeneration, 22),
        (Errors::InconsistentGroupProtocol, 23),
        (Errors::InvalidGroupId, 24),
        (Errors::UnknownMemberId, 25),
        (Errors::InvalidSessionTimeout, 26),
        (Errors::RebalanceInProgress, 27),
        (Errors::InvalidCommitOffsetSize, 28),
        (Errors::UnsupportedVersion, 35),
        (Errors::InvalidRequest, 42),
        (Errors::InvalidProducerEpoch, 47),
        (Errors::NonEmptyGroup, 68),
        (Errors::GroupIdNotFound, 69),
        (Errors::MemberIdRequired, 79),
        (Errors::GroupMaxSizeReached, 81),
        (Errors::FencedInstanceId, 82),
        (Errors::GroupSubscribedToTopic, 86),
        (Errors::UnstableOffsetCommit, 88),
        (Errors::UnreleasedInstanceId, 111),
        (Errors::FencedMemberEpoch, 110),
        (Errors::UnsupportedAssignor, 112),
        (Errors::StaleMemberEpoch, 113),
        (Errors::InvalidRegularExpression, 128),
    ];

    /// The wire error code.
    pub fn code(self) -> i16 {
        Self::TABLE
            .iter()
            .find(|(e, _)| *e == self)
            .map(|(_, c)| *c)
            .unwrap_or(-1)
    }

    /// The error for a wire code, if this crate knows it.
    pub fn from_code(code: i16) -> Option<Errors> {
        Self::TABLE
            .iter()
            .find(|(_, c)| *c == code)
            .map(|(e, _)| *e)
    }

    /// True for [`Errors::None`].
    pub fn is_none(self) -> bool {
        self == Errors::None
    }
}

/// Errors of this crate that are not Kafka answers: malformed encodings and records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// A ConsumerProtocol or record payload could not be decoded.
    #[error("malformed {what}: {reason}")]
    Malformed {
        /// What was being decoded.
        what: &'static str,
        /// Why it failed.
        reason: String,
    },
    /// A record type or version this crate does not know.
    #[error("unsupported {what} version {version}")]
    UnsupportedVersion {
        /// What was being decoded.
        what: &'static str,
        /// The version found.
        version: i16,
    },
    /// An assignor could not produce an assignment.
    #[error("assignor {assignor} failed: {reason}")]
    Assignor {
        /// The assignor's protocol name.
        assignor: &'static str,
        /// Why it failed.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_match_kafka() {
        for (e, c) in Errors::TABLE {
            assert_eq!(e.code(), c);
            assert_eq!(Errors::from_code(c), Some(e));
        }
        assert_eq!(Errors::FencedInstanceId.code(), 82);
        assert_eq!(Errors::GroupMaxSizeReached.code(), 81);
        assert_eq!(Errors::UnstableOffsetCommit.code(), 88);
        assert_eq!(Errors::FencedMemberEpoch.code(), 110);
        assert_eq!(Errors::StaleMemberEpoch.code(), 113);
        assert_eq!(Errors::InvalidRegularExpression.code(), 128);
        assert_eq!(Errors::from_code(9999), None);
    }
}
