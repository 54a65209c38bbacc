//! Structured authentication's JWT issuers (`--authentication-config`): each issuer of the
//! file authenticates the bearer tokens whose `iss` it is, and the file is read again when it
//! changes, without a restart (`strategy_host_apimachinery::config_file`: a file that no longer reads keeps the
//! issuers of the last good one); issuers whose configuration did not change keep the keys they
//! fetched.

mod claim_expressions;
mod config;
mod issuer;
mod keys;
mod metrics;
mod validation;

use std::path::Path;
use std::sync::Arc;

use prometheus_client::registry::Registry as MetricsRegistry;

pub use config::{parse, Anonymous, AuthenticationConfiguration};
use issuer::IssuerAuthenticator;
use metrics::JwtMetrics;

use crate::{Authenticator, Credentials, Outcome};
use strategy_host_apimachinery::config_file::{InvalidConfiguration, LoadError, ReloadedFile};

/// The configured JWT issuers, as one authenticator; and the configuration's anonymous access.
pub struct JwtAuthenticators {
    loaded: Arc<ReloadedFile<Loaded>>,
    metrics: JwtMetrics,
}

/// What one text of the file configures.
struct Loaded {
    issuers: Vec<Arc<IssuerAuthenticator>>,
    anonymous: Option<Anonymous>,
}

/// What `text` configures, keeping the issuers of `current` whose configuration is unchanged
/// (and with them the keys they fetched).
fn build(
    text: &str,
    current: Option<&Loaded>,
    metrics: &JwtMetrics,
) -> Result<Loaded, InvalidConfiguration> {
    let config = parse(text)?;
    let issuers = config
        .jwt
        .into_iter()
        .map(|jwt| {
            current
                .into_iter()
                .flat_map(|c| &c.issuers)
                .find(|i| i.config() == &jwt)
                .cloned()
                .unwrap_or_else(|| Arc::new(IssuerAuthenticator::new(jwt, metrics.clone())))
        })
        .collect();
    Ok(Loaded {
        issuers,
        anonymous: config.anonymous,
    })
}

impl JwtAuthenticators {
    /// The issuers of the configuration at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or is not a valid configuration (every field error).
    pub fn load(path: &Path) -> Result<Arc<Self>, LoadError> {
        let metrics = JwtMetrics::default();
        let shared = metrics.clone();
        let loaded = ReloadedFile::load(path, "authentication", move |text, current| {
            build(text, current, &shared)
        })?;
        Ok(Arc::new(Self { loaded, metrics }))
    }

    /// The issuers' URLs, in order.
    pub fn issuers(&self) -> Vec<String> {
        self.loaded
            .current()
            .issuers
            .iter()
            .map(|i| i.issuer().to_string())
            .collect()
    }

    /// Registers kube-apiserver's reload and latency metrics into `registry`.
    pub fn register(&self, registry: &mut MetricsRegistry) {
        self.loaded
            .register(registry, "apiserver_authentication_config_controller");
        self.metrics.register(registry);
    }

    /// Looks at the file every second for as long as `self` lives.
    pub fn spawn_reloader(&self) {
        self.loaded.spawn_reloader();
    }

    /// Anonymous access as the file's `anonymous` says when it has one (read again with the
    /// file), else as `fallback` (`--anonymous-auth`).
    pub fn anonymous_access(&self, fallback: bool) -> crate::AnonymousAccess {
        let loaded = self.loaded.clone();
        Arc::new(move |path| match &loaded.current().anonymous {
            Some(anonymous) => anonymous.allows(path),
            None => fallback,
        })
    }
}

#[async_trait::async_trait]
impl Authenticator for JwtAuthenticators {
    async fn authenticate(&self, credentials: &Credentials<'_>) -> Outcome {
        let Some(token) = credentials.bearer_token else {
            return Outcome::NotApplicable;
        };
        // The token's `iss` picks the issuer that judges it (issuer URLs are unique); another
        // issuer's JWT, or an opaque token, is for another authenticator.
        let Some(iss) = crate::unverified_issuer(token) else {
            return Outcome::NotApplicable;
        };
        let loaded = self.loaded.current();
        match loaded.issuers.iter().find(|issuer| issuer.issuer() == iss) {
            Some(issuer) => issuer.authenticate(token).await,
            None => Outcome::NotApplicable,
        }
    }
}
