//! The RBAC vocabulary (`rbac.authorization.k8s.io/v1` PolicyRule, Subject, RoleRef) and how a
//! rule matches a request, exactly as Kubernetes' `rbac/v1/evaluation_helpers.go` and
//! `RuleAllows` decide it.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Attributes;

/// The API group of the RBAC kinds.
pub const GROUP: &str = "rbac.authorization.k8s.io";
/// `*`: every verb, group, resource or non-resource URL.
pub const ALL: &str = "*";
/// The prefix of a ServiceAccount's user name.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// One rule of a Role or ClusterRole (`rbacv1.PolicyRule`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// The verbs allowed (`*` for all).
    #[serde(default)]
    pub verbs: Vec<String>,
    /// The API groups (`""` for core, `*` for all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    /// The resources (`pods`, `pods/log`, `*/scale`, `*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Names the rule is limited to (empty: any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    /// Non-resource URLs (`/healthz`, `/api/*`); ClusterRoles only.
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

/// Who a binding grants its role to (`rbacv1.Subject`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    #[serde(default)]
    pub kind: String,
    /// `rbac.authorization.k8s.io` for users and groups, `""` for service accounts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The user, group or service account name.
    #[serde(default)]
    pub name: String,
    /// A service account's namespace (a RoleBinding's own namespace when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// The role a binding grants (`rbacv1.RoleRef`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleRef {
    /// Always `rbac.authorization.k8s.io`.
    #[serde(default)]
    pub api_group: String,
    /// `Role` or `ClusterRole`.
    #[serde(default)]
    pub kind: String,
    /// The role's name.
    #[serde(default)]
    pub name: String,
}

impl Subject {
    /// Whether this subject of a binding in `binding_namespace` (empty for a
    /// ClusterRoleBinding) is `user` (Kubernetes' `appliesToUser`).
    pub fn applies_to(&self, username: &str, groups: &[String], binding_namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => self.name == username,
            "Group" => groups.contains(&self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                !ns.is_empty() && service_account_matches(ns, &self.name, username)
            }
            _ => false,
        }
    }

    /// Kubernetes' `describeSubject`: `User "alice"`, `ServiceAccount "name/namespace"`.
    pub fn describe(&self, binding_namespace: &str) -> String {
        match self.kind.as_str() {
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                format!("{} {}", self.kind, go_quote(&format!("{}/{ns}", self.name)))
            }
            _ => format!("{} {}", self.kind, go_quote(&self.name)),
        }
    }
}

/// `system:serviceaccount:{namespace}:{name}`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// Whether `username` is the service account `namespace`/`name`, without allocating.
fn service_account_matches(namespace: &str, name: &str, username: &str) -> bool {
    username
        .strip_prefix(SERVICE_ACCOUNT_PREFIX)
        .and_then(|rest| rest.strip_prefix(namespace))
        .and_then(|rest| rest.strip_prefix(':'))
        .is_some_and(|rest| rest == name)
}

/// The entries of the list `field` of `obj` that decode as `T` (the others skipped).
fn decoded_list<T: DeserializeOwned>(obj: &Value, field: &str) -> Vec<T> {
    obj.get(field)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| T::deserialize(item).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The rules of a Role or ClusterRole object (`rules`), skipping entries that do not decode.
pub fn rules_of(obj: &Value) -> Vec<PolicyRule> {
    decoded_list(obj, "rules")
}

/// The subjects of a binding object, skipping entries that do not decode.
pub fn subjects_of(obj: &Value) -> Vec<Subject> {
    decoded_list(obj, "subjects")
}

/// The roleRef of a binding object.
pub fn role_ref_of(obj: &Value) -> RoleRef {
    obj.get("roleRef")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default()
}

fn has(set: &[String], want: &str) -> bool {
    set.iter().any(|s| s == want)
}

/// `VerbMatches`.
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// `APIGroupMatches`.
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

/// `ResourceMatches`: `*`, the exact `resource` or `resource/subresource`, or `*/subresource`.
pub fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        r == ALL
            || r == combined
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

/// `ResourceNameMatches`: no names, or the requested one (an unnamed request such as create or
/// list never matches a rule limited to names).
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || has(&rule.resource_names, name)
}

/// `NonResourceURLMatches`: `*`, the exact path, or a prefix ending in `*`.
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| {
        u == ALL
            || u == path
            || u.strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
    })
}

/// `RuleAllows`: whether `rule` allows the request `attributes` describes.
pub fn rule_allows(attributes: &Attributes, rule: &PolicyRule) -> bool {
    if !verb_matches(rule, &attributes.verb) {
        return false;
    }
    if !attributes.resource_request {
        return non_resource_url_matches(rule, &attributes.path);
    }
    let matches_resource = if attributes.subresource.is_empty() {
        resource_matches(rule, &attributes.resource, "")
    } else {
        let combined = format!("{}/{}", attributes.resource, attributes.subresource);
        resource_matches(rule, &combined, &attributes.subresource)
    };
    api_group_matches(rule, &attributes.api_group)
        && matches_resource
        && resource_name_matches(rule, &attributes.name)
}

/// Go's `%q` of a string (`strconv.Quote`), for messages Kubernetes formats that way.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

