//! The `strategy-host` binary: logs to stderr, parses the command line, and runs the server
//! ([`strategy_host::app::run`]) or, for `strategy-host module ...`, an author's test runner
//! ([`strategy_host::cli::run`]), or for `strategy-host store ...`, snapshot restores
//! ([`strategy_host::cli::store::run`]).

use std::process::ExitCode;

use clap::Parser as _;
use strategy_host::cli::store::StoreCli;
use strategy_host::cli::ModuleCli;
use strategy_host::config::Config;

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    // The server's flags are one flat command; `module` is a command of its own.
    let module = std::env::args_os().nth(1).is_some_and(|a| a == "module");
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // The test runner reports modules' failures itself; their own log lines (target
                // `strategy`; a target directive matches by prefix, hence `strategy_host`) help
                // their authors.
                .unwrap_or_else(|_| {
                    if module {
                        "error,strategy_host=error,strategy=info"
                    } else {
                        "info"
                    }
                    .into()
                }),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if module {
        let cli = ModuleCli::parse_from(std::env::args_os().skip(1));
        return Ok(strategy_host::cli::run(cli).await);
    }
    if std::env::args_os().nth(1).is_some_and(|a| a == "store") {
        let cli = StoreCli::parse_from(std::env::args_os().skip(1));
        return Ok(strategy_host::cli::store::run(cli).await);
    }
    strategy_host::app::run(Config::parse(), Default::default()).await?;
    Ok(ExitCode::SUCCESS)
}
