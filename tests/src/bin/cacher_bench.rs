//! cacher-bench: the cacher's load tool. Measures get and list of 1 KiB objects from the cacher
//! (at resourceVersion "0" and consistent "") against the etcd3 store straight, at several
//! concurrencies and list sizes; then watch fan-out: N idle watchers on one prefix (resident
//! memory per watcher), then writes at a fixed rate (delivery latency to every watcher).
//!
//! `cargo run --release -p strategy-host --bin cacher-bench -- --help`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use futures::StreamExt;
use serde_json::{json, Value};
use strategy_host::storage::cacher::{Cacher, CacherConfig};
use strategy_host::storage::etcd3::testing::EtcdServer;
use strategy_host::storage::etcd3::{Etcd3Config, Etcd3Store};
use strategy_host::storage::WatchEvent;
use strategy_host::storage::{GetOptions, ListOptions, Storage};

#[derive(Parser, Debug)]
#[command(about = "Cacher load tool")]
struct Args {
    /// Concurrent callers for get and list.
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    concurrency: Vec<usize>,
    /// Objects under the listed prefix (one prefix, and one cacher, per size).
    #[arg(long, value_delimiter = ',', default_value = "100,10000")]
    list_sizes: Vec<usize>,
    /// Seconds per (target, operation, size, concurrency) cell.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Watchers for the fan-out measurement (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    watchers: usize,
    /// Writes per second during the fan-out measurement.
    #[arg(long, default_value_t = 1000)]
    write_rate: u64,
    /// Seconds of writing during the fan-out measurement.
    #[arg(long, default_value_t = 5.0)]
    watch_seconds: f64,
    /// Use this etcd instead of starting one (http://host:port).
    #[arg(long)]
    etcd: Option<String>,
}

/// A 1 KiB object named `name` in namespace `bench`.
fn object(name: &str) -> Value {
    json!({
        "apiVersion": "bench.example.com/v1",
        "kind": "Blob",
        "metadata": {"name": name, "namespace": "bench", "uid": format!("uid-{name}")},
        "spec": {"payload": "x".repeat(900), "sentNanos": 0}
    })
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Get,
    List,
}

struct Cell {
    ops: u64,
    elapsed: Duration,
    errors: u64,
    p50: Duration,
    p99: Duration,
}

async fn measure(
    store: Arc<dyn Storage>,
    rv: &'static str,
    op: Op,
    prefix: String,
    size: usize,
    concurrency: usize,
    seconds: f64,
) -> Cell {
    let began = Instant::now();
    let deadline = began + Duration::from_secs_f64(seconds);
    let errors = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..concurrency)
        .map(|worker| {
            let store = store.clone();
            let prefix = prefix.clone();
            let errors = errors.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut i = worker;
                while Instant::now() < deadline {
                    let started = Instant::now();
                    let result = match op {
                        Op::Get => {
                            let key = format!("{prefix}/bench/obj-{}", i % size);
                            let opts = GetOptions {
                                resource_version: rv.into(),
                                ..Default::default()
                            };
                            store.get(&key, opts).await.map(drop)
                        }
                        Op::List => {
                            let opts = ListOptions {
                                resource_version: rv.into(),
                                recursive: true,
                                ..Default::default()
                            };
                            store.get_list(&prefix, opts).await.map(drop)
                        }
                    };
                    if let Err(e) = result {
                        if errors.fetch_add(1, Ordering::Relaxed) == 0 {
                            eprintln!("first error in {op:?}: {e}");
                        }
                    }
                    latencies.push(started.elapsed());
                    i += concurrency;
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap_or_default());
    }
    all.sort_unstable();
    let pick = |q: f64| {
        all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Cell {
        ops: all.len() as u64,
        elapsed: began.elapsed(),
        errors: errors.load(Ordering::Relaxed),
        p50: pick(0.5),
        p99: pick(0.99),
    }
}

/// Resident memory of this process, from /proc/self/status (kB).
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|kb| kb.parse().ok())
        .unwrap_or(0)
}

/// A latency histogram with quarter-power-of-two microsecond buckets.
#[derive(Default, Clone)]
struct Histogram {
    buckets: Vec<u64>,
}

