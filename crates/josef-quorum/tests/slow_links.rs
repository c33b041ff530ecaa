//! Appends over links slower than a quarter of the election timeout still commit (reliability
//! bug 19): openraft bounds each AppendEntries round trip by the heartbeat interval, so that
//! interval must leave a loaded follower time to answer.

mod common;

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use common::cluster::{Cluster, WAIT};
use common::wait_until;
use josef_quorum::{ConnectFuture, QuorumStream, StreamConnector};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// Dials plain TCP, and holds back every answer by `0`: the first read after a write waits that
/// long, as a follower busy elsewhere answers late.
#[derive(Debug)]
struct LateAnswers(Duration);

impl StreamConnector for LateAnswers {
    fn connect<'a>(&'a self, addr: &'a str) -> ConnectFuture<'a> {
        let delay = self.0;
        Box::pin(async move {
            let inner = TcpStream::connect(addr).await?;
            let _ = inner.set_nodelay(true);
            Ok(Box::new(Late {
                inner,
                delay,
                wrote: false,
                sleep: None,
            }) as QuorumStream)
        })
    }
}

struct Late {
    inner: TcpStream,
    delay: Duration,
    wrote: bool,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl AsyncRead for Late {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = &mut *self;
        if me.wrote {
            let delay = me.delay;
            let sleep = me
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(delay)));
            ready!(sleep.as_mut().poll(cx));
            me.sleep = None;
            me.wrote = false;
        }
        Pin::new(&mut me.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Late {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.wrote = true;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[test]
fn appends_commit_when_every_answer_takes_longer_than_a_quarter_of_the_election_timeout() {
    // Election timeout 800 ms: the heartbeat, and so each append's budget, is 400 ms; a quarter
    // (the old rule) would be 200 ms. Every answer comes 250 ms late.
    let c = Cluster::with_links(
        3,
        10_000,
        Arc::new(LateAnswers(Duration::from_millis(250))),
        Some(800),
    );
    c.agreed_leader().expect("a leader is elected");
    let committed: Vec<(u64, String)> = (0..5).map(|i| c.commit(&format!("slow{i}"))).collect();
    assert!(
        wait_until(WAIT, || c.consistent(&committed)),
        "every voter applies the batches committed over the slow links"
    );
}
