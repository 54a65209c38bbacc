//! The `strategy-host` binary: parses the command line, opens the store, and serves HTTP until
//! SIGTERM or SIGINT.

use std::sync::Arc;

use anyhow::Context as _;
use clap::Parser as _;
use strategy_host::api::server::{serve, AppState};
use strategy_host::config::{Config, StoreChoice};
use strategy_host::storage::embedded::EmbeddedStore;
use strategy_host::storage::etcd3::Etcd3Store;
use strategy_host::storage::Storage;
use tokio::signal::unix::{signal, SignalKind};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let config = Config::parse();
    let storage: Arc<dyn Storage> = match config.store() {
        StoreChoice::Embedded(c) => {
            let dir = c.data_dir.display().to_string();
            let store = EmbeddedStore::open(c)
                .await
                .with_context(|| format!("opening the embedded store in {dir}"))?;
            tracing::info!(data_dir = %dir, "serving from the embedded store");
            Arc::new(store)
        }
        StoreChoice::Etcd3(c) => {
            let endpoints = c.endpoints.join(",");
            let store = Etcd3Store::connect(c)
                .await
                .with_context(|| format!("connecting to etcd at {endpoints}"))?;
            tracing::info!(%endpoints, "serving from etcd");
            Arc::new(store)
        }
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    tracing::info!(address = %listener.local_addr()?, "strategy-host listening");
    serve(listener, AppState { storage }, shutdown_signal()?).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on the first SIGTERM or SIGINT.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
    })
}
