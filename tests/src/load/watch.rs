//! Watch fan-out under writes: W watchers opened, then writes at a fixed rate each carrying its
//! send time, and every delivery counted (a sample of watchers also timed); for the API over
//! HTTP/2 and, as its baseline, for etcd's own watch of the same kind of prefix.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::bail;
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::etcd::EtcdBaseline;
use super::figures::{rss_kb, unix_nanos, Histogram};
use super::h2::H2Client;
use super::protobuf;
use super::resources::{sent_nanos, SENT_ANNOTATION};

/// The shape of one fan-out run.
#[derive(Debug, Clone)]
pub struct FanOut {
    /// Watches to open.
    pub watchers: usize,
    /// Watches per HTTP/2 connection (the server allows 200 streams on one).
    pub streams_per_connection: usize,
    /// Writes per second.
    pub rate: f64,
    /// Seconds of writing.
    pub seconds: f64,
    /// How many watchers time each delivery (all of them count deliveries).
    pub sampled: usize,
    /// The server whose resident memory is read before and after the watches open.
    pub server_pid: Option<u32>,
    /// Watch in Kubernetes protobuf (built-in kinds) instead of JSON.
    pub protobuf: bool,
}

impl FanOut {
    fn connections(&self) -> usize {
        self.watchers
            .div_ceil(self.streams_per_connection.max(1))
            .max(1)
    }

    fn is_sampled(&self, watcher: usize) -> bool {
        watcher.is_multiple_of((self.watchers / self.sampled.max(1)).max(1))
    }
}

/// What a fan-out run measured.
#[derive(Debug, Clone, Default)]
pub struct WatchFigure {
    /// Watches asked for.
    pub watchers: usize,
    /// Watches that were answered 200 (or, on etcd, created).
    pub opened: u64,
    /// Connections they shared.
    pub connections: usize,
    /// How long opening them all took.
    pub open_time: Duration,
    /// Writes acknowledged.
    pub writes: u64,
    /// Writes that failed.
    pub write_errors: u64,
    /// Seconds the writing took.
    pub write_secs: f64,
    /// Events received over all watchers.
    pub delivered: u64,
    /// Events that should have been: writes attempted (a failed write may still have been
    /// committed) times open watchers.
    pub expected: u64,
    /// Watches the server ended before the run did.
    pub closed_early: u64,
    /// Delivery minus the write's send time (the timestamp the event carries).
    pub from_send: Histogram,
    /// Delivery minus the write's acknowledgement; a delivery that beat the acknowledgement
    /// back to the writer counts as 0.
    pub from_ack: Histogram,
    /// The server's resident memory before the watches opened, kB.
    pub rss_before_kb: Option<u64>,
    /// The same once they were open and idle, kB.
    pub rss_after_kb: Option<u64>,
    /// The same after the writes were delivered (or given up on), before the watches closed:
    /// what events queued for slow watchers cost.
    pub rss_end_kb: Option<u64>,
}

impl WatchFigure {
    /// The `key=value` fields of the figure's line.
    pub fn fields(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut s = format!(
            "watchers={} opened={} connections={} open_s={:.1} writes={} writes/s={:.0} \
             write_errors={} delivered={} expected={} closed_early={} \
             p50_send={:.2}ms p99_send={:.2}ms p50_ack={:.2}ms p99_ack={:.2}ms",
            self.watchers,
            self.opened,
            self.connections,
            self.open_time.as_secs_f64(),
            self.writes,
            self.writes as f64 / self.write_secs.max(1e-9),
            self.write_errors,
            self.delivered,
            self.expected,
            self.closed_early,
            ms(self.from_send.quantile(0.5)),
            ms(self.from_send.quantile(0.99)),
            ms(self.from_ack.quantile(0.5)),
            ms(self.from_ack.quantile(0.99)),
        );
        if let (Some(before), Some(after)) = (self.rss_before_kb, self.rss_after_kb) {
            let per = after.saturating_sub(before) as f64 * 1024.0 / self.opened.max(1) as f64;
            s += &format!(" rss_before_kb={before} rss_after_kb={after} bytes/watcher={per:.0}");
        }
        if let Some(end) = self.rss_end_kb {
            s += &format!(" rss_end_kb={end}");
        }
        s
    }
}

