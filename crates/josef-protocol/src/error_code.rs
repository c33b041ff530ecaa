//! `ErrorCode`: every error code of the Kafka protocol.
//!
//! Numbers, names and retriability follow Kafka's `Errors.java`; every other crate maps its errors to
//! Kafka codes through this enum.

/// A Kafka error code (`ErrorCode::OutOfOrderSequenceNumber as i16 == 45`).
///
/// ```
/// use josef_protocol::ErrorCode;
/// assert_eq!(ErrorCode::from_i16(45), Some(ErrorCode::OutOfOrderSequenceNumber));
/// assert_eq!(ErrorCode::NotLeaderOrFollower.code(), 6);
/// assert_eq!(ErrorCode::UnknownTopicOrPartition.name(), "UNKNOWN_TOPIC_OR_PARTITION");
/// assert!(ErrorCode::NotLeaderOrFollower.is_retriable());
/// assert!(!ErrorCode::InvalidProducerEpoch.is_retriable());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i16)]
pub enum ErrorCode {
    /// `NONE` (0).
    None = 0,
    /// `UNKNOWN_SERVER_ERROR` (-1).
    UnknownServerError = -1,
    /// `OFFSET_OUT_OF_RANGE` (1).
    OffsetOutOfRange = 1,
    /// `CORRUPT_MESSAGE` (2), retriable.
    CorruptMessage = 2,
    /// `UNKNOWN_TOPIC_OR_PARTITION` (3), retriable.
    UnknownTopicOrPartition = 3,
    /// `INVALID_FETCH_SIZE` (4).
    InvalidFetchSize = 4,
    /// `LEADER_NOT_AVAILABLE` (5), retriable.
    LeaderNotAvailable = 5,
    /// `NOT_LEADER_OR_FOLLOWER` (6), retriable.
    NotLeaderOrFollower = 6,
    /// `REQUEST_TIMED_OUT` (7), retriable.
    RequestTimedOut = 7,
    /// `BROKER_NOT_AVAILABLE` (8).
    BrokerNotAvailable = 8,
    /// `REPLICA_NOT_AVAILABLE` (9), retriable.
    ReplicaNotAvailable = 9,
    /// `MESSAGE_TOO_LARGE` (10).
    MessageTooLarge = 10,
    /// `STALE_CONTROLLER_EPOCH` (11).
    StaleControllerEpoch = 11,
    /// `OFFSET_METADATA_TOO_LARGE` (12).
    OffsetMetadataTooLarge = 12,
    /// `NETWORK_EXCEPTION` (13), retriable.
    NetworkException = 13,
    /// `COORDINATOR_LOAD_IN_PROGRESS` (14), retriable.
    CoordinatorLoadInProgress = 14,
    /// `COORDINATOR_NOT_AVAILABLE` (15), retriable.
    CoordinatorNotAvailable = 15,
    /// `NOT_COORDINATOR` (16), retriable.
    NotCoordinator = 16,
    /// `INVALID_TOPIC_EXCEPTION` (17).
    InvalidTopicException = 17,
    /// `RECORD_LIST_TOO_LARGE` (18).
    RecordListTooLarge = 18,
    /// `NOT_ENOUGH_REPLICAS` (19), retriable.
    NotEnoughReplicas = 19,
    /// `NOT_ENOUGH_REPLICAS_AFTER_APPEND` (20), retriable.
    NotEnoughReplicasAfterAppend = 20,
    /// `INVALID_REQUIRED_ACKS` (21).
    InvalidRequiredAcks = 21,
    /// `ILLEGAL_GENERATION` (22).
    IllegalGeneration = 22,
    /// `INCONSISTENT_GROUP_PROTOCOL` (23).
    InconsistentGroupProtocol = 23,
    /// `INVALID_GROUP_ID` (24).
    InvalidGroupId = 24,
    /// `UNKNOWN_MEMBER_ID` (25).
    UnknownMemberId = 25,
    /// `INVALID_SESSION_TIMEOUT` (26).
    InvalidSessionTimeout = 26,
    /// `REBALANCE_IN_PROGRESS` (27).
    RebalanceInProgress = 27,
    /// `INVALID_COMMIT_OFFSET_SIZE` (28).
    InvalidCommitOffsetSize = 28,
    /// `TOPIC_AUTHORIZATION_FAILED` (29).
    TopicAuthorizationFailed = 29,
    /// `GROUP_AUTHORIZATION_FAILED` (30).
    GroupAuthorizationFailed = 30,
    /// `CLUSTER_AUTHORIZATION_FAILED` (31).
    ClusterAuthorizationFailed = 31,
    /// `INVALID_TIMESTAMP` (32).
    InvalidTimestamp = 32,
    /// `UNSUPPORTED_SASL_MECHANISM` (33).
    UnsupportedSaslMechanism = 33,
    /// `ILLEGAL_SASL_STATE` (34).
    IllegalSaslState = 34,
    /// `UNSUPPORTED_VERSION` (35).
    UnsupportedVersion = 35,
    /// `TOPIC_ALREADY_EXISTS` (36).
    TopicAlreadyExists = 36,
    /// `INVALID_PARTITIONS` (37).
    InvalidPartitions = 37,
    /// `INVALID_REPLICATION_FACTOR` (38).
    InvalidReplicationFactor = 38,
    /// `INVALID_REPLICA_ASSIGNMENT` (39).
    InvalidReplicaAssignment = 39,
    /// `INVALID_CONFIG` (40).
    InvalidConfig = 40,
    /// `NOT_CONTROLLER` (41), retriable.
    NotController = 41,
    /// `INVALID_REQUEST` (42).
    InvalidRequest = 42,
    /// `UNSUPPORTED_FOR_MESSAGE_FORMAT` (43).
    UnsupportedForMessageFormat = 43,
    /// `POLICY_VIOLATION` (44).
    PolicyViolation = 44,
    /// `OUT_OF_ORDER_SEQUENCE_NUMBER` (45).
    OutOfOrderSequenceNumber = 45,
    /// `DUPLICATE_SEQUENCE_NUMBER` (46).
    DuplicateSequenceNumber = 46,
    /// `INVALID_PRODUCER_EPOCH` (47).
    InvalidProducerEpoch = 47,
    /// `INVALID_TXN_STATE` (48).
    InvalidTxnState = 48,
    /// `INVALID_PRODUCER_ID_MAPPING` (49).
    InvalidProducerIdMapping = 49,
    /// `INVALID_TRANSACTION_TIMEOUT` (50).
    InvalidTransactionTimeout = 50,
    /// `CONCURRENT_TRANSACTIONS` (51).
    ConcurrentTransactions = 51,
    /// `TRANSACTION_COORDINATOR_FENCED` (52).
    TransactionCoordinatorFenced = 52,
    /// `TRANSACTIONAL_ID_AUTHORIZATION_FAILED` (53).
    TransactionalIdAuthorizationFailed = 53,
    /// `SECURITY_DISABLED` (54).
    SecurityDisabled = 54,
    /// `OPERATION_NOT_ATTEMPTED` (55).
    OperationNotAttempted = 55,
    /// `KAFKA_STORAGE_ERROR` (56), retriable.
    KafkaStorageError = 56,
    /// `LOG_DIR_NOT_FOUND` (57).
    LogDirNotFound = 57,
    /// `SASL_AUTHENTICATION_FAILED` (58).
    SaslAuthenticationFailed = 58,
    /// `UNKNOWN_PRODUCER_ID` (59).
    UnknownProducerId = 59,
    /// `REASSIGNMENT_IN_PROGRESS` (60).
    ReassignmentInProgress = 60,
    /// `DELEGATION_TOKEN_AUTH_DISABLED` (61).
    DelegationTokenAuthDisabled = 61,
    /// `DELEGATION_TOKEN_NOT_FOUND` (62).
    DelegationTokenNotFound = 62,
    /// `DELEGATION_TOKEN_OWNER_MISMATCH` (63).
    DelegationTokenOwnerMismatch = 63,
    /// `DELEGATION_TOKEN_REQUEST_NOT_ALLOWED` (64).
    DelegationTokenRequestNotAllowed = 64,
    /// `DELEGATION_TOKEN_AUTHORIZATION_FAILED` (65).
    DelegationTokenAuthorizationFailed = 65,
    /// `DELEGATION_TOKEN_EXPIRED` (66).
    DelegationTokenExpired = 66,
    /// `INVALID_PRINCIPAL_TYPE` (67).
    InvalidPrincipalType = 67,
    /// `NON_EMPTY_GROUP` (68).
    NonEmptyGroup = 68,
    /// `GROUP_ID_NOT_FOUND` (69).
    GroupIdNotFound = 69,
    /// `FETCH_SESSION_ID_NOT_FOUND` (70), retriable.
    FetchSessionIdNotFound = 70,
    /// `INVALID_FETCH_SESSION_EPOCH` (71), retriable.
    InvalidFetchSessionEpoch = 71,
    /// `LISTENER_NOT_FOUND` (72), retriable.
    ListenerNotFound = 72,
    /// `TOPIC_DELETION_DISABLED` (73).
    TopicDeletionDisabled = 73,
    /// `FENCED_LEADER_EPOCH` (74), retriable.
    FencedLeaderEpoch = 74,
    /// `UNKNOWN_LEADER_EPOCH` (75), retriable.
    UnknownLeaderEpoch = 75,
    /// `UNSUPPORTED_COMPRESSION_TYPE` (76).
    UnsupportedCompressionType = 76,
    /// `STALE_BROKER_EPOCH` (77).
    StaleBrokerEpoch = 77,
    /// `OFFSET_NOT_AVAILABLE` (78), retriable.
    OffsetNotAvailable = 78,
    /// `MEMBER_ID_REQUIRED` (79).
    MemberIdRequired = 79,
    /// `PREFERRED_LEADER_NOT_AVAILABLE` (80), retriable.
    PreferredLeaderNotAvailable = 80,
    /// `GROUP_MAX_SIZE_REACHED` (81).
    GroupMaxSizeReached = 81,
    /// `FENCED_INSTANCE_ID` (82).
    FencedInstanceId = 82,
    /// `ELIGIBLE_LEADERS_NOT_AVAILABLE` (83), retriable.
    EligibleLeadersNotAvailable = 83,
    /// `ELECTION_NOT_NEEDED` (84), retriable.
    ElectionNotNeeded = 84,
    /// `NO_REASSIGNMENT_IN_PROGRESS` (85).
    NoReassignmentInProgress = 85,
    /// `GROUP_SUBSCRIBED_TO_TOPIC` (86).
    GroupSubscribedToTopic = 86,
    /// `INVALID_RECORD` (87).
    InvalidRecord = 87,
    /// `UNSTABLE_OFFSET_COMMIT` (88), retriable.
    UnstableOffsetCommit = 88,
    /// `THROTTLING_QUOTA_EXCEEDED` (89), retriable.
    ThrottlingQuotaExceeded = 89,
    /// `PRODUCER_FENCED` (90).
    ProducerFenced = 90,
    /// `RESOURCE_NOT_FOUND` (91).
    ResourceNotFound = 91,
    /// `DUPLICATE_RESOURCE` (92).
    DuplicateResource = 92,
    /// `UNACCEPTABLE_CREDENTIAL` (93).
    UnacceptableCredential = 93,
    /// `INCONSISTENT_VOTER_SET` (94).
    InconsistentVoterSet = 94,
    /// `INVALID_UPDATE_VERSION` (95).
    InvalidUpdateVersion = 95,
    /// `FEATURE_UPDATE_FAILED` (96).
    FeatureUpdateFailed = 96,
    /// `PRINCIPAL_DESERIALIZATION_FAILURE` (97).
    PrincipalDeserializationFailure = 97,
    /// `SNAPSHOT_NOT_FOUND` (98).
    SnapshotNotFound = 98,
    /// `POSITION_OUT_OF_RANGE` (99).
    PositionOutOfRange = 99,
    /// `UNKNOWN_TOPIC_ID` (100), retriable.
    UnknownTopicId = 100,
    /// `DUPLICATE_BROKER_REGISTRATION` (101).
    DuplicateBrokerRegistration = 101,
    /// `BROKER_ID_NOT_REGISTERED` (102).
    BrokerIdNotRegistered = 102,
    /// `INCONSISTENT_TOPIC_ID` (103), retriable.
    InconsistentTopicId = 103,
    /// `INCONSISTENT_CLUSTER_ID` (104).
    InconsistentClusterId = 104,
    /// `TRANSACTIONAL_ID_NOT_FOUND` (105).
    TransactionalIdNotFound = 105,
    /// `FETCH_SESSION_TOPIC_ID_ERROR` (106), retriable.
    FetchSessionTopicIdError = 106,
    /// `INELIGIBLE_REPLICA` (107).
    IneligibleReplica = 107,
    /// `NEW_LEADER_ELECTED` (108).
    NewLeaderElected = 108,
    /// `OFFSET_MOVED_TO_TIERED_STORAGE` (109).
    OffsetMovedToTieredStorage = 109,
    /// `FENCED_MEMBER_EPOCH` (110).
    FencedMemberEpoch = 110,
    /// `UNRELEASED_INSTANCE_ID` (111).
    UnreleasedInstanceId = 111,
    /// `UNSUPPORTED_ASSIGNOR` (112).
    UnsupportedAssignor = 112,
    /// `STALE_MEMBER_EPOCH` (113).
    StaleMemberEpoch = 113,
    /// `MISMATCHED_ENDPOINT_TYPE` (114).
    MismatchedEndpointType = 114,
    /// `UNSUPPORTED_ENDPOINT_TYPE` (115).
    UnsupportedEndpointType = 115,
    /// `UNKNOWN_CONTROLLER_ID` (116).
    UnknownControllerId = 116,
    /// `UNKNOWN_SUBSCRIPTION_ID` (117).
    UnknownSubscriptionId = 117,
    /// `TELEMETRY_TOO_LARGE` (118).
    TelemetryTooLarge = 118,
    /// `INVALID_REGISTRATION` (119).
    InvalidRegistration = 119,
    /// `TRANSACTION_ABORTABLE` (120).
    TransactionAbortable = 120,
    /// `INVALID_RECORD_STATE` (121).
    InvalidRecordState = 121,
    /// `SHARE_SESSION_NOT_FOUND` (122), retriable.
    ShareSessionNotFound = 122,
    /// `INVALID_SHARE_SESSION_EPOCH` (123), retriable.
    InvalidShareSessionEpoch = 123,
    /// `FENCED_STATE_EPOCH` (124).
    FencedStateEpoch = 124,
    /// `INVALID_VOTER_KEY` (125).
    InvalidVoterKey = 125,
    /// `DUPLICATE_VOTER` (126).
    DuplicateVoter = 126,
    /// `VOTER_NOT_FOUND` (127).
    VoterNotFound = 127,
    /// `INVALID_REGULAR_EXPRESSION` (128).
    InvalidRegularExpression = 128,
    /// `REBOOTSTRAP_REQUIRED` (129).
    RebootstrapRequired = 129,
    /// `STREAMS_INVALID_TOPOLOGY` (130).
    StreamsInvalidTopology = 130,
    /// `STREAMS_INVALID_TOPOLOGY_EPOCH` (131).
    StreamsInvalidTopologyEpoch = 131,
    /// `STREAMS_TOPOLOGY_FENCED` (132).
    StreamsTopologyFenced = 132,
    /// `SHARE_SESSION_LIMIT_REACHED` (133), retriable.
    ShareSessionLimitReached = 133,
}

