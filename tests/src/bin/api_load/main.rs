//! `api-load`: the one load tool for the API's performance figures, each printed beside a raw
//! etcd baseline run in the same invocation when `--baseline-etcd` is given.
//!
//! Modes (`--mode`), each from `--concurrency N` clients for `--seconds S` (optionally paced to
//! a total `--rate R`), printing operations per second and p50/p90/p99 latency:
//! - `create` POSTs new objects; `get` GETs existing ones (`cached-get` at resourceVersion=0);
//!   `update` merge-PATCHes them, `apply` server-side applies the same change; `renew` is a
//!   leader-election renewal as client-go does it (GET the Lease, PUT it with a new renewTime).
//! - `list` GETs the whole collection (resourceVersion=0, or with `--consistent` none), or its
//!   first `--limit` objects, after seeding `--objects N` objects of `--object-size` bytes if
//!   there are fewer; also bytes/list. `get` and `cached-get` seed as many before they read.
//! - `watch` opens `--watchers W` watches over HTTP/2 (`--streams-per-connection` each), then
//!   patches at `--rate` writes/s for `--seconds`, each write stamping its send time in an
//!   annotation; prints delivered/expected and delivery latency from send and from the write's
//!   acknowledgement, and with `--server-pid` the server's resident memory before and after
//!   the watches opened.
//! - `seed` creates `--objects` objects and reports the server's resident memory beside their
//!   JSON size (one list's bytes).
//! - `cascade` times a background cascade of `--objects` dependents (owner deleted → last
//!   dependent gone) beside the same clients deleting as many themselves; `owners` creates
//!   `--objects` owners with `--children` ConfigMaps each and reports the server's CPU use over
//!   an idle `--seconds` and its resident memory (`--server-pid`).
//!
//! `--resource widgets|deployments|configmaps|leases|gateways|gateways-norules` picks the kind.
//! `--baseline-etcd URL` (or `auto`: a private etcd on free loopback ports) then runs the same
//! operation on etcd with etcd-client at the same concurrency — create: a create-if-absent txn;
//! get/cached-get: a linearizable get; list: a range over as many values; update/apply/renew:
//! get then a compare-revision put; watch: etcd watches of a prefix at the same write rate — and
//! prints its line and the ratio API/etcd.
//!
//! `--cpu-of NAME=PID` (repeatable; the bench scripts pass the server's and etcd's) adds each
//! process's CPU microseconds per operation, and the load tool's own, to the API line and to
//! the baseline's: where the cores are shared, what bounds a ratio.
//!
//! Against a secure server (`https://`), set `STRATEGY_HOST_CA_FILE` to the CA to trust and
//! `STRATEGY_HOST_TOKEN` to a bearer token every request carries.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::Parser;
use serde::de::IgnoredAny;
use strategy_host_e2e::call;
use strategy_host_e2e::load::cascade;
use strategy_host_e2e::load::cpu::CpuMeter;
use strategy_host_e2e::load::etcd::{EtcdBaseline, EtcdOp};
use strategy_host_e2e::load::figures::{allocator_kb, ratio_line, rss_kb};
use strategy_host_e2e::load::resources::Resource;
use strategy_host_e2e::load::watch::{self, FanOut};

use clients::{run_clients, run_h2_clients};

mod clients;
mod list_agent;

