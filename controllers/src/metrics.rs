//! The controllers' metrics: the garbage collector's queue, graph and work, and how long
//! namespaces take to terminate, which APIServices are unavailable (registered into the server's `/metrics` registry).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry as MetricsRegistry;

/// Counters, gauges and histograms the controllers record into.
#[derive(Debug, Clone)]
pub struct ControllerMetrics {
    /// Objects the collector looked at.
    pub gc_attempts: Counter,
    /// Looks that failed and were retried.
    pub gc_failures: Counter,
    /// Objects the collector deleted.
    pub gc_deletions: Counter,
    /// Objects waiting in the collector's queue.
    pub gc_queue_depth: Gauge,
    /// Objects in the collector's graph.
    pub gc_graph_objects: Gauge,
    /// Seconds from a namespace's deletionTimestamp to its finalization.
    pub namespace_deletion_seconds: Histogram,
    /// 1 for each APIService (`name`) marked unavailable, 0 once available (kube-aggregator's
    /// `aggregator_unavailable_apiservice`).
    pub unavailable_apiservices: Family<Vec<(String, String)>, Gauge>,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        Self {
            gc_attempts: Counter::default(),
            gc_failures: Counter::default(),
            gc_deletions: Counter::default(),
            gc_queue_depth: Gauge::default(),
            gc_graph_objects: Gauge::default(),
            // 100 ms to ~30 min.
            namespace_deletion_seconds: Histogram::new(exponential_buckets(0.1, 3.0, 10)),
            unavailable_apiservices: Family::default(),
        }
    }
}

impl ControllerMetrics {
    /// Registers every metric into `registry`.
    pub fn register(&self, registry: &mut MetricsRegistry) {
        registry.register(
            "garbagecollector_attempts",
            "Objects the garbage collector looked at",
            self.gc_attempts.clone(),
        );
        registry.register(
            "garbagecollector_failures",
            "Garbage collector looks that failed and were retried with backoff",
            self.gc_failures.clone(),
        );
        registry.register(
            "garbagecollector_deletions",
            "Objects the garbage collector deleted",
            self.gc_deletions.clone(),
        );
        registry.register(
            "garbagecollector_queue_depth",
            "Objects waiting for the garbage collector",
            self.gc_queue_depth.clone(),
        );
        registry.register(
            "garbagecollector_graph_objects",
            "Objects in the garbage collector's ownership graph",
            self.gc_graph_objects.clone(),
        );
        registry.register(
            "namespace_deletion_duration_seconds",
            "Time from a namespace's deletion to its finalization",
            self.namespace_deletion_seconds.clone(),
        );
        registry.register(
            "aggregator_unavailable_apiservice",
            "Gauge of APIServices which are marked as unavailable broken down by APIService name",
            self.unavailable_apiservices.clone(),
        );
    }
}