impl ErrorCode {
    /// Every error code, in numeric order.
    pub const ALL: [ErrorCode; 135] = [
        ErrorCode::UnknownServerError,
        ErrorCode::None,
        ErrorCode::OffsetOutOfRange,
        ErrorCode::CorruptMessage,
        ErrorCode::UnknownTopicOrPartition,
        ErrorCode::InvalidFetchSize,
        ErrorCode::LeaderNotAvailable,
        ErrorCode::NotLeaderOrFollower,
        ErrorCode::RequestTimedOut,
        ErrorCode::BrokerNotAvailable,
        ErrorCode::ReplicaNotAvailable,
        ErrorCode::MessageTooLarge,
        ErrorCode::StaleControllerEpoch,
        ErrorCode::OffsetMetadataTooLarge,
        ErrorCode::NetworkException,
        ErrorCode::CoordinatorLoadInProgress,
        ErrorCode::CoordinatorNotAvailable,
        ErrorCode::NotCoordinator,
        ErrorCode::InvalidTopicException,
        ErrorCode::RecordListTooLarge,
        ErrorCode::NotEnoughReplicas,
        ErrorCode::NotEnoughReplicasAfterAppend,
        ErrorCode::InvalidRequiredAcks,
        ErrorCode::IllegalGeneration,
        ErrorCode::InconsistentGroupProtocol,
        ErrorCode::InvalidGroupId,
        ErrorCode::UnknownMemberId,
        ErrorCode::InvalidSessionTimeout,
        ErrorCode::RebalanceInProgress,
        ErrorCode::InvalidCommitOffsetSize,
        ErrorCode::TopicAuthorizationFailed,
        ErrorCode::GroupAuthorizationFailed,
        ErrorCode::ClusterAuthorizationFailed,
        ErrorCode::InvalidTimestamp,
        ErrorCode::UnsupportedSaslMechanism,
        ErrorCode::IllegalSaslState,
        ErrorCode::UnsupportedVersion,
        ErrorCode::TopicAlreadyExists,
        ErrorCode::InvalidPartitions,
        ErrorCode::InvalidReplicationFactor,
        ErrorCode::InvalidReplicaAssignment,
        ErrorCode::InvalidConfig,
        ErrorCode::NotController,
        ErrorCode::InvalidRequest,
        ErrorCode::UnsupportedForMessageFormat,
        ErrorCode::PolicyViolation,
        ErrorCode::OutOfOrderSequenceNumber,
        ErrorCode::DuplicateSequenceNumber,
        ErrorCode::InvalidProducerEpoch,
        ErrorCode::InvalidTxnState,
        ErrorCode::InvalidProducerIdMapping,
        ErrorCode::InvalidTransactionTimeout,
        ErrorCode::ConcurrentTransactions,
        ErrorCode::TransactionCoordinatorFenced,
        ErrorCode::TransactionalIdAuthorizationFailed,
        ErrorCode::SecurityDisabled,
        ErrorCode::OperationNotAttempted,
        ErrorCode::KafkaStorageError,
        ErrorCode::LogDirNotFound,
        ErrorCode::SaslAuthenticationFailed,
        ErrorCode::UnknownProducerId,
        ErrorCode::ReassignmentInProgress,
        ErrorCode::DelegationTokenAuthDisabled,
        ErrorCode::DelegationTokenNotFound,
        ErrorCode::DelegationTokenOwnerMismatch,
        ErrorCode::DelegationTokenRequestNotAllowed,
        ErrorCode::DelegationTokenAuthorizationFailed,
        ErrorCode::DelegationTokenExpired,
        ErrorCode::InvalidPrincipalType,
        ErrorCode::NonEmptyGroup,
        ErrorCode::GroupIdNotFound,
        ErrorCode::FetchSessionIdNotFound,
        ErrorCode::InvalidFetchSessionEpoch,
        ErrorCode::ListenerNotFound,
        ErrorCode::TopicDeletionDisabled,
        ErrorCode::FencedLeaderEpoch,
        ErrorCode::UnknownLeaderEpoch,
        ErrorCode::UnsupportedCompressionType,
        ErrorCode::StaleBrokerEpoch,
        ErrorCode::OffsetNotAvailable,
        ErrorCode::MemberIdRequired,
        ErrorCode::PreferredLeaderNotAvailable,
        ErrorCode::GroupMaxSizeReached,
        ErrorCode::FencedInstanceId,
        ErrorCode::EligibleLeadersNotAvailable,
        ErrorCode::ElectionNotNeeded,
        ErrorCode::NoReassignmentInProgress,
        ErrorCode::GroupSubscribedToTopic,
        ErrorCode::InvalidRecord,
        ErrorCode::UnstableOffsetCommit,
        ErrorCode::ThrottlingQuotaExceeded,
        ErrorCode::ProducerFenced,
        ErrorCode::ResourceNotFound,
        ErrorCode::DuplicateResource,
        ErrorCode::UnacceptableCredential,
        ErrorCode::InconsistentVoterSet,
        ErrorCode::InvalidUpdateVersion,
        ErrorCode::FeatureUpdateFailed,
        ErrorCode::PrincipalDeserializationFailure,
        ErrorCode::SnapshotNotFound,
        ErrorCode::PositionOutOfRange,
        ErrorCode::UnknownTopicId,
        ErrorCode::DuplicateBrokerRegistration,
        ErrorCode::BrokerIdNotRegistered,
        ErrorCode::InconsistentTopicId,
        ErrorCode::InconsistentClusterId,
        ErrorCode::TransactionalIdNotFound,
        ErrorCode::FetchSessionTopicIdError,
        ErrorCode::IneligibleReplica,
        ErrorCode::NewLeaderElected,
        ErrorCode::OffsetMovedToTieredStorage,
        ErrorCode::FencedMemberEpoch,
        ErrorCode::UnreleasedInstanceId,
        ErrorCode::UnsupportedAssignor,
        ErrorCode::StaleMemberEpoch,
        ErrorCode::MismatchedEndpointType,
        ErrorCode::UnsupportedEndpointType,
        ErrorCode::UnknownControllerId,
        ErrorCode::UnknownSubscriptionId,
        ErrorCode::TelemetryTooLarge,
        ErrorCode::InvalidRegistration,
        ErrorCode::TransactionAbortable,
        ErrorCode::InvalidRecordState,
        ErrorCode::ShareSessionNotFound,
        ErrorCode::InvalidShareSessionEpoch,
        ErrorCode::FencedStateEpoch,
        ErrorCode::InvalidVoterKey,
        ErrorCode::DuplicateVoter,
        ErrorCode::VoterNotFound,
        ErrorCode::InvalidRegularExpression,
        ErrorCode::RebootstrapRequired,
        ErrorCode::StreamsInvalidTopology,
        ErrorCode::StreamsInvalidTopologyEpoch,
        ErrorCode::StreamsTopologyFenced,
        ErrorCode::ShareSessionLimitReached,
    ];

