//! Structured authentication's JWT issuers (`--authentication-config`): each issuer of the
//! file authenticates the bearer tokens whose `iss` it is, and the file is read again when it
//! changes, without a restart. A file that no longer reads keeps the issuers of the last good
//! one (the error is logged and counted in kube-apiserver's reload metrics); issuers whose configuration did not change keep the
//! keys they fetched.

mod config;
mod issuer;
mod keys;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry as MetricsRegistry;

pub use config::{parse, AuthenticationConfiguration};
use issuer::IssuerAuthenticator;

use crate::{Authenticator, Credentials, Outcome};

/// How often the file is looked at for changes.
const RELOAD_EVERY: Duration = Duration::from_secs(1);

/// The configured JWT issuers, as one authenticator.
pub struct JwtAuthenticators {
    path: PathBuf,
    issuers: ArcSwap<Vec<Arc<IssuerAuthenticator>>>,
    /// The text the issuers were built from.
    loaded: std::sync::Mutex<String>,
    /// Reloads by outcome (`success`, or `failure`: the last good configuration is kept).
    reloads: Family<ReloadLabels, Counter>,
    /// When each outcome last happened (seconds since the epoch).
    last_reload: Family<ReloadLabels, Gauge<f64, AtomicU64>>,
}

/// The label of the reload metrics.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    status: &'static str,
}

impl JwtAuthenticators {
    /// The issuers of the configuration at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or is not a valid configuration (every field error).
    pub fn load(path: &Path) -> Result<Arc<Self>, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let config = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let issuers = config
            .jwt
            .into_iter()
            .map(|jwt| Arc::new(IssuerAuthenticator::new(jwt)))
            .collect();
        Ok(Arc::new(Self {
            path: path.to_path_buf(),
            issuers: ArcSwap::from_pointee(issuers),
            loaded: std::sync::Mutex::new(text),
            reloads: Family::default(),
            last_reload: Family::default(),
        }))
    }

    /// The issuers' URLs, in order.
    pub fn issuers(&self) -> Vec<String> {
        self.issuers
            .load()
            .iter()
            .map(|i| i.issuer().to_string())
            .collect()
    }

    /// Registers kube-apiserver's reload metrics into `registry`.
    pub fn register(&self, registry: &mut MetricsRegistry) {
        registry.register(
            "apiserver_authentication_config_controller_automatic_reloads",
            "Automatic reloads of the authentication configuration, by status",
            self.reloads.clone(),
        );
        registry.register(
            "apiserver_authentication_config_controller_automatic_reload_last_timestamp_seconds",
            "When the authentication configuration was last reloaded, by status",
            self.last_reload.clone(),
        );
    }

    fn count_reload(&self, status: &'static str) {
        let labels = ReloadLabels { status };
        self.reloads.get_or_create(&labels).inc();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.last_reload.get_or_create(&labels).set(now);
    }

    /// Reads the file again when its text changed; keeps the last good configuration when the
    /// new one does not read.
    pub fn reload(&self) {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return;
        };
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if *loaded == text {
            return;
        }
        match parse(&text) {
            Ok(config) => {
                let current = self.issuers.load();
                let issuers = config
                    .jwt
                    .into_iter()
                    .map(|jwt| {
                        current
                            .iter()
                            .find(|i| i.config() == &jwt)
                            .cloned()
                            .unwrap_or_else(|| Arc::new(IssuerAuthenticator::new(jwt)))
                    })
                    .collect::<Vec<_>>();
                tracing::info!(path = %self.path.display(), issuers = issuers.len(), "authentication configuration reloaded");
                self.issuers.store(Arc::new(issuers));
                self.count_reload("success");
            }
            Err(e) => {
                tracing::error!(path = %self.path.display(), error = %e, "the authentication configuration does not read; keeping the last good one");
                self.count_reload("failure");
            }
        }
        *loaded = text;
    }

    /// Looks at the file every second for as long as `self` lives.
    pub fn spawn_reloader(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(RELOAD_EVERY);
            loop {
                tick.tick().await;
                let Some(this) = weak.upgrade() else { return };
                let _ = tokio::task::spawn_blocking(move || this.reload()).await;
            }
        });
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
        let issuers = self.issuers.load_full();
        match issuers.iter().find(|issuer| issuer.issuer() == iss) {
            Some(issuer) => issuer.authenticate(token).await,
            None => Outcome::NotApplicable,
        }
    }
}