impl Histogram {
    const BUCKETS: usize = 120;

    fn bucket(micros: u64) -> usize {
        let f = (micros.max(1) as f64).log2() * 4.0;
        (f as usize).min(Self::BUCKETS - 1)
    }

    fn record(&mut self, d: Duration) {
        if self.buckets.is_empty() {
            self.buckets = vec![0; Self::BUCKETS];
        }
        self.buckets[Self::bucket(d.as_micros() as u64)] += 1;
    }

    fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The upper edge of the bucket holding quantile `q`.
    fn quantile(&self, q: f64) -> Duration {
        let target = (self.count() as f64 * q).ceil() as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= target.max(1) {
                return Duration::from_micros(2f64.powf((i + 1) as f64 / 4.0) as u64);
            }
        }
        Duration::ZERO
    }
}

async fn seed(store: &Etcd3Store, prefix: &str, size: usize) -> anyhow::Result<()> {
    let names: Vec<usize> = (0..size).collect();
    for chunk in names.chunks(64) {
        let writes = chunk.iter().map(|i| {
            let name = format!("obj-{i}");
            let key = format!("{prefix}/bench/{name}");
            async move { store.create(&key, object(&name)).await }
        });
        for r in futures::future::join_all(writes).await {
            r.context("seeding")?;
        }
    }
    Ok(())
}

