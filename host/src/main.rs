//! The `strategy-host` binary: logs to stderr, parses the command line, and runs the server
//! ([`strategy_host::app::run`]).

use clap::Parser as _;
use strategy_host::config::Config;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    strategy_host::app::run(Config::parse(), Default::default()).await
}
