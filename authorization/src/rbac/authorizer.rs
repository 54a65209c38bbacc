//! `RbacAuthorizer`: decides requests by the Roles, ClusterRoles and their bindings (Kubernetes'
//! `RBACAuthorizer`), from a [`PolicyIndex`] kept current by following the four kinds through
//! the registry-level watch.

use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::Value;
use tokio::sync::watch;

use super::index::{PolicyIndex, RbacKind};
use super::policy::{rule_allows, PolicyRule, GROUP};
use crate::user::UserInfo;
use crate::{
    Attributes, Authorizer, Decision, NonResourceRule, ResourceRule, RuleResolver, UserRules,
};
use strategy_host_registry::follow::{Event, EventStreamExt as _, Writer};
use strategy_host_registry::Registry;

/// The RBAC authorizer.
#[derive(Debug)]
pub struct RbacAuthorizer {
    index: RwLock<PolicyIndex>,
    /// How many of the four kinds have been listed once.
    synced: watch::Sender<usize>,
}

impl Default for RbacAuthorizer {
    fn default() -> Self {
        Self {
            index: RwLock::default(),
            synced: watch::Sender::new(0),
        }
    }
}

impl RbacAuthorizer {
    /// An authorizer over a fixed set of objects (tests, tools): `objects` are (kind, object).
    pub fn from_objects(objects: &[(RbacKind, Value)]) -> Self {
        let this = Self::default();
        {
            let mut index = this.write();
            for (kind, obj) in objects {
                index.apply(*kind, obj);
            }
        }
        this.synced.send_replace(RbacKind::ALL.len());
        this
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, PolicyIndex> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, PolicyIndex> {
        self.index.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Follows the four kinds through the registry-level watch until the registry or this
    /// authorizer is dropped. The kinds must be served already.
    pub fn follow(self: &Arc<Self>, registry: &Arc<Registry>) {
        let mut streams = Vec::new();
        for kind in RbacKind::ALL {
            let Some(served) = registry.resolve(GROUP, "v1", kind.plural()) else {
                tracing::warn!(
                    resource = kind.plural(),
                    "RBAC kind not served; RBAC decides without it"
                );
                continue;
            };
            let writer = Writer::new();
            let copy = writer.reader();
            let stream = served.follow("v1").reflect(writer);
            streams.push(stream.map(move |event| (kind, copy.clone(), event)).boxed());
        }
        let this: Weak<Self> = Arc::downgrade(self);
        let registry = Arc::downgrade(registry);
        tokio::spawn(async move {
            let mut events = futures::stream::select_all(streams);
            let mut listed = std::collections::BTreeSet::new();
            while let Some((kind, copy, event)) = events.next().await {
                let Some(this) = this.upgrade() else { return };
                if registry.strong_count() == 0 {
                    return;
                }
                match event {
                    Event::InitDone => {
                        this.write().replace(kind, &copy.values());
                        if listed.insert(kind) {
                            this.synced.send_replace(listed.len());
                        }
                    }
                    Event::Apply(obj) => this.write().apply(kind, &obj.to_value()),
                    Event::Delete(obj) => this.write().delete(kind, &obj.to_value()),
                    Event::Init | Event::InitApply(_) => {}
                }
            }
        });
    }

    /// Waits (up to `timeout`) until all four kinds have been listed once; returns whether they
    /// were.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let mut rx = self.synced.subscribe();
        let all = RbacKind::ALL.len();
        let synced = tokio::time::timeout(timeout, rx.wait_for(|n| *n >= all)).await;
        synced.is_ok()
    }

    /// The policy rules `user` holds in `namespace` (cluster-wide ones included) and the errors
    /// met resolving them (Kubernetes' `RulesFor` of the rule resolver).
    pub fn policy_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<PolicyRule>, Vec<String>) {
        self.read().rules_for(user, namespace)
    }

    /// The rules a binding's role grants in `namespace`.
    ///
    /// # Errors
    /// The role is not (yet) known.
    pub fn role_ref_rules(
        &self,
        role_ref: &super::policy::RoleRef,
        namespace: &str,
    ) -> Result<Arc<Vec<PolicyRule>>, super::index::RoleRefError> {
        self.read().role_ref_rules(role_ref, namespace)
    }
}

/// Kubernetes' aggregate error text: one error alone, several as `[a, b]`.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[async_trait::async_trait]
impl Authorizer for RbacAuthorizer {
    async fn authorize(&self, attributes: &Attributes) -> Decision {
        self.decide(attributes)
    }
}

impl RbacAuthorizer {
    /// The decision for `attributes`, at once (what [`Authorizer::authorize`] answers).
    pub fn decide(&self, attributes: &Attributes) -> Decision {
        let mut allowed = None;
        let mut errors = Vec::new();
        self.read()
            .visit_rules_for(&attributes.user, &attributes.namespace, &mut |found| {
                match found {
                    Ok((source, rule)) if rule_allows(attributes, rule) => {
                        allowed = Some(format!("RBAC: allowed by {source}"));
                        return false;
                    }
                    Ok(_) => {}
                    Err(e) => errors.push(e.to_string()),
                }
                true
            });
        match allowed {
            Some(reason) => Decision::Allow(reason),
            None if errors.is_empty() => Decision::NoOpinion(String::new()),
            None => Decision::NoOpinion(format!("RBAC: {}", aggregate(&errors))),
        }
    }
}

impl RuleResolver for RbacAuthorizer {
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        let (rules, errors) = self.policy_rules_for(user, namespace);
        let mut out = UserRules {
            evaluation_error: if errors.is_empty() {
                String::new()
            } else {
                aggregate(&errors)
            },
            ..UserRules::default()
        };
        for rule in rules {
            if !rule.resources.is_empty() {
                out.resource_rules.push(ResourceRule {
                    verbs: rule.verbs.clone(),
                    api_groups: rule.api_groups.clone(),
                    resources: rule.resources.clone(),
                    resource_names: rule.resource_names.clone(),
                });
            }
            if !rule.non_resource_urls.is_empty() {
                out.non_resource_rules.push(NonResourceRule {
                    verbs: rule.verbs,
                    non_resource_urls: rule.non_resource_urls,
                });
            }
        }
        out
    }
}
