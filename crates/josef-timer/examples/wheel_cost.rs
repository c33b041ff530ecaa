//! The timer bench's two workloads (`benches/timer.rs`: insert+expire and insert+cancel on a
//! `TimingWheel` with `n` live timers), without criterion, for counting instructions per operation
//! on a noisy machine. Instructions per op are the difference of two runs 200,000 ops apart, both past
//! 2·n warm-up ops (the steady state: every expiring timer was inserted by the loop):
//!
//! ```sh
//! cargo build --release -p josef-timer --example wheel_cost
//! B=target/release/examples/wheel_cost
//! for n in 1000 10000 100000 1000000; do A=$((2*n + 100000))
//!   a=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $B expire $n $A 2>&1 | grep -o 'refs: *[0-9,]*' | tr -dc 0-9)
//!   b=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $B expire $n $((A + 200000)) 2>&1 | grep -o 'refs: *[0-9,]*' | tr -dc 0-9)
//!   echo "$n: $(( (b - a) / 200000 )) instructions/op"; done
//! ```
//!
//! `cancel` instead of `expire` for insert+cancel; a 4th argument sets the wheel size (the bench's
//! `wheel_256` uses 256). Without valgrind it prints wall-clock ns per op of the measured loop and the
//! wheel's bucket flushes and enqueues per op.

use std::hint::black_box;
use std::time::Instant;

use josef_timer::{Insert, TimingWheel};

const SPAN_MS: u64 = 30_000;

/// The bench's xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: wheel_cost expire|cancel N OPS [WHEEL_SIZE]";
    let mode = args.get(1).expect(usage).clone();
    let n: usize = args.get(2).expect(usage).parse().expect(usage);
    let ops: u64 = args.get(3).expect(usage).parse().expect(usage);
    let wheel_size: u32 = args.get(4).map_or(20, |s| s.parse().expect(usage));
    let mut wheel = TimingWheel::new(1, wheel_size, 0).unwrap();
    let start;
    let before;
    match mode.as_str() {
        "expire" => {
            // Same prefill and pace as the bench's insert_expire.
            for i in 0..n as u64 {
                wheel.add(1 + i * SPAN_MS / n as u64, i);
            }
            let step = SPAN_MS * 1024 / n as u64;
            let mut acc = 0u64;
            let mut rng = Rng(7);
            let mut expired = 0u64;
            before = wheel.stats();
            start = Instant::now();
            for _ in 0..ops {
                acc += step;
                let now = acc / 1024;
                wheel.add(now + SPAN_MS + rng.next() % 4, 0);
                black_box(wheel.advance_clock(now, |_| expired += 1));
            }
            assert!(wheel.len() > n / 2 && wheel.len() < n * 2);
            black_box(expired);
        }
        "cancel" => {
            let mut rng = Rng(0x2545_F491_4F6C_DD1D);
            for i in 0..n as u64 {
                wheel.add(1 + rng.next() % SPAN_MS, i);
            }
            before = wheel.stats();
            start = Instant::now();
            for _ in 0..ops {
                let Insert::Scheduled(h) = wheel.add(1 + rng.next() % SPAN_MS, 0) else {
                    unreachable!()
                };
                black_box(wheel.cancel(h));
            }
        }
        _ => panic!("{usage}"),
    }
    let ns = start.elapsed().as_nanos() as f64 / ops as f64;
    let after = wheel.stats();
    let per_op = |a: u64, b: u64| (a - b) as f64 / ops as f64;
    println!(
        "{mode} n={n} ops={ops} wheel_size={wheel_size}: {ns:.1} ns/op, bucket flushes {:.3}/op, \
         bucket enqueues {:.3}/op, {} levels",
        per_op(after.bucket_flushes, before.bucket_flushes),
        per_op(after.bucket_enqueues, before.bucket_enqueues),
        after.levels
    );
}
