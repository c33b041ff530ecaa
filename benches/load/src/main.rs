//! josef-load: drive any Kafka-compatible broker with librdkafka (through the `rdkafka` crate) and report
//! throughput, end-to-end latency and the broker process's CPU time per record and per request, read
//! from the process's CPU-time clock (`clock_getcpuclockid`, nanoseconds, threads that ended
//! included), or from `/proc/PID/stat` (10 ms ticks) where that clock cannot be read. On a 2-core machine the client saturates before the broker with small records,
//! so broker CPU per unit of work is the figure that compares brokers fairly.
//!
//! ```text
//! josef-load --bootstrap 127.0.0.1:9092 --broker-pid 1234 produce --records 1000000 --size 100
//! josef-load --bootstrap 127.0.0.1:9092 --broker-pid 1234 produce --records 20000 --single
//! josef-load --bootstrap 127.0.0.1:9092 --broker-pid 1234 consume --records 1000000
//! josef-load --bootstrap 127.0.0.1:9092 --broker-pid 1234 latency --rate 10000 --seconds 10
//! # a cluster: CPU summed over the nodes, a replicated topic, acks=all also for the latency producer
//! josef-load --bootstrap 127.0.0.1:19092 --broker-pid 11,12,13 --replication-factor 3 latency --rate 5000 --acks all
//! josef-load --bootstrap 127.0.0.1:19092 brokers --expect 3   # waits until Metadata lists 3 brokers
//! # any librdkafka property on every client the tool makes, e.g. an SSL listener:
//! josef-load --bootstrap 127.0.0.1:9093 --config security.protocol=SSL --config ssl.ca.location=ca.pem produce
//! ```
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand};
use hdrhistogram::Histogram;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{
    BaseRecord, DefaultProducerContext, DeliveryResult, FutureProducer, FutureRecord, ProducerContext, ThreadedProducer,
};
use rdkafka::{Message, Offset, TopicPartitionList};

#[derive(Parser)]
#[command(about = "Load tool for Kafka-compatible brokers")]
struct Args {
    /// Broker address.
    #[arg(long, default_value = "127.0.0.1:9092")]
    bootstrap: String,
    /// PID of the broker process, to report its CPU time and RSS from /proc; a comma-separated list
    /// (the nodes of a cluster) reports the sums.
    #[arg(long, value_delimiter = ',')]
    broker_pid: Vec<u32>,
    /// Replication factor of the topic the tool creates (1 partition). The tool waits until the
    /// partition has a leader and all replicas are in the ISR before it measures.
    #[arg(long, default_value_t = 1)]
    replication_factor: i32,
    /// Topic to use (created if missing); defaults to a fresh name per run.
    #[arg(long)]
    topic: Option<String>,
    /// Label printed in the result line (e.g. josef or tansu).
    #[arg(long, default_value = "broker")]
    label: String,
    /// A librdkafka property `key=value` set on every client (admin, producers, consumers), e.g.
    /// `security.protocol=SSL` and `ssl.ca.location=ca.pem` for an SSL listener; repeatable.
    #[arg(long = "config", value_name = "KEY=VALUE", value_parser = parse_kv)]
    config: Vec<(String, String)>,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Produce records as fast as the client goes (or one record per request with --single).
    Produce {
        #[arg(long, default_value_t = 200_000)]
        records: u64,
        #[arg(long, default_value_t = 100)]
        size: usize,
        /// Wait for each record's acknowledgement before sending the next: one record per request.
        #[arg(long)]
        single: bool,
        #[arg(long, default_value = "all")]
        acks: String,
        /// Offer at most this many records per second (paced in steps of 1 ms), so that two runs
        /// compared on CPU per record keep the broker equally busy: a broker that waits longer
        /// between requests pays more per record on a VM (caches and the vCPU's wake-ups).
        #[arg(long)]
        rate: Option<u64>,
    },
    /// Produce `records` then consume them all from the beginning; reports the consume phase.
    Consume {
        #[arg(long, default_value_t = 200_000)]
        records: u64,
        #[arg(long, default_value_t = 100)]
        size: usize,
    },
    /// Produce at a fixed rate with client defaults while a consumer reads; reports end-to-end latency.
    Latency {
        #[arg(long, default_value_t = 10_000)]
        rate: u64,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 100)]
        size: usize,
        /// Override the producer's `linger.ms` (default: the client's own default, 5 ms), to
        /// separate the producer's batching delay from the broker and consumer path.
        #[arg(long)]
        linger_ms: Option<u32>,
        /// The latency producer's acks (default: the client's default, all since librdkafka 1.x).
        #[arg(long)]
        acks: Option<String>,
    },
    /// Wait until the cluster's Metadata lists `expect` brokers (or fail after `timeout-s`).
    Brokers {
        #[arg(long, default_value_t = 1)]
        expect: usize,
        #[arg(long, default_value_t = 60)]
        timeout_s: u64,
    },
}

