//! Structured authorization (`--authorization-config`): an ordered chain of authorizers — RBAC,
//! webhooks, `AlwaysAllow`, `AlwaysDeny` and (beyond Kubernetes) authorizer modules — asked in turn until one allows or denies, as
//! kube-apiserver's union authorizer asks them. A webhook that fails lets the chain go on under
//! failure policy `NoOpinion` and ends it under `Deny`; when none allowed and one failed, the
//! request answers 500 with the failure ([`Decision::Error`]). The file is read again when it
//! changes (`strategy_host_apimachinery::config_file`); a file that no longer reads keeps the last good chain.

pub mod config;
pub use strategy_host_https::webhook::kubeconfig;
mod metrics;
mod subject_access_review;
mod webhook;

use std::path::Path;
use std::sync::Arc;

use prometheus_client::registry::Registry as MetricsRegistry;

pub use config::{parse, AuthorizationConfiguration};
pub use metrics::AuthorizerMetrics;
pub use webhook::WebhookAuthorizer;

use subject_access_review::{decision, review, review_spec};

use serde_json::Value;

use crate::authorizer::AuthorizerModules;
use crate::rbac::authorizer::aggregate;
use crate::rbac::RbacAuthorizer;
use crate::strategy::{ResourceInfo, StrategyContext};
use crate::user::UserInfo;
use crate::{Attributes, Authorizer, Decision, RuleResolver, UserRules};
use strategy_host_apimachinery::config_file::{InvalidConfiguration, LoadError, ReloadedFile};

/// What one link of the chain is.
enum Link {
    AlwaysAllow,
    AlwaysDeny,
    Rbac,
    Webhook(Box<WebhookAuthorizer>),
    /// The authorizer module of the entry's name, found at each request (its versions come
    /// and go with rollouts).
    Module,
}

/// One configured authorizer.
struct Entry {
    /// `authorizers[].type`, for the metrics.
    authorizer_type: String,
    /// `authorizers[].name`.
    name: String,
    link: Link,
}

/// The authorizers of one configuration, in order.
pub struct Chain {
    entries: Vec<Entry>,
    rbac: Arc<RbacAuthorizer>,
    modules: Option<Arc<dyn AuthorizerModules>>,
    metrics: AuthorizerMetrics,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| &e.name))
            .finish()
    }
}

impl Chain {
    /// The chain `config` describes (each webhook's kubeconfig read now).
    ///
    /// # Errors
    /// A webhook's kubeconfig cannot be used.
    fn build(
        config: &AuthorizationConfiguration,
        rbac: &Arc<RbacAuthorizer>,
        modules: Option<&Arc<dyn AuthorizerModules>>,
        metrics: &AuthorizerMetrics,
    ) -> Result<Self, InvalidConfiguration> {
        let mut entries = Vec::new();
        let mut errors = Vec::new();
        for (i, a) in config.authorizers.iter().enumerate() {
            let link = match (a.authorizer_type.as_str(), &a.webhook) {
                ("AlwaysAllow", _) => Link::AlwaysAllow,
                ("AlwaysDeny", _) => Link::AlwaysDeny,
                ("RBAC", _) => Link::Rbac,
                ("Module", _) => Link::Module,
                (_, Some(w)) => {
                    let at = format!("authorizers[{i}]");
                    let settings =
                        config::settings(w, &at).map_err(InvalidConfiguration::Fields)?;
                    match kubeconfig::read(Path::new(&settings.kubeconfig)) {
                        Ok(endpoint) => Link::Webhook(Box::new(WebhookAuthorizer::new(
                            &a.name,
                            settings,
                            endpoint,
                            &w.match_conditions,
                            metrics.clone(),
                        ))),
                        Err(e) => {
                            errors.push(format!("{at}.webhook.connectionInfo.kubeConfigFile: {e}"));
                            continue;
                        }
                    }
                }
                (other, None) => {
                    return Err(InvalidConfiguration::Fields(vec![format!(
                        "authorizers[{i}]: type {other} unknown"
                    )]))
                }
            };
            entries.push(Entry {
                authorizer_type: a.authorizer_type.clone(),
                name: a.name.clone(),
                link,
            });
        }
        InvalidConfiguration::check(errors)?;
        Ok(Self {
            entries,
            rbac: rbac.clone(),
            modules: modules.cloned(),
            metrics: metrics.clone(),
        })
    }

