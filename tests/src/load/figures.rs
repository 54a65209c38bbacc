//! The figures a load run prints: throughput with latency percentiles, a delivery-latency
//! histogram, the ratio of an API figure to its etcd baseline, and a process's resident memory.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What N clients achieved over a run: operations, errors, percentiles and bytes read.
#[derive(Debug, Clone, Default)]
pub struct Throughput {
    /// Operations completed (errors included: they took time too).
    pub ops: u64,
    /// Operations answered with an error (or a status of 300 and above).
    pub errors: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Median latency.
    pub p50: Duration,
    /// 90th percentile latency.
    pub p90: Duration,
    /// 99th percentile latency.
    pub p99: Duration,
    /// The slowest operation.
    pub max: Duration,
    /// Response bytes read per operation (0 when the mode does not count them).
    pub bytes_per_op: u64,
}

impl Throughput {
    /// The figure of a run that took `elapsed`, from every operation's latency.
    pub fn from_samples(
        mut latencies: Vec<Duration>,
        errors: u64,
        bytes: u64,
        elapsed: Duration,
    ) -> Self {
        latencies.sort_unstable();
        let pick = |q: f64| {
            let last = latencies.len().saturating_sub(1);
            latencies
                .get(((latencies.len() as f64 * q) as usize).min(last))
                .copied()
                .unwrap_or_default()
        };
        let ops = latencies.len() as u64;
        Throughput {
            ops,
            errors,
            elapsed,
            p50: pick(0.50),
            p90: pick(0.90),
            p99: pick(0.99),
            max: latencies.last().copied().unwrap_or_default(),
            bytes_per_op: bytes.checked_div(ops).unwrap_or(0),
        }
    }

    /// Operations per second over the run.
    pub fn per_second(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// `ops=… errors=… ops/s=… p50=…ms p90=…ms p99=…ms max=…ms [bytes/op=…]`, the fields every line of
    /// api-load prints (scripts pick them out by name).
    pub fn fields(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut s = format!(
            "ops={} errors={} ops/s={:.0} p50={:.2}ms p90={:.2}ms p99={:.2}ms max={:.2}ms",
            self.ops,
            self.errors,
            self.per_second(),
            ms(self.p50),
            ms(self.p90),
            ms(self.p99),
            ms(self.max)
        );
        if self.bytes_per_op > 0 {
            s += &format!(" bytes/op={}", self.bytes_per_op);
        }
        s
    }
}

/// `ratio api/etcd: ops/s=… p50=… p99=…`: how the API compares with raw etcd doing the same.
pub fn ratio_line(api: &Throughput, etcd: &Throughput) -> String {
    let r = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    format!(
        "ratio api/etcd: ops/s={:.2} p50={:.2} p99={:.2}",
        r(api.per_second(), etcd.per_second()),
        r(api.p50.as_secs_f64(), etcd.p50.as_secs_f64()),
        r(api.p99.as_secs_f64(), etcd.p99.as_secs_f64()),
    )
}

/// A latency histogram with quarter-power-of-two microsecond buckets: constant memory however
/// many deliveries a fan-out makes.
#[derive(Debug, Clone)]
pub struct Histogram {
    buckets: Vec<u64>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: vec![0; Self::BUCKETS],
        }
    }
}

impl Histogram {
    const BUCKETS: usize = 120;

    /// Counts one latency.
    pub fn record(&mut self, d: Duration) {
        let f = (d.as_micros().max(1) as f64).log2() * 4.0;
        self.buckets[(f as usize).min(Self::BUCKETS - 1)] += 1;
    }

    /// How many latencies were counted.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The upper edge of the bucket holding quantile `q` (zero when empty).
    pub fn quantile(&self, q: f64) -> Duration {
        let target = ((self.count() as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= target {
                return Duration::from_micros(2f64.powf((i + 1) as f64 / 4.0) as u64);
            }
        }
        Duration::ZERO
    }
}

/// Resident memory of process `pid` in kB, from `/proc/PID/status` (`VmRSS`); `None` when the
/// process is gone or the system has no procfs.
pub fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The server's allocator figures from its `/metrics`, in kB: the bytes its objects take (the
/// heap) and the bytes the allocator keeps resident for them; `None` when the server does not
/// export them (built without jemalloc).
pub fn allocator_kb(server: &str) -> Option<(u64, u64)> {
    let reply = crate::call("GET", &format!("{server}/metrics"), None).ok()?;
    let gauge = |name: &str| {
        reply
            .body
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok())
            .map(|bytes| bytes as u64 / 1024)
    };
    Some((
        gauge("strategy_host_allocator_allocated_bytes")?,
        gauge("strategy_host_allocator_resident_bytes")?,
    ))
}

/// Wall-clock nanoseconds since the Unix epoch: the clock a write's timestamp and its delivery
/// are both read from, so the two can be compared across tasks (and processes on one machine).
pub fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