    /// The error with this code, if Kafka defines it.
    pub const fn from_i16(code: i16) -> Option<ErrorCode> {
        Some(match code {
            0 => ErrorCode::None,
            -1 => ErrorCode::UnknownServerError,
            1 => ErrorCode::OffsetOutOfRange,
            2 => ErrorCode::CorruptMessage,
            3 => ErrorCode::UnknownTopicOrPartition,
            4 => ErrorCode::InvalidFetchSize,
            5 => ErrorCode::LeaderNotAvailable,
            6 => ErrorCode::NotLeaderOrFollower,
            7 => ErrorCode::RequestTimedOut,
            8 => ErrorCode::BrokerNotAvailable,
            9 => ErrorCode::ReplicaNotAvailable,
            10 => ErrorCode::MessageTooLarge,
            11 => ErrorCode::StaleControllerEpoch,
            12 => ErrorCode::OffsetMetadataTooLarge,
            13 => ErrorCode::NetworkException,
            14 => ErrorCode::CoordinatorLoadInProgress,
            15 => ErrorCode::CoordinatorNotAvailable,
            16 => ErrorCode::NotCoordinator,
            17 => ErrorCode::InvalidTopicException,
            18 => ErrorCode::RecordListTooLarge,
            19 => ErrorCode::NotEnoughReplicas,
            20 => ErrorCode::NotEnoughReplicasAfterAppend,
            21 => ErrorCode::InvalidRequiredAcks,
            22 => ErrorCode::IllegalGeneration,
            23 => ErrorCode::InconsistentGroupProtocol,
            24 => ErrorCode::InvalidGroupId,
            25 => ErrorCode::UnknownMemberId,
            26 => ErrorCode::InvalidSessionTimeout,
            27 => ErrorCode::RebalanceInProgress,
            28 => ErrorCode::InvalidCommitOffsetSize,
            29 => ErrorCode::TopicAuthorizationFailed,
            30 => ErrorCode::GroupAuthorizationFailed,
            31 => ErrorCode::ClusterAuthorizationFailed,
            32 => ErrorCode::InvalidTimestamp,
            33 => ErrorCode::UnsupportedSaslMechanism,
            34 => ErrorCode::IllegalSaslState,
            35 => ErrorCode::UnsupportedVersion,
            36 => ErrorCode::TopicAlreadyExists,
            37 => ErrorCode::InvalidPartitions,
            38 => ErrorCode::InvalidReplicationFactor,
            39 => ErrorCode::InvalidReplicaAssignment,
            40 => ErrorCode::InvalidConfig,
            41 => ErrorCode::NotController,
            42 => ErrorCode::InvalidRequest,
            43 => ErrorCode::UnsupportedForMessageFormat,
            44 => ErrorCode::PolicyViolation,
            45 => ErrorCode::OutOfOrderSequenceNumber,
            46 => ErrorCode::DuplicateSequenceNumber,
            47 => ErrorCode::InvalidProducerEpoch,
            48 => ErrorCode::InvalidTxnState,
            49 => ErrorCode::InvalidProducerIdMapping,
            50 => ErrorCode::InvalidTransactionTimeout,
            51 => ErrorCode::ConcurrentTransactions,
            52 => ErrorCode::TransactionCoordinatorFenced,
            53 => ErrorCode::TransactionalIdAuthorizationFailed,
            54 => ErrorCode::SecurityDisabled,
            55 => ErrorCode::OperationNotAttempted,
            56 => ErrorCode::KafkaStorageError,
            57 => ErrorCode::LogDirNotFound,
            58 => ErrorCode::SaslAuthenticationFailed,
            59 => ErrorCode::UnknownProducerId,
            60 => ErrorCode::ReassignmentInProgress,
            61 => ErrorCode::DelegationTokenAuthDisabled,
            62 => ErrorCode::DelegationTokenNotFound,
            63 => ErrorCode::DelegationTokenOwnerMismatch,
            64 => ErrorCode::DelegationTokenRequestNotAllowed,
            65 => ErrorCode::DelegationTokenAuthorizationFailed,
            66 => ErrorCode::DelegationTokenExpired,
            67 => ErrorCode::InvalidPrincipalType,
            68 => ErrorCode::NonEmptyGroup,
            69 => ErrorCode::GroupIdNotFound,
            70 => ErrorCode::FetchSessionIdNotFound,
            71 => ErrorCode::InvalidFetchSessionEpoch,
            72 => ErrorCode::ListenerNotFound,
            73 => ErrorCode::TopicDeletionDisabled,
            74 => ErrorCode::FencedLeaderEpoch,
            75 => ErrorCode::UnknownLeaderEpoch,
            76 => ErrorCode::UnsupportedCompressionType,
            77 => ErrorCode::StaleBrokerEpoch,
            78 => ErrorCode::OffsetNotAvailable,
            79 => ErrorCode::MemberIdRequired,
            80 => ErrorCode::PreferredLeaderNotAvailable,
            81 => ErrorCode::GroupMaxSizeReached,
            82 => ErrorCode::FencedInstanceId,
            83 => ErrorCode::EligibleLeadersNotAvailable,
            84 => ErrorCode::ElectionNotNeeded,
            85 => ErrorCode::NoReassignmentInProgress,
            86 => ErrorCode::GroupSubscribedToTopic,
            87 => ErrorCode::InvalidRecord,
            88 => ErrorCode::UnstableOffsetCommit,
            89 => ErrorCode::ThrottlingQuotaExceeded,
            90 => ErrorCode::ProducerFenced,
            91 => ErrorCode::ResourceNotFound,
            92 => ErrorCode::DuplicateResource,
            93 => ErrorCode::UnacceptableCredential,
            94 => ErrorCode::InconsistentVoterSet,
            95 => ErrorCode::InvalidUpdateVersion,
            96 => ErrorCode::FeatureUpdateFailed,
            97 => ErrorCode::PrincipalDeserializationFailure,
            98 => ErrorCode::SnapshotNotFound,
            99 => ErrorCode::PositionOutOfRange,
            100 => ErrorCode::UnknownTopicId,
            101 => ErrorCode::DuplicateBrokerRegistration,
            102 => ErrorCode::BrokerIdNotRegistered,
            103 => ErrorCode::InconsistentTopicId,
            104 => ErrorCode::InconsistentClusterId,
            105 => ErrorCode::TransactionalIdNotFound,
            106 => ErrorCode::FetchSessionTopicIdError,
            107 => ErrorCode::IneligibleReplica,
            108 => ErrorCode::NewLeaderElected,
            109 => ErrorCode::OffsetMovedToTieredStorage,
            110 => ErrorCode::FencedMemberEpoch,
            111 => ErrorCode::UnreleasedInstanceId,
            112 => ErrorCode::UnsupportedAssignor,
            113 => ErrorCode::StaleMemberEpoch,
            114 => ErrorCode::MismatchedEndpointType,
            115 => ErrorCode::UnsupportedEndpointType,
            116 => ErrorCode::UnknownControllerId,
            117 => ErrorCode::UnknownSubscriptionId,
            118 => ErrorCode::TelemetryTooLarge,
            119 => ErrorCode::InvalidRegistration,
            120 => ErrorCode::TransactionAbortable,
            121 => ErrorCode::InvalidRecordState,
            122 => ErrorCode::ShareSessionNotFound,
            123 => ErrorCode::InvalidShareSessionEpoch,
            124 => ErrorCode::FencedStateEpoch,
            125 => ErrorCode::InvalidVoterKey,
            126 => ErrorCode::DuplicateVoter,
            127 => ErrorCode::VoterNotFound,
            128 => ErrorCode::InvalidRegularExpression,
            129 => ErrorCode::RebootstrapRequired,
            130 => ErrorCode::StreamsInvalidTopology,
            131 => ErrorCode::StreamsInvalidTopologyEpoch,
            132 => ErrorCode::StreamsTopologyFenced,
            133 => ErrorCode::ShareSessionLimitReached,
            _ => return None,
        })
    }

