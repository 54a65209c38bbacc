//! Delegated authorization (k8s.io/apiserver's `--authorization-kubeconfig`): as an extension
//! API server under a parent, this server asks the parent with a `SubjectAccessReview` before
//! its own authorizer. Paths in `--authorization-always-allow-paths` (health checks) are
//! allowed first; the parent's allow or deny is final; when it has no opinion (or fails) the
//! server's own authorizer decides.

use std::sync::Arc;
use std::time::Duration;

use crate::structured::config::WebhookSettings;
use crate::structured::{AuthorizerMetrics, WebhookAuthorizer};
use crate::{Attributes, Authorizer, Decision};
use strategy_host_https::webhook::kubeconfig::WebhookEndpoint;

/// The parent's SubjectAccessReviews, then the server's own authorizer.
#[derive(derive_more::Debug)]
pub struct DelegatedAuthorizer {
    always_allow_paths: Vec<String>,
    #[debug(skip)]
    parent: WebhookAuthorizer,
    #[debug(skip)]
    local: Arc<dyn Authorizer>,
}

/// Whether `path` is one of `patterns` (a trailing `*` matches any rest, as Kubernetes' paths).
fn path_matches(patterns: &[String], path: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => p == path,
    })
}

impl DelegatedAuthorizer {
    /// Asks the server `endpoint` names (its `subjectaccessreviews`, answers kept 10 s as
    /// k8s.io/apiserver keeps them), then `local`.
    pub fn new(
        endpoint: WebhookEndpoint,
        always_allow_paths: Vec<String>,
        local: Arc<dyn Authorizer>,
        metrics: AuthorizerMetrics,
    ) -> Self {
        let endpoint = WebhookEndpoint {
            server: format!(
                "{}/apis/authorization.k8s.io/v1/subjectaccessreviews",
                endpoint.server.trim_end_matches('/')
            ),
            ..endpoint
        };
        let settings = WebhookSettings {
            authorized_ttl: Some(Duration::from_secs(10)),
            unauthorized_ttl: Some(Duration::from_secs(10)),
            timeout: Duration::from_secs(10),
            review_version: "v1".into(),
            deny_on_failure: false,
            kubeconfig: String::new(),
        };
        Self {
            always_allow_paths,
            parent: WebhookAuthorizer::new("delegated", settings, endpoint, &[], metrics),
            local,
        }
    }
}

#[async_trait::async_trait]
impl Authorizer for DelegatedAuthorizer {
    async fn authorize(&self, attributes: &Attributes) -> Decision {
        if !attributes.resource_request && path_matches(&self.always_allow_paths, &attributes.path)
        {
            return Decision::Allow("the path is always allowed".into());
        }
        match self.parent.decide(attributes).await {
            decision @ (Decision::Allow(_) | Decision::Deny(_)) => decision,
            Decision::NoOpinion(_) | Decision::Error(_) => self.local.authorize(attributes).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_allowed_paths_match_exactly_or_by_prefix() {
        let paths = vec![
            "/healthz".to_string(),
            "/readyz".to_string(),
            "/debug/*".to_string(),
        ];
        assert!(path_matches(&paths, "/healthz"));
        assert!(path_matches(&paths, "/debug/strategies"));
        assert!(!path_matches(&paths, "/healthz/extra"));
        assert!(!path_matches(&paths, "/metrics"));
    }
}
