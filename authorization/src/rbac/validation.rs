//! Defaulting and validation of the four RBAC kinds, with Kubernetes' field paths and messages
//! (`pkg/apis/rbac/v1/defaults.go`, `pkg/apis/rbac/validation/validation.go`).

use serde_json::Value;

use super::index::RbacKind;
use super::policy::{go_quote, role_ref_of, PolicyRule, RoleRef, GROUP};
use crate::strategy::{FieldError, FieldErrorKind};
use strategy_host_registry::names::{dns1123_subdomain_error, path_segment_name_error};

fn error(kind: FieldErrorKind, field: impl Into<String>, detail: impl Into<String>) -> FieldError {
    FieldError {
        kind,
        field: field.into(),
        detail: detail.into(),
    }
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`.
fn go_string_slice(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// `"x": supported values: "a", "b"`.
fn not_supported(field: String, value: &str, supported: &[&str]) -> FieldError {
    let listed: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    error(
        FieldErrorKind::NotSupported,
        field,
        format!(
            "{}: supported values: {}",
            go_quote(value),
            listed.join(", ")
        ),
    )
}

/// Kubernetes' v1 defaults: a binding's `roleRef.apiGroup` and its User and Group subjects'
/// `apiGroup` default to `rbac.authorization.k8s.io`.
pub fn apply_defaults(kind: RbacKind, obj: &mut Value) {
    if !kind.is_binding() {
        return;
    }
    if let Some(role_ref) = obj.get_mut("roleRef").and_then(Value::as_object_mut) {
        if role_ref
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            role_ref.insert("apiGroup".into(), GROUP.into());
        }
    }
    if let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) {
        for subject in subjects.iter_mut().filter_map(Value::as_object_mut) {
            let unset = subject
                .get("apiGroup")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            let kind = subject.get("kind").and_then(Value::as_str).unwrap_or("");
            if unset && (kind == "User" || kind == "Group") {
                subject.insert("apiGroup".into(), GROUP.into());
            }
        }
    }
}

/// The field errors of a new or changed object of `kind` (`old` for an update).
pub fn validate(kind: RbacKind, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = match kind {
        RbacKind::Role | RbacKind::ClusterRole => validate_role(kind, obj),
        RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => validate_binding(kind, obj),
    };
    if let (true, Some(old)) = (kind.is_binding(), old) {
        let (new_ref, old_ref) = (role_ref_of(obj), role_ref_of(old));
        if new_ref != old_ref {
            errors.push(error(
                FieldErrorKind::Invalid,
                "roleRef",
                format!("{}: cannot change roleRef", go_role_ref(&new_ref)),
            ));
        }
    }
    errors
}

/// Go's `%#v` of the internal RoleRef, as Kubernetes prints it in the immutability error.
fn go_role_ref(r: &RoleRef) -> String {
    format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
        go_quote(&r.api_group),
        go_quote(&r.kind),
        go_quote(&r.name)
    )
}

fn validate_role(kind: RbacKind, obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let rules = obj.get("rules").and_then(Value::as_array);
    for (i, raw) in rules.into_iter().flatten().enumerate() {
        let Ok(rule) = serde_json::from_value::<PolicyRule>(raw.clone()) else {
            // The schema reports the wrong types.
            continue;
        };
        errors.extend(validate_rule(
            &rule,
            kind.namespaced(),
            &format!("rules[{i}]"),
        ));
    }
    if kind == RbacKind::ClusterRole {
        if let Some(aggregation) = obj.get("aggregationRule").filter(|v| !v.is_null()) {
            errors.extend(validate_aggregation_rule(aggregation));
        }
    }
    errors
}

