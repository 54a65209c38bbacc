//! The server's allocator and what it holds, as metrics: objects alone against the memory the
//! allocator keeps resident for them.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry as MetricsRegistry;

/// With the `jemalloc` feature (the default) every program built on this crate (the server, the
/// load tools, the tests) allocates with jemalloc: glibc's malloc spent ~19% of a Lease
/// renewal's CPU (docs/benchmarks.md, "Allocator").
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Registers the allocator's figures, read at scrape time: the bytes the server has allocated
/// and not yet freed (`strategy_host_allocator_allocated_bytes`) and the bytes the allocator
/// keeps resident for them (`strategy_host_allocator_resident_bytes`). Their difference is what
/// the allocator retains (free pages not yet returned, metadata), which resident memory alone
/// cannot show.
/// Without jemalloc there is nothing to register.
pub fn register(metrics: &mut MetricsRegistry) {
    if cfg!(feature = "jemalloc") {
        metrics.register_collector(Box::new(AllocatorStats));
    }
}

#[derive(Debug)]
struct AllocatorStats;

impl Collector for AllocatorStats {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let Some((allocated, resident)) = read() else {
            return Ok(());
        };
        for (name, help, value) in [
            (
                "strategy_host_allocator_allocated_bytes",
                "Bytes the server has allocated and not yet freed",
                allocated,
            ),
            (
                "strategy_host_allocator_resident_bytes",
                "Bytes of physical memory the allocator holds, its own and its free pages included",
                resident,
            ),
        ] {
            let family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            ConstGauge::new(value as i64).encode(family)?;
        }
        Ok(())
    }
}

/// Allocated and resident bytes, as of now (jemalloc's statistics are refreshed by advancing
/// its epoch).
#[cfg(feature = "jemalloc")]
fn read() -> Option<(usize, usize)> {
    use tikv_jemalloc_ctl::{epoch, stats};
    epoch::advance().ok()?;
    Some((
        stats::allocated::read().ok()?,
        stats::resident::read().ok()?,
    ))
}

#[cfg(not(feature = "jemalloc"))]
fn read() -> Option<(usize, usize)> {
    None
}
