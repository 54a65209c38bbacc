//! Per-module call metrics (calls, failures by reason, After-hook failures, refused `apply`
//! calls, call latency) as prometheus-client families, which the server registers beside its own.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::error::FailureKind;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModuleLabel {
    module: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FailureLabels {
    module: String,
    reason: &'static str,
}

/// Why the `apply` host function refused a call (the metrics label of each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApplyRefusal {
    /// The write would nest After hooks deeper than `RuntimeConfig::max_apply_depth`.
    Depth,
    /// The object's group and kind are not among the resources the manifest says its hooks apply.
    Undeclared,
    /// `apply` was called outside an After hook (from a before-write phase).
    OutsideHook,
}

impl ApplyRefusal {
    /// Every reason, in the order metrics list them.
    pub const ALL: [ApplyRefusal; 3] = [Self::Depth, Self::Undeclared, Self::OutsideHook];

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Depth => "depth",
            Self::Undeclared => "undeclared",
            Self::OutsideHook => "outside_hook",
        }
    }
}

/// Call latency buckets: 10 µs to ~2.6 s, by fours (a call adds microseconds; the deadline is
/// 100 ms by default).
fn call_duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_01, 4.0, 10))
}

/// The series of one module, resolved once so a call only bumps atomics.
#[derive(Debug)]
pub struct ModuleCounters {
    calls: Counter,
    failures: Vec<(FailureKind, Counter)>,
    hook_failures: Counter,
    apply_refused: Vec<(ApplyRefusal, Counter)>,
    duration: Histogram,
    instances_started: Counter,
    instances_recycled: Counter,
}

impl ModuleCounters {
    /// Instances started (a reactor's are kept across calls; other modules start one per call).
    pub fn instances_started(&self) -> u64 {
        self.instances_started.get()
    }

    /// Kept instances of a reactor dropped by the recycle policy (sessions served, memory
    /// high-water mark, a failed call).
    pub fn instances_recycled(&self) -> u64 {
        self.instances_recycled.get()
    }

    pub(crate) fn record_instance_started(&self) {
        self.instances_started.inc();
    }

    pub(crate) fn record_instance_recycled(&self) {
        self.instances_recycled.inc();
    }

    /// `apply` calls the host refused for one reason.
    pub fn apply_refused(&self, reason: ApplyRefusal) -> u64 {
        self.apply_refused
            .iter()
            .find(|(r, _)| *r == reason)
            .map_or(0, |(_, c)| c.get())
    }

    pub(crate) fn record_apply_refused(&self, reason: ApplyRefusal) {
        if let Some((_, c)) = self.apply_refused.iter().find(|(r, _)| *r == reason) {
            c.inc();
        }
    }

    /// Calls made (every phase of every request).
    pub fn calls(&self) -> u64 {
        self.calls.get()
    }

    /// Failed calls of one kind.
    pub fn failures(&self, kind: FailureKind) -> u64 {
        self.failures
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, c)| c.get())
    }

    /// Failed calls of every kind.
    pub fn total_failures(&self) -> u64 {
        self.failures.iter().map(|(_, c)| c.get()).sum()
    }

    /// After hooks that failed.
    pub fn hook_failures(&self) -> u64 {
        self.hook_failures.get()
    }

    /// Counts one call that took `seconds`.
    pub fn record_call(&self, seconds: f64) {
        self.calls.inc();
        self.duration.observe(seconds);
    }

    /// Counts one failed call, by what failed and whether it was an After hook.
    pub fn record_failure(&self, kind: FailureKind, in_hook: bool) {
        if let Some((_, c)) = self.failures.iter().find(|(k, _)| *k == kind) {
            c.inc();
        }
        if in_hook {
            self.hook_failures.inc();
        }
    }
}

