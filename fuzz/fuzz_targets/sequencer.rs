//! Decodes arbitrary bytes as a producer snapshot, then drives a producer-state table with an
//! operation stream read from the same bytes (batches with arbitrary ids, epochs, sequences and
//! offsets, markers, replay, expiry, high-watermark moves): nothing may panic, the LSO never
//! passes the high watermark, and a snapshot of the result always decodes to the same bytes.
#![no_main]

use josef_sequencer::{
    decode_snapshot, BatchInfo, ControlType, EndTxnMarker, ProducerStateConfig, ProducerStateTable,
    Validation,
};
use libfuzzer_sys::fuzz_target;

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.bytes::<1>().map(|b| b[0])
    }
    fn i16(&mut self) -> Option<i16> {
        self.bytes().map(i16::from_le_bytes)
    }
    fn i32(&mut self) -> Option<i32> {
        self.bytes().map(i32::from_le_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.bytes().map(i64::from_le_bytes)
    }
    /// A log offset: never negative in a real log (a negative last offset means "no batch"
    /// in the snapshot layout).
    fn offset(&mut self) -> Option<i64> {
        self.i64().map(|o| o & i64::MAX)
    }
}

fn run(input: &mut Input<'_>) -> Option<()> {
    // Kafka validates producer.id.expiration.ms >= 1; a negative one would make a snapshot
    // reload (at now = i64::MIN) drop producers that the live table still holds.
    let cfg = ProducerStateConfig {
        producer_id_expiration_ms: i64::from(input.i32()?).max(1),
    };
    let mut t = ProducerStateTable::new(cfg);
    let mut hw = 0i64;
    loop {
        let op = input.u8()?;
        // Small producer ids most of the time so batches of one producer meet each other.
        let pid = i64::from(input.u8()? % 8) - 1;
        match op % 8 {
            0 | 1 => {
                let mut b = BatchInfo::idempotent(pid, input.i16()?, input.i32()?, input.i32()?);
                b.is_transactional = op & 0x10 != 0;
                b.is_control = op & 0x20 != 0;
                let first = input.offset()?;
                let last = input.offset()?;
                if let Ok(Validation::Append(plan)) = t.validate(&b) {
                    t.commit(plan.with_offsets(first, last, input.i64()?));
                }
            }
            2 => {
                let b = BatchInfo::idempotent(pid, input.i16()?, input.i32()?, input.i32()?)
                    .with_offsets(input.offset()?, input.offset()?, input.i64()?);
                t.replay(&b);
            }
            3 | 4 => {
                let kind = if op & 0x10 != 0 {
                    ControlType::Abort
                } else {
                    ControlType::Commit
                };
                let mut m = EndTxnMarker::new(pid, input.i16()?, kind, input.i32()?)
                    .at(input.offset()?, input.i64()?);
                m.transaction_version = i16::from(input.u8()? % 3);
                if op % 8 == 3 {
                    let _ = t.append_marker(&m);
                } else {
                    let _ = t.replay_control(&m);
                }
            }
            5 => {
                t.remove_expired_producers(input.i64()?);
            }
            6 => {
                hw = input.i64()?;
                t.on_high_watermark_updated(hw);
            }
            _ => {
                let bytes = t.encode_snapshot();
                let r =
                    ProducerStateTable::from_snapshot(cfg, &bytes, t.map_end_offset(), i64::MIN)
                        .expect("own snapshot decodes");
                assert_eq!(r.encode_snapshot(), bytes);
            }
        }
        assert!(t.last_stable_offset(hw) <= hw);
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = decode_snapshot(data);
    run(&mut Input(data));
});
