//! Which writes an admission rule names (`RuleWithOperations` of webhooks and policies):
//! operations, API groups, versions (with `matchPolicy: Equivalent`, any version of the same
//! resource), resources and subresources (`*`, `res/*`, `*/sub`), and scope; and the
//! `MatchResources` that gathers rules with namespace and object selectors (no `resourceRules`
//! constrains nothing, as in Kubernetes' matcher: a binding narrows its policy's
//! `matchConstraints`, it does not replace them).

use serde_json::Value;

use strategy_host_registry::admission::AdmissionRequest;
use strategy_host_registry::labels::{labels_of, selector_matches};

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    operations: Vec<String>,
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    resources: Vec<String>,
    scope: String,
}

/// The strings of `v[field]`.
pub fn strings(v: &Value, field: &str) -> Vec<String> {
    strategy_host_registry::system_fields::strings_at(v, &format!("/{field}"))
}

impl Rule {
    /// The rules of a `rules` / `resourceRules` list.
    pub fn list(rules: Option<&Value>) -> Vec<Self> {
        rules
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(Self::parse).collect())
            .unwrap_or_default()
    }

    fn parse(r: &Value) -> Self {
        Self {
            operations: strings(r, "operations"),
            api_groups: strings(r, "apiGroups"),
            api_versions: strings(r, "apiVersions"),
            resources: strings(r, "resources"),
            scope: r
                .get("scope")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or("*")
                .to_string(),
        }
    }

    /// Whether the rule names `operation` (`CREATE`, `UPDATE`, `DELETE`; `*` names all).
    pub fn names_operation(&self, operation: &str) -> bool {
        self.operations.iter().any(|o| o == "*" || o == operation)
    }

    /// Whether the rule names the request's operation and resource (`equivalent`: another
    /// version of the same resource matches too).
    pub fn matches(&self, request: &AdmissionRequest<'_>, equivalent: bool) -> bool {
        let operation = request.operation.as_str();
        let def = request.resource;
        let has = |list: &[String], value: &str| list.iter().any(|v| v == "*" || v == value);
        let resource_named =
            self.resources
                .iter()
                .any(|r| match (r.split_once('/'), request.subresource) {
                    (Some((res, sub)), Some(want_sub)) => {
                        (res == "*" || res == def.plural) && (sub == "*" || sub == want_sub)
                    }
                    (Some(_), None) => false,
                    (None, None) => r == "*" || *r == def.plural,
                    (None, Some(_)) => false,
                });
        let scoped = match self.scope.as_str() {
            "Cluster" => !def.namespaced,
            "Namespaced" => def.namespaced,
            _ => true,
        };
        let version_ok = has(&self.api_versions, request.version)
            || (equivalent && !self.api_versions.is_empty());
        self.names_operation(operation)
            && has(&self.api_groups, &def.group)
            && version_ok
            && resource_named
            && scoped
    }
}

/// Which writes a policy, binding or policy module is about (Kubernetes' `MatchResources`): the
/// rules name them and no exclusion does, the namespace and object selectors select them.
#[derive(Debug, Clone)]
pub struct MatchResources {
    rules: Vec<Rule>,
    exclude: Vec<Rule>,
    namespace_selector: Value,
    object_selector: Value,
    equivalent: bool,
}

impl MatchResources {
    /// Reads a `MatchResources` object.
    pub fn parse(m: &Value) -> Self {
        Self {
            rules: Rule::list(m.get("resourceRules")),
            exclude: Rule::list(m.get("excludeResourceRules")),
            namespace_selector: m.get("namespaceSelector").cloned().unwrap_or(Value::Null),
            object_selector: m.get("objectSelector").cloned().unwrap_or(Value::Null),
            equivalent: m.get("matchPolicy").and_then(Value::as_str) != Some("Exact"),
        }
    }

    /// Whether it names resources (`resourceRules`): a policy's `matchConstraints` must, a
    /// binding's `matchResources` need not.
    pub fn names_resources(&self) -> bool {
        !self.rules.is_empty()
    }

    /// Whether the write matches; `namespace` is the object's namespace, when it has one. No
    /// `resourceRules` does not constrain which resources match.
    pub fn matches(&self, request: &AdmissionRequest<'_>, namespace: Option<&Value>) -> bool {
        let named = (self.rules.is_empty()
            || self
                .rules
                .iter()
                .any(|r| r.matches(request, self.equivalent)))
            && !self
                .exclude
                .iter()
                .any(|r| r.matches(request, self.equivalent));
        let empty = |s: &Value| s.is_null() || s.as_object().is_some_and(|m| m.is_empty());
        let namespace_ok = empty(&self.namespace_selector)
            || namespace
                .is_none_or(|ns| selector_matches(&self.namespace_selector, &labels_of(ns)));
        let object_ok = empty(&self.object_selector)
            || selector_matches(&self.object_selector, &labels_of(request.object))
            || request
                .old_object
                .is_some_and(|o| selector_matches(&self.object_selector, &labels_of(o)));
        named && namespace_ok && object_ok
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::user::UserInfo;
    use strategy_host_registry::admission::Operation;
    use strategy_host_registry::definition::ResourceDefinition;

    fn configmaps() -> ResourceDefinition {
        ResourceDefinition::builtin_kinds()
            .into_iter()
            .find(|d| d.plural == "configmaps")
            .unwrap()
    }

    /// Whether `matching` matches the create of a ConfigMap labelled `object_labels` in a
    /// namespace labelled `namespace_labels`.
    fn matches(matching: Value, object_labels: Value, namespace_labels: Value) -> bool {
        let def = configmaps();
        let object =
            json!({"metadata": {"name": "c", "namespace": "test", "labels": object_labels}});
        let namespace = json!({"metadata": {"name": "test", "labels": namespace_labels}});
        let request = AdmissionRequest {
            operation: Operation::Create,
            resource: &def,
            version: "v1",
            subresource: None,
            namespace: Some("test"),
            name: "c",
            object: &object,
            old_object: None,
            user: &UserInfo::default(),
            dry_run: false,
            audit: None,
        };
        MatchResources::parse(&matching).matches(&request, Some(&namespace))
    }

    #[test]
    fn without_resource_rules_only_the_selectors_constrain() {
        let env_test = json!({"matchLabels": {"environment": "test"}});
        let by_namespace = json!({"namespaceSelector": env_test});
        assert!(matches(
            by_namespace.clone(),
            json!({}),
            json!({"environment": "test"})
        ));
        assert!(!matches(
            by_namespace,
            json!({}),
            json!({"environment": "prod"})
        ));
        let by_object = json!({"objectSelector": env_test});
        assert!(matches(
            by_object.clone(),
            json!({"environment": "test"}),
            json!({})
        ));
        assert!(!matches(by_object, json!({}), json!({})));
        assert!(matches(json!({}), json!({}), json!({})));
    }

    #[test]
    fn exclusions_apply_without_resource_rules() {
        let rule = |resources: &str| {
            json!({"excludeResourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": [resources]}]})
        };
        assert!(!matches(rule("configmaps"), json!({}), json!({})));
        assert!(matches(rule("secrets"), json!({}), json!({})));
    }

    #[test]
    fn resource_rules_name_what_matches() {
        let rules = |resources: &str| {
            json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": [resources]}]})
        };
        assert!(matches(rules("configmaps"), json!({}), json!({})));
        assert!(!matches(rules("secrets"), json!({}), json!({})));
        assert!(MatchResources::parse(&rules("secrets")).names_resources());
        assert!(!MatchResources::parse(&json!({"namespaceSelector": {}})).names_resources());
    }
}
