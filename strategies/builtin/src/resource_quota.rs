//! Core `v1` ResourceQuotas, checked as Kubernetes checks them: every limit names a resource
//! quota knows (a standard name, or a qualified one such as `count/widgets.example.com`) with a
//! non-negative quantity, whole for the object counts; scopes are Kubernetes' own, never both
//! `Terminating` and `NotTerminating`, and apply only to what a pod uses. Quantities are stored
//! in their canonical form (`1000` as `1k`, a JSON number as a string).

use serde_json::Value;
use strategy_guest_sdk::{FieldError, FieldPath};
use strategy_host_quantity::{names, Quantity};

use super::KindStrategy;

/// The scopes Kubernetes 1.36 knows.
const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];

/// The scope selector's operators.
const OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist"];

pub(crate) struct ResourceQuotas;

impl KindStrategy for ResourceQuotas {
    fn reads(&self) -> Option<&'static [&'static str]> {
        Some(&["spec", "status"])
    }

    fn prepares(&self) -> bool {
        true
    }

    fn prepare(&self, obj: &mut Value) {
        for list in ["/spec/hard", "/status/hard", "/status/used"] {
            if let Some(Value::Object(limits)) = obj.pointer_mut(list) {
                for value in limits.values_mut() {
                    if let Some(q) = quantity(value) {
                        *value = Value::String(q.to_string());
                    }
                }
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let spec = FieldPath::new("spec");
        let mut errs = resource_list(&obj["spec"]["hard"], &spec.child("hard"));
        errs.extend(scopes(&obj["spec"], &spec));
        let status = FieldPath::new("status");
        errs.extend(resource_list(&obj["status"]["hard"], &status.child("hard")));
        errs.extend(resource_list(&obj["status"]["used"], &status.child("used")));
        errs
    }
}

/// The quantity a limit holds: a string in quantity form or a JSON number.
fn quantity(value: &Value) -> Option<Quantity> {
    match value {
        Value::String(s) => Quantity::parse(s).ok(),
        Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
        _ => None,
    }
}

/// The errors of a `ResourceList` of quota limits (`spec.hard`, `status.used`, ...).
fn resource_list(list: &Value, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(limits) = list.as_object() else {
        return errs;
    };
    for (name, value) in limits {
        let at = path.key(name);
        if !name.contains('/') && !names::is_standard(name) {
            errs.push(FieldError::invalid(
                &at,
                name.as_str(),
                "must be a standard resource for quota",
            ));
        } else if let Some(problem) = qualified_name_problem(name) {
            errs.push(FieldError::invalid(&at, name.as_str(), problem));
        }
        let Some(q) = quantity(value) else {
            errs.push(FieldError::invalid(
                &at,
                value.clone(),
                strategy_host_quantity::QuantityError::Format.to_string(),
            ));
            continue;
        };
        if q.is_negative() {
            errs.push(FieldError::invalid(
                &at,
                q.to_string(),
                "must be greater than or equal to 0",
            ));
        } else if names::is_integer(name) && q.milli_value() % 1000 != 0 {
            errs.push(FieldError::invalid(
                &at,
                q.to_string(),
                "must be an integer",
            ));
        }
    }
    errs
}

/// Why `name` is not a qualified name (`[prefix/]name`, the name of at most 63 alphanumerics,
/// `-`, `_` and `.`, starting and ending alphanumeric), if it is not.
fn qualified_name_problem(name: &str) -> Option<&'static str> {
    let local = name.rsplit_once('/').map_or(name, |(_, local)| local);
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let ok = !local.is_empty()
        && local.len() <= 63
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && edge_ok(local.chars().next())
        && edge_ok(local.chars().last());
    (!ok).then_some("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character")
}