fn parse_kv(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("expected key=value, got {s:?}"))?;
    Ok((k.to_string(), v.to_string()))
}

/// A client configuration with the bootstrap servers and every `--config` property.
fn client_config(bootstrap: &str, extra: &[(String, String)]) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    for (k, v) in extra {
        c.set(k, v);
    }
    c
}

/// CPU time (user + system) of a process in microseconds.
fn cpu_us(pids: &[u32]) -> Option<u64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|&p| clock_cpu_us(p).or_else(|| stat_cpu_us(p))).sum()
}

/// Why the clock and not /proc/PID/stat: the kernel keeps a process's CPU time in nanoseconds but
/// /proc/PID/stat prints it in 10 ms ticks, and a run that costs the broker 80-300 ms (1,000,000
/// consumed records of 100 B, 500,000 produced of 1 KiB) then moves its ratio to another run by
/// up to 10 % from the rounding alone. The process clock of another process is readable by any
/// user and counts the threads that already ended, as /proc/PID/stat does.
fn clock_cpu_us(pid: u32) -> Option<u64> {
    let mut clock: libc::clockid_t = 0;
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: plain libc calls with pointers to locals.
    unsafe {
        if libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) != 0 || libc::clock_gettime(clock, &mut ts) != 0 {
            return None;
        }
    }
    Some(ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000)
}

/// CPU time from /proc/PID/stat (clock ticks of 1/100 s).
fn stat_cpu_us(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) * 10_000)
}

fn rss_kib(pids: &[u32]) -> Option<u64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|&p| rss_kib_one(p)).sum()
}