impl PolicyRule {
    /// Kubernetes' `CompactString`, as escalation errors print a rule:
    /// `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`.
    pub fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        for (label, items) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !items.is_empty() {
                parts.push(format!("{label}:{}", go_quote_list(items)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A resource rule from string slices (shared with the escalation tests).
    pub(crate) fn rule(
        verbs: &[&str],
        groups: &[&str],
        resources: &[&str],
        names: &[&str],
    ) -> PolicyRule {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: v(names),
            non_resource_urls: vec![],
        }
    }

    fn request(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Attributes::default()
        }
    }

    /// Asserts whether `rule` allows each request.
    fn assert_allows(rule: &PolicyRule, cases: &[(Attributes, bool)]) {
        for (request, allowed) in cases {
            assert_eq!(rule_allows(request, rule), *allowed, "{request:?}");
        }
    }

    fn url(verb: &str, path: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            path: path.into(),
            ..Attributes::default()
        }
    }

    #[test]
    fn verbs_groups_and_resources_match_exactly_or_by_star() {
        let r = rule(&["get", "list"], &[""], &["configmaps"], &[]);
        assert_allows(
            &r,
            &[
                (request("get", "", "configmaps", "", "x"), true),
                (request("list", "", "configmaps", "", ""), true),
                (request("delete", "", "configmaps", "", "x"), false),
                (request("get", "apps", "configmaps", "", "x"), false),
                (request("get", "", "secrets", "", "x"), false),
            ],
        );
        let all = rule(&["*"], &["*"], &["*"], &[]);
        assert!(rule_allows(
            &request("escalate", "x.io", "things", "status", "n"),
            &all
        ));
    }

    #[test]
    fn subresources_need_their_own_grant() {
        let plain = rule(&["get"], &[""], &["serviceaccounts"], &[]);
        assert!(!rule_allows(
            &request("get", "", "serviceaccounts", "token", "a"),
            &plain
        ));
        let token = rule(&["create"], &[""], &["serviceaccounts/token"], &[]);
        assert_allows(
            &token,
            &[
                (request("create", "", "serviceaccounts", "token", "a"), true),
                (request("create", "", "serviceaccounts", "", ""), false),
            ],
        );
        let any_status = rule(&["update"], &["*"], &["*/status"], &[]);
        assert_allows(
            &any_status,
            &[
                (
                    request("update", "apps", "deployments", "status", "d"),
                    true,
                ),
                (
                    request("update", "apps", "deployments", "scale", "d"),
                    false,
                ),
                (request("update", "apps", "deployments", "", "d"), false),
            ],
        );
    }

    #[test]
    fn resource_names_need_a_name() {
        let r = rule(&["get", "list", "create"], &[""], &["secrets"], &["db"]);
        assert_allows(
            &r,
            &[
                (request("get", "", "secrets", "", "db"), true),
                (request("get", "", "secrets", "", "other"), false),
                (request("list", "", "secrets", "", ""), false),
                (request("create", "", "secrets", "", ""), false),
            ],
        );
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_prefix() {
        let r = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into(), "/apis/*".into()],
            ..PolicyRule::default()
        };
        assert_allows(
            &r,
            &[
                (url("get", "/healthz"), true),
                (url("get", "/healthz/etcd"), false),
                (url("get", "/apis/apps/v1"), true),
                (url("get", "/apis/"), true),
                (url("get", "/apis"), false),
                (url("post", "/healthz"), false),
            ],
        );
        // A resource rule never allows a non-resource request, and the reverse.
        let resources = rule(&["*"], &["*"], &["*"], &[]);
        assert!(!rule_allows(&url("get", "/healthz"), &resources));
        assert!(!rule_allows(&request("get", "", "pods", "", ""), &r));
    }

    #[test]
    fn subjects_apply_by_name_group_or_service_account() {
        let groups = vec!["dev".to_string(), "system:authenticated".to_string()];
        let user = Subject {
            kind: "User".into(),
            name: "alice".into(),
            ..Subject::default()
        };
        assert!(user.applies_to("alice", &groups, ""));
        assert!(!user.applies_to("bob", &groups, ""));
        let group = Subject {
            kind: "Group".into(),
            name: "dev".into(),
            ..Subject::default()
        };
        assert!(group.applies_to("bob", &groups, "ns"));
        let sa = Subject {
            kind: "ServiceAccount".into(),
            name: "builder".into(),
            ..Subject::default()
        };
        // A RoleBinding's own namespace stands in for an empty one; a ClusterRoleBinding has none.
        assert!(sa.applies_to("system:serviceaccount:ci:builder", &[], "ci"));
        assert!(!sa.applies_to("system:serviceaccount:ci:builder", &[], "other"));
        assert!(!sa.applies_to("system:serviceaccount:ci:builder", &[], ""));
        assert!(!sa.applies_to("system:serviceaccount:ci:builder2", &[], "ci"));
        assert_eq!(sa.describe("ci"), "ServiceAccount \"builder/ci\"");
        assert_eq!(
            service_account_username("ci", "builder"),
            "system:serviceaccount:ci:builder"
        );
    }

    #[test]
    fn compact_strings_print_as_go_does() {
        let r = rule(&["get", "list"], &[""], &["secrets"], &[]);
        assert_eq!(
            r.compact_string(),
            r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#
        );
        let u = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/x".into()],
            ..PolicyRule::default()
        };
        assert_eq!(
            u.compact_string(),
            r#"{NonResourceURLs:["/x"], Verbs:["get"]}"#
        );
        assert_eq!(go_quote("a\"b\\"), r#""a\"b\\""#);
    }
}
