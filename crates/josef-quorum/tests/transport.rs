//! A pluggable transport: three voters and an observer whose voter addresses are names only the
//! test's connector knows (as a TLS connector would dial and wrap), and whose accepted
//! connections reach the quorum through `serve_stream` / `serve_observer_stream` after the test's
//! own accept loop read the preamble (as a TLS acceptor would unwrap first). The quorum elects,
//! commits and feeds the observer only through them.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use common::cluster::WAIT;
use common::{wait_until, Recorder};
use josef_quorum::transport::ConnectFuture;
use josef_quorum::{
    MetadataObserver, MetadataQuorum, ObserverConfig, QuorumConfig, QuorumStream, StreamConnector,
    OBSERVER_PREAMBLE, RAFT_PREAMBLE,
};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

/// Dials `voter-<id>` at the real loopback address and counts the connections it made.
#[derive(Debug)]
struct NamedConnector {
    real: BTreeMap<String, String>,
    dialled: AtomicUsize,
}

impl StreamConnector for NamedConnector {
    fn connect<'a>(&'a self, addr: &'a str) -> ConnectFuture<'a> {
        Box::pin(async move {
            let real = self.real.get(addr).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, format!("unknown {addr}"))
            })?;
            let s = TcpStream::connect(real).await?;
            self.dialled.fetch_add(1, Ordering::Relaxed);
            Ok(Box::new(s) as QuorumStream)
        })
    }
}

/// Reads each connection's preamble and hands the rest to the quorum as a boxed stream.
async fn accept_loop(l: TcpListener, q: MetadataQuorum, served: Arc<AtomicUsize>) {
    loop {
        let Ok((mut s, peer)) = l.accept().await else {
            return;
        };
        let mut pre = [0u8; 4];
        if s.read_exact(&mut pre).await.is_err() {
            continue;
        }
        served.fetch_add(1, Ordering::Relaxed);
        let stream: QuorumStream = Box::new(s);
        if pre == RAFT_PREAMBLE {
            q.serve_stream(stream, peer.to_string());
        } else if pre == OBSERVER_PREAMBLE {
            q.serve_observer_stream(stream, peer.to_string());
        }
    }
}

#[test]
fn a_quorum_and_an_observer_run_over_the_caller_s_connector_and_acceptor() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let listeners: Vec<TcpListener> = (0..3)
        .map(|_| rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap())
        .collect();
    let voters: BTreeMap<u64, String> = (1..=3).map(|id| (id, format!("voter-{id}"))).collect();
    let connector = Arc::new(NamedConnector {
        real: listeners
            .iter()
            .enumerate()
            .map(|(i, l)| {
                (
                    format!("voter-{}", i + 1),
                    l.local_addr().unwrap().to_string(),
                )
            })
            .collect(),
        dialled: AtomicUsize::new(0),
    });
    let served = Arc::new(AtomicUsize::new(0));
    let mut quorums = Vec::new();
    for (i, l) in listeners.into_iter().enumerate() {
        let id = i as u64 + 1;
        let mut c = QuorumConfig::new(id, voters.clone(), tmp.path().join(format!("node{id}")));
        c.election_timeout_ms = 300;
        c.heartbeat_interval_ms = 50;
        c.request_timeout_ms = 500;
        let q = rt
            .block_on(MetadataQuorum::start_with_connector(
                c,
                Arc::new(Recorder::default()),
                connector.clone(),
            ))
            .unwrap();
        rt.spawn(accept_loop(l, q.clone(), served.clone()));
        quorums.push(q);
    }
    let mut leader = None;
    assert!(wait_until(WAIT, || {
        leader = quorums[0].leader().map(|(l, _)| l);
        leader.is_some() && quorums.iter().all(|q| q.leader().map(|(l, _)| l) == leader)
    }));
    let q = &quorums[leader.unwrap() as usize - 1];
    let index = rt
        .block_on(q.propose(vec![Bytes::from_static(b"over-the-connector")]))
        .unwrap();
    let sm = Arc::new(Recorder::default());
    let observer = rt
        .block_on(async {
            MetadataObserver::start_with_connector(
                voters.clone(),
                sm.clone(),
                ObserverConfig::new(100),
                connector.clone(),
            )
        })
        .unwrap();
    assert!(wait_until(WAIT, || sm
        .texts()
        .iter()
        .any(|(i, t)| *i == index && t == "over-the-connector")));
    assert!(connector.dialled.load(Ordering::Relaxed) >= 3);
    assert!(served.load(Ordering::Relaxed) >= 3);
    rt.block_on(observer.shutdown());
    for q in &quorums {
        let _ = rt.block_on(q.shutdown());
    }
}