#[derive(Parser, Debug, Clone)]
#[command(about = "Load tool for a running strategy-host, with a raw etcd baseline")]
struct Args {
    /// The server, `http://host:port` or `https://…`.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    server: String,
    /// create, get, cached-get, update, apply, renew, list, watch or seed.
    #[arg(long, default_value = "create")]
    mode: String,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Seconds of load (of writing, in watch mode).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Total requests per second (writes per second in watch mode; 100 unless given).
    #[arg(long)]
    rate: Option<f64>,
    /// The kind: widgets, deployments, configmaps, leases, gateways, gateways-norules.
    #[arg(long, default_value = "widgets")]
    resource: String,
    /// list/seed: objects the collection should hold; watch: objects the writes cycle over.
    #[arg(long, default_value_t = 100)]
    objects: usize,
    /// Bytes of JSON per seeded object (and per baseline value).
    #[arg(long, default_value_t = 1024)]
    object_size: usize,
    /// list: read from storage (no resourceVersion) rather than the watch cache (rv=0).
    #[arg(long)]
    consistent: bool,
    /// list: the page size (`limit=`); 0 lists everything.
    #[arg(long, default_value_t = 0)]
    limit: u64,
    /// watch: watches to open.
    #[arg(long, default_value_t = 1000)]
    watchers: usize,
    /// watch: watches per HTTP/2 connection (the server allows 200 streams on one).
    #[arg(long, default_value_t = 190)]
    streams_per_connection: usize,
    /// owners: dependents per owner.
    #[arg(long, default_value_t = 10)]
    children: usize,
    /// The server's process id, to read its resident memory from /proc.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Run the same operation against this etcd (`http://host:port`, or `auto` to start one).
    #[arg(long)]
    baseline_etcd: Option<String>,
    /// create/get/cached-get/update: the clients are tasks multiplexed over `--connections`
    /// HTTP/2 connections (as client-go and the etcd baseline's gRPC talk), instead of a
    /// thread and an HTTP/1.1 connection each.
    #[arg(long)]
    http2: bool,
    /// list/watch: ask for Kubernetes protobuf (a built-in kind: `--resource configmaps`).
    #[arg(long)]
    protobuf: bool,
    /// With `--http2`: the connections the clients share.
    #[arg(long, default_value_t = 1)]
    connections: usize,
    /// `NAME=PID` (repeatable): print each process's CPU microseconds per operation beside the
    /// API figure and its etcd baseline (the load tool's own as `load`).
    #[arg(long)]
    cpu_of: Vec<String>,
    /// The kind is served already and its CustomResourceDefinition is not to be created here
    /// (an aggregated group, whose definition lives on the extension server).
    #[arg(long)]
    no_define: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let resource = Resource::named(&args.resource)?;
    let base = format!("{}{}", args.server, resource.path);
    define(&args, &resource, &base)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let head = format!(
        "resource={} mode={} concurrency={}",
        args.resource, args.mode, args.concurrency
    );
    match args.mode.as_str() {
        "watch" => {
            let cfg = FanOut {
                watchers: args.watchers,
                streams_per_connection: args.streams_per_connection,
                rate: args.rate.unwrap_or(100.0),
                seconds: args.seconds,
                sampled: 100,
                server_pid: args.server_pid,
                protobuf: args.protobuf,
            };
            seed(&args, &resource, &base, args.objects, true)?;
            let names: Vec<String> = (0..args.objects.max(1)).map(seed_name).collect();
            let rv = list_summary(&format!("{base}?resourceVersion=0"))?.resource_version;
            let api =
                runtime.block_on(watch::api(&args.server, resource.path, &names, &rv, &cfg))?;
            println!("resource={} mode=watch {}", args.resource, api.fields());
            if let Some(url) = &args.baseline_etcd {
                let etcd = runtime.block_on(async {
                    let baseline = EtcdBaseline::connect(url).await?;
                    let value = resource.sized_object("baseline", args.object_size);
                    let cfg = FanOut {
                        server_pid: None,
                        ..cfg.clone()
                    };
                    watch::etcd(&baseline, &value, args.objects, &cfg).await
                })?;
                println!("etcd op=watch {}", etcd.fields());
                println!("{}", watch::ratio_line(&api, &etcd));
            }
            return Ok(());
        }
        "seed" => return seed_figure(&args, &resource, &base),
        "cascade" => {
            let timeout = Duration::from_secs(600);
            let figure = cascade::cascade(&args.server, args.objects, args.concurrency, timeout)?;
            println!("resource=configmaps mode=cascade {}", figure.fields());
            return Ok(());
        }
        "owners" => {
            let Some(pid) = args.server_pid else {
                bail!("--mode owners needs --server-pid");
            };
            let window = Duration::from_secs_f64(args.seconds);
            let (cpu, rss) = cascade::owners_at_rest(
                &args.server,
                pid,
                args.objects,
                args.children,
                args.concurrency,
                window,
            )?;
            println!(
                "resource=configmaps mode=owners owners={} children={} idle_cpu_percent={cpu:.2} rss_kb={rss}",
                args.objects, args.children
            );
            return Ok(());
        }
        "list" => seed(&args, &resource, &base, args.objects, false)?,
        "create" => {}
        mode => {
            if matches!(mode, "get" | "cached-get") {
                // What the collection holds around the objects read (a consistent read must
                // not cost more with more of them).
                seed(&args, &resource, &base, args.objects, false)?;
            }
            // The objects the other modes read and change: one per client, and at least 100.
            let run = format!("{:x}", std::process::id());
            for i in 0..args.concurrency.max(100) {
                let r = call(
                    "POST",
                    &base,
                    Some(&resource.object(&format!("seed-{run}-{i}"))),
                )?;
                if r.code != 201 {
                    bail!("seeding answered {}: {}", r.code, r.body);
                }
            }
        }
    }
    let cpu = CpuMeter::new(&args.cpu_of)?;
    let before = cpu.snapshot();
    let api = if args.http2 {
        runtime.block_on(run_h2_clients(&args, &resource))?
    } else {
        run_clients(&args, &resource, &base)?
    };
    let api_cpu = cpu.per_op(&before, &cpu.snapshot(), api.ops);
    let rss = args
        .server_pid
        .and_then(rss_kb)
        .map_or(String::new(), |kb| {
            let allocator = allocator_kb(&args.server).map_or(String::new(), |(heap, resident)| {
                format!(" heap_kb={heap} allocator_resident_kb={resident}")
            });
            format!(" server_rss_kb={kb}{allocator}")
        });
    println!("{head} {}{rss}{api_cpu}", api.fields());
    if let Some(url) = &args.baseline_etcd {
        let op = match args.mode.as_str() {
            "create" => EtcdOp::Create,
            "get" | "cached-get" => EtcdOp::Get,
            "list" => EtcdOp::Range(i64::try_from(args.limit)?),
            _ => EtcdOp::Update,
        };
        let etcd = runtime.block_on(async {
            let baseline = EtcdBaseline::connect(url).await?;
            let value = serde_json::to_vec(&resource.sized_object("baseline", args.object_size))?;
            let prefix = EtcdBaseline::list_prefix(args.objects, &value);
            if let EtcdOp::Range(_) = op {
                baseline.seed(&prefix, args.objects, &value).await?;
            }
            let before = cpu.snapshot();
            let etcd = baseline
                .measure(op, args.concurrency, args.seconds, Arc::new(value), &prefix)
                .await?;
            anyhow::Ok((cpu.per_op(&before, &cpu.snapshot(), etcd.ops), etcd))
        })?;
        let (etcd_cpu, etcd) = etcd;
        println!(
            "etcd op={op:?} concurrency={} {}{etcd_cpu}",
            args.concurrency,
            etcd.fields()
        );
        println!("{}", ratio_line(&api, &etcd));
    }
    Ok(())
}

