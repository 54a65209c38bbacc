//! A webhook authorizer, as kube-apiserver's: each request's attributes POSTed as a
//! `SubjectAccessReview` (v1 or v1beta1) to the server of the webhook's kubeconfig, its answer
//! (`allowed`, `denied`, or neither: no opinion) cached for the configured TTLs; match
//! conditions (CEL over `request`, the review's spec) decide whether it is asked at all, and a
//! call that fails decides by the failure policy.

use std::time::Instant;

use serde_json::{json, Value};

use super::config::{MatchCondition, WebhookSettings};
use super::kubeconfig::WebhookEndpoint;
use super::metrics::AuthorizerMetrics;
use super::subject_access_review::{decision, review, review_spec};
use crate::{Attributes, Decision};
use strategy_host_apimachinery::expiring_cache::ExpiringCache;
use strategy_host_cel::expression::{self, Activation, Expression};
use strategy_host_https::webhook::{self, Dial};

/// Answers kept at most (the cache is emptied when full).
const MAX_CACHED: usize = 8192;

/// A configured webhook authorizer.
pub struct WebhookAuthorizer {
    name: String,
    settings: WebhookSettings,
    endpoint: WebhookEndpoint,
    conditions: Vec<Expression>,
    cache: ExpiringCache<String, Decision>,
    metrics: AuthorizerMetrics,
}

impl std::fmt::Debug for WebhookAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookAuthorizer")
            .field("name", &self.name)
            .field("server", &self.endpoint.server)
            .finish_non_exhaustive()
    }
}

/// `request` as match conditions see it: the v1 spec with every field present, as the typed
/// object Kubernetes evaluates has them (`request.resourceAttributes.namespace` is `""` for a
/// cluster-scoped request, not an error).
fn condition_request(a: &Attributes) -> Value {
    let mut request = json!({
        "user": a.user.username,
        "groups": a.user.groups,
        "uid": a.user.uid,
        "extra": a.user.extra,
    });
    if a.resource_request {
        request["resourceAttributes"] = json!({
            "namespace": a.namespace, "verb": a.verb, "group": a.api_group,
            "version": a.api_version, "resource": a.resource,
            "subresource": a.subresource, "name": a.name,
        });
    } else {
        request["nonResourceAttributes"] = json!({"path": a.path, "verb": a.verb});
    }
    request
}

impl WebhookAuthorizer {
    /// The webhook `name`, called at `endpoint` with `settings`; `conditions` were checked to
    /// compile when the configuration was validated.
    pub fn new(
        name: &str,
        settings: WebhookSettings,
        endpoint: WebhookEndpoint,
        conditions: &[MatchCondition],
        metrics: AuthorizerMetrics,
    ) -> Self {
        Self {
            name: name.to_owned(),
            settings,
            endpoint,
            conditions: conditions
                .iter()
                .filter_map(|c| Expression::compile(&c.expression).ok())
                .collect(),
            cache: ExpiringCache::new(MAX_CACHED),
            metrics,
        }
    }

