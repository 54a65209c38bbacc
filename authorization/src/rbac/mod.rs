//! RBAC: the `rbac.authorization.k8s.io/v1` kinds (Roles, ClusterRoles, RoleBindings,
//! ClusterRoleBindings) served with their own strategy, the authorizer that decides by them,
//! ClusterRole aggregation, and the bootstrap policy.
//!
//! [`start`] wires it all: serve the kinds, follow them into the authorizer's index, run the
//! aggregation controller; then [`ensure_bootstrap_policy`] writes the default roles.

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

use crate::registry::{Registry, ResourceDefinition};
use crate::Authorizer;

/// The definitions of the four kinds (schemas with descriptions for `kubectl explain`, and
/// kube-apiserver's table columns), read from `rbac_kinds.json`.
pub fn definitions() -> Vec<ResourceDefinition> {
    ResourceDefinition::builtins(include_str!("rbac_kinds.json"))
}

/// Serves the four kinds on `registry` with their strategy, starts the authorizer's index and
/// the aggregation controller, and returns the authorizer. `escalation_authorizer` is what
/// `escalate` and `bind` are asked of (the server's authorizer chain); `None` asks RBAC itself,
/// which is the same under `--authorization-mode=RBAC` since `system:masters` never needs it.
/// Call [`ensure_bootstrap_policy`] afterwards, and [`RbacAuthorizer::wait_synced`] before
/// serving requests.
pub fn start(
    registry: &Arc<Registry>,
    escalation_authorizer: Option<Arc<dyn Authorizer>>,
) -> Arc<RbacAuthorizer> {
    let rbac = Arc::new(RbacAuthorizer::default());
    let asked: Arc<dyn Authorizer> = escalation_authorizer.unwrap_or_else(|| rbac.clone());
    for (def, kind) in definitions().into_iter().zip(RbacKind::ALL) {
        debug_assert_eq!(def.plural, kind.plural());
        let strategy = strategy::RbacStrategy::new(kind, rbac.clone(), asked.clone());
        strategy.set_registry(registry);
        registry.serve_builtin(def, Arc::new(strategy));
    }
    rbac.follow(registry);
    aggregation::start(registry);
    rbac
}