    /// The authorizers' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.name.clone()).collect()
    }

    async fn authorize(&self, attributes: &Attributes) -> Decision {
        let mut reasons = Vec::new();
        let mut errors = Vec::new();
        for entry in &self.entries {
            let decision = match &entry.link {
                Link::AlwaysAllow => Decision::Allow(String::new()),
                Link::AlwaysDeny => Decision::Deny("Everything is forbidden.".into()),
                Link::Rbac => self.rbac.decide(attributes),
                Link::Webhook(webhook) => match webhook.decide(attributes).await {
                    Decision::Error(e) if webhook.deny_on_failure() => return Decision::Error(e),
                    decision => decision,
                },
                Link::Module => match self.ask_module(&entry.name, attributes).await {
                    (Decision::Error(e), true) => return Decision::Error(e),
                    (decision, _) => decision,
                },
            };
            match decision {
                Decision::Allow(_) | Decision::Deny(_) => {
                    let allowed = decision.allowed();
                    self.metrics
                        .decided(&entry.authorizer_type, &entry.name, allowed);
                    return decision;
                }
                Decision::NoOpinion(reason) if !reason.is_empty() => reasons.push(reason),
                Decision::NoOpinion(_) => {}
                Decision::Error(e) => errors.push(e),
            }
        }
        match errors.is_empty() {
            true => Decision::NoOpinion(reasons.join("\n")),
            false => Decision::Error(aggregate(&errors)),
        }
    }
}

impl Chain {
    /// The authorizer module `name`'s decision, and whether its failure ends the chain. A
    /// module not loaded (yet) has no opinion.
    async fn ask_module(&self, name: &str, attributes: &Attributes) -> (Decision, bool) {
        let Some(module) = self.modules.as_ref().and_then(|m| m.authorizer(name)) else {
            return (
                Decision::NoOpinion(format!("authorizer module {name:?} is not loaded")),
                false,
            );
        };
        let mut review = review("v1", review_spec(attributes, "v1"));
        let ctx = StrategyContext {
            resource: ResourceInfo {
                group: crate::review::GROUP.into(),
                version: crate::review::VERSION.into(),
                kind: "SubjectAccessReview".into(),
                plural: "subjectaccessreviews".into(),
                namespaced: false,
            },
            dry_run: false,
            request_id: "authorization".into(),
            hook_depth: 0,
            user: Arc::new(attributes.user.clone()),
        };
        match module.authorize(&ctx, &mut review).await {
            Ok(_) => (
                decision(review.get("status").unwrap_or(&Value::Null)),
                false,
            ),
            Err(e) => {
                tracing::warn!(module = name, error = %e.reason, "authorizer module failed");
                (Decision::Error(e.reason), module.deny_on_failure())
            }
        }
    }
}

/// The chain of the file at `--authorization-config`, kept current with it.
#[derive(derive_more::Debug)]
pub struct StructuredAuthorizer {
    #[debug("{:?}", chain.current())]
    chain: Arc<ReloadedFile<Chain>>,
    #[debug(skip)]
    metrics: AuthorizerMetrics,
}

impl StructuredAuthorizer {
    /// The chain the configuration at `path` describes, its `RBAC` entries asking `rbac` and
    /// its `Module` entries the authorizer modules of `modules`.
    ///
    /// # Errors
    /// The file cannot be read, is not a valid configuration, or names a kubeconfig that
    /// cannot be used.
    pub fn load(
        path: &Path,
        rbac: Arc<RbacAuthorizer>,
        modules: Option<Arc<dyn AuthorizerModules>>,
    ) -> Result<Arc<Self>, LoadError> {
        let metrics = AuthorizerMetrics::default();
        let shared = metrics.clone();
        let chain = ReloadedFile::load(path, "authorization", move |text, _| {
            Chain::build(&parse(text)?, &rbac, modules.as_ref(), &shared)
        })?;
        Ok(Arc::new(Self { chain, metrics }))
    }

