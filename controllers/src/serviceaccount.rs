//! The ServiceAccount controller (kube-controller-manager's `serviceaccount-controller`): every
//! active namespace has a ServiceAccount named `default`, made again when it is deleted. Pods
//! that name no account run as it, and clients wait for it before they create any.

use std::sync::Arc;

use serde_json::json;
use tokio::task::JoinSet;

use super::per_namespace::{self, Kept};
use strategy_host_registry::Registry;

/// The account every namespace has.
pub const DEFAULT_ACCOUNT: &str = "default";

/// Runs the controller over `registry` until the returned set is dropped.
pub fn start(registry: &Arc<Registry>) -> JoinSet<()> {
    per_namespace::start(
        registry,
        Kept {
            manager: "serviceaccount-controller",
            plural: "serviceaccounts",
            name: DEFAULT_ACCOUNT,
            wanted: Arc::new(|namespace| {
                json!({
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": DEFAULT_ACCOUNT, "namespace": namespace},
                })
            }),
            restore: None,
        },
    )
}
