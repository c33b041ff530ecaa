//! Kafka's `BrokerHeartbeatManager`: broker sessions (kept outside the metadata log, as in Kafka)
//! and the heartbeat state machine of C4 (`calculateNextBrokerState`).

use std::collections::BTreeMap;

/// A broker's state as the heartbeat state machine sees it (Kafka's `BrokerControlState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BrokerControlState {
    /// Registered but fenced: leads nothing, joins no ISR.
    Fenced,
    /// Active.
    Unfenced,
    /// Moving its leaderships away before stopping.
    ControlledShutdown,
    /// May stop now (it is fenced as it gets there).
    ShutdownNow,
}

impl BrokerControlState {
    /// Whether a broker in this state is fenced.
    pub fn fenced(self) -> bool {
        matches!(
            self,
            BrokerControlState::Fenced | BrokerControlState::ShutdownNow
        )
    }

    /// Whether a broker in this state is in controlled shutdown.
    pub fn in_controlled_shutdown(self) -> bool {
        self == BrokerControlState::ControlledShutdown
    }

    /// Whether the heartbeat reply says `should_shut_down`.
    pub fn should_shut_down(self) -> bool {
        self == BrokerControlState::ShutdownNow
    }

    /// The state of a registration with these flags.
    pub fn of(fenced: bool, in_controlled_shutdown: bool) -> Self {
        if fenced {
            BrokerControlState::Fenced
        } else if in_controlled_shutdown {
            BrokerControlState::ControlledShutdown
        } else {
            BrokerControlState::Unfenced
        }
    }
}

/// What a heartbeat asks for, and the facts the next state depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatFacts {
    /// `want_fence` of the request.
    pub want_fence: bool,
    /// `want_shut_down` of the request.
    pub want_shut_down: bool,
    /// `current_metadata_offset` of the request.
    pub current_metadata_offset: i64,
    /// Offset of the broker's registration record.
    pub register_offset: i64,
    /// Whether the broker leads any partition.
    pub has_leaderships: bool,
    /// Offset of the record that put it in controlled shutdown, if it is in one.
    pub controlled_shutdown_offset: Option<i64>,
    /// Lowest metadata offset reported by an active broker (`i64::MAX` when there is none).
    pub lowest_active_offset: i64,
}

/// Kafka's `BrokerHeartbeatManager.calculateNextBrokerState`, the table of C4.
///
/// ```
/// use josef_controller::{calculate_next_broker_state, BrokerControlState, HeartbeatFacts};
/// let facts = HeartbeatFacts {
///     want_fence: false,
///     want_shut_down: false,
///     current_metadata_offset: 10,
///     register_offset: 7,
///     has_leaderships: false,
///     controlled_shutdown_offset: None,
///     lowest_active_offset: i64::MAX,
/// };
/// assert_eq!(calculate_next_broker_state(BrokerControlState::Fenced, &facts), BrokerControlState::Unfenced);
/// ```
pub fn calculate_next_broker_state(
    current: BrokerControlState,
    f: &HeartbeatFacts,
) -> BrokerControlState {
    use BrokerControlState::*;
    match current {
        Fenced => {
            if f.want_shut_down {
                ShutdownNow
            } else if !f.want_fence && f.current_metadata_offset >= f.register_offset {
                Unfenced
            } else {
                Fenced
            }
        }
        Unfenced => {
            if f.want_fence {
                if f.want_shut_down {
                    ShutdownNow
                } else {
                    Fenced
                }
            } else if f.want_shut_down {
                if f.has_leaderships {
                    ControlledShutdown
                } else {
                    ShutdownNow
                }
            } else {
                Unfenced
            }
        }
        ControlledShutdown => {
            if f.has_leaderships {
                ControlledShutdown
            } else if f
                .controlled_shutdown_offset
                .is_some_and(|o| o <= f.lowest_active_offset)
            {
                ShutdownNow
            } else {
                ControlledShutdown
            }
        }
        ShutdownNow => ShutdownNow,
    }
}

/// One broker's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerSession {
    /// Time of the last heartbeat (or of activation).
    pub last_contact_ms: i64,
    /// The last `current_metadata_offset` it reported (−1 before any).
    pub metadata_offset: i64,
}

/// Broker sessions of the active controller (Kafka's `BrokerHeartbeatManager`): a session is
/// valid while `last_contact + broker.session.timeout.ms >= now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerHeartbeatManager {
    session_timeout_ms: i64,
    sessions: BTreeMap<i32, BrokerSession>,
}

impl BrokerHeartbeatManager {
    /// No sessions.
    pub fn new(session_timeout_ms: i64) -> Self {
        BrokerHeartbeatManager {
            session_timeout_ms,
            sessions: BTreeMap::new(),
        }
    }

    /// A heartbeat (or activation) at `now_ms`; `metadata_offset` `None` keeps the last one.
    pub fn touch(&mut self, broker_id: i32, now_ms: i64, metadata_offset: Option<i64>) {
        let s = self.sessions.entry(broker_id).or_insert(BrokerSession {
            last_contact_ms: now_ms,
            metadata_offset: -1,
        });
        s.last_contact_ms = s.last_contact_ms.max(now_ms);
        if let Some(o) = metadata_offset {
            s.metadata_offset = o;
        }
    }

    /// Forgets a broker's session (a new incarnation, an unregistration).
    pub fn remove(&mut self, broker_id: i32) {
        self.sessions.remove(&broker_id);
    }

