//! storage-bench: the storage layer's load tool. Measures create, get, guaranteed_update and
//! list of 1 KiB objects at several concurrencies on the embedded store and the etcd3 store,
//! beside raw etcd-client puts and ranges against the same etcd, in one run.
//!
//! `cargo run --release -p strategy-host --bin storage-bench -- --help`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use serde_json::{json, Value};
use strategy_host::storage::embedded::{EmbeddedConfig, EmbeddedStore};
use strategy_host::storage::etcd3::testing::EtcdServer;
use strategy_host::storage::etcd3::{Etcd3Config, Etcd3Store};
use strategy_host::storage::{GetOptions, GuaranteedUpdate, ListOptions, Storage, TryUpdate};

#[derive(Parser, Debug)]
#[command(about = "Storage layer load tool")]
struct Args {
    /// Concurrent callers to measure at.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    concurrency: Vec<usize>,
    /// Seconds per (backend, operation, concurrency) cell.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Backends to measure: embedded, etcd3, raw-etcd (plain puts), raw-txn (puts in a one-compare txn).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "embedded,etcd3,raw-etcd,raw-txn"
    )]
    backends: Vec<String>,
    /// Use this etcd instead of starting one (http://host:port).
    #[arg(long)]
    etcd: Option<String>,
    /// Objects under the listed prefix.
    #[arg(long, default_value_t = 100)]
    list_size: usize,
}

/// A 1 KiB object.
fn object(name: &str) -> Value {
    json!({
        "apiVersion": "bench.example.com/v1",
        "kind": "Blob",
        "metadata": {"name": name, "namespace": "bench", "uid": format!("uid-{name}")},
        "spec": {"payload": "x".repeat(900)}
    })
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Create,
    Get,
    Update,
    List,
}

const OPS: [Op; 4] = [Op::Create, Op::Get, Op::Update, Op::List];

/// What is measured: a store behind the trait, or etcd-client with no store in between.
#[derive(Clone)]
enum Target {
    Store(Arc<dyn Storage>),
    /// etcd-client with no store in between; `true` writes through a one-compare txn.
    Raw(Box<etcd_client::Client>, String, bool),
}

impl Target {
    async fn run(
        &self,
        op: Op,
        worker: usize,
        i: u64,
        prefix: &str,
        hint: &mut Option<Value>,
    ) -> anyhow::Result<()> {
        let own = format!("{prefix}/w{worker}-{i}");
        let hot = format!("{prefix}/hot-{worker}");
        let list_prefix = format!("{prefix}/list");
        match self {
            Target::Store(s) => match op {
                Op::Create => drop(s.create(&own, object(&own)).await?),
                Op::Get => drop(s.get(&hot, GetOptions::default()).await?),
                Op::Update => {
                    let set: TryUpdate<'static> = Box::new(move |cur| {
                        Box::pin(async move {
                            let mut o = cur.ok_or("missing")?;
                            o["spec"]["counter"] = json!(i);
                            Ok(o)
                        })
                    });
                    // The previous result is the cached hint, as the cacher passes it.
                    let cached = hint.take();
                    *hint = Some(
                        s.guaranteed_update(
                            &hot,
                            GuaranteedUpdate::new(set).cached_existing(cached),
                        )
                        .await?,
                    );
                }
                Op::List => {
                    let opts = ListOptions::recursive();
                    drop(s.get_list(&list_prefix, opts).await?)
                }
            },
            Target::Raw(c, root, true) if matches!(op, Op::Create | Op::Update) => {
                let key = format!(
                    "{root}{}",
                    if matches!(op, Op::Create) { &own } else { &hot }
                );
                let body = serde_json::to_vec(&object(&own))?;
                let compare = if matches!(op, Op::Create) {
                    Compare::create_revision(key.clone(), CompareOp::Equal, 0)
                } else {
                    Compare::create_revision(key.clone(), CompareOp::Greater, 0)
                };
                let txn = Txn::new()
                    .when([compare])
                    .and_then([TxnOp::put(key.clone(), body, None)])
                    .or_else([TxnOp::get(key, None)]);
                drop(c.kv_client().txn(txn).await?)
            }
            Target::Raw(c, root, _) => {
                let mut kv = c.kv_client();
                let body = serde_json::to_vec(&object(&own))?;
                match op {
                    Op::Create => drop(kv.put(format!("{root}{own}"), body, None).await?),
                    Op::Get => drop(kv.get(format!("{root}{hot}"), None).await?),
                    Op::Update => drop(kv.put(format!("{root}{hot}"), body, None).await?),
                    Op::List => {
                        let opts = etcd_client::GetOptions::new().with_prefix();
                        drop(kv.get(format!("{root}{list_prefix}/"), Some(opts)).await?)
                    }
                }
            }
        }
        Ok(())
    }

    async fn seed(&self, prefix: &str, workers: usize, list_size: usize) -> anyhow::Result<()> {
        for w in 0..workers {
            self.put_fresh(&format!("{prefix}/hot-{w}")).await?;
        }
        for n in 0..list_size {
            self.put_fresh(&format!("{prefix}/list/item-{n:05}"))
                .await?;
        }
        Ok(())
    }

    async fn put_fresh(&self, key: &str) -> anyhow::Result<()> {
        match self {
            Target::Store(s) => drop(s.create(key, object(key)).await?),
            Target::Raw(c, root, _) => {
                let body = serde_json::to_vec(&object(key))?;
                drop(
                    c.kv_client()
                        .put(format!("{root}{key}"), body, None)
                        .await?,
                )
            }
        }
        Ok(())
    }
}

