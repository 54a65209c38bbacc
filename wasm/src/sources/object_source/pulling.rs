//! The pulling half of the `StrategyModule` follower: where a `spec.url` object's pull stands on
//! this replica (what it resolved to, its last failure, when to try again), the status it adds
//! (`status.resolved`, the `Pulled` condition), and the pull secret's credentials, read through
//! the registry like any Secret.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use super::super::module_object::PULL_SECRET_NAMESPACE;
use super::super::pull::credentials::{registry_auth, CredentialsError};
use super::super::pull::Pulled;
use super::super::pull::RegistryAuth;
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::system_fields::{self, transition_time};
use strategy_host_registry::Registry;

/// The longest wait between two pulls of a version that failed.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// One object's pull on this replica.
#[derive(Debug)]
pub(super) struct PullState {
    /// What is pulled: URL, pinned digest, agreed resolution and generation. A change starts over.
    pub(super) key: String,
    /// The URL as written.
    pub(super) url: String,
    /// The generation it was read from.
    pub(super) generation: i64,
    /// What the URL resolved to (`sha256:…`): agreed in status, or this replica's pull.
    pub(super) resolved: Option<String>,
    /// The module this replica pulled for this key.
    pub(super) pulled: Option<Pulled>,
    /// Why the last pull failed, if it did.
    pub(super) failure: Option<String>,
    /// The pull gave something that may never run; it is not tried again for this key.
    pub(super) refused: bool,
    /// A pull is running.
    pub(super) in_flight: bool,
    /// Failed pulls in a row.
    pub(super) attempts: u32,
    /// When the next pull may start after a failure.
    pub(super) retry_at: Option<Instant>,
}

impl PullState {
    pub(super) fn new(key: String, url: String, generation: i64) -> Self {
        Self {
            key,
            url,
            generation,
            resolved: None,
            pulled: None,
            failure: None,
            refused: false,
            in_flight: false,
            attempts: 0,
            retry_at: None,
        }
    }

    /// Records a failed pull and when to try again: 1 s, doubling, at most [`MAX_BACKOFF`].
    pub(super) fn failed(&mut self, reason: String) {
        let wait = Duration::from_secs(1 << self.attempts.min(5)).min(MAX_BACKOFF);
        self.attempts += 1;
        self.failure = Some(reason);
        self.retry_at = Some(Instant::now() + wait);
    }

    /// Whether a pull may start now.
    pub(super) fn may_pull(&self) -> bool {
        !self.in_flight && !self.refused && self.retry_at.is_none_or(|t| t <= Instant::now())
    }

    /// What the status shows of this pull.
    pub(super) fn view(&self) -> PullView {
        PullView {
            url: self.url.clone(),
            generation: self.generation,
            resolved: self.resolved.clone(),
            failure: self.failure.clone(),
            pulled: self.pulled.is_some(),
            refused: self.refused,
        }
    }
}

/// What a status write shows of a pull.
#[derive(Debug, Clone)]
pub(super) struct PullView {
    url: String,
    generation: i64,
    resolved: Option<String>,
    failure: Option<String>,
    pulled: bool,
    refused: bool,
}

impl PullView {
    /// Adds `resolved` (the stored one when it is for this URL and generation: the first replica
    /// to resolve a tag decides for all) and the `Pulled` condition; a failure becomes the
    /// status's `reason` too, while the version in force keeps serving.
    pub(super) fn apply(&self, current: &Value, status: &mut Value) {
        let resolved = agreed_resolution(current, &self.url, self.generation)
            .or_else(|| self.resolved.clone());
        if let Some(digest) = &resolved {
            status["resolved"] =
                json!({"url": self.url, "digest": digest, "generation": self.generation});
        }
        let (state, reason, message) = match (&self.failure, self.refused) {
            (Some(failure), _) => {
                status["reason"] = json!(failure);
                ("False", "PullFailed", failure.clone())
            }
            (None, true) => (
                "False",
                "NotRunnable",
                "the pulled artifact may not run (see reason)".to_owned(),
            ),
            (None, false) if self.pulled || resolved.is_some() => (
                "True",
                "Pulled",
                format!("{} resolved to {}", self.url, resolved.unwrap_or_default()),
            ),
            (None, false) => ("Unknown", "Pulling", format!("pulling {}", self.url)),
        };
        let mut condition =
            json!({"type": "Pulled", "status": state, "reason": reason, "message": message});
        condition["lastTransitionTime"] =
            transition_time(system_fields::condition(current, "Pulled"), &condition);
        match status["conditions"].as_array_mut() {
            Some(conditions) => conditions.push(condition),
            None => status["conditions"] = json!([condition]),
        }
    }
}

/// The status of an object whose first version has not been pulled yet.
pub(super) fn pending_status(obj: &Value) -> Value {
    json!({
        "phase": "Pending",
        "observedGeneration": obj.pointer("/metadata/generation").cloned().unwrap_or(json!(0)),
    })
}

/// What the replicas agreed `url` resolved to at `generation` (`status.resolved`), if they did.
pub(super) fn agreed_resolution(obj: &Value, url: &str, generation: i64) -> Option<String> {
    let resolved = obj.pointer("/status/resolved")?;
    (resolved["url"] == url && resolved["generation"].as_i64() == Some(generation))
        .then(|| resolved["digest"].as_str().map(String::from))?
}