    /// Forgets every session (the controller lost leadership).
    pub fn clear(&mut self) {
        self.sessions.clear();
    }

    /// A broker's session.
    pub fn session(&self, broker_id: i32) -> Option<&BrokerSession> {
        self.sessions.get(&broker_id)
    }

    /// Whether the broker heartbeat within the session timeout.
    pub fn has_valid_session(&self, broker_id: i32, now_ms: i64) -> bool {
        self.sessions
            .get(&broker_id)
            .is_some_and(|s| s.last_contact_ms.saturating_add(self.session_timeout_ms) >= now_ms)
    }

    /// Among `unfenced` brokers, the one whose session expired longest ago (a broker without a
    /// session counts as expired), as Kafka's `findOneStaleBroker`.
    pub fn find_one_stale_broker(
        &self,
        unfenced: impl IntoIterator<Item = i32>,
        now_ms: i64,
    ) -> Option<i32> {
        unfenced
            .into_iter()
            .filter(|&b| !self.has_valid_session(b, now_ms))
            .min_by_key(|&b| {
                (
                    self.sessions
                        .get(&b)
                        .map_or(i64::MIN, |s| s.last_contact_ms),
                    b,
                )
            })
    }

    /// The lowest metadata offset reported by these (active) brokers; `i64::MAX` if none.
    pub fn lowest_offset(&self, active: impl IntoIterator<Item = i32>) -> i64 {
        active
            .into_iter()
            .map(|b| self.sessions.get(&b).map_or(-1, |s| s.metadata_offset))
            .min()
            .unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BrokerControlState::*;

    fn facts() -> HeartbeatFacts {
        HeartbeatFacts {
            want_fence: false,
            want_shut_down: false,
            current_metadata_offset: 100,
            register_offset: 50,
            has_leaderships: false,
            controlled_shutdown_offset: None,
            lowest_active_offset: i64::MAX,
        }
    }

    #[test]
    fn fenced_rows() {
        let f = HeartbeatFacts {
            want_shut_down: true,
            ..facts()
        };
        assert_eq!(calculate_next_broker_state(Fenced, &f), ShutdownNow);
        assert_eq!(calculate_next_broker_state(Fenced, &facts()), Unfenced);
        let behind = HeartbeatFacts {
            current_metadata_offset: 49,
            ..facts()
        };
        assert_eq!(calculate_next_broker_state(Fenced, &behind), Fenced);
        let wants_fence = HeartbeatFacts {
            want_fence: true,
            ..facts()
        };
        assert_eq!(calculate_next_broker_state(Fenced, &wants_fence), Fenced);
    }

    #[test]
    fn unfenced_rows() {
        let wf = HeartbeatFacts {
            want_fence: true,
            ..facts()
        };
        assert_eq!(calculate_next_broker_state(Unfenced, &wf), Fenced);
        let wf_sd = HeartbeatFacts {
            want_shut_down: true,
            ..wf
        };
        assert_eq!(calculate_next_broker_state(Unfenced, &wf_sd), ShutdownNow);
        let sd = HeartbeatFacts {
            want_shut_down: true,
            ..facts()
        };
        assert_eq!(calculate_next_broker_state(Unfenced, &sd), ShutdownNow);
        let sd_leads = HeartbeatFacts {
            has_leaderships: true,
            ..sd
        };
        assert_eq!(
            calculate_next_broker_state(Unfenced, &sd_leads),
            ControlledShutdown
        );
        assert_eq!(calculate_next_broker_state(Unfenced, &facts()), Unfenced);
    }

    #[test]
    fn controlled_shutdown_rows() {
        let leads = HeartbeatFacts {
            has_leaderships: true,
            controlled_shutdown_offset: Some(10),
            lowest_active_offset: 20,
            ..facts()
        };
        assert_eq!(
            calculate_next_broker_state(ControlledShutdown, &leads),
            ControlledShutdown
        );
        let lagging = HeartbeatFacts {
            has_leaderships: false,
            lowest_active_offset: 9,
            ..leads
        };
        assert_eq!(
            calculate_next_broker_state(ControlledShutdown, &lagging),
            ControlledShutdown
        );
        let caught_up = HeartbeatFacts {
            lowest_active_offset: 10,
            ..lagging
        };
        assert_eq!(
            calculate_next_broker_state(ControlledShutdown, &caught_up),
            ShutdownNow
        );
    }

    #[test]
    fn sessions_expire_one_at_a_time_oldest_first() {
        let mut m = BrokerHeartbeatManager::new(100);
        m.touch(1, 0, Some(5));
        m.touch(2, 10, Some(7));
        m.touch(3, 50, None);
        assert!(m.has_valid_session(1, 100));
        assert!(!m.has_valid_session(1, 101));
        assert_eq!(m.find_one_stale_broker([1, 2, 3], 100), None);
        assert_eq!(m.find_one_stale_broker([1, 2, 3], 120), Some(1));
        assert_eq!(m.find_one_stale_broker([2, 3], 120), Some(2));
        assert_eq!(
            m.find_one_stale_broker([4], 0),
            Some(4),
            "no session = stale"
        );
        assert_eq!(m.lowest_offset([1, 2]), 5);
        assert_eq!(m.lowest_offset([3]), -1);
        assert_eq!(m.lowest_offset([]), i64::MAX);
        m.remove(1);
        assert!(m.session(1).is_none());
        m.clear();
        assert!(m.session(2).is_none());
    }
}
