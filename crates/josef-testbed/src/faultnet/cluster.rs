//! The proxies of a [`Cluster`](crate::Cluster) built with faults: which port each node is told
//! for each peer, as `tests/e2e/cluster.py` lays them out with `faults=True`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::{pid_holds_inode, socket_inode, Endpoint, FaultNet, Proxy, Source};
use crate::node::Node;
use crate::{Error, Role};

/// Every link between two nodes goes through a proxy of one [`FaultNet`]:
/// - controller links: node `i`'s `controller.quorum.voters` names, for every other voter `j`, a
///   proxy port only node `i` is told (so the source is known), forwarding to `j`'s CONTROLLER
///   listener; its own entry is its real port. The voters line differs per node (same ids).
/// - inter-broker links: a broker's advertised PLAINTEXT listener is a proxy to its real one.
///   That address comes from the metadata, the same for every source, so the proxy names the
///   source by the node process holding the connecting socket (/proc); anything else is
///   [`Endpoint::Client`].
#[derive(Debug)]
pub(crate) struct ClusterFaults {
    pub(crate) net: FaultNet,
    advertised: BTreeMap<i32, Proxy>,
    controller: BTreeMap<(i32, i32), Proxy>,
}

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

impl ClusterFaults {
    pub(crate) fn new(nodes: &[Node]) -> Result<ClusterFaults, Error> {
        let net = FaultNet::new();
        let pids: Vec<(i32, Arc<AtomicU32>)> =
            nodes.iter().map(|n| (n.id, n.pid_cell.clone())).collect();
        let resolve = Source::Resolve(Arc::new(move |peer_port, proxy_port| {
            let inode = socket_inode(peer_port, proxy_port)?;
            pids.iter().find_map(|(id, pid)| {
                let pid = pid.load(Ordering::SeqCst);
                (pid != 0 && pid_holds_inode(pid, inode)).then_some(Endpoint::Node(*id))
            })
        }));
        let mut advertised = BTreeMap::new();
        let mut controller = BTreeMap::new();
        for j in nodes {
            if let Some(port) = j.client_port {
                let p = net.proxy(local(port), Endpoint::Node(j.id), resolve.clone())?;
                advertised.insert(j.id, p);
            }
            let Some(port) = j.controller_port else {
                continue;
            };
            for i in nodes
                .iter()
                .filter(|i| i.id != j.id && i.role != Role::Single)
            {
                let p = net.proxy(
                    local(port),
                    Endpoint::Node(j.id),
                    Source::Fixed(Endpoint::Node(i.id)),
                )?;
                controller.insert((i.id, j.id), p);
            }
        }
        Ok(ClusterFaults {
            net,
            advertised,
            controller,
        })
    }

    /// The port node `id` advertises for PLAINTEXT: its proxy's.
    pub(crate) fn advertised_port(&self, id: i32) -> Option<u16> {
        self.advertised.get(&id).map(Proxy::port)
    }

    /// The proxy in front of node `id`'s PLAINTEXT listener.
    pub(crate) fn advertised(&self, id: i32) -> Option<&Proxy> {
        self.advertised.get(&id)
    }

    /// `controller.quorum.voters` as node `id` is to see it: the others through its own proxies.
    pub(crate) fn voters_for(&self, id: i32, nodes: &[Node]) -> String {
        nodes
            .iter()
            .filter_map(|j| {
                let port = match self.controller.get(&(id, j.id)) {
                    Some(p) => p.port(),
                    None => j.controller_port?,
                };
                Some(format!("{}@127.0.0.1:{port}", j.id))
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every proxy, for the cluster's accessors.
    pub(crate) fn proxies(&self) -> impl Iterator<Item = &Proxy> {
        self.advertised.values().chain(self.controller.values())
    }
}