    /// The numeric code.
    pub const fn code(self) -> i16 {
        self as i16
    }

    /// Kafka's name of the error, e.g. `"NOT_LEADER_OR_FOLLOWER"`.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorCode::None => "NONE",
            ErrorCode::UnknownServerError => "UNKNOWN_SERVER_ERROR",
            ErrorCode::OffsetOutOfRange => "OFFSET_OUT_OF_RANGE",
            ErrorCode::CorruptMessage => "CORRUPT_MESSAGE",
            ErrorCode::UnknownTopicOrPartition => "UNKNOWN_TOPIC_OR_PARTITION",
            ErrorCode::InvalidFetchSize => "INVALID_FETCH_SIZE",
            ErrorCode::LeaderNotAvailable => "LEADER_NOT_AVAILABLE",
            ErrorCode::NotLeaderOrFollower => "NOT_LEADER_OR_FOLLOWER",
            ErrorCode::RequestTimedOut => "REQUEST_TIMED_OUT",
            ErrorCode::BrokerNotAvailable => "BROKER_NOT_AVAILABLE",
            ErrorCode::ReplicaNotAvailable => "REPLICA_NOT_AVAILABLE",
            ErrorCode::MessageTooLarge => "MESSAGE_TOO_LARGE",
            ErrorCode::StaleControllerEpoch => "STALE_CONTROLLER_EPOCH",
            ErrorCode::OffsetMetadataTooLarge => "OFFSET_METADATA_TOO_LARGE",
            ErrorCode::NetworkException => "NETWORK_EXCEPTION",
            ErrorCode::CoordinatorLoadInProgress => "COORDINATOR_LOAD_IN_PROGRESS",
            ErrorCode::CoordinatorNotAvailable => "COORDINATOR_NOT_AVAILABLE",
            ErrorCode::NotCoordinator => "NOT_COORDINATOR",
            ErrorCode::InvalidTopicException => "INVALID_TOPIC_EXCEPTION",
            ErrorCode::RecordListTooLarge => "RECORD_LIST_TOO_LARGE",
            ErrorCode::NotEnoughReplicas => "NOT_ENOUGH_REPLICAS",
            ErrorCode::NotEnoughReplicasAfterAppend => "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            ErrorCode::InvalidRequiredAcks => "INVALID_REQUIRED_ACKS",
            ErrorCode::IllegalGeneration => "ILLEGAL_GENERATION",
            ErrorCode::InconsistentGroupProtocol => "INCONSISTENT_GROUP_PROTOCOL",
            ErrorCode::InvalidGroupId => "INVALID_GROUP_ID",
            ErrorCode::UnknownMemberId => "UNKNOWN_MEMBER_ID",
            ErrorCode::InvalidSessionTimeout => "INVALID_SESSION_TIMEOUT",
            ErrorCode::RebalanceInProgress => "REBALANCE_IN_PROGRESS",
            ErrorCode::InvalidCommitOffsetSize => "INVALID_COMMIT_OFFSET_SIZE",
            ErrorCode::TopicAuthorizationFailed => "TOPIC_AUTHORIZATION_FAILED",
            ErrorCode::GroupAuthorizationFailed => "GROUP_AUTHORIZATION_FAILED",
            ErrorCode::ClusterAuthorizationFailed => "CLUSTER_AUTHORIZATION_FAILED",
            ErrorCode::InvalidTimestamp => "INVALID_TIMESTAMP",
            ErrorCode::UnsupportedSaslMechanism => "UNSUPPORTED_SASL_MECHANISM",
            ErrorCode::IllegalSaslState => "ILLEGAL_SASL_STATE",
            ErrorCode::UnsupportedVersion => "UNSUPPORTED_VERSION",
            ErrorCode::TopicAlreadyExists => "TOPIC_ALREADY_EXISTS",
            ErrorCode::InvalidPartitions => "INVALID_PARTITIONS",
            ErrorCode::InvalidReplicationFactor => "INVALID_REPLICATION_FACTOR",
            ErrorCode::InvalidReplicaAssignment => "INVALID_REPLICA_ASSIGNMENT",
            ErrorCode::InvalidConfig => "INVALID_CONFIG",
            ErrorCode::NotController => "NOT_CONTROLLER",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::UnsupportedForMessageFormat => "UNSUPPORTED_FOR_MESSAGE_FORMAT",
            ErrorCode::PolicyViolation => "POLICY_VIOLATION",
            ErrorCode::OutOfOrderSequenceNumber => "OUT_OF_ORDER_SEQUENCE_NUMBER",
            ErrorCode::DuplicateSequenceNumber => "DUPLICATE_SEQUENCE_NUMBER",
            ErrorCode::InvalidProducerEpoch => "INVALID_PRODUCER_EPOCH",
            ErrorCode::InvalidTxnState => "INVALID_TXN_STATE",
            ErrorCode::InvalidProducerIdMapping => "INVALID_PRODUCER_ID_MAPPING",
            ErrorCode::InvalidTransactionTimeout => "INVALID_TRANSACTION_TIMEOUT",
            ErrorCode::ConcurrentTransactions => "CONCURRENT_TRANSACTIONS",
            ErrorCode::TransactionCoordinatorFenced => "TRANSACTION_COORDINATOR_FENCED",
            ErrorCode::TransactionalIdAuthorizationFailed => {
                "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
            }
            ErrorCode::SecurityDisabled => "SECURITY_DISABLED",
            ErrorCode::OperationNotAttempted => "OPERATION_NOT_ATTEMPTED",
            ErrorCode::KafkaStorageError => "KAFKA_STORAGE_ERROR",
            ErrorCode::LogDirNotFound => "LOG_DIR_NOT_FOUND",
            ErrorCode::SaslAuthenticationFailed => "SASL_AUTHENTICATION_FAILED",
            ErrorCode::UnknownProducerId => "UNKNOWN_PRODUCER_ID",
            ErrorCode::ReassignmentInProgress => "REASSIGNMENT_IN_PROGRESS",
            ErrorCode::DelegationTokenAuthDisabled => "DELEGATION_TOKEN_AUTH_DISABLED",
            ErrorCode::DelegationTokenNotFound => "DELEGATION_TOKEN_NOT_FOUND",
            ErrorCode::DelegationTokenOwnerMismatch => "DELEGATION_TOKEN_OWNER_MISMATCH",
            ErrorCode::DelegationTokenRequestNotAllowed => "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
            ErrorCode::DelegationTokenAuthorizationFailed => {
                "DELEGATION_TOKEN_AUTHORIZATION_FAILED"
            }
            ErrorCode::DelegationTokenExpired => "DELEGATION_TOKEN_EXPIRED",
            ErrorCode::InvalidPrincipalType => "INVALID_PRINCIPAL_TYPE",
            ErrorCode::NonEmptyGroup => "NON_EMPTY_GROUP",
            ErrorCode::GroupIdNotFound => "GROUP_ID_NOT_FOUND",
            ErrorCode::FetchSessionIdNotFound => "FETCH_SESSION_ID_NOT_FOUND",
            ErrorCode::InvalidFetchSessionEpoch => "INVALID_FETCH_SESSION_EPOCH",
            ErrorCode::ListenerNotFound => "LISTENER_NOT_FOUND",
            ErrorCode::TopicDeletionDisabled => "TOPIC_DELETION_DISABLED",
            ErrorCode::FencedLeaderEpoch => "FENCED_LEADER_EPOCH",
            ErrorCode::UnknownLeaderEpoch => "UNKNOWN_LEADER_EPOCH",
            ErrorCode::UnsupportedCompressionType => "UNSUPPORTED_COMPRESSION_TYPE",
            ErrorCode::StaleBrokerEpoch => "STALE_BROKER_EPOCH",
            ErrorCode::OffsetNotAvailable => "OFFSET_NOT_AVAILABLE",
            ErrorCode::MemberIdRequired => "MEMBER_ID_REQUIRED",
            ErrorCode::PreferredLeaderNotAvailable => "PREFERRED_LEADER_NOT_AVAILABLE",
            ErrorCode::GroupMaxSizeReached => "GROUP_MAX_SIZE_REACHED",
            ErrorCode::FencedInstanceId => "FENCED_INSTANCE_ID",
            ErrorCode::EligibleLeadersNotAvailable => "ELIGIBLE_LEADERS_NOT_AVAILABLE",
            ErrorCode::ElectionNotNeeded => "ELECTION_NOT_NEEDED",
            ErrorCode::NoReassignmentInProgress => "NO_REASSIGNMENT_IN_PROGRESS",
            ErrorCode::GroupSubscribedToTopic => "GROUP_SUBSCRIBED_TO_TOPIC",
            ErrorCode::InvalidRecord => "INVALID_RECORD",
            ErrorCode::UnstableOffsetCommit => "UNSTABLE_OFFSET_COMMIT",
            ErrorCode::ThrottlingQuotaExceeded => "THROTTLING_QUOTA_EXCEEDED",
            ErrorCode::ProducerFenced => "PRODUCER_FENCED",
            ErrorCode::ResourceNotFound => "RESOURCE_NOT_FOUND",
            ErrorCode::DuplicateResource => "DUPLICATE_RESOURCE",
            ErrorCode::UnacceptableCredential => "UNACCEPTABLE_CREDENTIAL",
            ErrorCode::InconsistentVoterSet => "INCONSISTENT_VOTER_SET",
            ErrorCode::InvalidUpdateVersion => "INVALID_UPDATE_VERSION",
            ErrorCode::FeatureUpdateFailed => "FEATURE_UPDATE_FAILED",
            ErrorCode::PrincipalDeserializationFailure => "PRINCIPAL_DESERIALIZATION_FAILURE",
            ErrorCode::SnapshotNotFound => "SNAPSHOT_NOT_FOUND",
            ErrorCode::PositionOutOfRange => "POSITION_OUT_OF_RANGE",
            ErrorCode::UnknownTopicId => "UNKNOWN_TOPIC_ID",
            ErrorCode::DuplicateBrokerRegistration => "DUPLICATE_BROKER_REGISTRATION",
            ErrorCode::BrokerIdNotRegistered => "BROKER_ID_NOT_REGISTERED",
            ErrorCode::InconsistentTopicId => "INCONSISTENT_TOPIC_ID",
            ErrorCode::InconsistentClusterId => "INCONSISTENT_CLUSTER_ID",
            ErrorCode::TransactionalIdNotFound => "TRANSACTIONAL_ID_NOT_FOUND",
            ErrorCode::FetchSessionTopicIdError => "FETCH_SESSION_TOPIC_ID_ERROR",
            ErrorCode::IneligibleReplica => "INELIGIBLE_REPLICA",
            ErrorCode::NewLeaderElected => "NEW_LEADER_ELECTED",
            ErrorCode::OffsetMovedToTieredStorage => "OFFSET_MOVED_TO_TIERED_STORAGE",
            ErrorCode::FencedMemberEpoch => "FENCED_MEMBER_EPOCH",
            ErrorCode::UnreleasedInstanceId => "UNRELEASED_INSTANCE_ID",
            ErrorCode::UnsupportedAssignor => "UNSUPPORTED_ASSIGNOR",
            ErrorCode::StaleMemberEpoch => "STALE_MEMBER_EPOCH",
            ErrorCode::MismatchedEndpointType => "MISMATCHED_ENDPOINT_TYPE",
            ErrorCode::UnsupportedEndpointType => "UNSUPPORTED_ENDPOINT_TYPE",
            ErrorCode::UnknownControllerId => "UNKNOWN_CONTROLLER_ID",
            ErrorCode::UnknownSubscriptionId => "UNKNOWN_SUBSCRIPTION_ID",
            ErrorCode::TelemetryTooLarge => "TELEMETRY_TOO_LARGE",
            ErrorCode::InvalidRegistration => "INVALID_REGISTRATION",
            ErrorCode::TransactionAbortable => "TRANSACTION_ABORTABLE",
            ErrorCode::InvalidRecordState => "INVALID_RECORD_STATE",
            ErrorCode::ShareSessionNotFound => "SHARE_SESSION_NOT_FOUND",
            ErrorCode::InvalidShareSessionEpoch => "INVALID_SHARE_SESSION_EPOCH",
            ErrorCode::FencedStateEpoch => "FENCED_STATE_EPOCH",
            ErrorCode::InvalidVoterKey => "INVALID_VOTER_KEY",
            ErrorCode::DuplicateVoter => "DUPLICATE_VOTER",
            ErrorCode::VoterNotFound => "VOTER_NOT_FOUND",
            ErrorCode::InvalidRegularExpression => "INVALID_REGULAR_EXPRESSION",
            ErrorCode::RebootstrapRequired => "REBOOTSTRAP_REQUIRED",
            ErrorCode::StreamsInvalidTopology => "STREAMS_INVALID_TOPOLOGY",
            ErrorCode::StreamsInvalidTopologyEpoch => "STREAMS_INVALID_TOPOLOGY_EPOCH",
            ErrorCode::StreamsTopologyFenced => "STREAMS_TOPOLOGY_FENCED",
            ErrorCode::ShareSessionLimitReached => "SHARE_SESSION_LIMIT_REACHED",
        }
    }

    /// Whether a client may retry the operation as is (Kafka's `RetriableException`).
    pub const fn is_retriable(self) -> bool {
        matches!(
            self,
            ErrorCode::CorruptMessage
                | ErrorCode::UnknownTopicOrPartition
                | ErrorCode::LeaderNotAvailable
                | ErrorCode::NotLeaderOrFollower
                | ErrorCode::RequestTimedOut
                | ErrorCode::ReplicaNotAvailable
                | ErrorCode::NetworkException
                | ErrorCode::CoordinatorLoadInProgress
                | ErrorCode::CoordinatorNotAvailable
                | ErrorCode::NotCoordinator
                | ErrorCode::NotEnoughReplicas
                | ErrorCode::NotEnoughReplicasAfterAppend
                | ErrorCode::NotController
                | ErrorCode::KafkaStorageError
                | ErrorCode::FetchSessionIdNotFound
                | ErrorCode::InvalidFetchSessionEpoch
                | ErrorCode::ListenerNotFound
                | ErrorCode::FencedLeaderEpoch
                | ErrorCode::UnknownLeaderEpoch
                | ErrorCode::OffsetNotAvailable
                | ErrorCode::PreferredLeaderNotAvailable
                | ErrorCode::EligibleLeadersNotAvailable
                | ErrorCode::ElectionNotNeeded
                | ErrorCode::UnstableOffsetCommit
                | ErrorCode::ThrottlingQuotaExceeded
                | ErrorCode::UnknownTopicId
                | ErrorCode::InconsistentTopicId
                | ErrorCode::FetchSessionTopicIdError
                | ErrorCode::ShareSessionNotFound
                | ErrorCode::InvalidShareSessionEpoch
                | ErrorCode::ShareSessionLimitReached
        )
    }

    /// True for [`ErrorCode::None`].
    pub const fn is_ok(self) -> bool {
        matches!(self, ErrorCode::None)
    }
}

impl From<ErrorCode> for i16 {
    fn from(e: ErrorCode) -> i16 {
        e as i16
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_from_i16() {
        for e in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_i16(e.code()), Some(e));
        }
        assert_eq!(ErrorCode::from_i16(-2), None);
        assert_eq!(ErrorCode::from_i16(10_000), None);
    }

    #[test]
    fn well_known_codes_have_kafka_numbers() {
        assert_eq!(ErrorCode::UnknownServerError.code(), -1);
        assert_eq!(ErrorCode::UnsupportedVersion.code(), 35);
        assert_eq!(ErrorCode::OutOfOrderSequenceNumber.code(), 45);
        assert_eq!(ErrorCode::ProducerFenced.code(), 90);
        assert_eq!(ErrorCode::TransactionAbortable.code(), 120);
        assert_eq!(
            ErrorCode::InvalidTopicException.name(),
            "INVALID_TOPIC_EXCEPTION"
        );
    }
}
