//! The bootstrap policy: the ClusterRoles and ClusterRoleBindings Kubernetes ships
//! (`cluster-admin`, `admin`/`edit`/`view` and what aggregates into them, `system:discovery`,
//! `system:public-info-viewer`, `system:basic-user`, `system:service-account-issuer-discovery`)
//! and the Role `kube-system/extension-apiserver-authentication-reader`, limited to what this
//! server serves, kept in `bootstrap_policy.json`; created at start when
//! missing and reconciled as kube-apiserver's `rbac/bootstrap-roles` post-start hook does
//! (missing rules, selectors, subjects, labels and annotations added, unless
//! `rbac.authorization.kubernetes.io/autoupdate` is `"false"`).

use std::sync::Arc;

use serde_json::{json, Value};

use super::escalation::covers;
use super::policy::{rules_of, subjects_of, GROUP};
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::system_fields::meta_str;
use strategy_host_registry::Registry;

/// The annotation that, set to `"false"`, keeps reconciliation away from an object.
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// The field manager bootstrap writes are recorded under.
const FIELD_MANAGER: &str = "strategy-host";

fn policy() -> Value {
    serde_json::from_str(include_str!("bootstrap_policy.json"))
        .expect("bootstrap_policy.json is valid JSON")
}

/// The bootstrap ClusterRoles.
pub fn cluster_roles() -> Vec<Value> {
    policy()["clusterRoles"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The bootstrap Roles (each in its namespace).
pub fn namespaced_roles() -> Vec<Value> {
    policy()["roles"].as_array().cloned().unwrap_or_default()
}

/// The bootstrap ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    policy()["clusterRoleBindings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Adds `expected`'s labels and annotations that `existing` lacks (existing values win).
fn merge_metadata(existing: &mut Value, expected: &Value) {
    for field in ["labels", "annotations"] {
        let Some(wanted) = expected
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let meta = &mut existing["metadata"];
        if !meta[field].is_object() {
            meta[field] = json!({});
        }
        if let Some(map) = meta[field].as_object_mut() {
            for (k, v) in wanted {
                map.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
}

fn is_protected(existing: &Value) -> bool {
    strategy_host_registry::system_fields::annotation(existing, AUTOUPDATE_ANNOTATION)
        == Some("false")
}

/// The reconciled ClusterRole, or `None` when `existing` needs no change (or is protected).
pub fn reconcile_cluster_role(existing: &Value, expected: &Value) -> Option<Value> {
    if is_protected(existing) {
        return None;
    }
    let mut role = existing.clone();
    merge_metadata(&mut role, expected);
    let (_, missing) = covers(&rules_of(existing), &rules_of(expected));
    if !missing.is_empty() {
        let mut rules = existing
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        rules.extend(missing.iter().map(|r| json!(r)));
        role["rules"] = Value::Array(rules);
    }
    if let Some(wanted) = expected.pointer("/aggregationRule/clusterRoleSelectors") {
        let wanted = wanted.as_array().cloned().unwrap_or_default();
        let mut selectors = existing
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for s in wanted {
            if !selectors.contains(&s) {
                selectors.push(s);
            }
        }
        role["aggregationRule"] = json!({ "clusterRoleSelectors": selectors });
    }
    (role != *existing).then_some(role)
}

/// The reconciled ClusterRoleBinding (missing subjects added), or `None` for no change.
pub fn reconcile_cluster_role_binding(existing: &Value, expected: &Value) -> Option<Value> {
    if is_protected(existing) {
        return None;
    }
    let mut binding = existing.clone();
    merge_metadata(&mut binding, expected);
    let have = subjects_of(existing);
    let mut subjects = existing
        .get("subjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (s, raw) in subjects_of(expected).iter().zip(
        expected
            .get("subjects")
            .and_then(Value::as_array)
            .into_iter()
            .flatten(),
    ) {
        if !have.contains(s) {
            subjects.push(raw.clone());
        }
    }
    binding["subjects"] = Value::Array(subjects);
    if existing.get("roleRef") != expected.get("roleRef") {
        let name = meta_str(existing, "name").unwrap_or("");
        tracing::warn!(
            clusterrolebinding = %name,
            "bootstrap binding refers to another role; left as it is"
        );
    }
    (binding != *existing).then_some(binding)
}

/// Creates `expected` when it is missing, or writes what `reconcile` makes of it when that
/// differs, as the server.
async fn ensure(
    client: &Client,
    plural: &str,
    expected: Value,
    reconcile: fn(&Value, &Value) -> Option<Value>,
) {
    let name = meta_str(&expected, "name").unwrap_or_default().to_string();
    let target = ObjectRef::new(GROUP, "v1", plural, meta_str(&expected, "namespace"), &name);
    match client.get(&target).await {
        Ok(None) => match client
            .create(GROUP, "v1", plural, target.namespace.as_deref(), expected)
            .await
        {
            Ok(_) => tracing::info!(%plural, %name, "created bootstrap RBAC object"),
            Err(e) if e.is_already_exists() => {}
            Err(e) => {
                tracing::warn!(%plural, %name, error = %e, "could not create bootstrap RBAC object")
            }
        },
        Err(e) => {
            tracing::warn!(%plural, %name, error = %e, "could not read bootstrap RBAC object")
        }
        Ok(Some(existing)) => {
            if reconcile(&existing, &expected).is_none() {
                return;
            }
            let uid = meta_str(&existing, "uid").unwrap_or_default().to_string();
            let reconciled = client
                .update(&target, &uid, None, move |current| {
                    match reconcile(current, &expected) {
                        Some(object) => {
                            *current = object;
                            true
                        }
                        None => false,
                    }
                })
                .await;
            match reconciled {
                Ok(()) => tracing::info!(%plural, %name, "reconciled bootstrap RBAC object"),
                Err(e) => {
                    tracing::warn!(%plural, %name, error = %e, "could not reconcile bootstrap RBAC object")
                }
            }
        }
    }
}

/// Creates the bootstrap ClusterRoles and ClusterRoleBindings that are missing and reconciles
/// those that exist, as the server. Failures are logged; the server starts anyway.
pub async fn ensure_bootstrap_policy(registry: &Arc<Registry>) {
    let served = |plural| registry.resolve(GROUP, "v1", plural).is_some();
    if !served("clusterroles") || !served("clusterrolebindings") {
        tracing::warn!("RBAC kinds not served; no bootstrap policy");
        return;
    }
    let client = Client::new(registry, FIELD_MANAGER);
    for role in cluster_roles() {
        ensure(&client, "clusterroles", role, reconcile_cluster_role).await;
    }
    for binding in cluster_role_bindings() {
        ensure(
            &client,
            "clusterrolebindings",
            binding,
            reconcile_cluster_role_binding,
        )
        .await;
    }
    if served("roles") {
        for role in namespaced_roles() {
            ensure(&client, "roles", role, reconcile_cluster_role).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::index::RbacKind;
    use crate::rbac::validation::validate;

    fn named<'a>(objects: &'a [Value], name: &str) -> &'a Value {
        objects
            .iter()
            .find(|o| o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing"))
    }

    #[test]
    fn the_policy_has_kubernetes_roles_and_bindings_and_is_valid() {
        let roles = cluster_roles();
        let bindings = cluster_role_bindings();
        for role in &roles {
            assert!(
                validate(RbacKind::ClusterRole, role, None).is_empty(),
                "{role}"
            );
            assert_eq!(
                role["metadata"]["labels"]["kubernetes.io/bootstrapping"],
                "rbac-defaults"
            );
            assert_eq!(
                role["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
                "true"
            );
        }
        for binding in &bindings {
            assert!(validate(RbacKind::ClusterRoleBinding, binding, None).is_empty());
            let role = binding["roleRef"]["name"].as_str().unwrap();
            named(&roles, role);
        }
        assert_eq!(
            named(&roles, "cluster-admin")["rules"][0]["verbs"],
            json!(["*"])
        );
        assert_eq!(
            named(&bindings, "cluster-admin")["subjects"][0]["name"],
            "system:masters"
        );
        assert_eq!(
            named(&bindings, "system:public-info-viewer")["subjects"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        let discovery = &named(&roles, "system:discovery")["rules"][0]["nonResourceURLs"];
        for url in [
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
            "/healthz",
            "/version",
            "/openapi/*",
        ] {
            assert!(discovery.as_array().unwrap().contains(&json!(url)), "{url}");
        }
        assert_eq!(
            named(&roles, "edit")["metadata"]["labels"]
                ["rbac.authorization.k8s.io/aggregate-to-admin"],
            "true"
        );
        // Secrets are readable through edit, never through view.
        let view = serde_json::to_string(named(&roles, "system:aggregate-to-view")).unwrap();
        assert!(!view.contains("secrets"));
        let edit = serde_json::to_string(named(&roles, "system:aggregate-to-edit")).unwrap();
        assert!(edit.contains("serviceaccounts/token") && edit.contains("secrets"));
    }

    #[test]
    fn reconciliation_adds_what_is_missing_unless_protected() {
        let expected = named(&cluster_roles(), "system:basic-user").clone();
        let mut existing = expected.clone();
        existing["rules"] = json!([{"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"]}]);
        existing["metadata"]["labels"] = json!({"mine": "yes"});
        let reconciled = reconcile_cluster_role(&existing, &expected).unwrap();
        assert_eq!(reconciled["metadata"]["labels"]["mine"], "yes");
        assert_eq!(
            reconciled["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
        let (covered, _) = covers(&rules_of(&reconciled), &rules_of(&expected));
        assert!(covered);
        assert!(reconcile_cluster_role(&reconciled, &expected).is_none());
        existing["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = json!("false");
        assert!(reconcile_cluster_role(&existing, &expected).is_none());

        let expected = named(&cluster_role_bindings(), "system:public-info-viewer").clone();
        let mut existing = expected.clone();
        existing["subjects"] = json!([{"apiGroup": GROUP, "kind": "Group", "name": "system:unauthenticated"}, {"apiGroup": GROUP, "kind": "User", "name": "extra"}]);
        let reconciled = reconcile_cluster_role_binding(&existing, &expected).unwrap();
        assert_eq!(reconciled["subjects"].as_array().unwrap().len(), 3);
        assert!(reconcile_cluster_role_binding(&reconciled, &expected).is_none());
    }
}