    /// The authorizers' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.chain.current().names()
    }

    /// Registers kube-apiserver's authorization and reload metrics into `registry`.
    pub fn register(&self, registry: &mut MetricsRegistry) {
        self.metrics.register(registry);
        self.chain
            .register(registry, "apiserver_authorization_config_controller");
    }

    /// Looks at the file every second for as long as `self` lives.
    pub fn spawn_reloader(&self) {
        self.chain.spawn_reloader();
    }
}

#[async_trait::async_trait]
impl Authorizer for StructuredAuthorizer {
    async fn authorize(&self, attributes: &Attributes) -> Decision {
        self.chain.current().authorize(attributes).await
    }
}

impl RuleResolver for StructuredAuthorizer {
    /// RBAC's rules when the chain has RBAC; incomplete when another authorizer may allow more.
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        let chain = self.chain.current();
        let mut rules = match chain.entries.iter().any(|e| matches!(e.link, Link::Rbac)) {
            true => chain.rbac.rules_for(user, namespace),
            false => UserRules::default(),
        };
        rules.incomplete |= chain
            .entries
            .iter()
            .any(|e| !matches!(e.link, Link::Rbac | Link::AlwaysDeny));
        rules
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(text: &str) -> Chain {
        let config = parse(text).unwrap();
        Chain::build(
            &config,
            &Arc::new(RbacAuthorizer::from_objects(&[])),
            None,
            &AuthorizerMetrics::default(),
        )
        .unwrap()
    }

    fn get(user: &str) -> Attributes {
        Attributes {
            user: UserInfo {
                username: user.into(),
                ..UserInfo::default()
            },
            verb: "get".into(),
            path: "/healthz".into(),
            ..Attributes::default()
        }
    }

    const HEAD: &str =
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n";

    #[tokio::test]
    async fn the_first_authorizer_with_an_opinion_decides() {
        let allow = chain(&format!(
            "{HEAD}- type: RBAC\n  name: rbac\n- type: AlwaysAllow\n  name: all\n"
        ));
        assert!(allow.authorize(&get("zed")).await.allowed());
        let deny = chain(&format!(
            "{HEAD}- type: AlwaysDeny\n  name: none\n- type: AlwaysAllow\n  name: all\n"
        ));
        assert_eq!(
            deny.authorize(&get("zed")).await,
            Decision::Deny("Everything is forbidden.".into())
        );
        let rbac_only = chain(&format!("{HEAD}- type: RBAC\n  name: rbac\n"));
        assert!(!rbac_only.authorize(&get("zed")).await.allowed());
    }

    #[tokio::test]
    async fn a_failed_webhook_lets_the_chain_go_on_under_no_opinion_and_ends_it_under_deny() {
        let dir = tempfile::tempdir().unwrap();
        // No CA certificate in it: the call fails at dialling, before any handshake.
        std::fs::write(dir.path().join("ca.pem"), "").unwrap();
        let kubeconfig = dir.path().join("webhook.kubeconfig");
        std::fs::write(
            &kubeconfig,
            "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1/\n    certificate-authority: ca.pem\n",
        )
        .unwrap();
        let webhook = |policy: &str| {
            format!(
                "- type: Webhook\n  name: corp\n  webhook:\n    timeout: 1s\n    subjectAccessReviewVersion: v1\n    failurePolicy: {policy}\n    connectionInfo:\n      type: KubeConfigFile\n      kubeConfigFile: {}\n",
                kubeconfig.display()
            )
        };
        let open = chain(&format!(
            "{HEAD}{}- type: AlwaysAllow\n  name: all\n",
            webhook("NoOpinion")
        ));
        assert!(open.authorize(&get("zed")).await.allowed());
        let nothing_else = chain(&format!("{HEAD}{}", webhook("NoOpinion")));
        assert!(nothing_else.authorize(&get("zed")).await.error().is_some());
        let closed = chain(&format!(
            "{HEAD}{}- type: AlwaysAllow\n  name: all\n",
            webhook("Deny")
        ));
        let decision = closed.authorize(&get("zed")).await;
        assert!(
            decision.error().unwrap().contains("dial tcp 127.0.0.1:1"),
            "{decision:?}"
        );
    }
}
