//! Test helpers: a minimal reader of Produce request frames (just enough to pull out the record
//! bytes of each partition, without depending on a protocol crate) and shared generators.
#![allow(dead_code)]

/// Reads big-endian fields and (compact) strings/bytes from a frame.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        s
    }
    fn i16(&mut self) -> i16 {
        i16::from_be_bytes(self.take(2).try_into().unwrap())
    }
    fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.take(4).try_into().unwrap())
    }
    fn uvarint(&mut self) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.take(1)[0];
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return v;
            }
            shift += 7;
        }
    }
    /// Nullable string/bytes with an int16 (strings) or int32 (bytes) length, or compact.
    fn nullable(&mut self, flexible: bool, int32: bool) -> Option<&'a [u8]> {
        let len: i64 = if flexible {
            self.uvarint() as i64 - 1
        } else if int32 {
            self.i32() as i64
        } else {
            self.i16() as i64
        };
        (len >= 0).then(|| self.take(len as usize))
    }
    fn array_len(&mut self, flexible: bool) -> usize {
        if flexible {
            self.uvarint() as usize - 1
        } else {
            self.i32() as usize
        }
    }
    fn skip_tags(&mut self) {
        let n = self.uvarint();
        for _ in 0..n {
            self.uvarint();
            let size = self.uvarint() as usize;
            self.take(size);
        }
    }
}

/// One partition's records from a Produce request.
pub struct ProducePartition {
    pub topic: String,
    pub partition: i32,
    pub records: Vec<u8>,
}

/// Parses a Produce request frame (no length prefix; versions 3–12, topic names) and returns the
/// record bytes of every partition.
pub fn produce_partitions(frame: &[u8]) -> Vec<ProducePartition> {
    let mut r = Reader { b: frame, pos: 0 };
    let api_key = r.i16();
    assert_eq!(api_key, 0, "not a Produce request");
    let version = r.i16();
    assert!(
        (3..=12).contains(&version),
        "Produce v{version} not handled"
    );
    let flexible = version >= 9;
    r.i32(); // correlation id
    r.nullable(false, false); // client id keeps int16 length even in header v2
    if flexible {
        r.skip_tags();
    }
    r.nullable(flexible, false); // transactional id
    r.i16(); // acks
    r.i32(); // timeout
    let mut out = Vec::new();
    for _ in 0..r.array_len(flexible) {
        let topic = String::from_utf8(r.nullable(flexible, false).unwrap().to_vec()).unwrap();
        for _ in 0..r.array_len(flexible) {
            let partition = r.i32();
            let records = r.nullable(flexible, true).unwrap_or_default().to_vec();
            if flexible {
                r.skip_tags();
            }
            out.push(ProducePartition {
                topic: topic.clone(),
                partition,
                records,
            });
        }
        if flexible {
            r.skip_tags();
        }
    }
    if flexible {
        r.skip_tags();
    }
    assert_eq!(
        r.pos,
        frame.len(),
        "trailing bytes after the Produce request"
    );
    out
}

use josef_records::{Compression, TimestampType};
use proptest::prelude::*;

/// A record as a test generates it.
#[derive(Debug, Clone, PartialEq)]
pub struct GenRecord {
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

fn opt_bytes(max: usize) -> impl Strategy<Value = Option<Vec<u8>>> {
    prop::option::weighted(0.85, prop::collection::vec(any::<u8>(), 0..max))
}

/// Records with timestamps around a realistic epoch, null keys/values and headers.
pub fn gen_record() -> impl Strategy<Value = GenRecord> {
    (
        prop_oneof![
            1_700_000_000_000i64..1_700_000_100_000,
            Just(-1i64),
            any::<i64>().prop_map(|t| t >> 2),
        ],
        opt_bytes(40),
        opt_bytes(200),
        prop::collection::vec(
            (prop::collection::vec(any::<u8>(), 0..12), opt_bytes(20)),
            0..4,
        ),
    )
        .prop_map(|(timestamp, key, value, headers)| GenRecord {
            timestamp,
            key,
            value,
            headers,
        })
}

pub fn gen_compression() -> impl Strategy<Value = Compression> {
    prop::sample::select(Compression::ALL.to_vec())
}

pub fn gen_timestamp_type() -> impl Strategy<Value = TimestampType> {
    prop_oneof![
        Just(TimestampType::CreateTime),
        Just(TimestampType::LogAppendTime)
    ]
}