async fn read_benchmarks(args: &Args, store: &Etcd3Store) -> anyhow::Result<()> {
    println!(
        "{:<14} {:<5} {:>7} {:>5} {:>10} {:>10} {:>10} {:>7}",
        "target", "op", "objects", "conc", "ops/s", "p50", "p99", "errors"
    );
    for &size in &args.list_sizes {
        let prefix = format!("/bench.example.com/blobs{size}");
        seed(store, &prefix, size).await?;
        let cacher = Cacher::new(Arc::new(store.clone()), &prefix, CacherConfig::default())?;
        tokio::time::timeout(Duration::from_secs(60), cacher.wait_until_ready())
            .await
            .context("cacher not ready")?;
        let targets: [(&str, Arc<dyn Storage>, &'static str); 3] = [
            ("cacher rv=0", cacher.clone(), "0"),
            ("cacher rv=\"\"", cacher.clone(), ""),
            ("etcd3 rv=\"\"", Arc::new(store.clone()), ""),
        ];
        for op in [Op::Get, Op::List] {
            for &conc in &args.concurrency {
                for (name, target, rv) in &targets {
                    let cell = measure(
                        target.clone(),
                        rv,
                        op,
                        prefix.clone(),
                        size,
                        conc,
                        args.seconds,
                    )
                    .await;
                    println!(
                        "{:<14} {:<5} {:>7} {:>5} {:>10.0} {:>10.2?} {:>10.2?} {:>7}",
                        name,
                        format!("{op:?}").to_lowercase(),
                        size,
                        conc,
                        cell.ops as f64 / cell.elapsed.as_secs_f64(),
                        cell.p50,
                        cell.p99,
                        cell.errors
                    );
                }
            }
        }
    }
    Ok(())
}

/// How many watchers keep per-delivery times for the latency figures.
const SAMPLED_WATCHERS: usize = 100;

async fn fan_out(args: &Args, store: &Etcd3Store) -> anyhow::Result<()> {
    let prefix = "/bench.example.com/fanout";
    let cacher = Cacher::new(Arc::new(store.clone()), prefix, CacherConfig::default())?;
    cacher.wait_until_ready().await;
    let epoch = Instant::now();
    let start = cacher.current_revision().await?;
    let before = rss_kb();
    let mut tasks = Vec::with_capacity(args.watchers);
    for n in 0..args.watchers {
        let opts = ListOptions {
            resource_version: start.to_string(),
            recursive: true,
            ..Default::default()
        };
        let mut stream = cacher.watch(prefix, opts).await?;
        // Every watcher counts its deliveries; a sample of them also keeps each delivery's
        // time, matched against the commit times afterwards.
        let sampled = n % (args.watchers / SAMPLED_WATCHERS).max(1) == 0;
        tasks.push(tokio::spawn(async move {
            let mut delivered = Vec::new();
            let mut count = 0u64;
            while let Some(event) = stream.next().await {
                if let WatchEvent::Added(o) | WatchEvent::Modified(o) = &event {
                    count += 1;
                    if sampled {
                        let name = o.name().unwrap_or_default();
                        let at = epoch.elapsed().as_nanos() as u64;
                        delivered.push((name.to_string(), at));
                    }
                }
            }
            (count, delivered)
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kb();
    let per_watcher = (after.saturating_sub(before) * 1024) as f64 / args.watchers.max(1) as f64;
    println!();
    println!(
        "watch fan-out: {} watchers, RSS {} kB -> {} kB, {:.0} bytes per idle watcher",
        args.watchers, before, after, per_watcher
    );
    // Writes at a fixed rate; each one's commit time (when the store acknowledged it) is kept.
    let committed = Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
    let total = (args.write_rate as f64 * args.watch_seconds) as u64;
    let period = Duration::from_secs_f64(1.0 / args.write_rate.max(1) as f64);
    let in_flight = Arc::new(tokio::sync::Semaphore::new(64));
    let mut ticker = tokio::time::interval(period);
    let write_errors = Arc::new(AtomicU64::new(0));
    let mut writes = Vec::new();
    let writing = Instant::now();
    for i in 0..total {
        ticker.tick().await;
        let permit = in_flight.clone().acquire_owned().await?;
        let store = store.clone();
        let errors = write_errors.clone();
        let committed = committed.clone();
        writes.push(tokio::spawn(async move {
            let name = format!("w-{i}");
            let obj = object(&name);
            match store.create(&format!("{prefix}/bench/{name}"), obj).await {
                Ok(_) => {
                    let at = epoch.elapsed().as_nanos() as u64;
                    committed.lock().unwrap().insert(name, at);
                }
                Err(_) => drop(errors.fetch_add(1, Ordering::Relaxed)),
            }
            drop(permit);
        }));
    }
    for w in writes {
        w.await?;
    }
    let write_secs = writing.elapsed().as_secs_f64();
    let last = store.current_revision().await?;
    // Let delivery finish (bounded), then close every watch.
    let _ = tokio::time::timeout(Duration::from_secs(30), async {
        while cacher.stats().revision < last {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    drop(cacher);
    let mut histogram = Histogram::default();
    let mut deliveries = 0;
    let committed = committed.lock().unwrap().clone();
    for t in tasks {
        let (count, delivered) = t.await?;
        deliveries += count;
        for (name, at) in delivered {
            if let Some(&commit) = committed.get(&name) {
                // Delivery can beat the acknowledgement back to the writer: count it as 0.
                histogram.record(Duration::from_nanos(at.saturating_sub(commit)));
            }
        }
    }
    let expected = total * args.watchers as u64;
    println!(
        "{:>8} {:>10} {:>12} {:>12} {:>10} {:>10}",
        "writes", "writes/s", "deliveries", "expected", "p50", "p99"
    );
    println!(
        "{:>8} {:>10.0} {:>12} {:>12} {:>10.2?} {:>10.2?}",
        total,
        total as f64 / write_secs,
        deliveries,
        expected,
        histogram.quantile(0.5),
        histogram.quantile(0.99)
    );
    println!(
        "(latency from commit (the store's acknowledgement) to delivery, over a sample of \
         {SAMPLED_WATCHERS} watchers; histogram bucket upper edges; write errors: {})",
        write_errors.load(Ordering::Relaxed)
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _etcd;
    let endpoint = match &args.etcd {
        Some(e) => e.clone(),
        None => {
            let server = EtcdServer::start()?;
            let e = server.endpoint();
            _etcd = server;
            e
        }
    };
    let mut config = Etcd3Config::new(vec![endpoint]);
    config.prefix = format!("/cacher-bench-{}", std::process::id());
    let store = Etcd3Store::connect(config).await?;
    read_benchmarks(&args, &store).await?;
    if args.watchers > 0 {
        fan_out(&args, &store).await?;
    }
    Ok(())
}
