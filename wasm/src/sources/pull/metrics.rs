//! The Prometheus series of module pulls: pulls by result, their duration, and modules served
//! from this host's copies instead.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

/// Pull counters and the pull duration histogram.
#[derive(Debug)]
pub struct PullMetrics {
    pulls: Family<ResultLabels, Counter>,
    duration: Histogram,
    cache_hits: Counter,
}

impl Default for PullMetrics {
    fn default() -> Self {
        Self {
            pulls: Family::default(),
            duration: Histogram::new(exponential_buckets(0.005, 2.5, 10)),
            cache_hits: Counter::default(),
        }
    }
}

impl PullMetrics {
    /// Registers `strategy_module_pulls_total{result}`, `strategy_module_pull_duration_seconds`
    /// and `strategy_module_pull_cache_hits_total`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "strategy_module_pulls",
            "Module pulls from registries and download URLs, by result",
            self.pulls.clone(),
        );
        registry.register(
            "strategy_module_pull_duration_seconds",
            "How long module pulls took, whatever their result",
            self.duration.clone(),
        );
        registry.register(
            "strategy_module_pull_cache_hits",
            "Modules by URL served from this host's copies without a pull",
            self.cache_hits.clone(),
        );
    }

    pub(super) fn record_pull(&self, result: &'static str, took: Duration) {
        self.pulls.get_or_create(&ResultLabels { result }).inc();
        self.duration.observe(took.as_secs_f64());
    }

    pub(super) fn record_cache_hit(&self) {
        self.cache_hits.inc();
    }
}
