//! Delegated authentication (k8s.io/apiserver's `--authentication-kubeconfig`): a bearer
//! token this server does not know is sent as a `TokenReview` to the parent server the
//! kubeconfig names, and its answer — the user, or not authenticated — kept for 10 s, as an
//! extension API server under kube-apiserver does.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use sha2::Digest as _;

use super::{Authenticator, Credentials, Outcome};
use crate::user::UserInfo;
use strategy_host_apimachinery::expiring_cache::ExpiringCache;
use strategy_host_https::webhook::kubeconfig::WebhookEndpoint;
use strategy_host_https::webhook::{self, Dial};

/// How long an answer is kept (k8s.io/apiserver's default cache TTL).
const CACHE_TTL: Duration = Duration::from_secs(10);
/// How long the parent may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Answers kept at most.
const MAX_CACHED: usize = 8192;

/// Asks the parent server who a bearer token is.
#[derive(derive_more::Debug)]
pub struct TokenReviewAuthenticator {
    url: String,
    #[debug(skip)]
    endpoint: WebhookEndpoint,
    #[debug(skip)]
    cache: ExpiringCache<[u8; 32], Outcome>,
}

impl TokenReviewAuthenticator {
    /// Reviews tokens at the server `endpoint` names (its `tokenreviews`).
    pub fn new(endpoint: WebhookEndpoint) -> Self {
        let url = format!(
            "{}/apis/authentication.k8s.io/v1/tokenreviews",
            endpoint.server.trim_end_matches('/')
        );
        Self {
            url,
            endpoint,
            cache: ExpiringCache::new(MAX_CACHED),
        }
    }
}

/// The user of a TokenReview's `status`, or why none.
fn outcome(status: &Value) -> Outcome {
    if status["authenticated"] != true {
        let why = status["error"]
            .as_str()
            .unwrap_or("the token was not authenticated");
        return Outcome::Rejected(format!("token review: {why}"));
    }
    let user = &status["user"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    Outcome::Authenticated(UserInfo {
        username: user["username"].as_str().unwrap_or_default().to_string(),
        uid: user["uid"].as_str().unwrap_or_default().to_string(),
        groups: strings(&user["groups"]),
        extra: user["extra"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
            .unwrap_or_default(),
    })
}

#[async_trait]
impl Authenticator for TokenReviewAuthenticator {
    async fn authenticate(&self, credentials: &Credentials<'_>) -> Outcome {
        let Some(token) = credentials.bearer_token else {
            return Outcome::NotApplicable;
        };
        let key: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        if let Some(known) = self.cache.get(&key) {
            return known;
        }
        let review = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        });
        let dial = Dial {
            ca_bundle: Some(&self.endpoint.certificate_authority),
            client_certificate: self.endpoint.client_certificate.as_ref(),
            bearer_token: self.endpoint.token.as_deref(),
        };
        match webhook::post_as(&self.url, &dial, &review, TIMEOUT).await {
            Ok(answer) => {
                let outcome = outcome(&answer["status"]);
                self.cache.insert(key, outcome.clone(), CACHE_TTL);
                outcome
            }
            // Not kept: the next request asks again.
            Err(e) => Outcome::Rejected(format!("token review failed: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_status_is_read_as_client_go_reads_it() {
        let status = json!({"authenticated": true, "user": {"username": "bob", "uid": "7",
            "groups": ["dev", "system:authenticated"], "extra": {"scopes": ["a"]}}});
        let Outcome::Authenticated(user) = outcome(&status) else {
            panic!("not authenticated");
        };
        assert_eq!(user.username, "bob");
        assert_eq!(user.groups, ["dev", "system:authenticated"]);
        assert_eq!(user.extra["scopes"], ["a"]);
        assert_eq!(
            outcome(&json!({"authenticated": false, "error": "token expired"})),
            Outcome::Rejected("token review: token expired".into())
        );
    }
}
