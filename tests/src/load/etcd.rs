//! The raw etcd baseline: the operation an API figure measures, done with etcd-client against
//! etcd straight at the same concurrency, so each figure has its floor printed beside it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use etcd_client::{Client, Compare, CompareOp, GetOptions, Txn, TxnOp};
use strategy_host::storage::etcd3::testing::EtcdServer;

use super::figures::Throughput;

/// What the baseline does for one API operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EtcdOp {
    /// A create: a transaction putting a new key only if it is absent (as the etcd3 store
    /// creates).
    Create,
    /// A get: a linearizable read of one key (what a consistent GET costs at the floor).
    Get,
    /// A list: a range over a prefix holding as many objects as the API collection, of at
    /// most this many keys (0: all of them, as a list without `limit`).
    Range(i64),
    /// An update: read a key, then put it back only if its revision is unchanged (as the
    /// store's guaranteed update does).
    Update,
}

/// An etcd to measure against: given by URL, or started privately on free loopback ports.
pub struct EtcdBaseline {
    client: Client,
    endpoint: String,
    /// Keys of this run live under here, so runs against a shared etcd do not collide.
    root: String,
    /// The private etcd, stopped when the baseline is dropped.
    _server: Option<EtcdServer>,
}

impl EtcdBaseline {
    /// Connects to `url`, or with `auto` starts an etcd of its own (the fixture the other
    /// load tools use) and connects to that.
    ///
    /// # Errors
    /// etcd cannot be started or reached.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let (endpoint, server) = if url == "auto" {
            let server = EtcdServer::start().context("starting etcd for the baseline")?;
            (server.endpoint(), Some(server))
        } else {
            (url.to_owned(), None)
        };
        let client = Client::connect([endpoint.clone()], None)
            .await
            .with_context(|| format!("connecting to etcd at {endpoint}"))?;
        Ok(EtcdBaseline {
            client,
            endpoint,
            root: format!("/api-load/{}", std::process::id()),
            _server: server,
        })
    }

    /// The etcd's client URL.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// A client handle (they share one channel; clone freely).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The prefix a list baseline of `count` values of `value`'s size ranges over: named by
    /// both, so a second run against the same etcd finds it seeded.
    pub fn list_prefix(count: usize, value: &[u8]) -> String {
        format!("/api-load/list-{count}x{}b/", value.len())
    }

    /// Puts `count` copies of `value` under `prefix` unless that many are there already.
    ///
    /// # Errors
    /// etcd failed.
    pub async fn seed(&self, prefix: &str, count: usize, value: &[u8]) -> anyhow::Result<()> {
        let mut kv = self.client.kv_client();
        let opts = GetOptions::new().with_prefix().with_count_only();
        if kv.get(prefix, Some(opts)).await?.count() as usize >= count {
            return Ok(());
        }
        let names: Vec<usize> = (0..count).collect();
        for chunk in names.chunks(64) {
            let puts = chunk.iter().map(|i| {
                let mut kv = self.client.kv_client();
                let key = format!("{prefix}{i:06}");
                async move { kv.put(key, value, None).await }
            });
            for r in futures::future::join_all(puts).await {
                r.context("seeding etcd")?;
            }
        }
        Ok(())
    }

    /// Runs `op` from `concurrency` callers for `seconds` with values like `value`; a list
    /// ranges over `list_prefix`.
    ///
    /// # Errors
    /// Setting the keys up failed (errors during the run are counted, not returned).
    pub async fn measure(
        &self,
        op: EtcdOp,
        concurrency: usize,
        seconds: f64,
        value: Arc<Vec<u8>>,
        list_prefix: &str,
    ) -> anyhow::Result<Throughput> {
        let root = format!("{}/{op:?}-c{concurrency}", self.root);
        if matches!(op, EtcdOp::Get | EtcdOp::Update) {
            let mut kv = self.client.kv_client();
            for w in 0..concurrency {
                kv.put(format!("{root}/hot-{w}"), value.as_slice(), None)
                    .await?;
            }
        }
        let began = Instant::now();
        let deadline = began + Duration::from_secs_f64(seconds);
        let (errors, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let tasks: Vec<_> = (0..concurrency)
            .map(|worker| {
                let client = self.client.clone();
                let (errors, bytes, value) = (errors.clone(), bytes.clone(), value.clone());
                let (root, list_prefix) = (root.clone(), list_prefix.to_owned());
                tokio::spawn(async move {
                    let mut latencies = Vec::new();
                    let mut i = 0u64;
                    while Instant::now() < deadline {
                        let started = Instant::now();
                        let result = one(&client, op, &root, &list_prefix, worker, i, &value).await;
                        match result {
                            Ok(n) => drop(bytes.fetch_add(n, Ordering::Relaxed)),
                            Err(e) => {
                                if errors.fetch_add(1, Ordering::Relaxed) == 0 {
                                    eprintln!("first etcd error in {op:?}: {e:#}");
                                }
                            }
                        }
                        latencies.push(started.elapsed());
                        i += 1;
                    }
                    latencies
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await?);
        }
        Ok(Throughput::from_samples(
            all,
            errors.load(Ordering::Relaxed),
            bytes.load(Ordering::Relaxed),
            began.elapsed(),
        ))
    }
}

/// One operation; answers the value bytes it read (for a range's bytes per list).
async fn one(
    client: &Client,
    op: EtcdOp,
    root: &str,
    list_prefix: &str,
    worker: usize,
    i: u64,
    value: &[u8],
) -> anyhow::Result<u64> {
    // A range of 10,000 1 KiB values is past the client's 4 MiB default answer size.
    let mut kv = client.kv_client().max_decoding_message_size(usize::MAX);
    let hot = format!("{root}/hot-{worker}");
    match op {
        EtcdOp::Create => {
            let key = format!("{root}/w{worker}-{i}");
            let txn = Txn::new()
                .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(key.clone(), value, None)])
                .or_else([TxnOp::get(key, None)]);
            kv.txn(txn).await?;
            Ok(0)
        }
        EtcdOp::Get => Ok(read_bytes(&kv.get(hot, None).await?)),
        EtcdOp::Range(limit) => {
            let options = GetOptions::new().with_prefix().with_limit(limit);
            let resp = kv.get(list_prefix, Some(options)).await?;
            Ok(read_bytes(&resp))
        }
        EtcdOp::Update => {
            let current = kv.get(hot.clone(), None).await?;
            let revision = current.kvs().first().map_or(0, |kv| kv.mod_revision());
            let txn = Txn::new()
                .when([Compare::mod_revision(
                    hot.clone(),
                    CompareOp::Equal,
                    revision,
                )])
                .and_then([TxnOp::put(hot.clone(), value, None)])
                .or_else([TxnOp::get(hot, None)]);
            kv.txn(txn).await?;
            Ok(0)
        }
    }
}

fn read_bytes(resp: &etcd_client::GetResponse) -> u64 {
    resp.kvs().iter().map(|kv| kv.value().len() as u64).sum()
}
