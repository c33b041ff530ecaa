//! Shared helpers of the quorum tests: a recording state machine and bounded waits.
#![allow(dead_code)]

pub mod cluster;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use josef_quorum::MetadataStateMachine;

/// The state: the last index applied and the non-empty batches with their indexes.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct State {
    pub last: Option<u64>,
    pub batches: Vec<(u64, Vec<Vec<u8>>)>,
}

/// Records every apply; checks they come in order without gaps.
#[derive(Debug, Default)]
pub struct Recorder {
    pub state: Mutex<State>,
    pub errors: Mutex<Vec<String>>,
    pub installed: Mutex<Vec<u64>>,
}

impl Recorder {
    pub fn state(&self) -> State {
        self.state.lock().unwrap().clone()
    }

    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().unwrap().clone()
    }

    /// The batches as strings, for easy comparison.
    pub fn texts(&self) -> Vec<(u64, String)> {
        self.state()
            .batches
            .iter()
            .map(|(i, b)| {
                (
                    *i,
                    b.iter()
                        .map(|r| String::from_utf8_lossy(r).into_owned())
                        .collect::<Vec<_>>()
                        .join("|"),
                )
            })
            .collect()
    }
}

impl MetadataStateMachine for Recorder {
    fn apply(&self, index: u64, _term: u64, batch: &[Bytes]) {
        let mut s = self.state.lock().unwrap();
        let expected = s.last.map_or(0, |l| l + 1);
        if index != expected {
            self.errors
                .lock()
                .unwrap()
                .push(format!("apply {index} after {:?}", s.last));
        }
        s.last = Some(index);
        if !batch.is_empty() {
            s.batches
                .push((index, batch.iter().map(|b| b.to_vec()).collect()));
        }
    }

    fn snapshot(&self) -> (u64, Vec<u8>) {
        let s = self.state.lock().unwrap();
        (s.last.unwrap_or(0), serde_json::to_vec(&*s).unwrap())
    }

    fn install_snapshot(&self, last_index: u64, data: &[u8]) {
        let state: State = match serde_json::from_slice(data) {
            Ok(s) => s,
            Err(e) => {
                self.errors
                    .lock()
                    .unwrap()
                    .push(format!("bad snapshot: {e}"));
                return;
            }
        };
        if state.last != Some(last_index) {
            self.errors
                .lock()
                .unwrap()
                .push(format!("snapshot at {last_index} holds {:?}", state.last));
        }
        *self.state.lock().unwrap() = state;
        self.installed.lock().unwrap().push(last_index);
    }
}

/// Polls `cond` every 10 ms until it holds or `timeout` passes; whether it held.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}