fn rss_kib_one(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

async fn ensure_topic(base: &ClientConfig, topic: &str, rf: i32) {
    let admin: AdminClient<DefaultClientContext> = base.create().expect("admin client");
    let t = NewTopic::new(topic, 1, TopicReplication::Fixed(rf));
    let _ = admin.create_topics(&[t], &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)))).await;
    // Wait for a leader and a full ISR (on a cluster the topic reaches the other nodes' metadata a
    // little later, and an ISR below the replication factor would make acks=all cheaper than it is).
    let t0 = Instant::now();
    loop {
        let ready = admin.inner().fetch_metadata(Some(topic), Duration::from_secs(5)).ok().is_some_and(|md| {
            md.topics().iter().any(|t| {
                t.name() == topic
                    && t.error().is_none()
                    && t.partitions().iter().any(|p| {
                        p.id() == 0 && p.leader() >= 0 && p.isr().len() >= rf as usize && p.replicas().len() >= rf as usize
                    })
            })
        });
        if ready {
            return;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            eprintln!("topic {topic}: no leader with {rf} in-sync replicas after 30 s; measuring anyway");
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Producer context that records, per delivered record, the time from its send (the first 8 payload
/// bytes, ns since the epoch) to its acknowledgement: the produce latency acks= decides.
struct AckLatency(std::sync::Arc<std::sync::Mutex<Histogram<u64>>>);
impl ClientContext for AckLatency {}
impl ProducerContext for AckLatency {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Ok(m) = result {
            if let Some(p) = m.payload() {
                if p.len() >= 8 {
                    let sent = u64::from_be_bytes(p[..8].try_into().unwrap());
                    if sent != 0 {
                        let _ = self.0.lock().unwrap().record((now_ns().saturating_sub(sent) / 1000).max(1));
                    }
                }
            }
        }
    }
}

fn report(label: &str, mode: &str, units: u64, unit: &str, wall: Duration, cpu: Option<u64>, pid: &[u32]) {
    let per_sec = units as f64 / wall.as_secs_f64();
    let cpu_txt = match cpu {
        Some(us) => format!(
            "broker_cpu_ms={:.1} broker_cpu_us_per_{unit}={:.3}",
            us as f64 / 1000.0,
            us as f64 / units.max(1) as f64
        ),
        None => "broker_cpu=n/a".to_string(),
    };
    let rss = rss_kib(pid).map(|k| format!(" broker_rss_mib={:.1}", k as f64 / 1024.0)).unwrap_or_default();
    println!(
        "RESULT label={label} mode={mode} {unit}s={units} wall_s={:.3} {unit}s_per_s={per_sec:.0} {cpu_txt}{rss}",
        wall.as_secs_f64()
    );
}

fn produce_fast(base: &ClientConfig, topic: &str, records: u64, size: usize, acks: &str, rate: Option<u64>) {
    let producer: ThreadedProducer<DefaultProducerContext> = base
        .clone()
        .set("acks", acks)
        .set("linger.ms", "5")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .expect("producer");
    let payload = vec![b'x'; size];
    let t0 = Instant::now();
    for i in 0..records {
        if let Some(rate) = rate.filter(|&r| r > 0) {
            if i % 64 == 0 {
                let due = Duration::from_secs_f64(i as f64 / rate as f64);
                let now = t0.elapsed();
                if due > now + Duration::from_millis(1) {
                    std::thread::sleep(due - now);
                }
            }
        }
        let mut rec = BaseRecord::<(), [u8]>::to(topic).payload(&payload[..]).partition(0);
        loop {
            match producer.send(rec) {
                Ok(()) => break,
                Err((_, r)) => {
                    rec = r;
                    producer.poll(Duration::from_millis(1));
                }
            }
        }
    }
    rdkafka::producer::Producer::flush(&producer, Duration::from_secs(120)).expect("flush");
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let topic = args.topic.clone().unwrap_or_else(|| format!("load-{}", now_ns() % 1_000_000_000));
    let base = client_config(&args.bootstrap, &args.config);
    if let Mode::Brokers { expect, timeout_s } = args.mode {
        let admin: AdminClient<DefaultClientContext> = base.create().expect("admin client");
        let t0 = Instant::now();
        loop {
            let n = admin.inner().fetch_metadata(None, Duration::from_secs(5)).map(|m| m.brokers().len()).unwrap_or(0);
            if n >= expect {
                println!("BROKERS {n}");
                return;
            }
            if t0.elapsed() > Duration::from_secs(timeout_s) {
                eprintln!("only {n} brokers in Metadata after {timeout_s} s");
                std::process::exit(1);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    ensure_topic(&base, &topic, args.replication_factor).await;
    match args.mode {
        Mode::Produce { records, size, single, acks, rate } => {
            let cpu0 = cpu_us(&args.broker_pid);
            let t0 = Instant::now();
            if single {
                let producer: FutureProducer = base
                    .clone()
                    .set("acks", &acks)
                    .set("linger.ms", "0")
                    .create()
                    .expect("producer");
                let payload = vec![b'x'; size];
                for _ in 0..records {
                    let rec = FutureRecord::<(), [u8]>::to(&topic).payload(&payload[..]).partition(0);
                    producer.send(rec, Duration::from_secs(30)).await.expect("delivery");
                }
            } else {
                produce_fast(&base, &topic, records, size, &acks, rate);
            }
            let wall = t0.elapsed();
            let cpu = cpu0.and_then(|c0| cpu_us(&args.broker_pid).map(|c1| c1 - c0));
            let mode = if single { "produce-single (1 record per request)" } else { "produce" };
            report(&args.label, mode, records, if single { "request" } else { "record" }, wall, cpu, &args.broker_pid);
        }
        Mode::Consume { records, size } => {
            produce_fast(&base, &topic, records, size, "1", None);
            let consumer: BaseConsumer = base
                .clone()
                .set("group.id", "josef-load")
                .set("enable.auto.commit", "false")
                .create()
                .expect("consumer");
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(&topic, 0, Offset::Beginning).unwrap();
            consumer.assign(&tpl).expect("assign");
            let cpu0 = cpu_us(&args.broker_pid);
            let t0 = Instant::now();
            let mut got = 0u64;
            while got < records && t0.elapsed() < Duration::from_secs(300) {
                if let Some(Ok(_m)) = consumer.poll(Duration::from_millis(100)) {
                    got += 1;
                }
            }
            let wall = t0.elapsed();
            let cpu = cpu0.and_then(|c0| cpu_us(&args.broker_pid).map(|c1| c1 - c0));
            report(&args.label, "consume", got, "record", wall, cpu, &args.broker_pid);
        }
        Mode::Brokers { .. } => unreachable!(),
        Mode::Latency { rate, seconds, size, linger_ms, acks } => {
            let consumer: BaseConsumer = base
                .clone()
                .set("group.id", "josef-load-latency")
                .set("enable.auto.commit", "false")
                .create()
                .expect("consumer");
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(&topic, 0, Offset::End).unwrap();
            consumer.assign(&tpl).expect("assign");
            // Let the consumer reach the partition before timing starts.
            let warm = Instant::now();
            while warm.elapsed() < Duration::from_secs(2) {
                consumer.poll(Duration::from_millis(50));
            }
            let total = rate * seconds;
            let producer_base = base.clone();
            let topic2 = topic.clone();
            let ack_hist = std::sync::Arc::new(std::sync::Mutex::new(Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap()));
            let ack_ctx = AckLatency(ack_hist.clone());
            let producer_thread = std::thread::spawn(move || {
                let mut config = producer_base;
                if let Some(l) = linger_ms {
                    config.set("linger.ms", l.to_string());
                }
                if let Some(a) = &acks {
                    config.set("acks", a);
                }
                let producer: ThreadedProducer<AckLatency> = config.create_with_context(ack_ctx).expect("producer");
                // Steady state, not start-up: the producer's first send waits for its bootstrap
                // (metadata, connection, ApiVersions), which would put ~100 ms on the first
                // thousand records (1% of them). One warm-up record (send time 0, not counted) and
                // a flush first.
                let mut payload = vec![b'x'; size.max(8)];
                payload[..8].copy_from_slice(&0u64.to_be_bytes());
                let _ = producer.send(BaseRecord::<(), [u8]>::to(&topic2).payload(&payload[..]).partition(0));
                rdkafka::producer::Producer::flush(&producer, Duration::from_secs(30)).expect("warm-up flush");
                let start = Instant::now();
                for i in 0..total {
                    let due = start + Duration::from_nanos(i * 1_000_000_000 / rate);
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                    payload[..8].copy_from_slice(&now_ns().to_be_bytes());
                    let rec = BaseRecord::<(), [u8]>::to(&topic2).payload(&payload[..]).partition(0);
                    let _ = producer.send(rec);
                }
                rdkafka::producer::Producer::flush(&producer, Duration::from_secs(60)).expect("flush");
            });
            let cpu0 = cpu_us(&args.broker_pid);
            let t0 = Instant::now();
            let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
            let mut got = 0u64;
            while got < total && t0.elapsed() < Duration::from_secs(seconds + 60) {
                if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
                    if let Some(p) = m.payload() {
                        if p.len() >= 8 {
                            let sent = u64::from_be_bytes(p[..8].try_into().unwrap());
                            if sent == 0 {
                                continue; // the producer's warm-up record
                            }
                            let lat_us = now_ns().saturating_sub(sent) / 1000;
                            let _ = hist.record(lat_us.max(1));
                        }
                    }
                    got += 1;
                }
            }
            producer_thread.join().unwrap();
            let wall = t0.elapsed();
            let cpu = cpu0.and_then(|c0| cpu_us(&args.broker_pid).map(|c1| c1 - c0));
            report(&args.label, "latency", got, "record", wall, cpu, &args.broker_pid);
            println!(
                "LATENCY label={} rate={rate} p50_ms={:.2} p99_ms={:.2} p999_ms={:.2} max_ms={:.2}",
                args.label,
                hist.value_at_quantile(0.50) as f64 / 1000.0,
                hist.value_at_quantile(0.99) as f64 / 1000.0,
                hist.value_at_quantile(0.999) as f64 / 1000.0,
                hist.max() as f64 / 1000.0
            );
            let ack = ack_hist.lock().unwrap();
            println!(
                "ACK_LATENCY label={} rate={rate} acked={} p50_ms={:.2} p99_ms={:.2} p999_ms={:.2} max_ms={:.2}",
                args.label,
                ack.len(),
                ack.value_at_quantile(0.50) as f64 / 1000.0,
                ack.value_at_quantile(0.99) as f64 / 1000.0,
                ack.value_at_quantile(0.999) as f64 / 1000.0,
                ack.max() as f64 / 1000.0
            );
        }
    }
}
