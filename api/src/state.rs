//! `AppState`: what every request handler shares (the registry, the store below it, limits,
//! the shutdown signal, the module table, and how requests are authenticated and authorized).

use std::sync::Arc;

use tokio::sync::watch;

use super::audit::Auditor;
use super::filters::Security;
use super::flowcontrol::FlowControl;
use super::metrics::ServerMetrics;
use strategy_host_authentication::issuer_discovery::IssuerDiscovery;
use strategy_host_authentication::service_account::ServiceAccountTokens;
use strategy_host_authorization::{AlwaysAllow, Authorizer, RuleResolver};
use strategy_host_registry::Registry;
use strategy_host_storage::Storage;
use strategy_host_wasm::ModuleTable;

/// What every request handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The store below every resource (health checks, revisions).
    pub storage: Arc<dyn Storage>,
    /// The served resources.
    pub registry: Arc<Registry>,
    /// The request body cap (bytes).
    pub max_body_bytes: usize,
    /// Who waits for which seats (API Priority and Fairness).
    pub flow_control: Arc<FlowControl>,
    /// Flips to `true` when shutdown begins (watches end on it).
    pub shutdown: watch::Receiver<bool>,
    /// The wasm module table, for `/debug/strategies`.
    pub modules: Option<Arc<ModuleTable>>,
    /// What `/metrics` serves, and where requests are counted.
    pub metrics: Arc<ServerMetrics>,
    /// Authentication and authorization.
    pub security: Arc<Security>,
    /// ServiceAccount tokens, for TokenRequest.
    pub tokens: Option<Arc<ServiceAccountTokens>>,
    /// The ServiceAccount issuer's discovery documents, when the issuer allows them.
    pub issuer_discovery: Option<Arc<IssuerDiscovery>>,
    /// The audit log, when `--audit-log-path` is given.
    pub audit: Option<Arc<Auditor>>,
    /// What the access and rules reviews ask.
    pub reviews: Reviews,
    /// Encryption at rest, whose KMS plugins `/readyz` checks.
    pub encryption: Option<strategy_host_storage::encryption::EncryptionConfig>,
    /// The APIServices served by extension API servers, and how to reach them.
    pub aggregation: Option<Arc<strategy_host_registry::aggregation::Aggregation>>,
}

/// What `kubectl auth can-i` is answered with: the server's authorizer and its rules.
#[derive(Clone)]
pub struct Reviews {
    /// Decides access reviews (RBAC behind the privileged groups, or AlwaysAllow).
    pub authorizer: Arc<dyn Authorizer>,
    /// Lists a user's rules (SelfSubjectRulesReview).
    pub rules: Arc<dyn RuleResolver>,
}

impl Reviews {
    /// Reviews under `--authorization-mode=AlwaysAllow` and development mode.
    pub fn always_allow() -> Self {
        Self {
            authorizer: Arc::new(AlwaysAllow),
            rules: Arc::new(AlwaysAllow),
        }
    }
}

impl AppState {
    /// State with the given limits, serving `metrics` at `/metrics`, authenticating and
    /// authorizing as `security` says.
    pub fn new(
        storage: Arc<dyn Storage>,
        registry: Arc<Registry>,
        security: Security,
        mut metrics: ServerMetrics,
        max_body_bytes: usize,
        flow_control: FlowControl,
    ) -> Self {
        let flow_control = Arc::new(flow_control);
        metrics.register_with(|registry| flow_control.register(registry));
        Self {
            storage,
            max_body_bytes,
            flow_control,
            shutdown: watch::channel(false).1,
            modules: None,
            metrics: Arc::new(metrics),
            security: Arc::new(security),
            tokens: None,
            issuer_discovery: None,
            audit: None,
            reviews: Reviews::always_allow(),
            encryption: None,
            aggregation: None,
            registry,
        }
    }

    /// The same state, answering reviews with `reviews`.
    pub fn with_reviews(mut self, reviews: Reviews) -> Self {
        self.reviews = reviews;
        self
    }

    /// The same state, writing the audit log with `auditor` (if any).
    pub fn with_audit(mut self, auditor: Option<Auditor>) -> Self {
        self.audit = auditor.map(Arc::new);
        self
    }

    /// The same state, issuing ServiceAccount tokens with `tokens`.
    pub fn with_tokens(mut self, tokens: Arc<ServiceAccountTokens>) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// The same state, serving the ServiceAccount issuer's discovery documents.
    pub fn with_issuer_discovery(mut self, discovery: Option<IssuerDiscovery>) -> Self {
        self.issuer_discovery = discovery.map(Arc::new);
        self
    }

    /// The same state, proxying the groups of APIServices that name a Service.
    pub fn with_aggregation(
        mut self,
        aggregation: Arc<strategy_host_registry::aggregation::Aggregation>,
    ) -> Self {
        self.aggregation = Some(aggregation);
        self
    }

    /// The same state, whose `/readyz` checks the KMS plugins of `encryption`.
    pub fn with_encryption(
        mut self,
        encryption: Option<strategy_host_storage::encryption::EncryptionConfig>,
    ) -> Self {
        self.encryption = encryption;
        self
    }

    /// The same state, also serving the module table's statuses.
    pub fn with_modules(mut self, modules: Arc<ModuleTable>) -> Self {
        self.modules = Some(modules);
        self
    }
}