/// Creates the kind's CustomResourceDefinition if it has one and waits until it is served.
fn define(args: &Args, resource: &Resource, base: &str) -> anyhow::Result<()> {
    if let Some(crd) = resource.crd.as_ref().filter(|_| !args.no_define) {
        let crds = format!(
            "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            args.server
        );
        let r = call("POST", &crds, Some(crd))?;
        if r.code != 201 && r.code != 409 {
            bail!(
                "creating the {} CRD answered {}: {}",
                resource.name,
                r.code,
                r.body
            );
        }
    }
    // A new definition is served once the registry's watch sees it. Asked of the cache
    // (resourceVersion=0), so a run against a server whose etcd is down still starts.
    let ready = Instant::now() + Duration::from_secs(10);
    loop {
        match call("GET", &format!("{base}?limit=1&resourceVersion=0"), None)?.code {
            200 => break,
            code @ (401 | 403) => {
                bail!("{base} answered {code}: is STRATEGY_HOST_TOKEN set and allowed?")
            }
            _ => {}
        }
        if Instant::now() > ready {
            bail!("{base} is not served");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The name of the `i`-th object `list`, `watch` and `seed` create.
fn seed_name(i: usize) -> String {
    format!("load-{i:06}")
}

/// Creates `load-000000…` up to `count` objects of the object size, from 16 clients, unless the
/// collection already holds that many (`always`: create them whatever it holds, as watch mode
/// patches them by name); an object already there is left as it is.
fn seed(
    args: &Args,
    resource: &Resource,
    base: &str,
    count: usize,
    always: bool,
) -> anyhow::Result<()> {
    if !always && list_summary(&format!("{base}?resourceVersion=0"))?.items >= count {
        return Ok(());
    }
    let clients = 16;
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..clients)
            .map(|c| {
                s.spawn(move || -> anyhow::Result<()> {
                    for i in (c..count).step_by(clients) {
                        let object = resource.sized_object(&seed_name(i), args.object_size);
                        let r = call("POST", base, Some(&object))?;
                        if r.code != 201 && r.code != 409 {
                            bail!("seeding answered {}: {}", r.code, r.body);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().map_err(|_| anyhow::anyhow!("a seeder panicked"))?)
    })
}

/// What a list answered, read as it streamed in: its resourceVersion and item count.
struct ListSummary {
    resource_version: String,
    items: usize,
}

/// Lists `url` without holding the body: serde walks the stream and keeps only the count.
fn list_summary(url: &str) -> anyhow::Result<ListSummary> {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "resourceVersion", default)]
        resource_version: String,
    }
    #[derive(serde::Deserialize)]
    struct List {
        metadata: Meta,
        #[serde(default)]
        items: Vec<IgnoredAny>,
    }
    let resp = list_agent::get(url, None)?;
    if resp.status() != 200 {
        bail!("listing {url} answered {}", resp.status());
    }
    let list: List = serde_json::from_reader(std::io::BufReader::new(resp.into_reader()))
        .context("reading the list")?;
    Ok(ListSummary {
        resource_version: list.metadata.resource_version,
        items: list.items.len(),
    })
}

/// Seeds `--objects` objects and prints the server's resident memory beside their JSON size.
fn seed_figure(args: &Args, resource: &Resource, base: &str) -> anyhow::Result<()> {
    // A server just ready is still settling (its first requests, its controllers' first
    // lists): memory is read once that is over, as it is after seeding.
    std::thread::sleep(Duration::from_secs(2));
    let before = args.server_pid.and_then(rss_kb);
    let heap_before = allocator_kb(&args.server);
    let began = Instant::now();
    seed(args, resource, base, args.objects, false)?;
    let seeding = began.elapsed();
    // Give the watch cache time to take the last writes in before memory is read.
    std::thread::sleep(Duration::from_secs(2));
    let after = args.server_pid.and_then(rss_kb);
    let (code, list_bytes) = list_agent::read(&format!("{base}?resourceVersion=0"), None)?;
    if code != 200 {
        bail!("listing answered {code}");
    }
    let items = list_summary(&format!("{base}?resourceVersion=0"))?.items;
    let mut line = format!(
        "resource={} mode=seed objects={items} seed_s={:.1} list_bytes={list_bytes}",
        args.resource,
        seeding.as_secs_f64()
    );
    if let (Some(before), Some(after)) = (before, after) {
        // Growth over JSON size is the figure: what holding one byte of objects costs.
        line += &format!(
            " rss_before_kb={before} rss_after_kb={after} growth_over_json={:.2}",
            (after.saturating_sub(before) * 1024) as f64 / list_bytes.max(1) as f64
        );
    }
    if let (Some((before, _)), Some((heap, resident))) = (heap_before, allocator_kb(&args.server)) {
        line +=
            &format!(" heap_before_kb={before} heap_kb={heap} allocator_resident_kb={resident}");
    }
    println!("{line}");
    Ok(())
}
