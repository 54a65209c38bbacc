//! `/metrics`: one prometheus-client registry holding what operators of kube-apiserver expect
//! under its names — requests by verb, resource, subresource and code, their latency, requests
//! in flight, storage latency, the watch caches — and the wasm modules' calls, failures,
//! latency and state.

use std::sync::{Arc, Weak};
use std::time::Duration;

use hyper::Method;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry as MetricsRegistry;

use super::route::{Route, Verb};
use strategy_host_registry::Registry;
use strategy_host_storage::instrumented::StorageMetrics;
use strategy_host_storage::key::resource_of;
use strategy_host_wasm::ModuleTable;

/// The labels of `apiserver_request_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    code: String,
}

/// The labels of `apiserver_request_duration_seconds`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    verb: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InflightLabels {
    request_kind: &'static str,
}

fn request_histogram() -> Histogram {
    // 1 ms to ~4.4 min by fours, like kube-apiserver's 5 ms .. 60 s range with more room below.
    Histogram::new(exponential_buckets(0.001, 4.0, 10))
}

fn verb_label(verb: Verb) -> &'static str {
    match verb {
        Verb::Get => "GET",
        Verb::List => "LIST",
        Verb::Watch => "WATCH",
        Verb::Create => "POST",
        Verb::Update => "PUT",
        Verb::Patch => "PATCH",
        Verb::Delete => "DELETE",
        Verb::DeleteCollection => "DELETECOLLECTION",
    }
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// What a request was, for its metric labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfo {
    verb: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
}

impl RequestInfo {
    /// The verb (kube-apiserver's: `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `DELETE`,
    /// `DELETECOLLECTION`; the HTTP method for other paths) and the resource of a routed request.
    pub fn of(method: &Method, route: &Route) -> Self {
        let (verb, path) = match route {
            Route::Resource(p, verb) => (verb_label(*verb), Some(p)),
            Route::ResourceMethodNotAllowed(p) => (method_label(method), Some(p)),
            _ => (method_label(method), None),
        };
        Self {
            verb,
            group: path.map(|p| p.group.clone()).unwrap_or_default(),
            version: path.map(|p| p.version.clone()).unwrap_or_default(),
            resource: path.map(|p| p.plural.clone()).unwrap_or_default(),
            subresource: path.and_then(|p| p.subresource.clone()).unwrap_or_default(),
        }
    }

    fn is_read_only(&self) -> bool {
        matches!(self.verb, "GET" | "LIST" | "WATCH" | "HEAD" | "OPTIONS")
    }
}

/// The server's metrics registry and the request families the server records into.
#[derive(Debug)]
pub struct ServerMetrics {
    registry: MetricsRegistry,
    requests: Family<RequestLabels, Counter>,
    duration: Family<DurationLabels, Histogram, fn() -> Histogram>,
    inflight: Family<InflightLabels, Gauge>,
}

