//! Webhook metrics under kube-apiserver's names: each call's duration, and rejections by
//! webhook, type, operation, error type and code.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry as MetricsRegistry;

/// The labels every webhook metric starts with: which webhook was called, how and for what.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookCall {
    /// The webhook.
    pub name: String,
    /// `admit` (mutating) or `validating`.
    pub r#type: &'static str,
    /// `CREATE`, `UPDATE`, `DELETE`.
    pub operation: &'static str,
}

/// The labels of `apiserver_admission_webhook_admission_duration_seconds`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabels {
    /// The webhook, its type and the operation.
    #[prometheus(flatten)]
    pub call: WebhookCall,
    /// `true` when the call rejected the request.
    pub rejected: &'static str,
}

/// The labels of `apiserver_admission_webhook_rejection_count`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RejectionLabels {
    /// The webhook, its type and the operation.
    #[prometheus(flatten)]
    pub call: WebhookCall,
    /// `calling_webhook_error` or `no_error` (a denial).
    pub error_type: &'static str,
    /// The code answered (500 for a failed call).
    pub rejection_code: String,
}

fn call_histogram() -> Histogram {
    // 5 ms to ~20 s.
    Histogram::new(exponential_buckets(0.005, 2.5, 10))
}

/// The webhooks' metric families.
#[derive(Debug, Clone)]
pub struct WebhookMetrics {
    /// Call durations.
    pub duration: Family<CallLabels, Histogram, fn() -> Histogram>,
    /// Rejections.
    pub rejections: Family<RejectionLabels, Counter>,
}

impl Default for WebhookMetrics {
    fn default() -> Self {
        Self {
            duration: Family::new_with_constructor(call_histogram),
            rejections: Family::default(),
        }
    }
}

impl WebhookMetrics {
    /// Registers the families into `registry`.
    pub fn register(&self, registry: &mut MetricsRegistry) {
        registry.register(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook call latency, by webhook, type, operation and whether it rejected",
            self.duration.clone(),
        );
        registry.register(
            "apiserver_admission_webhook_rejection",
            "Admission webhook rejections, by webhook, type, operation, error type and code",
            self.rejections.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_families_label_the_webhook_call_first() {
        let metrics = WebhookMetrics::default();
        let mut registry = MetricsRegistry::default();
        metrics.register(&mut registry);
        let call = WebhookCall {
            name: "w.example.com".into(),
            r#type: "admit",
            operation: "CREATE",
        };
        metrics
            .rejections
            .get_or_create(&RejectionLabels {
                call: call.clone(),
                error_type: "no_error",
                rejection_code: "403".into(),
            })
            .inc();
        let rejected = "true";
        metrics
            .duration
            .get_or_create(&CallLabels { call, rejected })
            .observe(0.01);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let call = r#"{name="w.example.com",type="admit",operation="CREATE""#;
        let rejection = r#"error_type="no_error",rejection_code="403""#;
        let rejection =
            format!("apiserver_admission_webhook_rejection_total{call},{rejection}}} 1");
        assert!(text.contains(&rejection), "{text}");
        let duration = "apiserver_admission_webhook_admission_duration_seconds_count";
        let duration = format!(r#"{duration}{call},rejected="true"}} 1"#);
        assert!(text.contains(&duration), "{text}");
    }
}
