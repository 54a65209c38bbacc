//! ClusterRole aggregation (Kubernetes' clusterrole-aggregation controller): a ClusterRole with
//! `aggregationRule.clusterRoleSelectors` gets as `rules` the union of the rules of every other
//! ClusterRole a selector matches, written back into the stored object whenever they differ.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use futures::StreamExt as _;
use serde_json::{json, Value};

use super::policy::{rules_of, PolicyRule, GROUP};
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::{EventStreamExt as _, Writer};
pub use strategy_host_registry::labels::selector_matches;
use strategy_host_registry::system_fields::meta_str;
use strategy_host_registry::Registry;

/// The field manager aggregated rules are written under.
pub const FIELD_MANAGER: &str = "clusterrole-aggregation-controller";

/// What the controller knows of one ClusterRole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterRoleView {
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its aggregation selectors (`None`: not aggregated).
    pub selectors: Option<Vec<Value>>,
    /// Its rules.
    pub rules: Vec<PolicyRule>,
}

impl ClusterRoleView {
    /// Reads a stored ClusterRole.
    pub fn from_object(obj: &Value) -> Self {
        let labels = strategy_host_registry::labels::labels_of(obj);
        let selectors = obj
            .get("aggregationRule")
            .filter(|v| !v.is_null())
            .map(|a| {
                a.get("clusterRoleSelectors")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            });
        Self {
            labels,
            selectors,
            rules: rules_of(obj),
        }
    }
}

/// The rules the aggregated role `name` should have: for each selector in turn, the rules of the
/// other matching roles in name order, each rule once.
pub fn aggregated_rules(
    name: &str,
    selectors: &[Value],
    roles: &BTreeMap<String, ClusterRoleView>,
) -> Vec<PolicyRule> {
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in selectors {
        for (other, view) in roles {
            if other == name || !selector_matches(selector, &view.labels) {
                continue;
            }
            for rule in &view.rules {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    rules
}

/// The aggregated roles whose rules differ from what their selectors gather: (name, rules).
pub fn stale_roles(roles: &BTreeMap<String, ClusterRoleView>) -> Vec<(String, Vec<PolicyRule>)> {
    roles
        .iter()
        .filter_map(|(name, view)| {
            let selectors = view.selectors.as_ref()?;
            let wanted = aggregated_rules(name, selectors, roles);
            (wanted != view.rules).then(|| (name.clone(), wanted))
        })
        .collect()
}

/// Follows ClusterRoles through the registry-level watch and keeps aggregated ones current,
/// until the registry is dropped.
pub fn start(registry: &Arc<Registry>) {
    let Some(served) = registry.resolve(GROUP, "v1", "clusterroles") else {
        return;
    };
    let weak: Weak<Registry> = Arc::downgrade(registry);
    let client = Client::new(registry, FIELD_MANAGER);
    let mut changes = Box::pin(served.follow("v1").reflect_changes(Writer::new()));
    tokio::spawn(async move {
        while let Some(store) = changes.next().await {
            if weak.strong_count() == 0 {
                return;
            }
            let roles: BTreeMap<String, ClusterRoleView> = store
                .by_key()
                .iter()
                .map(|(name, role)| (name.clone(), ClusterRoleView::from_object(role)))
                .collect();
            for (name, rules) in stale_roles(&roles) {
                let uid = store
                    .get(None, &name)
                    .and_then(|role| meta_str(&role, "uid").map(String::from))
                    .unwrap_or_default();
                write_rules(&client, &name, &uid, rules).await;
            }
        }
    });
}

/// Writes `rules` into the ClusterRole `name` (of `uid`) as the server (so no escalation check
/// applies).
async fn write_rules(client: &Client, name: &str, uid: &str, rules: Vec<PolicyRule>) {
    let rules = json!(rules);
    let target = ObjectRef::new(GROUP, "v1", "clusterroles", None, name);
    let written = client
        .update(&target, uid, None, move |role| {
            role["rules"] = rules.clone();
            true
        })
        .await;
    match written {
        Ok(()) => tracing::info!(clusterrole = %name, "aggregated rules updated"),
        Err(e) => {
            tracing::warn!(clusterrole = %name, error = %e, "could not write aggregated rules")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(labels: &[(&str, &str)], selectors: Option<Value>, rules: &[&str]) -> ClusterRoleView {
        ClusterRoleView {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            selectors: selectors.map(|s| s.as_array().unwrap().clone()),
            rules: rules
                .iter()
                .map(|r| PolicyRule {
                    verbs: vec!["get".into()],
                    api_groups: vec!["".into()],
                    resources: vec![r.to_string()],
                    ..PolicyRule::default()
                })
                .collect(),
        }
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let labels: BTreeMap<String, String> = [("tier".to_string(), "web".to_string())]
            .into_iter()
            .collect();
        assert!(selector_matches(&json!({}), &labels));
        assert!(selector_matches(
            &json!({"matchLabels": {"tier": "web"}}),
            &labels
        ));
        assert!(!selector_matches(
            &json!({"matchLabels": {"tier": "db"}}),
            &labels
        ));
        let expr = |op: &str, values: Value| json!({"matchExpressions": [{"key": "tier", "operator": op, "values": values}]});
        assert!(selector_matches(&expr("In", json!(["a", "web"])), &labels));
        assert!(!selector_matches(&expr("NotIn", json!(["web"])), &labels));
        assert!(selector_matches(&expr("Exists", json!([])), &labels));
        assert!(!selector_matches(&expr("DoesNotExist", json!([])), &labels));
        assert!(!selector_matches(&expr("Bogus", json!([])), &labels));
    }

    #[test]
    fn aggregated_roles_gather_the_rules_of_matching_roles_in_chains() {
        let to_admin = json!([{"matchLabels": {"aggregate-to-admin": "true"}}]);
        let to_edit = json!([{"matchLabels": {"aggregate-to-edit": "true"}}]);
        let mut roles = BTreeMap::new();
        roles.insert("admin".to_string(), view(&[], Some(to_admin), &[]));
        roles.insert(
            "edit".to_string(),
            view(&[("aggregate-to-admin", "true")], Some(to_edit), &[]),
        );
        roles.insert(
            "a-to-edit".to_string(),
            view(
                &[("aggregate-to-edit", "true")],
                None,
                &["secrets", "configmaps"],
            ),
        );
        roles.insert(
            "b-to-admin".to_string(),
            view(
                &[("aggregate-to-admin", "true")],
                None,
                &["roles", "secrets"],
            ),
        );
        roles.insert("other".to_string(), view(&[], None, &["leases"]));
        // First pass: edit gathers its role; admin gathers what edit has so far (nothing).
        let stale = stale_roles(&roles);
        let names: Vec<&str> = stale.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["admin", "edit"]);
        for (name, rules) in stale {
            roles.get_mut(&name).unwrap().rules = rules;
        }
        // Second pass: admin now sees edit's rules too, each once; then nothing is stale.
        for (name, rules) in stale_roles(&roles) {
            roles.get_mut(&name).unwrap().rules = rules;
        }
        let resources = |name: &str| -> Vec<String> {
            roles[name]
                .rules
                .iter()
                .map(|r| r.resources[0].clone())
                .collect()
        };
        assert_eq!(resources("edit"), ["secrets", "configmaps"]);
        assert_eq!(resources("admin"), ["roles", "secrets", "configmaps"]);
        assert!(stale_roles(&roles).is_empty());
    }
}
