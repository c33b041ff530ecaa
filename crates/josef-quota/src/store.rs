//! The client quotas of the cluster: kept from ClientQuotaRecords, changed by AlterClientQuotas
//! (Kafka's `ClientQuotaControlManager`) and queried by DescribeClientQuotas (`ClientQuotasImage`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;

use josef_protocol::messages::alter_client_quotas_request::AlterClientQuotasRequest;
use josef_protocol::messages::alter_client_quotas_response::{
    self as alter_resp, AlterClientQuotasResponse,
};
use josef_protocol::messages::describe_client_quotas_request::DescribeClientQuotasRequest;
use josef_protocol::messages::describe_client_quotas_response::{
    self as describe_resp, DescribeClientQuotasResponse,
};
use josef_protocol::metadata_records::client_quota_record::{self, ClientQuotaRecord};
use josef_protocol::{ErrorCode, StrBytes};

use crate::entity::{EntityName, EntityType, QuotaEntity, QuotaKey, QuotaValueType};
use crate::error::{AlterQuotaError, DescribeQuotaError, EntityError, QuotaRecordError};

/// DescribeClientQuotas match type EXACT: the entity named by the match string.
pub const MATCH_TYPE_EXACT: i8 = 0;
/// DescribeClientQuotas match type DEFAULT: the default entity of the type.
pub const MATCH_TYPE_DEFAULT: i8 = 1;
/// DescribeClientQuotas match type SPECIFIED: any entity with the type.
pub const MATCH_TYPE_SPECIFIED: i8 = 2;

/// One change of one quota: `value` `None` removes the key.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaChange {
    /// The entity.
    pub entity: QuotaEntity,
    /// The quota key as written (a key this crate does not know is kept, and ignored by the
    /// managers).
    pub key: String,
    /// The new value, `None` to remove.
    pub value: Option<f64>,
}

impl QuotaChange {
    /// The ClientQuotaRecord that writes this change.
    pub fn to_record(&self) -> ClientQuotaRecord {
        ClientQuotaRecord {
            entity: self
                .entity
                .components()
                .into_iter()
                .map(|(t, n)| client_quota_record::EntityData {
                    entity_type: t.as_str().into(),
                    entity_name: n.as_wire().map(StrBytes::from),
                    ..Default::default()
                })
                .collect(),
            key: self.key.as_str().into(),
            value: self.value.unwrap_or(0.0),
            remove: self.value.is_none(),
            ..Default::default()
        }
    }
}

/// Builds an entity from wire (type, name) components, checking them as Kafka does: no component,
/// a repeated or unknown type, an empty name, or ip mixed with user / client-id are refused; with
/// `check_ip`, an ip name must be an IPv4 or IPv6 address.
pub fn entity_from_components<'a>(
    components: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    check_ip: bool,
) -> Result<QuotaEntity, EntityError> {
    let mut user = None;
    let mut client_id = None;
    let mut ip = None;
    let mut any = false;
    for (type_name, name) in components {
        any = true;
        let entity_type = EntityType::parse(type_name)
            .ok_or_else(|| EntityError::UnknownType(type_name.chars().take(64).collect()))?;
        let slot = match entity_type {
            EntityType::User => &mut user,
            EntityType::ClientId => &mut client_id,
            EntityType::Ip => &mut ip,
        };
        if slot.is_some() {
            return Err(EntityError::DuplicateType(entity_type));
        }
        if name == Some("") {
            return Err(EntityError::EmptyName(entity_type));
        }
        *slot = Some(EntityName::from_wire(name));
    }
    if !any {
        return Err(EntityError::Empty);
    }
    match (user, client_id, ip) {
        (None, None, Some(ip)) => {
            if let (true, EntityName::Name(n)) = (check_ip, &ip) {
                if n.parse::<IpAddr>().is_err() {
                    return Err(EntityError::InvalidIp(n.chars().take(64).collect()));
                }
            }
            Ok(QuotaEntity::Ip(ip))
        }
        (_, _, Some(_)) => Err(EntityError::IpCombination),
        (Some(u), Some(c), None) => Ok(QuotaEntity::UserClientId(u, c)),
        (Some(u), None, None) => Ok(QuotaEntity::User(u)),
        (None, Some(c), None) => Ok(QuotaEntity::ClientId(c)),
        (None, None, None) => Err(EntityError::Empty),
    }
}