fn validate_rule(rule: &PolicyRule, namespaced: bool, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if rule.verbs.is_empty() {
        errors.push(error(
            FieldErrorKind::Required,
            format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    if !rule.non_resource_urls.is_empty() {
        let urls = go_string_slice(&rule.non_resource_urls);
        if namespaced {
            errors.push(error(
                FieldErrorKind::Invalid,
                format!("{path}.nonResourceURLs"),
                format!("{urls}: namespaced rules cannot apply to non-resource URLs"),
            ));
        }
        if !rule.api_groups.is_empty()
            || !rule.resources.is_empty()
            || !rule.resource_names.is_empty()
        {
            errors.push(error(
                FieldErrorKind::Invalid,
                format!("{path}.nonResourceURLs"),
                format!(
                    "{urls}: rules cannot apply to both regular resources and non-resource URLs"
                ),
            ));
        }
        return errors;
    }
    if rule.api_groups.is_empty() {
        errors.push(error(
            FieldErrorKind::Required,
            format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if rule.resources.is_empty() {
        errors.push(error(
            FieldErrorKind::Required,
            format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errors
}

fn validate_aggregation_rule(aggregation: &Value) -> Vec<FieldError> {
    let base = "aggregationRule.clusterRoleSelectors";
    let Some(selectors) = aggregation
        .get("clusterRoleSelectors")
        .and_then(Value::as_array)
        .filter(|selectors| !selectors.is_empty())
    else {
        return vec![error(
            FieldErrorKind::Required,
            base,
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        )];
    };
    let mut errors = Vec::new();
    for (i, selector) in selectors.iter().enumerate() {
        let expressions = selector.get("matchExpressions").and_then(Value::as_array);
        for (j, expr) in expressions.into_iter().flatten().enumerate() {
            let path = format!("{base}[{i}].matchExpressions[{j}]");
            let op = expr.get("operator").and_then(Value::as_str).unwrap_or("");
            let values = expr
                .get("values")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            match op {
                "In" | "NotIn" if values == 0 => errors.push(error(
                    FieldErrorKind::Required,
                    format!("{path}.values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                )),
                "Exists" | "DoesNotExist" if values > 0 => errors.push(error(
                    FieldErrorKind::Forbidden,
                    format!("{path}.values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )),
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                other => errors.push(error(
                    FieldErrorKind::Invalid,
                    format!("{path}.operator"),
                    format!("{}: not a valid selector operator", go_quote(other)),
                )),
            }
        }
    }
    errors
}

fn validate_binding(kind: RbacKind, obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let role_ref = role_ref_of(obj);
    if role_ref.api_group != GROUP {
        errors.push(not_supported(
            "roleRef.apiGroup".into(),
            &role_ref.api_group,
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if kind == RbacKind::RoleBinding {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&role_ref.kind.as_str()) {
        errors.push(not_supported("roleRef.kind".into(), &role_ref.kind, kinds));
    }
    if role_ref.name.is_empty() {
        errors.push(error(FieldErrorKind::Required, "roleRef.name", ""));
    } else if let Some(why) = path_segment_name_error(&role_ref.name) {
        errors.push(error(
            FieldErrorKind::Invalid,
            "roleRef.name",
            format!("{}: {why}", go_quote(&role_ref.name)),
        ));
    }
    let subjects = obj.get("subjects").and_then(Value::as_array);
    for (i, subject) in subjects.into_iter().flatten().enumerate() {
        errors.extend(validate_subject(
            subject,
            kind.namespaced(),
            &format!("subjects[{i}]"),
        ));
    }
    errors
}

fn validate_subject(subject: &Value, namespaced: bool, path: &str) -> Vec<FieldError> {
    let text = |f: &str| subject.get(f).and_then(Value::as_str).unwrap_or("");
    let (kind, name, api_group, namespace) = (
        text("kind"),
        text("name"),
        text("apiGroup"),
        text("namespace"),
    );
    let mut errors = Vec::new();
    if name.is_empty() {
        errors.push(error(FieldErrorKind::Required, format!("{path}.name"), ""));
    }
    match kind {
        "ServiceAccount" => {
            if let Some(why) = (!name.is_empty())
                .then(|| dns1123_subdomain_error(name))
                .flatten()
            {
                errors.push(error(
                    FieldErrorKind::Invalid,
                    format!("{path}.name"),
                    format!("{}: {why}", go_quote(name)),
                ));
            }
            if !api_group.is_empty() {
                errors.push(not_supported(format!("{path}.apiGroup"), api_group, &[""]));
            }
            if !namespaced && namespace.is_empty() {
                errors.push(error(
                    FieldErrorKind::Required,
                    format!("{path}.namespace"),
                    "",
                ));
            }
        }
        "User" | "Group" => {
            if name.is_empty() {
                let what = if kind == "User" { "user" } else { "group" };
                errors.push(error(
                    FieldErrorKind::Invalid,
                    format!("{path}.name"),
                    format!("\"\": {what} name cannot be empty"),
                ));
            }
            if api_group != GROUP {
                errors.push(not_supported(
                    format!("{path}.apiGroup"),
                    api_group,
                    &[GROUP],
                ));
            }
        }
        other => errors.push(not_supported(
            format!("{path}.kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors
            .iter()
            .map(|e| format!("{}: {:?}: {}", e.field, e.kind, e.detail))
            .collect()
    }

    #[test]
    fn rules_need_verbs_and_resources_or_urls() {
        let role = json!({"rules": [
            {"apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"], "resources": ["pods"]},
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "nonResourceURLs": ["/x"]}
        ]});
        let errors = validate(RbacKind::Role, &role, None);
        assert_eq!(
            messages(&errors),
            [
                "rules[0].verbs: Required: verbs must contain at least one value",
                "rules[1].apiGroups: Required: resource rules must supply at least one api group",
                "rules[2].nonResourceURLs: Invalid: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
                "rules[3].nonResourceURLs: Invalid: []string{\"/x\"}: namespaced rules cannot apply to non-resource URLs",
                "rules[3].nonResourceURLs: Invalid: []string{\"/x\"}: rules cannot apply to both regular resources and non-resource URLs",
            ]
        );
        let cluster = json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
                             "aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]}});
        assert_eq!(
            messages(&validate(RbacKind::ClusterRole, &cluster, None)),
            ["aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values: Required: must be specified when `operator` is 'In' or 'NotIn'"]
        );
    }

    #[test]
    fn bindings_check_role_ref_and_subjects() {
        let mut binding = json!({
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "ServiceAccount", "name": "builder"},
                {"kind": "Robot", "name": "x"}
            ]
        });
        apply_defaults(RbacKind::ClusterRoleBinding, &mut binding);
        assert_eq!(binding["roleRef"]["apiGroup"], GROUP);
        assert_eq!(binding["subjects"][0]["apiGroup"], GROUP);
        assert!(binding["subjects"][1].get("apiGroup").is_none());
        assert_eq!(
            messages(&validate(RbacKind::ClusterRoleBinding, &binding, None)),
            [
                "roleRef.kind: NotSupported: \"Role\": supported values: \"ClusterRole\"",
                "subjects[1].namespace: Required: ",
                "subjects[2].kind: NotSupported: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
            ]
        );
        // In a RoleBinding a service account defaults to the binding's namespace.
        assert_eq!(
            messages(&validate(RbacKind::RoleBinding, &binding, None)),
            ["subjects[2].kind: NotSupported: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\""]
        );
    }

    #[test]
    fn role_ref_is_immutable() {
        let old = json!({"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"}});
        let new = json!({"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "edit"}});
        assert_eq!(
            messages(&validate(RbacKind::RoleBinding, &new, Some(&old))),
            ["roleRef: Invalid: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"]
        );
        assert!(validate(RbacKind::RoleBinding, &old, Some(&old)).is_empty());
    }
}
