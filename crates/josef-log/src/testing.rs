//! Small helpers to build uncompressed v2 batches in tests, examples and benches.
//!
//! Not meant for production encoding (use josef-records' builder): no compression, no headers.

use bytes::{BufMut, BytesMut};

/// Timestamp, key and value of one record.
type TestRecord = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// Key and value of one record.
pub type KeyValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// A batch under construction.
#[derive(Debug, Clone)]
pub struct TestBatch {
    base_offset: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    control: bool,
    records: Vec<TestRecord>,
}

impl TestBatch {
    /// An empty batch at `base_offset` without producer id.
    pub fn new(base_offset: i64) -> Self {
        TestBatch {
            base_offset,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            transactional: false,
            control: false,
            records: Vec::new(),
        }
    }

    /// Sets producer id, epoch and base sequence.
    pub fn producer(mut self, id: i64, epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = id;
        self.producer_epoch = epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Marks the batch transactional.
    pub fn transactional(mut self) -> Self {
        self.transactional = true;
        self
    }

    /// Makes the batch a control batch holding one marker record (`commit` or abort).
    pub fn control_marker(mut self, timestamp: i64, commit: bool) -> Self {
        self.control = true;
        self.transactional = true;
        let key = vec![0, 0, 0, u8::from(commit)];
        let value = vec![0, 0, 0, 0, 0, 0];
        self.records.push((timestamp, Some(key), Some(value)));
        self
    }

    /// Adds a record.
    pub fn record(mut self, timestamp: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Self {
        self.records.push((
            timestamp,
            key.map(<[u8]>::to_vec),
            value.map(<[u8]>::to_vec),
        ));
        self
    }

    /// Encodes the batch.
    pub fn build(&self) -> BytesMut {
        let base_ts = self.records.first().map_or(-1, |r| r.0);
        let max_ts = self.records.iter().map(|r| r.0).max().unwrap_or(-1);
        let mut body = BytesMut::new();
        for (i, (ts, key, value)) in self.records.iter().enumerate() {
            let mut rec = BytesMut::new();
            rec.put_i8(0);
            put_varlong(&mut rec, ts - base_ts);
            put_varlong(&mut rec, i as i64);
            for field in [key, value] {
                match field {
                    None => put_varlong(&mut rec, -1),
                    Some(b) => {
                        put_varlong(&mut rec, b.len() as i64);
                        rec.put_slice(b);
                    }
                }
            }
            put_varlong(&mut rec, 0);
            put_varlong(&mut body, rec.len() as i64);
            body.put_slice(&rec);
        }
        let mut attributes: i16 = 0;
        if self.transactional {
            attributes |= 0x10;
        }
        if self.control {
            attributes |= 0x20;
        }
        let mut b = BytesMut::with_capacity(61 + body.len());
        b.put_i64(self.base_offset);
        b.put_i32((49 + body.len()) as i32);
        b.put_i32(-1);
        b.put_i8(2);
        b.put_u32(0);
        b.put_i16(attributes);
        b.put_i32(self.records.len().saturating_sub(1) as i32);
        b.put_i64(base_ts);
        b.put_i64(max_ts);
        b.put_i64(self.producer_id);
        b.put_i16(self.producer_epoch);
        b.put_i32(self.base_sequence);
        b.put_i32(self.records.len() as i32);
        b.put_slice(&body);
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }
}

/// One uncompressed batch at `base_offset` whose records all carry `timestamp`.
///
/// ```
/// let b = josef_log::testing::batch(0, 10, &[(Some(b"k"), Some(b"v"))]);
/// assert_eq!(b[16], 2); // magic
/// ```
pub fn batch(base_offset: i64, timestamp: i64, records: &[KeyValue<'_>]) -> BytesMut {
    let mut t = TestBatch::new(base_offset);
    for (k, v) in records {
        t = t.record(timestamp, *k, *v);
    }
    t.build()
}

fn put_varlong(buf: &mut BytesMut, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        buf.put_u8((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
    buf.put_u8(z as u8);
}