/// Checks a value for `key` as AlterClientQuotas does: above 0, whole for LONG and INT keys,
/// within the key type's range. NaN and infinities are refused too (Kafka lets NaN through, which
/// would make the quota never apply).
pub fn validate_quota_value(key: QuotaKey, value: f64) -> Result<(), AlterQuotaError> {
    let name = || key.as_str().to_owned();
    if value <= 0.0 {
        return Err(AlterQuotaError::NotPositive { key: name() });
    }
    if !value.is_finite() {
        return Err(AlterQuotaError::NotFinite { key: name() });
    }
    let max = match key.value_type() {
        QuotaValueType::Double => return Ok(()),
        QuotaValueType::Int => f64::from(i32::MAX),
        QuotaValueType::Long => i64::MAX as f64,
    };
    if value > max {
        return Err(AlterQuotaError::TooLarge { key: name() });
    }
    if (value % 1.0).abs() > 1e-6 {
        return Err(AlterQuotaError::Fractional { key: name() });
    }
    Ok(())
}

/// One operation of an alteration: set `key` to `value`, or remove it (`None`).
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaOp {
    /// The key.
    pub key: String,
    /// The value, `None` to remove.
    pub value: Option<f64>,
}

/// The answer to one AlterClientQuotas entry.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterResult {
    /// The entity as the request gave it.
    pub entity: Vec<(String, Option<String>)>,
    /// `Ok` or why the entry was refused.
    pub result: Result<(), AlterQuotaError>,
}

/// What an AlterClientQuotas request does: the response, and the records to write (none for
/// `ValidateOnly`). The store is unchanged until the records are replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterOutcome {
    /// The response (throttle time 0).
    pub response: AlterClientQuotasResponse,
    /// The records to append to the metadata log.
    pub records: Vec<ClientQuotaRecord>,
}

/// A DescribeClientQuotas filter, checked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QuotaFilter {
    exact: BTreeMap<EntityType, EntityName>,
    specified: HashSet<EntityType>,
    strict: bool,
}

impl QuotaFilter {
    /// Checks the components (type, match type, match) and the strict flag as Kafka does.
    pub fn new<'a>(
        components: impl IntoIterator<Item = (&'a str, i8, Option<&'a str>)>,
        strict: bool,
    ) -> Result<QuotaFilter, DescribeQuotaError> {
        let mut filter = QuotaFilter {
            strict,
            ..Default::default()
        };
        let mut seen = HashSet::new();
        for (type_name, match_type, name) in components {
            if type_name.is_empty() {
                return Err(DescribeQuotaError::EmptyEntityType);
            }
            if !seen.insert(type_name) {
                return Err(DescribeQuotaError::DuplicateEntityType(
                    type_name.chars().take(64).collect(),
                ));
            }
            let entity_type = EntityType::parse(type_name).ok_or_else(|| {
                DescribeQuotaError::UnsupportedEntityType(type_name.chars().take(64).collect())
            })?;
            match (match_type, name) {
                (MATCH_TYPE_EXACT, Some(n)) => {
                    filter
                        .exact
                        .insert(entity_type, EntityName::Name(n.to_owned()));
                }
                (MATCH_TYPE_EXACT, None) => return Err(DescribeQuotaError::ExactWithoutMatch),
                (MATCH_TYPE_DEFAULT, None) => {
                    filter.exact.insert(entity_type, EntityName::Default);
                }
                (MATCH_TYPE_DEFAULT, Some(_)) => return Err(DescribeQuotaError::DefaultWithMatch),
                (MATCH_TYPE_SPECIFIED, None) => {
                    filter.specified.insert(entity_type);
                }
                (MATCH_TYPE_SPECIFIED, Some(_)) => {
                    return Err(DescribeQuotaError::SpecifiedWithMatch)
                }
                (other, _) => return Err(DescribeQuotaError::UnknownMatchType(other)),
            }
        }
        let has = |t| filter.exact.contains_key(&t) || filter.specified.contains(&t);
        if has(EntityType::Ip) && (has(EntityType::User) || has(EntityType::ClientId)) {
            return Err(DescribeQuotaError::IpCombination);
        }
        Ok(filter)
    }

    /// True when `entity` passes: every EXACT / DEFAULT component names it, every SPECIFIED type is
    /// in it, and with `strict` it has no other type. An empty filter matches everything unless
    /// strict.
    pub fn matches(&self, entity: &QuotaEntity) -> bool {
        let components = entity.components();
        if self.strict && components.len() != self.exact.len() + self.specified.len() {
            return false;
        }
        self.exact
            .iter()
            .all(|(t, n)| entity.name_of(*t) == Some(n))
            && self.specified.iter().all(|t| entity.name_of(*t).is_some())
    }
}

/// The client quotas by entity, then key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuotaStore {
    entities: BTreeMap<QuotaEntity, BTreeMap<String, f64>>,
}

impl QuotaStore {
    /// No quotas.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a ClientQuotaRecord from the metadata log and returns the change for the quota
    /// managers. Keys and values are taken as written (the controller validated them).
    pub fn replay(&mut self, record: &ClientQuotaRecord) -> Result<QuotaChange, QuotaRecordError> {
        let entity = entity_from_components(
            record
                .entity
                .iter()
                .map(|e| (e.entity_type.as_str(), e.entity_name.as_deref())),
            false,
        )?;
        let change = QuotaChange {
            entity,
            key: record.key.as_str().to_owned(),
            value: (!record.remove).then_some(record.value),
        };
        self.apply(&change);
        Ok(change)
    }

