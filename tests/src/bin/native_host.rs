//! `native-host`: `strategy-host` with the example Deployment strategy compiled natively into
//! the server instead of loaded as wasm — the baseline of the wasm-vs-native benchmark
//! (`api-load --resource deployments` against both). Same flags as `strategy-host`.

use std::sync::Arc;

use clap::Parser as _;
use strategy_host::app::NativeStrategies;
use strategy_host::config::Config;
use strategy_host_e2e::native::NativeSdkStrategy;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut natives = NativeStrategies::new();
    natives.insert(
        ("apps.example.com".into(), "Deployment".into()),
        Arc::new(NativeSdkStrategy(strategy_deployment::Deployments)),
    );
    strategy_host::app::run(Config::parse(), natives).await
}
