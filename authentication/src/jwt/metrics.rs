//! kube-apiserver's JWT authenticator metric: how long verifying a token took, by issuer (its
//! URL's SHA-256, as Kubernetes labels it, so URLs stay out of metrics) and result.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry as MetricsRegistry;
use sha2::{Digest as _, Sha256};

/// A verification's labels.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    jwt_issuer_hash: String,
    /// `success` or `failure`.
    result: &'static str,
}

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 12))
}

/// The metric, shared by every issuer of every configuration the file is reloaded into.
#[derive(Clone)]
pub(super) struct JwtMetrics {
    latency: Family<LatencyLabels, Histogram, fn() -> Histogram>,
}

impl Default for JwtMetrics {
    fn default() -> Self {
        Self {
            latency: Family::new_with_constructor(latency_histogram),
        }
    }
}

/// `sha256:<hex>` of `issuer`, as kube-apiserver labels an issuer.
pub(super) fn issuer_hash(issuer: &str) -> String {
    let digest = Sha256::digest(issuer.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

impl JwtMetrics {
    /// Registers `apiserver_authentication_jwt_authenticator_latency_seconds` into `registry`.
    pub(super) fn register(&self, registry: &mut MetricsRegistry) {
        registry.register(
            "apiserver_authentication_jwt_authenticator_latency_seconds",
            "Latency of JWT authentication (verifying a token not in the cache), by issuer hash and result",
            self.latency.clone(),
        );
    }

    /// Records one verification by the issuer whose hash is `issuer_hash`.
    pub(super) fn observe(&self, issuer_hash: &str, success: bool, took: Duration) {
        self.latency
            .get_or_create(&LatencyLabels {
                jwt_issuer_hash: issuer_hash.to_owned(),
                result: if success { "success" } else { "failure" },
            })
            .observe(took.as_secs_f64());
    }
}
