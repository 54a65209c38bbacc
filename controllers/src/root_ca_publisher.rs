//! The root CA publisher (kube-controller-manager's `root-ca-certificate-publisher-controller`):
//! every active namespace has a ConfigMap `kube-root-ca.crt` whose `ca.crt` is the CA bundle
//! that verifies this server's serving certificate, so a pod reaches the API at
//! `kubernetes.default.svc` with a projected token volume and no other setup. A deleted or
//! changed one is put back.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::task::JoinSet;

use super::per_namespace::{self, Kept};
use strategy_host_registry::system_fields::annotation;
use strategy_host_registry::Registry;

/// The ConfigMap every namespace has.
pub const CONFIG_MAP: &str = "kube-root-ca.crt";
/// Its annotation saying what it is for.
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "The CA bundle that verifies the API server's serving certificate, \
    for clients inside the cluster that reach it through kubernetes.default.svc or the \
    kubernetes Service's IP.";

/// Runs the controller over `registry`, publishing `ca` (PEM), until the returned set is
/// dropped.
pub fn start(registry: &Arc<Registry>, ca: String) -> JoinSet<()> {
    let data = json!({"ca.crt": ca});
    let wanted_data = data.clone();
    per_namespace::start(
        registry,
        Kept {
            manager: "root-ca-certificate-publisher",
            plural: "configmaps",
            name: CONFIG_MAP,
            wanted: Arc::new(move |namespace| {
                json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": CONFIG_MAP,
                        "namespace": namespace,
                        "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
                    },
                    "data": wanted_data,
                })
            }),
            restore: Some(Arc::new(move |object| restore(object, &data))),
        },
    )
}

/// Puts `data` and the description back into `object`; `false` when both are there.
fn restore(object: &mut Value, data: &Value) -> bool {
    let described = annotation(object, DESCRIPTION_ANNOTATION).is_some_and(|d| !d.is_empty());
    if object["data"] == *data && described {
        return false;
    }
    object["data"] = data.clone();
    let metadata = &mut object["metadata"];
    if !metadata["annotations"].is_object() {
        metadata["annotations"] = json!({});
    }
    metadata["annotations"][DESCRIPTION_ANNOTATION] = json!(DESCRIPTION);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_or_undescribed_config_map_is_restored() {
        let data = json!({"ca.crt": "PEM"});
        let mut kept = json!({
            "metadata": {"annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
            "data": data,
        });
        assert!(!restore(&mut kept, &data), "already as it should be");
        let mut changed =
            json!({"metadata": {"name": CONFIG_MAP}, "data": {"ca.crt": "other", "x": "y"}});
        assert!(restore(&mut changed, &data));
        assert_eq!(changed["data"], data);
        assert_eq!(
            changed["metadata"]["annotations"][DESCRIPTION_ANNOTATION],
            DESCRIPTION
        );
        assert!(!restore(&mut changed, &data));
    }
}