impl ServerMetrics {
    /// The request families, the served resources' watch caches, the storage latency and the
    /// module table's metrics and states.
    pub fn new(
        registry: &Arc<Registry>,
        storage: &StorageMetrics,
        modules: &Arc<ModuleTable>,
        audit: Option<&super::audit::AuditMetrics>,
    ) -> Self {
        let mut metrics = MetricsRegistry::default();
        if let Some(audit) = audit {
            metrics.register(
                "apiserver_audit_event",
                "Audit events generated and sent to the audit log",
                audit.events.clone(),
            );
            metrics
                .sub_registry_with_label(("plugin".into(), "log".into()))
                .register(
                    "apiserver_audit_error",
                    "Audit events lost: dropped on a full queue or failing to be written",
                    audit.errors.clone(),
                );
        }
        let requests = Family::<RequestLabels, Counter>::default();
        let duration = Family::<DurationLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            request_histogram,
        );
        let inflight = Family::<InflightLabels, Gauge>::default();
        metrics.register(
            "apiserver_request",
            "Requests by verb, group, version, resource, subresource and HTTP code",
            requests.clone(),
        );
        metrics.register(
            "apiserver_request_duration_seconds",
            "Time to answer a request (to the response head, for watches)",
            duration.clone(),
        );
        metrics.register(
            "apiserver_current_inflight_requests",
            "Requests being served, read-only and mutating",
            inflight.clone(),
        );
        metrics.register_collector(ScrapedFrom::new(registry, watch_caches));
        storage.register(&mut metrics);
        modules.runtime().metrics().register(&mut metrics);
        modules.rollout_metrics().register(&mut metrics);
        metrics.register_collector(ScrapedFrom::new(modules, module_states));
        Self {
            registry: metrics,
            requests,
            duration,
            inflight,
        }
    }

    /// Lets another part of the server (the controllers) register its metrics.
    pub fn register_with(&mut self, register: impl FnOnce(&mut MetricsRegistry)) {
        register(&mut self.registry);
    }

    /// Counts a request in flight until the returned guard drops.
    pub fn in_flight(&self, info: &RequestInfo) -> InflightGuard {
        let kind = if info.is_read_only() {
            "readOnly"
        } else {
            "mutating"
        };
        let gauge = self
            .inflight
            .get_or_create(&InflightLabels { request_kind: kind })
            .clone();
        gauge.inc();
        InflightGuard(gauge)
    }

    /// Records a finished request.
    pub fn observe(&self, info: &RequestInfo, code: u16, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                verb: info.verb,
                group: info.group.clone(),
                version: info.version.clone(),
                resource: info.resource.clone(),
                subresource: info.subresource.clone(),
                code: code.to_string(),
            })
            .inc();
        self.duration
            .get_or_create(&DurationLabels {
                verb: info.verb,
                group: info.group.clone(),
                version: info.version.clone(),
                resource: info.resource.clone(),
                subresource: info.subresource.clone(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Everything in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

/// Decrements the in-flight gauge when the request ends.
#[derive(Debug)]
pub struct InflightGuard(Gauge);

impl Drop for InflightGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Metrics read from a `T` at scrape time by `encode`, while the `T` lives (once it is
/// dropped, nothing): what the server's own state reports without being kept alive by it.
pub(crate) struct ScrapedFrom<T> {
    source: Weak<T>,
    encode: fn(&T, &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error>,
}

impl<T> ScrapedFrom<T> {
    /// A collector reading `source` through `encode`.
    pub(crate) fn new(
        source: &Arc<T>,
        encode: fn(&T, &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error>,
    ) -> Box<Self> {
        Box::new(Self {
            source: Arc::downgrade(source),
            encode,
        })
    }
}

impl<T> std::fmt::Debug for ScrapedFrom<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScrapedFrom")
            .field("type", &std::any::type_name::<T>())
            .finish_non_exhaustive()
    }
}

impl<T: Send + Sync + 'static> Collector for ScrapedFrom<T> {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        match self.source.upgrade() {
            Some(source) => (self.encode)(&source, &mut encoder),
            None => Ok(()),
        }
    }
}

/// The watch caches' state.
fn watch_caches(
    registry: &Registry,
    encoder: &mut DescriptorEncoder<'_>,
) -> Result<(), std::fmt::Error> {
    let stats: Vec<_> = registry
        .cache_stats()
        .into_iter()
        .map(|(prefix, s)| (vec![("resource", resource_of(&prefix))], s))
        .collect();
    type Pick = fn(&strategy_host_storage::cacher::CacherStats) -> u64;
    // Every family is a gauge but the counts of what happened since start.
    let families: [(&str, &str, MetricType, Pick); 8] = [
        (
            "apiserver_storage_objects",
            "Objects held by the watch cache",
            MetricType::Gauge,
            |s| s.objects as u64,
        ),
        (
            "apiserver_watch_cache_capacity",
            "Capacity of the watch cache's event window",
            MetricType::Gauge,
            |s| s.window_capacity as u64,
        ),
        (
            "apiserver_watch_cache_window_events",
            "Events in the watch cache's window",
            MetricType::Gauge,
            |s| s.window_len as u64,
        ),
        (
            "apiserver_watch_cache_resource_version",
            "The watch cache's revision",
            MetricType::Gauge,
            |s| s.revision,
        ),
        (
            "apiserver_registered_watchers",
            "Watchers served by the watch cache",
            MetricType::Gauge,
            |s| s.watchers,
        ),
        (
            "apiserver_terminated_watchers",
            "Watchers closed because they could not keep up",
            MetricType::Counter,
            |s| s.terminated_watchers,
        ),
        (
            "apiserver_watch_cache_relists",
            "Relists after the store below compacted the cache's revision",
            MetricType::Counter,
            |s| s.relists,
        ),
        (
            "apiserver_watch_cache_delegated_reads",
            "Reads the watch cache passed to the store below",
            MetricType::Counter,
            |s| s.delegated_reads,
        ),
    ];
    for (name, help, kind, pick) in families {
        let mut family = encoder.encode_descriptor(name, help, None, kind)?;
        for (labels, s) in &stats {
            let value = family.encode_family(labels)?;
            match kind {
                MetricType::Counter => ConstCounter::new(pick(s)).encode(value)?,
                _ => ConstGauge::new(pick(s) as i64).encode(value)?,
            }
        }
    }
    Ok(())
}

/// Each module source's latest version and state.
fn module_states(
    modules: &ModuleTable,
    encoder: &mut DescriptorEncoder<'_>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "strategy_module_state",
        "The latest version of each module source: 1 for its state",
        None,
        MetricType::Gauge,
    )?;
    for s in modules.statuses() {
        let labels = vec![
            ("source", s.source.clone()),
            ("state", s.state.as_str().to_string()),
            ("digest", s.digest.clone()),
        ];
        ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_follow_kube_apiserver() {
        use super::super::query::Query;
        let info = |m: Method, p: &str, q: Option<&str>| {
            let route = Route::parse(&m, p, &Query::parse(q)).unwrap();
            RequestInfo::of(&m, &route)
        };
        assert_eq!(info(Method::GET, "/api/v1/namespaces", None).verb, "LIST");
        assert_eq!(info(Method::GET, "/api/v1/namespaces/a", None).verb, "GET");
        let w = info(
            Method::GET,
            "/apis/example.com/v1/widgets",
            Some("watch=true"),
        );
        assert_eq!((w.verb, w.resource.as_str()), ("WATCH", "widgets"));
        assert_eq!(
            info(
                Method::DELETE,
                "/apis/example.com/v1/namespaces/d/widgets",
                None
            )
            .verb,
            "DELETECOLLECTION"
        );
        let s = info(
            Method::PUT,
            "/apis/example.com/v1/namespaces/d/widgets/a/status",
            None,
        );
        assert_eq!((s.verb, s.subresource.as_str()), ("PUT", "status"));
        assert_eq!(info(Method::GET, "/healthz", None).resource, "");
    }
}