/// The digest of the version this object's status says was in force, if any.
pub(super) fn digest_in_force(obj: &Value) -> Option<String> {
    let status = obj.get("status")?;
    let digest = match status["digestInForce"].as_str() {
        Some(d) => d,
        None if status["phase"] == "Active" => status["digest"].as_str()?,
        None => return None,
    };
    Some(digest.trim_start_matches("sha256:").to_owned())
}

/// Why a module's pull secret gives no credentials (`name` is the Secret's name).
#[derive(Debug, thiserror::Error)]
pub(super) enum PullSecretError {
    /// This server serves no Secrets.
    #[error("the pull secret {PULL_SECRET_NAMESPACE}/{name}: secrets are not served")]
    NotServed { name: String },
    /// The Secret does not exist.
    #[error("the pull secret {PULL_SECRET_NAMESPACE}/{name}: secrets \"{name}\" not found")]
    Missing { name: String },
    /// The Secret cannot be read.
    #[error("the pull secret {PULL_SECRET_NAMESPACE}/{name}: {source}")]
    Unread {
        name: String,
        source: strategy_host_registry::error::Error,
    },
    /// The Secret is of another type.
    #[error("the pull secret {PULL_SECRET_NAMESPACE}/{name} is of type {found}, not kubernetes.io/dockerconfigjson")]
    WrongType { name: String, found: Value },
    /// The Secret holds no configuration.
    #[error("the pull secret {PULL_SECRET_NAMESPACE}/{name} has no .dockerconfigjson")]
    NoConfig { name: String },
    /// Its configuration gives no credentials for the registry.
    #[error("the pull secret {PULL_SECRET_NAMESPACE}/{name}: .dockerconfigjson {source}")]
    Credentials {
        name: String,
        source: CredentialsError,
    },
}

/// The credentials for `registry` in the `kubernetes.io/dockerconfigjson` Secret `name` of
/// [`PULL_SECRET_NAMESPACE`].
pub(super) async fn pull_secret_auth(
    registry: &Arc<Registry>,
    name: &str,
    host: &str,
) -> Result<RegistryAuth, PullSecretError> {
    let owned = || name.to_owned();
    if registry.resolve("", "v1", "secrets").is_none() {
        return Err(PullSecretError::NotServed { name: owned() });
    }
    let secret = ObjectRef::new("", "v1", "secrets", Some(PULL_SECRET_NAMESPACE), name);
    let secret = Client::new(registry, "strategy-module-pull-secret")
        .get(&secret)
        .await
        .map_err(|source| PullSecretError::Unread {
            name: owned(),
            source,
        })?
        .ok_or_else(|| PullSecretError::Missing { name: owned() })?;
    if secret["type"] != "kubernetes.io/dockerconfigjson" {
        return Err(PullSecretError::WrongType {
            name: owned(),
            found: secret["type"].clone(),
        });
    }
    let config = secret
        .pointer("/data/.dockerconfigjson")
        .and_then(Value::as_str)
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .ok_or_else(|| PullSecretError::NoConfig { name: owned() })?;
    registry_auth(&config, host).map_err(|source| PullSecretError::Credentials {
        name: owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_resolution_wins_for_its_url_and_generation() {
        let stored = json!({"status": {"resolved": {"url": "oci://r/m:v1", "digest": "sha256:aa", "generation": 2}}});
        assert_eq!(
            agreed_resolution(&stored, "oci://r/m:v1", 2).as_deref(),
            Some("sha256:aa")
        );
        assert_eq!(agreed_resolution(&stored, "oci://r/m:v1", 3), None);
        assert_eq!(agreed_resolution(&stored, "oci://r/m:v2", 2), None);
        let mut mine = PullState::new("k".into(), "oci://r/m:v1".into(), 2);
        mine.resolved = Some("sha256:bb".into());
        let mut status = json!({"phase": "Active", "conditions": []});
        mine.view().apply(&stored, &mut status);
        assert_eq!(status["resolved"]["digest"], "sha256:aa");
        assert_eq!(status["conditions"][0]["type"], "Pulled");
        assert_eq!(status["conditions"][0]["status"], "True");
    }

    #[test]
    fn a_failure_is_the_reason_and_backs_off() {
        let mut state = PullState::new("k".into(), "oci://r/m:v1".into(), 1);
        assert!(state.may_pull());
        state.failed("cannot pull oci://r/m:v1: connection refused".into());
        assert!(!state.may_pull());
        let mut status = json!({"phase": "Active", "conditions": [{"type": "Active"}]});
        state.view().apply(&json!({}), &mut status);
        assert_eq!(
            status["reason"],
            "cannot pull oci://r/m:v1: connection refused"
        );
        assert_eq!(status["conditions"][1]["reason"], "PullFailed");
        assert_eq!(status["phase"], "Active");
        for _ in 0..10 {
            state.failed("again".into());
        }
        let wait = state.retry_at.unwrap() - Instant::now();
        assert!(wait <= MAX_BACKOFF, "{wait:?}");
    }

    #[test]
    fn the_version_in_force_is_read_from_status() {
        let active = json!({"status": {"phase": "Active", "digest": "sha256:aa"}});
        assert_eq!(digest_in_force(&active).as_deref(), Some("aa"));
        let rejected = json!({"status": {"phase": "Rejected", "digest": "sha256:bb", "digestInForce": "sha256:aa"}});
        assert_eq!(digest_in_force(&rejected).as_deref(), Some("aa"));
        assert_eq!(
            digest_in_force(&json!({"status": {"phase": "Pending"}})),
            None
        );
    }
}