/// `ratio api/etcd: …` for a fan-out: delivered share and latency from send.
pub fn ratio_line(api: &WatchFigure, etcd: &WatchFigure) -> String {
    let share = |f: &WatchFigure| f.delivered as f64 / f.expected.max(1) as f64;
    let r = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    format!(
        "ratio api/etcd: delivered_share={:.2} p50_send={:.2} p99_send={:.2}",
        share(api) / share(etcd).max(1e-9),
        r(api.from_send.quantile(0.5), etcd.from_send.quantile(0.5)),
        r(api.from_send.quantile(0.99), etcd.from_send.quantile(0.99)),
    )
}

/// What the watcher tasks share.
#[derive(Default)]
struct Tally {
    opened: AtomicU64,
    failed: AtomicU64,
    delivered: AtomicU64,
    closed: AtomicU64,
    /// (sent, received) Unix nanoseconds of each timed delivery.
    samples: Mutex<Vec<(u64, u64)>>,
}

/// The API's fan-out: `cfg.watchers` watches of `collection` from `list_rv`, then merge
/// patches of `names` in turn at the rate, each stamping [`SENT_ANNOTATION`].
///
/// # Errors
/// Connecting failed, or no watch opened.
pub async fn api(
    server: &str,
    collection: &str,
    names: &[String],
    list_rv: &str,
    cfg: &FanOut,
) -> anyhow::Result<WatchFigure> {
    let watch_client = H2Client::connect(server, cfg.connections()).await?;
    // Writes go on a connection of their own, so they do not queue behind event data.
    let writer = H2Client::connect(server, 1).await?;
    let tally = Arc::new(Tally::default());
    let rss_before_kb = cfg.server_pid.and_then(rss_kb);
    let began = Instant::now();
    let per_connection = cfg.streams_per_connection.max(1);
    let tasks: Vec<JoinHandle<()>> = (0..cfg.watchers)
        .map(|w| {
            let (client, tally) = (watch_client.clone(), tally.clone());
            let path = format!("{collection}?watch=1&resourceVersion={list_rv}");
            let sampled = cfg.is_sampled(w);
            let protobuf = cfg.protobuf;
            tokio::spawn(async move {
                let accept = protobuf.then_some(protobuf::PROTOBUF);
                let connection = w / per_connection;
                let resp = match client
                    .send_accepting(connection, "GET", &path, None, accept)
                    .await
                {
                    Ok(resp) if resp.status() == 200 => resp,
                    Ok(resp) => {
                        if tally.failed.fetch_add(1, Ordering::Relaxed) == 0 {
                            eprintln!("a watch was answered {}", resp.status());
                        }
                        return;
                    }
                    Err(e) => {
                        if tally.failed.fetch_add(1, Ordering::Relaxed) == 0 {
                            eprintln!("a watch failed: {e:#}");
                        }
                        return;
                    }
                };
                tally.opened.fetch_add(1, Ordering::Relaxed);
                let mut body = resp.into_body();
                let mut partial = Vec::new();
                let mut frames = protobuf::FrameReader::new(sampled);
                while let Some(Ok(frame)) = body.frame().await {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    let received = unix_nanos();
                    if protobuf {
                        let (events, kept) = frames.feed(&data);
                        tally.delivered.fetch_add(events, Ordering::Relaxed);
                        let samples = kept.iter().filter_map(|e| protobuf::sent_nanos(e));
                        let samples: Vec<_> = samples.map(|sent| (sent, received)).collect();
                        tally.samples.lock().unwrap().extend(samples);
                        continue;
                    }
                    // Every event is one JSON line; counting newlines is all an unsampled
                    // watcher does, so the client stays cheaper than the server it measures.
                    let events = data.iter().filter(|&&b| b == b'\n').count() as u64;
                    tally.delivered.fetch_add(events, Ordering::Relaxed);
                    if sampled {
                        partial.extend_from_slice(&data);
                        let mut samples = Vec::new();
                        while let Some(end) = partial.iter().position(|&b| b == b'\n') {
                            let line: Vec<u8> = partial.drain(..=end).collect();
                            samples.extend(sent_nanos(&line).map(|sent| (sent, received)));
                        }
                        tally.samples.lock().unwrap().extend(samples);
                    }
                }
                tally.closed.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    let open_time = wait_open(&tally, cfg.watchers, began).await?;
    // Let the server settle (buffers allocated, first frames sent) before reading memory.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_after_kb = cfg.server_pid.and_then(rss_kb);
    let names: Arc<[String]> = names.into();
    let collection = collection.to_owned();
    let (writes, write_errors, write_secs, acks) = write_at_rate(cfg, move |i, sent| {
        let (writer, names, collection) = (writer.clone(), names.clone(), collection.clone());
        async move {
            let mut patch = json!({"metadata": {"annotations": {}}});
            patch["metadata"]["annotations"][SENT_ANNOTATION] = json!(sent.to_string());
            let name = &names[i as usize % names.len()];
            let body = (
                patch.to_string().into_bytes(),
                "application/merge-patch+json",
            );
            let path = format!("{collection}/{name}");
            let (code, answer) = writer.call("PATCH", &path, Some(body)).await?;
            if code != 200 {
                bail!(
                    "PATCH {path} answered {code}: {}",
                    String::from_utf8_lossy(&answer)
                );
            }
            Ok(())
        }
    })
    .await;
    Ok(finish(
        cfg,
        tally,
        tasks,
        (writes, write_errors, write_secs, acks),
        watch_client.connections(),
        open_time,
        (rss_before_kb, rss_after_kb),
    )
    .await)
}

/// etcd's fan-out with the same shape: watches of a prefix (spread over as many connections
/// as the API run used), then puts of `value` with [`SENT_ANNOTATION`] stamped, over `keys`
/// keys in turn.
///
/// # Errors
/// Connecting failed, or no watch opened.
pub async fn etcd(
    baseline: &EtcdBaseline,
    value: &Value,
    keys: usize,
    cfg: &FanOut,
) -> anyhow::Result<WatchFigure> {
    let prefix = format!("/api-load/watch-{}/", std::process::id());
    let mut clients = Vec::new();
    for _ in 0..cfg.connections() {
        clients.push(etcd_client::Client::connect([baseline.endpoint()], None).await?);
    }
    let tally = Arc::new(Tally::default());
    let began = Instant::now();
    let tasks: Vec<JoinHandle<()>> = (0..cfg.watchers)
        .map(|w| {
            let mut client = clients[w % clients.len()].clone();
            let (tally, prefix, sampled) = (tally.clone(), prefix.clone(), cfg.is_sampled(w));
            tokio::spawn(async move {
                let opts = etcd_client::WatchOptions::new().with_prefix();
                let mut stream = match client.watch(prefix, Some(opts)).await {
                    Ok(stream) => stream,
                    Err(e) => {
                        if tally.failed.fetch_add(1, Ordering::Relaxed) == 0 {
                            eprintln!("an etcd watch failed: {e:#}");
                        }
                        return;
                    }
                };
                tally.opened.fetch_add(1, Ordering::Relaxed);
                while let Ok(Some(resp)) = stream.message().await {
                    let received = unix_nanos();
                    let events = resp.events();
                    tally
                        .delivered
                        .fetch_add(events.len() as u64, Ordering::Relaxed);
                    if sampled {
                        let samples = events
                            .iter()
                            .filter_map(|e| sent_nanos(e.kv()?.value()))
                            .map(|sent| (sent, received));
                        tally.samples.lock().unwrap().extend(samples);
                    }
                    if resp.canceled() {
                        break;
                    }
                }
                tally.closed.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    let open_time = wait_open(&tally, cfg.watchers, began).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let client = baseline.client();
    let value = value.clone();
    let written = write_at_rate(cfg, move |i, sent| {
        let (mut kv, mut value) = (client.kv_client(), value.clone());
        let key = format!("{prefix}{:06}", i as usize % keys.max(1));
        async move {
            value["metadata"]["annotations"][SENT_ANNOTATION] = json!(sent.to_string());
            kv.put(key, serde_json::to_vec(&value)?, None).await?;
            Ok(())
        }
    })
    .await;
    Ok(finish(
        cfg,
        tally,
        tasks,
        written,
        clients.len(),
        open_time,
        (None, None),
    )
    .await)
}

/// Waits until every watch opened or failed (at most a minute); how long that took.
async fn wait_open(tally: &Tally, watchers: usize, began: Instant) -> anyhow::Result<Duration> {
    let limit = began + Duration::from_secs(60);
    loop {
        let opened = tally.opened.load(Ordering::Relaxed);
        let settled = opened + tally.failed.load(Ordering::Relaxed);
        if settled >= watchers as u64 || Instant::now() > limit {
            if opened == 0 {
                bail!("no watch opened");
            }
            return Ok(began.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Acknowledgement times of the writes, keyed by their send timestamps.
type Acks = HashMap<u64, u64>;

/// Calls `write(i, sent)` at `cfg.rate` for `cfg.seconds` (at most 64 in flight, and none
/// started after the time is up, so a slow server shows as a lower achieved rate rather than a
/// pile of tasks or a longer run); answers writes acknowledged, failed, the seconds taken and
/// each acknowledgement's time.
async fn write_at_rate<F, Fut>(cfg: &FanOut, write: F) -> (u64, u64, f64, Acks)
where
    F: Fn(u64, u64) -> Fut,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let total = (cfg.rate * cfg.seconds) as u64;
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / cfg.rate.max(1e-3)));
    let in_flight = Arc::new(tokio::sync::Semaphore::new(64));
    let acks: Arc<Mutex<Acks>> = Arc::default();
    let errors = Arc::new(AtomicU64::new(0));
    let began = Instant::now();
    let deadline = began + Duration::from_secs_f64(cfg.seconds);
    let mut writes = Vec::new();
    for i in 0..total {
        ticker.tick().await;
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            break;
        };
        if Instant::now() >= deadline {
            break;
        }
        let sent = unix_nanos();
        let (acks, errors, write) = (acks.clone(), errors.clone(), write(i, sent));
        writes.push(tokio::spawn(async move {
            match write.await {
                Ok(()) => drop(acks.lock().unwrap().insert(sent, unix_nanos())),
                Err(e) => {
                    if errors.fetch_add(1, Ordering::Relaxed) == 0 {
                        eprintln!("a write failed: {e:#}");
                    }
                }
            }
            drop(permit);
        }));
    }
    for w in writes {
        let _ = w.await;
    }
    let secs = began.elapsed().as_secs_f64();
    let acks = std::mem::take(&mut *acks.lock().unwrap());
    (
        acks.len() as u64,
        errors.load(Ordering::Relaxed),
        secs,
        acks,
    )
}

/// Waits for delivery to finish (every expected event, three seconds without progress, or 30
/// seconds in all: a server far behind still makes progress), ends the watches and makes the
/// figure.
async fn finish(
    cfg: &FanOut,
    tally: Arc<Tally>,
    tasks: Vec<JoinHandle<()>>,
    (writes, write_errors, write_secs, acks): (u64, u64, f64, Acks),
    connections: usize,
    open_time: Duration,
    (rss_before_kb, rss_after_kb): (Option<u64>, Option<u64>),
) -> WatchFigure {
    let opened = tally.opened.load(Ordering::Relaxed);
    let expected = (writes + write_errors) * opened;
    let (mut last, mut still_since, draining) = (0, Instant::now(), Instant::now());
    loop {
        let delivered = tally.delivered.load(Ordering::Relaxed);
        if delivered >= expected
            || still_since.elapsed() > Duration::from_secs(3)
            || draining.elapsed() > Duration::from_secs(30)
        {
            break;
        }
        if delivered != last {
            (last, still_since) = (delivered, Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let closed_early = tally.closed.load(Ordering::Relaxed);
    let rss_end_kb = cfg.server_pid.and_then(rss_kb);
    for t in &tasks {
        t.abort();
    }
    let (mut from_send, mut from_ack) = (Histogram::default(), Histogram::default());
    for &(sent, received) in tally.samples.lock().unwrap().iter() {
        from_send.record(Duration::from_nanos(received.saturating_sub(sent)));
        if let Some(&ack) = acks.get(&sent) {
            from_ack.record(Duration::from_nanos(received.saturating_sub(ack)));
        }
    }
    WatchFigure {
        watchers: cfg.watchers,
        opened,
        connections,
        open_time,
        writes,
        write_errors,
        write_secs,
        delivered: tally.delivered.load(Ordering::Relaxed),
        expected,
        closed_early,
        from_send,
        from_ack,
        rss_before_kb,
        rss_after_kb,
        rss_end_kb,
    }
}
