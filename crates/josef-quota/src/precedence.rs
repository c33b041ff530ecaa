//! Which user / client-id quota applies to a client, and which sensor it counts on (Kafka's
//! `ClientQuotaManager.DefaultQuotaCallback`).

use std::collections::HashMap;

use crate::entity::{EntityName, QuotaEntity};

/// The identity of the sensor a client's usage is counted on: Kafka's quota metric tags.
///
/// An empty string means "not part of the key". A `user` quota (or `<default>` user) gives
/// `(user, "")`, so all client ids of the user share it; a `client-id` quota gives `("", client)`,
/// shared by all users; the four user + client-id levels give `(user, client)`. A default entity
/// is filled in with the actual name: every user under `/config/users/<default>` has a sensor of
/// its own with the default's limit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SensorKey {
    /// The `user` tag ("" when the matched level has no user).
    pub user: String,
    /// The `client-id` tag ("" when the matched level has no client id).
    pub client_id: String,
}

/// The eight levels of user / client-id quotas, most specific first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaLevel {
    /// 1. `/config/users/<user>/clients/<client-id>`.
    UserClientId,
    /// 2. `/config/users/<user>/clients/<default>`.
    UserDefaultClientId,
    /// 3. `/config/users/<user>`.
    User,
    /// 4. `/config/users/<default>/clients/<client-id>`.
    DefaultUserClientId,
    /// 5. `/config/users/<default>/clients/<default>`.
    DefaultUserDefaultClientId,
    /// 6. `/config/users/<default>`.
    DefaultUser,
    /// 7. `/config/clients/<client-id>`.
    ClientId,
    /// 8. `/config/clients/<default>`.
    DefaultClientId,
}

/// The user / client-id quota overrides of one quota type, one map per level so that lookups
/// borrow the names instead of building keys.
#[derive(Debug, Clone, Default)]
pub struct QuotaOverrides {
    user_client: HashMap<String, HashMap<String, f64>>,
    user_default_client: HashMap<String, f64>,
    user: HashMap<String, f64>,
    default_user_client: HashMap<String, f64>,
    default_user_default_client: Option<f64>,
    default_user: Option<f64>,
    client: HashMap<String, f64>,
    default_client: Option<f64>,
}

impl QuotaOverrides {
    /// Sets (`Some`) or removes (`None`) the quota of a user / client-id entity. Ip entities are
    /// not user / client-id quotas and are ignored (returns false).
    pub fn set(&mut self, entity: &QuotaEntity, quota: Option<f64>) -> bool {
        use EntityName::{Default as D, Name as N};
        fn put(map: &mut HashMap<String, f64>, key: &str, quota: Option<f64>) {
            match quota {
                Some(q) => {
                    map.insert(key.to_owned(), q);
                }
                None => {
                    map.remove(key);
                }
            }
        }
        match entity {
            QuotaEntity::UserClientId(N(u), N(c)) => match quota {
                Some(q) => {
                    self.user_client
                        .entry(u.clone())
                        .or_default()
                        .insert(c.clone(), q);
                }
                None => {
                    if let Some(clients) = self.user_client.get_mut(u) {
                        clients.remove(c);
                        if clients.is_empty() {
                            self.user_client.remove(u);
                        }
                    }
                }
            },
            QuotaEntity::UserClientId(N(u), D) => put(&mut self.user_default_client, u, quota),
            QuotaEntity::User(N(u)) => put(&mut self.user, u, quota),
            QuotaEntity::UserClientId(D, N(c)) => put(&mut self.default_user_client, c, quota),
            QuotaEntity::UserClientId(D, D) => self.default_user_default_client = quota,
            QuotaEntity::User(D) => self.default_user = quota,
            QuotaEntity::ClientId(N(c)) => put(&mut self.client, c, quota),
            QuotaEntity::ClientId(D) => self.default_client = quota,
            QuotaEntity::Ip(_) => return false,
        }
        true
    }

    /// The quota set at one level for `user` / `client_id`.
    pub fn at(&self, level: QuotaLevel, user: &str, client_id: &str) -> Option<f64> {
        match level {
            QuotaLevel::UserClientId => self
                .user_client
                .get(user)
                .and_then(|c| c.get(client_id))
                .copied(),
            QuotaLevel::UserDefaultClientId => self.user_default_client.get(user).copied(),
            QuotaLevel::User => self.user.get(user).copied(),
            QuotaLevel::DefaultUserClientId => self.default_user_client.get(client_id).copied(),
            QuotaLevel::DefaultUserDefaultClientId => self.default_user_default_client,
            QuotaLevel::DefaultUser => self.default_user,
            QuotaLevel::ClientId => self.client.get(client_id).copied(),
            QuotaLevel::DefaultClientId => self.default_client,
        }
    }

    /// The first level, in precedence order, with a quota for `user` / `client_id`.
    pub fn matching_level(&self, user: &str, client_id: &str) -> Option<QuotaLevel> {
        const ORDER: [QuotaLevel; 8] = [
            QuotaLevel::UserClientId,
            QuotaLevel::UserDefaultClientId,
            QuotaLevel::User,
            QuotaLevel::DefaultUserClientId,
            QuotaLevel::DefaultUserDefaultClientId,
            QuotaLevel::DefaultUser,
            QuotaLevel::ClientId,
            QuotaLevel::DefaultClientId,
        ];
        ORDER
            .into_iter()
            .find(|l| self.at(*l, user, client_id).is_some())
    }

    /// The sensor a request of `user` / `client_id` counts on: the tags of the first level with a
    /// quota, or `("", client_id)` when none has one.
    pub fn sensor_key(&self, user: &str, client_id: &str) -> SensorKey {
        let (u, c) = match self.matching_level(user, client_id) {
            Some(QuotaLevel::User | QuotaLevel::DefaultUser) => (user, ""),
            Some(QuotaLevel::ClientId | QuotaLevel::DefaultClientId) | None => ("", client_id),
            Some(_) => (user, client_id),
        };
        SensorKey {
            user: u.to_owned(),
            client_id: c.to_owned(),
        }
    }

    /// The limit of a sensor, `None` for unlimited. Only the levels of the sensor's shape are
    /// consulted, which is how a quota change reaches the sensors it concerns.
    pub fn limit(&self, key: &SensorKey) -> Option<f64> {
        let (u, c) = (key.user.as_str(), key.client_id.as_str());
        let levels: &[QuotaLevel] = match (u.is_empty(), c.is_empty()) {
            (false, false) => &[
                QuotaLevel::UserClientId,
                QuotaLevel::UserDefaultClientId,
                QuotaLevel::DefaultUserClientId,
                QuotaLevel::DefaultUserDefaultClientId,
            ],
            (false, true) => &[QuotaLevel::User, QuotaLevel::DefaultUser],
            (true, false) => &[QuotaLevel::ClientId, QuotaLevel::DefaultClientId],
            (true, true) => &[],
        };
        levels.iter().find_map(|l| self.at(*l, u, c))
    }

    /// The quota that applies to `user` / `client_id`, `None` for unlimited.
    pub fn quota(&self, user: &str, client_id: &str) -> Option<f64> {
        self.limit(&self.sensor_key(user, client_id))
    }
}
