//! The link rule table: what governs the bytes one endpoint sends another, and how `drop`,
//! `delay`, `cut` and `heal` change it. Pure data, no sockets.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// One end of a link: a node by `node.id`, or anything else (the test's own clients).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Endpoint {
    /// A node of the cluster.
    Node(i32),
    /// Any connection not resolved to a node.
    Client,
}

impl From<i32> for Endpoint {
    fn from(id: i32) -> Endpoint {
        Endpoint::Node(id)
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Node(id) => write!(f, "{id}"),
            Endpoint::Client => f.write_str("client"),
        }
    }
}

/// Whether a rule between `a` and `b` covers `a -> b` only or both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Only the bytes `a` sends to `b`.
    OneWay,
    /// The bytes each sends the other.
    TwoWay,
}

impl Way {
    pub(crate) fn links(self, a: Endpoint, b: Endpoint) -> Vec<(Endpoint, Endpoint)> {
        match self {
            Way::OneWay => vec![(a, b)],
            Way::TwoWay => vec![(a, b), (b, a)],
        }
    }
}

/// What happens to the bytes sent from `src` to `dst` (whichever side opened the connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rule {
    /// Blackholed: not delivered, as when every packet is lost. The proxy stops reading, so the
    /// sender's socket buffer fills and the stream stalls; when lifted, the stalled bytes flow
    /// (TCP retransmits: a real network never discards bytes from the middle of a stream).
    pub drop: bool,
    /// Every chunk is delivered this long after the proxy read it (order kept, no accumulation).
    pub delay: Duration,
    /// New connections between the two are closed right after accept (set by `cut`).
    pub refuse: bool,
}

impl Rule {
    /// Whether it changes nothing (a healed link).
    pub fn is_clear(&self) -> bool {
        *self == Rule::default()
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.drop {
            parts.push("drop".to_string());
        }
        if !self.delay.is_zero() {
            parts.push(format!("delay {:?}", self.delay));
        }
        if self.refuse {
            parts.push("refuse".to_string());
        }
        if parts.is_empty() {
            parts.push("clear".to_string());
        }
        f.write_str(&parts.join("+"))
    }
}

/// Rules by directed link `(src, dst)`; a link absent is clear.
#[derive(Debug, Default, Clone)]
pub(crate) struct Rules {
    links: BTreeMap<(Endpoint, Endpoint), Rule>,
}

impl Rules {
    pub(crate) fn get(&self, src: Endpoint, dst: Endpoint) -> Rule {
        self.links.get(&(src, dst)).copied().unwrap_or_default()
    }

    /// Changes one link's rule; a rule that ends up clear is removed so the table lists only faults.
    pub(crate) fn update(&mut self, src: Endpoint, dst: Endpoint, f: impl FnOnce(&mut Rule)) {
        let mut r = self.get(src, dst);
        f(&mut r);
        if r.is_clear() {
            self.links.remove(&(src, dst));
        } else {
            self.links.insert((src, dst), r);
        }
    }

    pub(crate) fn clear(&mut self) {
        self.links.clear();
    }

    pub(crate) fn clear_between(&mut self, a: Endpoint, b: Endpoint) {
        self.links.remove(&(a, b));
        self.links.remove(&(b, a));
    }

    pub(crate) fn describe(&self) -> String {
        if self.links.is_empty() {
            return "healed".into();
        }
        self.links
            .iter()
            .map(|((s, d), r)| format!("{s}->{d}: {r}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Endpoint = Endpoint::Node(1);
    const B: Endpoint = Endpoint::Node(2);

    #[test]
    fn a_link_is_clear_until_a_rule_and_clear_again_when_lifted() {
        let mut r = Rules::default();
        assert!(r.get(A, B).is_clear());
        r.update(A, B, |r| r.drop = true);
        assert!(r.get(A, B).drop);
        assert!(r.get(B, A).is_clear(), "a rule is directed");
        r.update(A, B, |r| r.delay = Duration::from_millis(5));
        assert_eq!(r.describe(), "1->2: drop+delay 5ms");
        r.update(A, B, |r| *r = Rule::default());
        assert_eq!(r.describe(), "healed");
    }

    #[test]
    fn clear_between_lifts_both_directions_only() {
        let mut r = Rules::default();
        let c = Endpoint::Client;
        for (s, d) in [(A, B), (B, A), (A, c)] {
            r.update(s, d, |r| r.refuse = true);
        }
        r.clear_between(B, A);
        assert!(r.get(A, B).is_clear() && r.get(B, A).is_clear());
        assert!(r.get(A, c).refuse);
        assert_eq!(r.describe(), "1->client: refuse");
    }

    #[test]
    fn ways_name_their_links() {
        assert_eq!(Way::OneWay.links(A, B), vec![(A, B)]);
        assert_eq!(Way::TwoWay.links(A, B), vec![(A, B), (B, A)]);
    }
}
