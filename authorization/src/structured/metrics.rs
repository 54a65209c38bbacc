//! kube-apiserver's authorization metrics: decisions by authorizer, and each webhook's calls
//! (count and duration by result, failures that did not deny).

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry as MetricsRegistry;

/// A decision's labels.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    r#type: String,
    name: String,
    decision: &'static str,
}

/// A webhook call's labels.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    name: String,
    result: &'static str,
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 12))
}

/// The metrics, shared by every configuration the file is reloaded into (so counts go on).
#[derive(Clone)]
pub struct AuthorizerMetrics {
    decisions: Family<DecisionLabels, Counter>,
    evaluations: Family<WebhookLabels, Counter>,
    durations: Family<WebhookLabels, Histogram, fn() -> Histogram>,
    fail_open: Family<WebhookLabels, Counter>,
}

impl std::fmt::Debug for AuthorizerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizerMetrics").finish_non_exhaustive()
    }
}

impl Default for AuthorizerMetrics {
    fn default() -> Self {
        Self {
            decisions: Family::default(),
            evaluations: Family::default(),
            durations: Family::new_with_constructor(duration_histogram),
            fail_open: Family::default(),
        }
    }
}

impl AuthorizerMetrics {
    /// Registers them into `registry`.
    pub fn register(&self, registry: &mut MetricsRegistry) {
        registry.register(
            "apiserver_authorization_decisions",
            "Authorization decisions that allowed or denied, by authorizer type and name",
            self.decisions.clone(),
        );
        registry.register(
            "apiserver_authorization_webhook_evaluations",
            "Authorization webhook calls, by webhook name and result",
            self.evaluations.clone(),
        );
        registry.register(
            "apiserver_authorization_webhook_duration_seconds",
            "Authorization webhook call latency, by webhook name and result",
            self.durations.clone(),
        );
        registry.register(
            "apiserver_authorization_webhook_evaluations_fail_open",
            "Authorization webhook calls that failed with failure policy NoOpinion",
            self.fail_open.clone(),
        );
    }

    /// Counts an allow or deny by the authorizer `name` of `authorizer_type`.
    pub(super) fn decided(&self, authorizer_type: &str, name: &str, allowed: bool) {
        self.decisions
            .get_or_create(&DecisionLabels {
                r#type: authorizer_type.to_owned(),
                name: name.to_owned(),
                decision: if allowed { "allowed" } else { "denied" },
            })
            .inc();
    }

    /// Counts a call of the webhook `name` that ended in `result` after `took`.
    pub(super) fn evaluated(&self, name: &str, result: &'static str, took: Duration) {
        let labels = WebhookLabels {
            name: name.to_owned(),
            result,
        };
        self.evaluations.get_or_create(&labels).inc();
        self.durations
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// Counts a failure of the webhook `name` that the chain goes on from (policy `NoOpinion`).
    pub(super) fn failed(&self, name: &str, denies: bool) {
        if !denies {
            self.fail_open
                .get_or_create(&WebhookLabels {
                    name: name.to_owned(),
                    result: "error",
                })
                .inc();
        }
    }
}