/// The metrics of every module a runtime has called.
#[derive(Debug)]
pub struct Metrics {
    calls: Family<ModuleLabel, Counter>,
    failures: Family<FailureLabels, Counter>,
    hook_failures: Family<ModuleLabel, Counter>,
    apply_refused: Family<FailureLabels, Counter>,
    duration: Family<ModuleLabel, Histogram, fn() -> Histogram>,
    instances_started: Family<ModuleLabel, Counter>,
    instances_recycled: Family<ModuleLabel, Counter>,
    modules: RwLock<BTreeMap<String, Arc<ModuleCounters>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            calls: Family::default(),
            failures: Family::default(),
            hook_failures: Family::default(),
            apply_refused: Family::default(),
            duration: Family::new_with_constructor(call_duration_histogram),
            instances_started: Family::default(),
            instances_recycled: Family::default(),
            modules: RwLock::default(),
        }
    }
}

/// The series of module `name` in `family`, one for each of `reasons` (labelled `label`).
fn by_reason<R: Copy>(
    family: &Family<FailureLabels, Counter>,
    name: &str,
    reasons: impl IntoIterator<Item = R>,
    label: fn(R) -> &'static str,
) -> Vec<(R, Counter)> {
    reasons
        .into_iter()
        .map(|reason| {
            let labels = FailureLabels {
                module: name.to_owned(),
                reason: label(reason),
            };
            (reason, family.get_or_create(&labels).clone())
        })
        .collect()
}

impl Metrics {
    /// The series of `name` (created at zero on first use).
    pub fn module(&self, name: &str) -> Arc<ModuleCounters> {
        if let Some(c) = self.modules.read().expect("metrics lock").get(name) {
            return c.clone();
        }
        let module = ModuleLabel {
            module: name.to_owned(),
        };
        let counters = ModuleCounters {
            calls: self.calls.get_or_create(&module).clone(),
            failures: by_reason(&self.failures, name, FailureKind::ALL, FailureKind::label),
            hook_failures: self.hook_failures.get_or_create(&module).clone(),
            apply_refused: by_reason(
                &self.apply_refused,
                name,
                ApplyRefusal::ALL,
                ApplyRefusal::label,
            ),
            duration: self.duration.get_or_create(&module).clone(),
            instances_started: self.instances_started.get_or_create(&module).clone(),
            instances_recycled: self.instances_recycled.get_or_create(&module).clone(),
        };
        self.modules
            .write()
            .expect("metrics lock")
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(counters))
            .clone()
    }

    /// Registers the families (`strategy_calls_total`, `strategy_call_failures_total`,
    /// `strategy_hook_failures_total`, `strategy_apply_refused_total`,
    /// `strategy_call_duration_seconds`, `strategy_instances_started_total`,
    /// `strategy_instances_recycled_total`) in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "strategy_calls",
            "Calls into wasm strategy modules",
            self.calls.clone(),
        );
        registry.register(
            "strategy_call_failures",
            "Failed calls into wasm strategy modules, by reason",
            self.failures.clone(),
        );
        registry.register(
            "strategy_hook_failures",
            "After hooks that failed",
            self.hook_failures.clone(),
        );
        registry.register(
            "strategy_apply_refused",
            "apply calls from After hooks the host refused, by reason",
            self.apply_refused.clone(),
        );
        registry.register(
            "strategy_call_duration_seconds",
            "Wall time of one strategy call (instantiation and every step of one phase)",
            self.duration.clone(),
        );
        registry.register(
            "strategy_instances_started",
            "Module instances started (a reactor module's are kept across calls)",
            self.instances_started.clone(),
        );
        registry.register(
            "strategy_instances_recycled",
            "Kept instances of reactor modules dropped after their sessions, memory high-water mark or a failed call",
            self.instances_recycled.clone(),
        );
    }

    /// The families alone in the Prometheus text format (for tools and tests; the server
    /// serves them from its own registry).
    pub fn render(&self) -> String {
        let mut registry = Registry::default();
        self.register(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry)
            .expect("writing to a String cannot fail");
        out
    }
}