    /// Applies a change.
    pub fn apply(&mut self, change: &QuotaChange) {
        match change.value {
            Some(v) => {
                self.entities
                    .entry(change.entity.clone())
                    .or_default()
                    .insert(change.key.clone(), v);
            }
            None => {
                if let Some(quotas) = self.entities.get_mut(&change.entity) {
                    quotas.remove(&change.key);
                    if quotas.is_empty() {
                        self.entities.remove(&change.entity);
                    }
                }
            }
        }
    }

    /// Sets `key` of the entity with wire (type, name) `components` to `value`, as a
    /// ClientQuotaRecord would (e.g. to build a store from a metadata image).
    pub fn insert_components<'a>(
        &mut self,
        components: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
        key: &str,
        value: f64,
    ) -> Result<(), QuotaRecordError> {
        let entity = entity_from_components(components, false)?;
        self.apply(&QuotaChange {
            entity,
            key: key.to_owned(),
            value: Some(value),
        });
        Ok(())
    }

    /// The changes that turn this store into `target`: every key set in `target` with another
    /// value (or absent here), then every key here that `target` does not have, as a removal.
    pub fn changes_to(&self, target: &QuotaStore) -> Vec<QuotaChange> {
        let mut changes = Vec::new();
        for (entity, quotas) in &target.entities {
            let mine = self.entities.get(entity);
            for (key, value) in quotas {
                if mine.and_then(|m| m.get(key)) != Some(value) {
                    changes.push(QuotaChange {
                        entity: entity.clone(),
                        key: key.clone(),
                        value: Some(*value),
                    });
                }
            }
        }
        for (entity, quotas) in &self.entities {
            let theirs = target.entities.get(entity);
            for key in quotas.keys() {
                if !theirs.is_some_and(|t| t.contains_key(key)) {
                    changes.push(QuotaChange {
                        entity: entity.clone(),
                        key: key.clone(),
                        value: None,
                    });
                }
            }
        }
        changes
    }

    /// The value of `key` for `entity`.
    pub fn get(&self, entity: &QuotaEntity, key: &str) -> Option<f64> {
        self.entities.get(entity)?.get(key).copied()
    }

    /// The quotas of `entity`.
    pub fn quotas(&self, entity: &QuotaEntity) -> Option<&BTreeMap<String, f64>> {
        self.entities.get(entity)
    }

    /// Every entity with its quotas, in entity order.
    pub fn entities(&self) -> impl Iterator<Item = (&QuotaEntity, &BTreeMap<String, f64>)> {
        self.entities.iter()
    }

    /// Every quota as ClientQuotaRecords (a snapshot of the store).
    pub fn to_records(&self) -> Vec<ClientQuotaRecord> {
        self.entities
            .iter()
            .flat_map(|(entity, quotas)| {
                quotas.iter().map(|(key, value)| {
                    QuotaChange {
                        entity: entity.clone(),
                        key: key.clone(),
                        value: Some(*value),
                    }
                    .to_record()
                })
            })
            .collect()
    }

    /// The changes an alteration of `entity` with `ops` makes, or why it is refused. Removing an
    /// absent key and setting a key to its current value change nothing.
    pub fn alter_entity(
        &self,
        entity: &QuotaEntity,
        ops: &[QuotaOp],
    ) -> Result<Vec<QuotaChange>, AlterQuotaError> {
        let mut changes = Vec::with_capacity(ops.len());
        let current = self.entities.get(entity);
        for op in ops {
            let current_value = current.and_then(|q| q.get(&op.key)).copied();
            match op.value {
                None => {
                    if current_value.is_some() {
                        changes.push(QuotaChange {
                            entity: entity.clone(),
                            key: op.key.clone(),
                            value: None,
                        });
                    }
                }
                Some(value) => {
                    let key = QuotaKey::parse(&op.key)
                        .filter(|k| k.applies_to(entity))
                        .ok_or_else(|| {
                            AlterQuotaError::UnknownKey(op.key.chars().take(64).collect())
                        })?;
                    validate_quota_value(key, value)?;
                    if current_value != Some(value) {
                        changes.push(QuotaChange {
                            entity: entity.clone(),
                            key: op.key.clone(),
                            value: Some(value),
                        });
                    }
                }
            }
        }
        Ok(changes)
    }

    /// Answers an AlterClientQuotas request without changing the store: one result per distinct
    /// entity, and the records of the accepted ones.
    ///
    /// As Kafka: a key repeated within an entry refuses the entry; an entity repeated in a later
    /// entry answers INVALID_REQUEST for that entity while the changes of its first entry stay in
    /// the records.
    pub fn alter_client_quotas(&self, request: &AlterClientQuotasRequest) -> AlterOutcome {
        let mut results: Vec<AlterResult> = Vec::new();
        let mut index_of: HashMap<Vec<(String, Option<String>)>, usize> = HashMap::new();
        let mut records = Vec::new();
        for entry in &request.entries {
            let raw: Vec<(String, Option<String>)> = entry
                .entity
                .iter()
                .map(|e| {
                    (
                        e.entity_type.as_str().to_owned(),
                        e.entity_name.as_deref().map(str::to_owned),
                    )
                })
                .collect();
            let mut sorted = raw.clone();
            sorted.sort();
            let mut keys = HashSet::new();
            let ops: Vec<QuotaOp> = entry
                .ops
                .iter()
                .map(|op| QuotaOp {
                    key: op.key.as_str().to_owned(),
                    value: (!op.remove).then_some(op.value),
                })
                .collect();
            let duplicate_key = ops.iter().find(|op| !keys.insert(op.key.as_str()));
            let result = if let Some(&i) = index_of.get(&sorted) {
                results[i].result = Err(AlterQuotaError::DuplicateEntity(describe_raw(&raw)));
                continue;
            } else if let Some(op) = duplicate_key {
                Err(AlterQuotaError::DuplicateKey(
                    op.key.chars().take(64).collect(),
                ))
            } else {
                entity_from_components(
                    entry
                        .entity
                        .iter()
                        .map(|e| (e.entity_type.as_str(), e.entity_name.as_deref())),
                    true,
                )
                .map_err(AlterQuotaError::from)
                .and_then(|entity| self.alter_entity(&entity, &ops))
                .map(|changes| records.extend(changes.iter().map(QuotaChange::to_record)))
            };
            index_of.insert(sorted, results.len());
            results.push(AlterResult {
                entity: raw,
                result,
            });
        }
        if request.validate_only {
            records.clear();
        }
        AlterOutcome {
            response: alter_response(&results),
            records,
        }
    }

    /// The entities `filter` matches, in entity order.
    pub fn describe<'a>(
        &'a self,
        filter: &'a QuotaFilter,
    ) -> impl Iterator<Item = (&'a QuotaEntity, &'a BTreeMap<String, f64>)> + 'a {
        self.entities.iter().filter(|(e, _)| filter.matches(e))
    }

    /// Answers a DescribeClientQuotas request.
    pub fn describe_client_quotas(
        &self,
        request: &DescribeClientQuotasRequest,
    ) -> DescribeClientQuotasResponse {
        let filter = QuotaFilter::new(
            request
                .components
                .iter()
                .map(|c| (c.entity_type.as_str(), c.match_type, c.match_.as_deref())),
            request.strict,
        );
        match filter {
            Ok(filter) => DescribeClientQuotasResponse {
                error_code: 0,
                error_message: None,
                entries: Some(
                    self.describe(&filter)
                        .map(|(entity, quotas)| describe_resp::EntryData {
                            entity: entity
                                .components()
                                .into_iter()
                                .map(|(t, n)| describe_resp::EntityData {
                                    entity_type: t.as_str().into(),
                                    entity_name: n.as_wire().map(StrBytes::from),
                                    ..Default::default()
                                })
                                .collect(),
                            values: quotas
                                .iter()
                                .map(|(k, v)| describe_resp::ValueData {
                                    key: k.as_str().into(),
                                    value: *v,
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            },
            Err(e) => DescribeClientQuotasResponse {
                error_code: e.error_code().into(),
                error_message: Some(e.to_string().into()),
                entries: None,
                ..Default::default()
            },
        }
    }
}

fn describe_raw(raw: &[(String, Option<String>)]) -> String {
    let parts: Vec<String> = raw
        .iter()
        .map(|(t, n)| {
            let t: String = t.chars().take(64).collect();
            match n {
                Some(n) => format!("{t}={}", n.chars().take(64).collect::<String>()),
                None => format!("{t}=<default>"),
            }
        })
        .collect();
    parts.join(",")
}

fn alter_response(results: &[AlterResult]) -> AlterClientQuotasResponse {
    AlterClientQuotasResponse {
        throttle_time_ms: 0,
        entries: results
            .iter()
            .map(|r| alter_resp::EntryData {
                error_code: match &r.result {
                    Ok(()) => ErrorCode::None.into(),
                    Err(e) => e.error_code().into(),
                },
                error_message: r.result.as_ref().err().map(|e| e.to_string().into()),
                entity: r
                    .entity
                    .iter()
                    .map(|(t, n)| alter_resp::EntityData {
                        entity_type: t.as_str().into(),
                        entity_name: n.as_deref().map(StrBytes::from),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