struct Cell {
    ops: u64,
    errors: u64,
    elapsed: Duration,
    p50: Duration,
    p99: Duration,
}

async fn measure(target: &Target, op: Op, concurrency: usize, seconds: f64, prefix: &str) -> Cell {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let errors = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let target = target.clone();
        let errors = errors.clone();
        let prefix = prefix.to_string();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut i = 0u64;
            let mut hint = None;
            while Instant::now() < deadline {
                let t = Instant::now();
                if let Err(e) = target.run(op, worker, i, &prefix, &mut hint).await {
                    if errors.fetch_add(1, Ordering::Relaxed) == 0 {
                        eprintln!("first error in {op:?}: {e:#}");
                    }
                }
                latencies.push(t.elapsed());
                i += 1;
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap_or_default());
    }
    let elapsed = start.elapsed();
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Cell {
        ops: all.len() as u64,
        errors: errors.load(Ordering::Relaxed),
        elapsed,
        p50: pct(0.50),
        p99: pct(0.99),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut _etcd_guard = None;
    let needs_etcd = args.backends.iter().any(|b| b != "embedded");
    let endpoint = match (&args.etcd, needs_etcd) {
        (Some(e), _) => Some(e.clone()),
        (None, true) => {
            let server = EtcdServer::start().context("starting etcd")?;
            let e = server.endpoint();
            _etcd_guard = Some(server);
            Some(e)
        }
        (None, false) => None,
    };
    let data_dir = tempfile::tempdir()?;
    println!(
        "{:<10} {:<7} {:>5} {:>10} {:>10} {:>10} {:>7}",
        "backend", "op", "conc", "ops/s", "p50 ms", "p99 ms", "errors"
    );
    let mut targets = Vec::new();
    for backend in &args.backends {
        let target = match backend.as_str() {
            "embedded" => {
                let mut c = EmbeddedConfig::new(data_dir.path().join("embedded"));
                c.compaction_interval = None;
                Target::Store(Arc::new(EmbeddedStore::open(c).await?))
            }
            "etcd3" => {
                let mut c = Etcd3Config::new(vec![endpoint.clone().context("etcd endpoint")?]);
                c.prefix = "/bench-store".into();
                Target::Store(Arc::new(Etcd3Store::connect(c).await?))
            }
            "raw-etcd" => {
                let client = etcd_client::Client::connect(
                    [endpoint.clone().context("etcd endpoint")?],
                    None,
                )
                .await?;
                Target::Raw(Box::new(client), "/bench-raw".into(), false)
            }
            "raw-txn" => {
                let client = etcd_client::Client::connect(
                    [endpoint.clone().context("etcd endpoint")?],
                    None,
                )
                .await?;
                Target::Raw(Box::new(client), "/bench-raw-txn".into(), true)
            }
            other => anyhow::bail!("unknown backend {other}"),
        };
        targets.push((backend.clone(), target));
    }
    // Backends take turns cell by cell, so a noisy moment on the machine hits them alike.
    for &concurrency in &args.concurrency {
        let prefix = format!("/bench/c{concurrency}");
        for (_, target) in &targets {
            target.seed(&prefix, concurrency, args.list_size).await?;
        }
        for op in OPS {
            for (backend, target) in &targets {
                let cell = measure(target, op, concurrency, args.seconds, &prefix).await;
                let rate = cell.ops as f64 / cell.elapsed.as_secs_f64();
                println!(
                    "{:<10} {:<7} {:>5} {:>10.0} {:>10.3} {:>10.3} {:>7}",
                    backend,
                    format!("{op:?}").to_lowercase(),
                    concurrency,
                    rate,
                    cell.p50.as_secs_f64() * 1e3,
                    cell.p99.as_secs_f64() * 1e3,
                    cell.errors
                );
            }
        }
    }
    Ok(())
}