/// The errors of a quota's `scopes` and `scopeSelector`.
fn scopes(spec: &Value, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let listed: Vec<&str> = spec["scopes"]
        .as_array()
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut named = Vec::new();
    for scope in &listed {
        if !SCOPES.contains(scope) {
            errs.push(FieldError::invalid(
                &path.child("scopes"),
                *scope,
                "unsupported scope",
            ));
        }
        named.push(*scope);
    }
    let selector = path.child("scopeSelector").child("matchExpressions");
    let expressions = spec["scopeSelector"]["matchExpressions"].as_array();
    for (i, expr) in expressions.into_iter().flatten().enumerate() {
        let at = selector.index(i);
        let scope = expr["scopeName"].as_str().unwrap_or_default();
        if !SCOPES.contains(&scope) {
            errs.push(FieldError::invalid(
                &at.child("scopeName"),
                scope,
                "unsupported scope",
            ));
        }
        named.push(scope);
        let operator = expr["operator"].as_str().unwrap_or_default();
        let values = expr["values"].as_array().map_or(0, Vec::len);
        match operator {
            "In" | "NotIn" if values == 0 => errs.push(FieldError::required(
                &at.child("values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "Exists" | "DoesNotExist" if values != 0 => errs.push(FieldError::invalid(
                &at.child("values"),
                expr["values"].clone(),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::not_supported(
                &at.child("operator"),
                other,
                OPERATORS,
            )),
        }
    }
    let has = |s: &str| named.contains(&s);
    if (has("Terminating") && has("NotTerminating")) || (has("BestEffort") && has("NotBestEffort"))
    {
        errs.push(FieldError::invalid(
            &path.child("scopes"),
            listed.join(", "),
            "conflicting scopes",
        ));
    }
    if !named.is_empty() {
        for name in spec["hard"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            if !named.iter().all(|scope| scope_applies(scope, name)) {
                errs.push(FieldError::invalid(
                    &path.child("hard").key(name),
                    name.as_str(),
                    "unsupported scope applied to resource",
                ));
            }
        }
    }
    errs
}

/// Whether a quota scoped by `scope` may limit `resource` (scopes select pods, or for
/// `VolumeAttributesClass` claims).
fn scope_applies(scope: &str, resource: &str) -> bool {
    let pod_compute = matches!(
        resource,
        "pods" | "cpu" | "memory" | "ephemeral-storage" | "count/pods"
    ) || resource.starts_with("requests.")
        || resource.starts_with("limits.")
        || resource.starts_with("hugepages-")
        || resource.starts_with("requests.hugepages-");
    match scope {
        "BestEffort" => matches!(resource, "pods" | "count/pods"),
        "VolumeAttributesClass" => matches!(
            resource,
            "persistentvolumeclaims" | "count/persistentvolumeclaims" | "requests.storage"
        ),
        _ => pod_compute,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors(obj: Value) -> Vec<String> {
        ResourceQuotas
            .validate(&obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn the_e2e_suites_quota_is_valid() {
        let quota = json!({"spec": {"hard": {
            "pods": "5", "services": "10", "services.nodeports": "1", "cpu": "1", "memory": "500Mi",
            "requests.storage": "10Gi", "ephemeral-storage": "50Gi",
            "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "10",
            "count/replicasets.apps": "5", "requests.example.com/dongle": "3"}}});
        assert_eq!(errors(quota), Vec::<String>::new());
    }

    #[test]
    fn limits_are_named_for_quota_non_negative_and_whole_where_they_count() {
        let quota = json!({"spec": {"hard": {"widgets": "1", "cpu": "-1", "pods": "1.5", "secrets": "x"}},
                           "status": {"used": {"configmaps": "500m"}}});
        assert_eq!(
            errors(quota),
            [
                r#"spec.hard[cpu]: Invalid value: "-1": must be greater than or equal to 0"#,
                r#"spec.hard[pods]: Invalid value: "1500m": must be an integer"#,
                r#"spec.hard[secrets]: Invalid value: "x": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"#,
                r#"spec.hard[widgets]: Invalid value: "widgets": must be a standard resource for quota"#,
                r#"status.used[configmaps]: Invalid value: "500m": must be an integer"#,
            ]
        );
    }

    #[test]
    fn scopes_are_kubernetes_own_and_select_only_what_they_can() {
        let quota = json!({"spec": {"hard": {"pods": "1", "secrets": "1"},
            "scopes": ["Terminating", "NotTerminating", "Sometimes"]}});
        assert_eq!(
            errors(quota),
            [
                r#"spec.scopes: Invalid value: "Sometimes": unsupported scope"#,
                r#"spec.scopes: Invalid value: "Terminating, NotTerminating, Sometimes": conflicting scopes"#,
                r#"spec.hard[secrets]: Invalid value: "secrets": unsupported scope applied to resource"#,
            ]
        );
        let selector = json!({"spec": {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In"},
            {"scopeName": "BestEffort", "operator": "Exists", "values": ["x"]},
            {"scopeName": "BestEffort", "operator": "Near"}]}}});
        assert_eq!(errors(selector).len(), 3);
    }

    #[test]
    fn quantities_are_stored_canonical_and_numbers_become_strings() {
        let mut quota =
            json!({"spec": {"hard": {"pods": 5, "configmaps": "1000", "memory": "1024Mi"}}});
        ResourceQuotas.prepare(&mut quota);
        assert_eq!(
            quota,
            json!({"spec": {"hard": {"pods": "5", "configmaps": "1k", "memory": "1Gi"}}})
        );
    }
}
