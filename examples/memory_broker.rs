//! A complete Kafka-compatible broker whose partition logs live in memory: the starting point for
//! a broker of your own. Run it like josef-broker:
//!
//! ```text
//! cargo run --release --example memory_broker -- --listeners PLAINTEXT://127.0.0.1:9092
//! ```
//!
//! Everything Kafka clients see — produce, fetch, consumer groups, idempotent and transactional
//! producers, retention, compaction — is the same code as on disk: only the bytes go to
//! `josef_log::storage::MemoryStorage` instead of files. Nothing survives the process.

use std::collections::BTreeMap;
use std::sync::Arc;

use clap::Parser;
use josef_log::storage::MemoryStorage;
use josef_server::config::{apply_overrides, read_properties_file, BrokerConfig};
use josef_server::log_storage::LogStorage;

/// Flags like josef-broker's (a subset).
#[derive(Parser)]
struct Args {
    /// `listeners`, e.g. PLAINTEXT://127.0.0.1:9092.
    #[arg(long)]
    listeners: Option<String>,
    /// A Kafka server.properties (every key josef-broker takes works here).
    #[arg(long, short = 'c')]
    config: Option<std::path::PathBuf>,
    /// Any other setting, KEY=VALUE (repeatable).
    #[arg(long = "override", short = 'o')]
    overrides: Vec<String>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();

    // 1. Settings: Kafka's names and defaults. A builder with another config source fills this map.
    let mut props = match &args.config {
        Some(path) => read_properties_file(path)?,
        None => BTreeMap::new(),
    };
    props.extend(args.listeners.map(|l| ("listeners".to_string(), l)));
    apply_overrides(&mut props, &args.overrides)?;
    // The log dir only holds the broker's identity (meta.properties, the producer-id block, the
    // local metadata store); without one, a temporary dir that goes away at exit.
    let scratch = tempfile::tempdir()?;
    if !props.contains_key("log.dirs") && !props.contains_key("log.dir") {
        props.insert("log.dirs".into(), scratch.path().display().to_string());
    }
    let mut config = BrokerConfig::from_properties(props)?;

    // 2. Storage: the one line a builder changes. Any `josef_log::storage::Storage` works here (an
    //    object store, a database, a file system with different durability); `LogStorage::Memory`
    //    (`log.storage=memory` in a properties file) is the same as this line.
    config.log_storage = LogStorage::Custom(Arc::new(MemoryStorage::new()));

    // 3. Run until SIGTERM/SIGINT. The rest (listeners, request handling, coordinators, the
    //    cluster node when `process.roles` is set) is josef-server's, the same code josef-broker
    //    runs; only this file depends on nothing but the library crates.
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async move {
        let broker = josef_server::Broker::start(config).await?;
        for l in broker.listeners() {
            println!("listening on {}", l.addr);
        }
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        broker.shutdown().await;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    Ok(())
}
