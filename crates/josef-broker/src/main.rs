//! josef-broker binary: parses flags and `server.properties`, starts the broker, prints
//! `listening on HOST:PORT` per listener on stdout, shuts down cleanly on SIGTERM/SIGINT, and halts
//! (exit 1) when its metadata quorum stops on a fault of the metadata log.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use josef_server::config::{apply_overrides, read_properties_file, BrokerConfig};

/// A single-node Kafka-compatible broker.
#[derive(Parser, Debug)]
#[command(name = "josef-broker", version, about)]
struct Args {
    /// Kafka-style server.properties file.
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Same as --config (as in `kafka-server-start.sh server.properties`).
    #[arg(value_name = "FILE", conflicts_with = "config")]
    config_positional: Option<PathBuf>,
    /// `listeners`, e.g. PLAINTEXT://127.0.0.1:9092 (port 0 = any free port).
    #[arg(long)]
    listeners: Option<String>,
    /// `advertised.listeners`, e.g. PLAINTEXT://myhost:9092.
    #[arg(long)]
    advertised_listeners: Option<String>,
    /// `log.dirs`: comma-separated data directories (default ./josef-data).
    #[arg(long)]
    log_dirs: Option<String>,
    /// `node.id`.
    #[arg(long)]
    node_id: Option<i32>,
    /// `num.partitions` for auto-created topics.
    #[arg(long)]
    num_partitions: Option<i32>,
    /// Any other setting, as key=value (repeatable); beats the file.
    #[arg(long = "override", short = 'o', value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

fn build_config(args: Args) -> Result<BrokerConfig, String> {
    let mut props = BTreeMap::new();
    if let Some(path) = args.config.or(args.config_positional) {
        props = read_properties_file(&path).map_err(|e| e.to_string())?;
    }
    let mut set = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            props.insert(k.to_string(), v);
        }
    };
    set("listeners", args.listeners);
    set("advertised.listeners", args.advertised_listeners);
    set("log.dirs", args.log_dirs);
    set("node.id", args.node_id.map(|n| n.to_string()));
    set("num.partitions", args.num_partitions.map(|n| n.to_string()));
    apply_overrides(&mut props, &args.overrides).map_err(|e| e.to_string())?;
    BrokerConfig::from_properties(props).map_err(|e| e.to_string())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
        _ = int.recv() => tracing::info!("SIGINT received, shutting down"),
    }
}

fn main() -> ExitCode {
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter_reloading();
    // Log levels set through the BROKER_LOGGER resource replace the filter.
    let filter = subscriber.reload_handle();
    subscriber.init();
    let config = match build_config(Args::parse()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("josef-broker: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("josef-broker: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async move {
        let broker = match josef_server::Broker::start(config).await {
            Ok(b) => b,
            Err(e) => {
                eprintln!("josef-broker: cannot start: {e}");
                return ExitCode::FAILURE;
            }
        };
        broker
            .state()
            .loggers
            .set_filter_reload(std::sync::Arc::new(move |directives| {
                let f = tracing_subscriber::EnvFilter::try_new(directives)
                    .map_err(|e| e.to_string())?;
                filter.reload(f).map_err(|e| e.to_string())
            }));
        for l in broker.listeners() {
            println!("listening on {}", l.addr);
        }
        if let Some(addr) = broker.metrics_addr() {
            println!("metrics on http://{addr}/metrics");
        }
        tokio::select! {
            _ = wait_for_signal() => {}
            why = broker.fatal() => {
                // Kafka's answer to a fault in the metadata log: halt, without the controlled
                // shutdown (it would go through the quorum that just stopped), so the peers fence
                // this node and elect without it.
                tracing::error!(error = %why, "the metadata quorum stopped; halting");
                std::process::exit(1);
            }
        }
        broker.shutdown().await;
        tracing::info!("shutdown complete");
        ExitCode::SUCCESS
    });
    // Dropping a runtime waits for its blocking threads without bound; a thread stuck on a peer
    // that is gone (a cluster whose other nodes stopped first) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    code
}