    /// Whether the match conditions let the webhook be asked (all true); an error when one
    /// fails to evaluate and none is false.
    fn matches(&self, attributes: &Attributes) -> Result<bool, expression::Error> {
        if self.conditions.is_empty() {
            return Ok(true);
        }
        let request = condition_request(attributes);
        let activation = Activation::new(&[("request", &request)]);
        let mut error = None;
        for condition in &self.conditions {
            match activation.truth(condition) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => error = error.or(Some(e)),
            }
        }
        error.map_or(Ok(true), Err)
    }

    /// What a failure decides, by the failure policy.
    fn failed(&self, error: String) -> Decision {
        self.metrics
            .failed(&self.name, self.settings.deny_on_failure);
        tracing::warn!(authorizer = %self.name, %error, "authorization webhook failed");
        Decision::Error(error)
    }

    /// Remembers `decision` for its TTL (allowed or not), unless that kind is not cached.
    fn remember(&self, key: String, decision: &Decision) {
        let ttl = match decision {
            Decision::Allow(_) => self.settings.authorized_ttl,
            _ => self.settings.unauthorized_ttl,
        };
        if let Some(ttl) = ttl {
            self.cache.insert(key, decision.clone(), ttl);
        }
    }

    /// Asks the webhook (or its cache) about `attributes`; [`Decision::Error`] when it failed
    /// (the chain reads the failure policy with [`Self::deny_on_failure`]).
    pub async fn decide(&self, attributes: &Attributes) -> Decision {
        match self.matches(attributes) {
            Ok(true) => {}
            Ok(false) => return Decision::NoOpinion(String::new()),
            Err(e) => return self.failed(format!("match condition failed: {e}")),
        }
        let version = self.settings.review_version.as_str();
        let spec = review_spec(attributes, version);
        let key = spec.to_string();
        if let Some(decision) = self.cache.get(&key) {
            return decision;
        }
        let review = review(version, spec);
        let dial = Dial {
            ca_bundle: Some(&self.endpoint.certificate_authority),
            client_certificate: self.endpoint.client_certificate.as_ref(),
            bearer_token: self.endpoint.token.as_deref(),
        };
        let started = Instant::now();
        let answer =
            webhook::post_as(&self.endpoint.server, &dial, &review, self.settings.timeout).await;
        let status = match answer {
            Ok(answer) => answer.get("status").cloned().unwrap_or(Value::Null),
            Err(e) => {
                self.metrics
                    .evaluated(&self.name, "error", started.elapsed());
                return self.failed(e.to_string());
            }
        };
        let decision = decision(&status);
        self.metrics
            .evaluated(&self.name, "success", started.elapsed());
        self.remember(key, &decision);
        decision
    }

    /// Whether a failure of this webhook ends the chain (failure policy `Deny`).
    pub fn deny_on_failure(&self) -> bool {
        self.settings.deny_on_failure
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::structured::subject_access_review::tests::pods;

    fn authorizer(conditions: &[&str]) -> WebhookAuthorizer {
        WebhookAuthorizer::new(
            "corp",
            WebhookSettings {
                authorized_ttl: None,
                unauthorized_ttl: None,
                timeout: Duration::from_secs(1),
                review_version: "v1".into(),
                deny_on_failure: false,
                kubeconfig: String::new(),
            },
            WebhookEndpoint {
                server: "https://127.0.0.1:1/".into(),
                certificate_authority: Vec::new(),
                client_certificate: None,
                token: None,
            },
            &conditions
                .iter()
                .map(|e| MatchCondition {
                    expression: (*e).into(),
                })
                .collect::<Vec<_>>(),
            AuthorizerMetrics::default(),
        )
    }

    #[test]
    fn match_conditions_see_every_field_and_one_false_skips_the_webhook() {
        let a = authorizer(&[
            "has(request.resourceAttributes)",
            "request.resourceAttributes.namespace != 'kube-system'",
        ]);
        assert_eq!(a.matches(&pods("")), Ok(true));
        assert_eq!(a.matches(&pods("kube-system")), Ok(false));
        let broken = authorizer(&["request.nope == 'x'"]);
        assert!(broken.matches(&pods("team")).is_err());
    }

    #[tokio::test]
    async fn a_skipped_webhook_has_no_opinion_and_a_failed_one_an_error() {
        let skipped = authorizer(&["request.user == 'someone-else'"]);
        assert_eq!(
            skipped.decide(&pods("team")).await,
            Decision::NoOpinion(String::new())
        );
        let down = authorizer(&[]);
        let Decision::Error(e) = down.decide(&pods("team")).await else {
            panic!("a webhook nobody answers fails")
        };
        assert!(
            e.starts_with("Post \"https://127.0.0.1:1/\": dial tcp"),
            "{e}"
        );
    }
}
