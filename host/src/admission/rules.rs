//! Which writes an admission rule names (`RuleWithOperations` of webhooks and policies):
//! operations, API groups, versions (with `matchPolicy: Equivalent`, any version of the same
//! resource), resources and subresources (`*`, `res/*`, `*/sub`), and scope.

use serde_json::Value;

use crate::registry::admission::AdmissionRequest;

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
    crate::registry::system_fields::strings_at(v, &format!("/{field}"))
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

    /// Whether the rule names the request's operation and resource (`equivalent`: another
    /// version of the same resource matches too).
    pub fn matches(&self, request: &AdmissionRequest<'_>, equivalent: bool) -> bool {
        let operation = crate::admission::webhook::operation_name(request.operation);
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
        has(&self.operations, operation)
            && has(&self.api_groups, &def.group)
            && version_ok
            && resource_named
            && scoped
    }
}
