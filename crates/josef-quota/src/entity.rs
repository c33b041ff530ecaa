//! Quota entities (`user`, `client-id`, `ip` and their defaults) and quota keys.

use std::fmt;

/// The name the ZooKeeper paths and the tools give a default entity.
pub const DEFAULT_ENTITY_NAME: &str = "<default>";

/// A quota entity type as the APIs and records spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityType {
    /// `user`: the principal name (`ANONYMOUS` when not authenticated).
    User,
    /// `client-id`: the request header's client id.
    ClientId,
    /// `ip`: the client's address (connection quotas only).
    Ip,
}

impl EntityType {
    /// The wire name: `user`, `client-id` or `ip`.
    pub fn as_str(self) -> &'static str {
        match self {
            EntityType::User => "user",
            EntityType::ClientId => "client-id",
            EntityType::Ip => "ip",
        }
    }

    /// The type of a wire name, `None` for any other string.
    pub fn parse(name: &str) -> Option<EntityType> {
        match name {
            "user" => Some(EntityType::User),
            "client-id" => Some(EntityType::ClientId),
            "ip" => Some(EntityType::Ip),
            _ => None,
        }
    }
}

impl fmt::Display for EntityType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entity name: a given name, or the default entity (a null name on the wire).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityName {
    /// The default entity of its type (`<default>`): applies to every name without its own quota.
    Default,
    /// A given name.
    Name(String),
}

impl EntityName {
    /// From a wire name, `None` meaning the default.
    pub fn from_wire(name: Option<&str>) -> EntityName {
        match name {
            None => EntityName::Default,
            Some(n) => EntityName::Name(n.to_owned()),
        }
    }

    /// The wire name: `None` for the default.
    pub fn as_wire(&self) -> Option<&str> {
        match self {
            EntityName::Default => None,
            EntityName::Name(n) => Some(n),
        }
    }
}

impl fmt::Display for EntityName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntityName::Default => f.write_str(DEFAULT_ENTITY_NAME),
            EntityName::Name(n) => f.write_str(n),
        }
    }
}

impl From<&str> for EntityName {
    fn from(name: &str) -> Self {
        EntityName::Name(name.to_owned())
    }
}

/// A quota entity: one of the combinations Kafka allows.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QuotaEntity {
    /// `/config/users/<user>`.
    User(EntityName),
    /// `/config/clients/<client-id>`.
    ClientId(EntityName),
    /// `/config/users/<user>/clients/<client-id>`.
    UserClientId(EntityName, EntityName),
    /// `/config/ips/<ip>`.
    Ip(EntityName),
}

impl QuotaEntity {
    /// The (type, name) components in the order `user`, `client-id`, `ip`.
    pub fn components(&self) -> Vec<(EntityType, &EntityName)> {
        match self {
            QuotaEntity::User(u) => vec![(EntityType::User, u)],
            QuotaEntity::ClientId(c) => vec![(EntityType::ClientId, c)],
            QuotaEntity::UserClientId(u, c) => {
                vec![(EntityType::User, u), (EntityType::ClientId, c)]
            }
            QuotaEntity::Ip(ip) => vec![(EntityType::Ip, ip)],
        }
    }

    /// The name of `entity_type` in this entity, if it has that type.
    pub fn name_of(&self, entity_type: EntityType) -> Option<&EntityName> {
        match (self, entity_type) {
            (QuotaEntity::User(u) | QuotaEntity::UserClientId(u, _), EntityType::User) => Some(u),
            (QuotaEntity::ClientId(c) | QuotaEntity::UserClientId(_, c), EntityType::ClientId) => {
                Some(c)
            }
            (QuotaEntity::Ip(ip), EntityType::Ip) => Some(ip),
            _ => None,
        }
    }

    /// True for `ip` entities, which take only `connection_creation_rate`.
    pub fn is_ip(&self) -> bool {
        matches!(self, QuotaEntity::Ip(_))
    }
}

impl fmt::Display for QuotaEntity {
    /// The ZooKeeper-style path: `users/alice/clients/<default>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuotaEntity::User(u) => write!(f, "users/{u}"),
            QuotaEntity::ClientId(c) => write!(f, "clients/{c}"),
            QuotaEntity::UserClientId(u, c) => write!(f, "users/{u}/clients/{c}"),
            QuotaEntity::Ip(ip) => write!(f, "ips/{ip}"),
        }
    }
}

/// The value type of a quota key, which decides how AlterClientQuotas validates its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaValueType {
    /// A LONG config: a whole number up to `i64::MAX`.
    Long,
    /// An INT config: a whole number up to `i32::MAX`.
    Int,
    /// A DOUBLE config.
    Double,
}

/// A quota config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QuotaKey {
    /// `producer_byte_rate`: produced bytes per second (LONG; user / client-id).
    ProducerByteRate,
    /// `consumer_byte_rate`: fetched bytes per second (LONG; user / client-id).
    ConsumerByteRate,
    /// `request_percentage`: percent of one thread's time (DOUBLE; user / client-id).
    RequestPercentage,
    /// `controller_mutation_rate`: partitions created or deleted per second (DOUBLE; user /
    /// client-id; KIP-599).
    ControllerMutationRate,
    /// `connection_creation_rate`: connections accepted per second (INT; ip; KIP-612).
    ConnectionCreationRate,
}

impl QuotaKey {
    /// Every key.
    pub const ALL: [QuotaKey; 5] = [
        QuotaKey::ProducerByteRate,
        QuotaKey::ConsumerByteRate,
        QuotaKey::RequestPercentage,
        QuotaKey::ControllerMutationRate,
        QuotaKey::ConnectionCreationRate,
    ];

    /// The config name.
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaKey::ProducerByteRate => "producer_byte_rate",
            QuotaKey::ConsumerByteRate => "consumer_byte_rate",
            QuotaKey::RequestPercentage => "request_percentage",
            QuotaKey::ControllerMutationRate => "controller_mutation_rate",
            QuotaKey::ConnectionCreationRate => "connection_creation_rate",
        }
    }

    /// The key of a config name, `None` for any other string.
    pub fn parse(name: &str) -> Option<QuotaKey> {
        QuotaKey::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The value type.
    pub fn value_type(self) -> QuotaValueType {
        match self {
            QuotaKey::ProducerByteRate | QuotaKey::ConsumerByteRate => QuotaValueType::Long,
            QuotaKey::RequestPercentage | QuotaKey::ControllerMutationRate => {
                QuotaValueType::Double
            }
            QuotaKey::ConnectionCreationRate => QuotaValueType::Int,
        }
    }

    /// True when `entity` may carry this key: `connection_creation_rate` for ip entities, the
    /// others for user / client-id entities.
    pub fn applies_to(self, entity: &QuotaEntity) -> bool {
        (self == QuotaKey::ConnectionCreationRate) == entity.is_ip()
    }
}

impl fmt::Display for QuotaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
