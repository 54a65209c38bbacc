//! `strategy-host store restore|status`: what `etcdctl snapshot restore|status` are to etcd, for
//! the snapshots a running server streams from `GET /storage/snapshot`. A snapshot restores into
//! a new embedded store (every object at its resourceVersion) or into an empty etcd prefix
//! (objects in the order of their resourceVersions), which is also how a store moves from the
//! embedded store to etcd and back.

use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::storage::embedded::{EmbeddedConfig, EmbeddedStore};
use crate::storage::etcd3::{Etcd3Config, Etcd3Store};
use crate::storage::snapshot::SnapshotReader;

/// Restore or inspect store snapshots (taken with `GET /storage/snapshot` on a running server,
/// e.g. `kubectl get --raw /storage/snapshot > snapshot.jsonl`).
#[derive(Debug, Parser)]
#[command(name = "strategy-host store")]
pub struct StoreCli {
    #[command(subcommand)]
    command: StoreCommand,
}

#[derive(Debug, Subcommand)]
enum StoreCommand {
    /// Create a store from a snapshot: a new embedded store in --data-dir, or the objects under
    /// an empty --etcd-prefix of --etcd-servers. The server must not be running on it.
    Restore {
        /// The snapshot file.
        file: PathBuf,
        /// The data directory of the new embedded store (it must hold no store).
        #[arg(long, conflicts_with = "etcd_servers")]
        data_dir: Option<PathBuf>,
        /// Comma-separated etcd endpoints to restore into instead.
        #[arg(long, value_delimiter = ',')]
        etcd_servers: Vec<String>,
        /// The key prefix in etcd (it must hold no keys).
        #[arg(long, default_value = "/registry")]
        etcd_prefix: String,
    },
    /// Check a snapshot file whole and print its revision and object count.
    Status {
        /// The snapshot file.
        file: PathBuf,
    },
}

/// Runs a `store` command; errors are printed, and the exit code says whether it succeeded.
pub async fn run(cli: StoreCli) -> ExitCode {
    match execute(cli.command).await {
        Ok(said) => {
            println!("{said}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn execute(command: StoreCommand) -> anyhow::Result<String> {
    let open = |file: &PathBuf| -> anyhow::Result<_> {
        let input = std::fs::File::open(file)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
        Ok(SnapshotReader::new(BufReader::new(input))?)
    };
    match command {
        StoreCommand::Status { file } => {
            let mut snapshot = open(&file)?;
            while snapshot.next_entry()?.is_some() {}
            Ok(format!(
                "revision {}, {} objects, whole",
                snapshot.revision,
                snapshot.objects()
            ))
        }
        StoreCommand::Restore {
            file,
            data_dir,
            etcd_servers,
            etcd_prefix,
        } => {
            let mut snapshot = open(&file)?;
            let revision = snapshot.revision;
            let (objects, target) = match data_dir {
                Some(dir) => {
                    let config = EmbeddedConfig::new(dir.clone());
                    let objects = tokio::task::spawn_blocking(move || {
                        EmbeddedStore::restore(&config, &mut snapshot)
                    })
                    .await??;
                    (objects, format!("the embedded store in {}", dir.display()))
                }
                None if etcd_servers.is_empty() => {
                    anyhow::bail!("say where to restore: --data-dir DIR or --etcd-servers URLS")
                }
                None => {
                    let mut config = Etcd3Config::new(etcd_servers.clone());
                    config.prefix = etcd_prefix.clone();
                    let store = Etcd3Store::connect(config).await?;
                    let objects = store.restore(&mut snapshot).await?;
                    (
                        objects,
                        format!("{etcd_prefix} on etcd {}", etcd_servers.join(",")),
                    )
                }
            };
            Ok(format!(
                "restored {objects} objects of the snapshot at revision {revision} into {target}"
            ))
        }
    }
}
