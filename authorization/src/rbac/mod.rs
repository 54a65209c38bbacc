//! RBAC: the `rbac.authorization.k8s.io/v1` kinds (Roles, ClusterRoles, RoleBindings,
//! ClusterRoleBindings) served with their own strategy, the authorizer that decides by them,
//! ClusterRole aggregation, and the bootstrap policy.
//!
//! [`Kinds`] is the provider that serves the kinds; [`start`] follows them into the authorizer's
//! index and runs the aggregation controller; then [`ensure_bootstrap_policy`] writes the
//! default roles.

pub mod aggregation;
pub mod authorizer;
pub mod bootstrap;
pub mod escalation;
pub mod index;
pub mod policy;
#[cfg(test)]
mod serving_tests;
pub mod strategy;
#[cfg(test)]
mod tests;
pub mod validation;

use std::sync::Arc;

pub use authorizer::RbacAuthorizer;
pub use bootstrap::ensure_bootstrap_policy;
pub use index::RbacKind;

use crate::Authorizer;
use strategy_host_registry::kinds::KindProvider;
use strategy_host_registry::{Registry, ResourceDefinition};

/// The definitions of the four kinds (schemas with descriptions for `kubectl explain`, and
/// kube-apiserver's table columns), read from `rbac_kinds.json`.
pub fn definitions() -> Vec<ResourceDefinition> {
    ResourceDefinition::builtins(include_str!("rbac_kinds.json"))
}

/// The four kinds, served with the strategy that refuses escalation: it asks `escalate` and
/// `bind` of the escalation authorizer (the server's authorizer chain; by default the RBAC
/// authorizer itself, which is the same under `--authorization-mode=RBAC` since
/// `system:masters` never needs it).
pub struct Kinds {
    authorizer: Arc<RbacAuthorizer>,
    escalation: Arc<dyn Authorizer>,
}

impl Kinds {
    /// The kinds `authorizer` decides by, asking `escalation_authorizer` (none: `authorizer`).
    pub fn new(
        authorizer: &Arc<RbacAuthorizer>,
        escalation_authorizer: Option<Arc<dyn Authorizer>>,
    ) -> Self {
        Self {
            authorizer: authorizer.clone(),
            escalation: escalation_authorizer.unwrap_or_else(|| authorizer.clone()),
        }
    }
}

impl KindProvider for Kinds {
    fn name(&self) -> &'static str {
        "rbac"
    }

    fn serve(&self, registry: &Arc<Registry>) {
        for (def, kind) in definitions().into_iter().zip(RbacKind::ALL) {
            debug_assert_eq!(def.plural, kind.plural());
            let strategy =
                strategy::RbacStrategy::new(kind, self.authorizer.clone(), self.escalation.clone());
            strategy.set_registry(registry);
            registry.serve_builtin(def, Arc::new(strategy));
        }
    }
}

/// Follows the kinds (served by [`Kinds`]) into `authorizer`'s index and starts the
/// aggregation controller. Call [`ensure_bootstrap_policy`] afterwards, and
/// [`RbacAuthorizer::wait_synced`] before serving requests.
pub fn start(registry: &Arc<Registry>, authorizer: &Arc<RbacAuthorizer>) {
    authorizer.follow(registry);
    aggregation::start(registry);
}
