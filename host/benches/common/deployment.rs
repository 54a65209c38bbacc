//! What the strategy benchmarks share: the 1 KiB Deployment they create and its resource.

use serde_json::{json, Value};
use strategy_host::strategy::{ResourceInfo, StrategyContext};

/// A Deployment of 1 KiB (an annotation pads it).
pub(crate) fn object() -> Value {
    let mut obj = json!({
        "apiVersion": "apps.example.com/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "team": "storefront"},
                     "annotations": {"example.com/owner": "storefront-team@example.com"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web", "tier": "frontend"}},
                         "spec": {"containers": [{"name": "web", "image": "registry.example.com/storefront/web:1.25.3",
                                                   "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                                   "env": [{"name": "MODE", "value": "production"}]}]}}
        }
    });
    let len = obj.to_string().len();
    obj["metadata"]["annotations"]["example.com/padding"] = json!("x".repeat(1024 - len - 32));
    obj
}

/// The example Deployment resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo {
        group: "apps.example.com".into(),
        version: "v1".into(),
        kind: "Deployment".into(),
        plural: "deployments".into(),
        namespaced: true,
    }
}

/// The context of a create of the example Deployment, as the registry passes it.
pub(crate) fn context() -> StrategyContext {
    StrategyContext {
        resource: resource(),
        dry_run: false,
        request_id: String::new(),
        hook_depth: 0,
        user: Default::default(),
    }
}
