//! API priority and fairness' configuration as its objects say: PriorityLevelConfigurations
//! (an exempt level, or a limited one's share of the seats and whether it queues or rejects)
//! and FlowSchemas (who and what, in precedence order, go to which level, and which flow —
//! user, namespace or none — they queue as); and where a request is served. The mandatory
//! objects (`exempt` for `system:masters`, `catch-all` for the rest) are always part of it, as
//! Kubernetes always keeps them; before the objects are first listed the configuration is the
//! one the server bootstraps them with (`registry::flowcontrol`).

use std::sync::Arc;

use serde_json::Value;

use strategy_host_authorization::Attributes;
use strategy_host_registry::flowcontrol;
use strategy_host_registry::system_fields::meta_str;

/// Requests a flow may have waiting when a queuing level does not say.
const QUEUE_LENGTH_LIMIT: usize = 50;

/// How a level admits what exceeds its seats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Limit {
    /// Not limited by its seats (bounded only by `--max-requests-inflight`).
    Exempt,
    /// Its share of the server's seats; `queue_length_limit` requests a flow may have
    /// waiting, `None` where the level rejects what cannot start at once.
    Limited {
        shares: u32,
        queue_length_limit: Option<usize>,
    },
}

/// A priority level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Level {
    pub(super) name: Arc<str>,
    /// The object's uid (empty for one not yet listed).
    pub(super) uid: String,
    pub(super) limit: Limit,
}

/// How a schema tells flows apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Distinguisher {
    None,
    ByUser,
    ByNamespace,
}

/// A flow schema.
#[derive(Debug, Clone)]
struct Schema {
    name: Arc<str>,
    uid: String,
    /// Its level, an index into [`Config::levels`].
    level: usize,
    precedence: i64,
    distinguisher: Distinguisher,
    /// `spec.rules`, each a `PolicyRulesWithSubjects`.
    rules: Vec<Value>,
}

/// Where a request is served: the flow schema that matched, its priority level and its flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// The flow schema's name.
    pub schema: Arc<str>,
    /// The flow schema's uid (empty before the objects are listed).
    pub schema_uid: String,
    /// The priority level's index in the configuration it was classified by.
    pub(super) level: usize,
    /// The priority level's name.
    pub level_name: Arc<str>,
    /// The priority level's uid.
    pub level_uid: String,
    /// The flow within the level.
    pub flow: String,
}

/// The levels and schemas in force.
#[derive(Debug, Clone)]
pub(super) struct Config {
    pub(super) levels: Vec<Level>,
    /// In precedence order (then by name).
    schemas: Vec<Schema>,
}

impl Config {
    /// The configuration the server bootstraps the objects with.
    pub(super) fn bootstrap() -> Self {
        let objects: Vec<Value> = flowcontrol::mandatory()
            .into_iter()
            .chain(flowcontrol::suggested())
            .collect();
        let (schemas, levels): (Vec<Value>, Vec<Value>) =
            objects.into_iter().partition(|o| o["kind"] == "FlowSchema");
        Self::from_objects(&schemas, &levels)
    }

    /// The configuration `schemas` and `levels` (objects) make, with the mandatory ones they
    /// lack; a schema naming no level is left out (Kubernetes calls it dangling).
    pub(super) fn from_objects(schemas: &[Value], levels: &[Value]) -> Self {
        let mandatory = flowcontrol::mandatory();
        let named = |objects: &[Value], name: &str| {
            objects.iter().any(|o| meta_str(o, "name") == Some(name))
        };
        let missing = |kind: &str, objects: &[Value]| -> Vec<Value> {
            mandatory
                .iter()
                .filter(|m| m["kind"] == kind)
                .filter(|m| !named(objects, meta_str(m, "name").unwrap_or_default()))
                .cloned()
                .collect()
        };
        let missing_levels = missing("PriorityLevelConfiguration", levels);
        let levels: Vec<Level> = levels
            .iter()
            .chain(&missing_levels)
            .map(|o| Level {
                name: meta_str(o, "name").unwrap_or_default().into(),
                uid: meta_str(o, "uid").unwrap_or_default().into(),
                limit: limit_of(&o["spec"]),
            })
            .collect();
        let schema_objects: Vec<Value> = schemas
            .iter()
            .cloned()
            .chain(missing("FlowSchema", schemas))
            .collect();
        let mut schemas: Vec<Schema> = schema_objects
            .iter()
            .filter_map(|o| {
                let spec = &o["spec"];
                let level_name = spec["priorityLevelConfiguration"]["name"].as_str()?;
                let level = levels.iter().position(|l| &*l.name == level_name)?;
                Some(Schema {
                    name: meta_str(o, "name").unwrap_or_default().into(),
                    uid: meta_str(o, "uid").unwrap_or_default().into(),
                    level,
                    precedence: spec["matchingPrecedence"].as_i64().unwrap_or(1000),
                    distinguisher: match spec["distinguisherMethod"]["type"].as_str() {
                        Some("ByUser") => Distinguisher::ByUser,
                        Some("ByNamespace") => Distinguisher::ByNamespace,
                        _ => Distinguisher::None,
                    },
                    rules: spec["rules"].as_array().cloned().unwrap_or_default(),
                })
            })
            .collect();
        schemas.sort_by(|a, b| a.precedence.cmp(&b.precedence).then(a.name.cmp(&b.name)));
        Self { levels, schemas }
    }

    /// The first schema, in precedence order, whose rules take the request; `catch-all` when
    /// none does.
    pub(super) fn classify(&self, a: &Attributes) -> Classification {
        let schema = self
            .schemas
            .iter()
            .find(|s| s.rules.iter().any(|r| rules_match(r, a)))
            .or_else(|| self.schemas.iter().find(|s| &*s.name == "catch-all"))
            .expect("the mandatory catch-all schema is always configured");
        let level = &self.levels[schema.level];
        Classification {
            schema: schema.name.clone(),
            schema_uid: schema.uid.clone(),
            level: schema.level,
            level_name: level.name.clone(),
            level_uid: level.uid.clone(),
            flow: match schema.distinguisher {
                Distinguisher::ByUser => a.user.username.clone(),
                Distinguisher::ByNamespace => a.namespace.clone(),
                Distinguisher::None => String::new(),
            },
        }
    }

    /// Each level's seats: `total` divided by the limited levels' shares, rounded up, as
    /// kube-apiserver sizes its nominal concurrency limits (`None` for an exempt level).
    pub(super) fn nominal_seats(&self, total: u32) -> Vec<Option<u32>> {
        let shares = |l: &Level| match l.limit {
            Limit::Limited { shares, .. } => Some(shares),
            Limit::Exempt => None,
        };
        let sum: u64 = self.levels.iter().filter_map(shares).map(u64::from).sum();
        self.levels
            .iter()
            .map(|l| {
                shares(l).map(|s| {
                    let seats = (u64::from(total) * u64::from(s)).div_ceil(sum.max(1));
                    u32::try_from(seats).unwrap_or(u32::MAX)
                })
            })
            .collect()
    }
}

/// A level's limit from its spec.
fn limit_of(spec: &Value) -> Limit {
    if spec["type"] == "Exempt" {
        return Limit::Exempt;
    }
    let limited = &spec["limited"];
    let shares = limited["nominalConcurrencyShares"]
        .as_u64()
        .map_or(30, |s| u32::try_from(s).unwrap_or(u32::MAX));
    let response = &limited["limitResponse"];
    let queue_length_limit = match response["type"].as_str() {
        Some("Reject") => None,
        _ => Some(
            response["queuing"]["queueLengthLimit"]
                .as_u64()
                .and_then(|l| usize::try_from(l).ok())
                .filter(|l| *l > 0)
                .unwrap_or(QUEUE_LENGTH_LIMIT),
        ),
    };
    Limit::Limited {
        shares,
        queue_length_limit,
    }
}

/// Whether `list` holds `value` or `*`.
fn holds(list: &Value, value: &str) -> bool {
    list.as_array()
        .is_some_and(|l| l.iter().any(|v| v == "*" || v == value))
}

/// Whether a `PolicyRulesWithSubjects` takes the request: one of its subjects is who asks, and
/// one of its resource rules (for a resource request) or non-resource rules (else) what.
fn rules_match(rules: &Value, a: &Attributes) -> bool {
    let subjects = rules["subjects"].as_array().map_or(&[][..], Vec::as_slice);
    if !subjects.iter().any(|s| subject_matches(s, a)) {
        return false;
    }
    if a.resource_request {
        let resource = match a.subresource.as_str() {
            "" => a.resource.clone(),
            sub => format!("{}/{sub}", a.resource),
        };
        rules["resourceRules"].as_array().is_some_and(|rs| {
            rs.iter().any(|r| {
                holds(&r["verbs"], &a.verb)
                    && holds(&r["apiGroups"], &a.api_group)
                    && holds(&r["resources"], &resource)
                    && match a.namespace.as_str() {
                        "" => r["clusterScope"] == true,
                        ns => holds(&r["namespaces"], ns),
                    }
            })
        })
    } else {
        rules["nonResourceRules"].as_array().is_some_and(|rs| {
            rs.iter().any(|r| {
                holds(&r["verbs"], &a.verb)
                    && r["nonResourceURLs"].as_array().is_some_and(|urls| {
                        urls.iter()
                            .filter_map(Value::as_str)
                            .any(|u| url_matches(u, &a.path))
                    })
            })
        })
    }
}

/// `*`, the path itself, or a `/prefix/*` the path is under (or is).
fn url_matches(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix("/*") {
        _ if pattern == "*" || pattern == path => true,
        Some(prefix) => path == prefix || path.starts_with(&format!("{prefix}/")),
        None => false,
    }
}

fn subject_matches(subject: &Value, a: &Attributes) -> bool {
    let user = &a.user;
    match subject["kind"].as_str() {
        Some("User") => {
            let name = subject["user"]["name"].as_str().unwrap_or_default();
            name == "*" || name == user.username
        }
        Some("Group") => {
            let name = subject["group"]["name"].as_str().unwrap_or_default();
            name == "*" || user.groups.iter().any(|g| g == name)
        }
        Some("ServiceAccount") => {
            let account = &subject["serviceAccount"];
            let (namespace, name) = (
                account["namespace"].as_str().unwrap_or_default(),
                account["name"].as_str().unwrap_or_default(),
            );
            user.username
                .strip_prefix("system:serviceaccount:")
                .and_then(|rest| rest.split_once(':'))
                .is_some_and(|(ns, n)| ns == namespace && (name == "*" || n == name))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::user::UserInfo;

    fn request(user: &str, groups: &[&str], group: &str, resource: &str, verb: &str) -> Attributes {
        Attributes {
            user: UserInfo {
                username: user.into(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                ..Default::default()
            },
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            namespace: "default".into(),
            ..Default::default()
        }
    }

    fn served(config: &Config, a: &Attributes) -> (String, String, String) {
        let c = config.classify(a);
        (c.schema.to_string(), c.level_name.to_string(), c.flow)
    }

    #[test]
    fn requests_land_in_kubernetes_levels_by_who_asks() {
        let config = Config::bootstrap();
        let level = |a: &Attributes| served(&config, a).1;
        let authenticated = ["system:authenticated"];
        assert_eq!(
            level(&request("admin", &["system:masters"], "", "pods", "list")),
            "exempt"
        );
        assert_eq!(
            served(
                &config,
                &request("alice", &authenticated, "", "configmaps", "list")
            ),
            (
                "global-default".into(),
                "global-default".into(),
                "alice".into()
            )
        );
        let anonymous = request(
            "system:anonymous",
            &["system:unauthenticated"],
            "",
            "configmaps",
            "get",
        );
        assert_eq!(level(&anonymous), "global-default");
        let sa = "system:serviceaccount:team:builder";
        let accounts = ["system:serviceaccounts", "system:authenticated"];
        assert_eq!(
            level(&request(sa, &accounts, "apps", "deployments", "list")),
            "workload-low"
        );
        let kube_system = "system:serviceaccount:kube-system:controller";
        assert_eq!(
            served(
                &config,
                &request(
                    kube_system,
                    &accounts,
                    "coordination.k8s.io",
                    "leases",
                    "update"
                )
            ),
            (
                "system-leader-election".into(),
                "leader-election".into(),
                kube_system.into()
            )
        );
        // kube-system's accounts queue by namespace.
        assert_eq!(
            served(
                &config,
                &request(kube_system, &accounts, "apps", "deployments", "list")
            ),
            (
                "kube-system-service-accounts".into(),
                "workload-high".into(),
                "default".into()
            )
        );
        assert_eq!(
            level(&request("node-1", &["system:nodes"], "", "pods", "list")),
            "system"
        );
        let mut node_status = request("node-1", &["system:nodes"], "", "nodes", "patch");
        node_status.subresource = "status".into();
        node_status.namespace = String::new();
        assert_eq!(level(&node_status), "node-high");
        assert_eq!(
            level(&request("nobody", &[], "", "pods", "list")),
            "catch-all"
        );
    }

    #[test]
    fn probes_are_exempt_for_everyone() {
        let config = Config::bootstrap();
        let mut a = request(
            "system:anonymous",
            &["system:unauthenticated"],
            "",
            "",
            "get",
        );
        a.resource_request = false;
        a.path = "/readyz".into();
        assert_eq!(served(&config, &a).1, "exempt");
        a.path = "/version".into();
        assert_eq!(served(&config, &a).1, "global-default");
    }

    #[test]
    fn an_operators_schema_takes_precedence_and_a_dangling_one_is_skipped() {
        let level = json!({"metadata": {"name": "tight", "uid": "l1"}, "spec": {"type": "Limited",
            "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}});
        let rules = json!([{"subjects": [{"kind": "User", "user": {"name": "bob"}}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["/apis/*"]}],
            "resourceRules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"], "namespaces": ["*"]}]}]);
        let schema = json!({"metadata": {"name": "bob", "uid": "s1"}, "spec": {
            "priorityLevelConfiguration": {"name": "tight"}, "matchingPrecedence": 500, "rules": rules}});
        let dangling = json!({"metadata": {"name": "first"}, "spec": {
            "priorityLevelConfiguration": {"name": "nowhere"}, "matchingPrecedence": 2, "rules": rules}});
        let config = Config::from_objects(&[schema, dangling], &[level]);
        let bob = request("bob", &["system:authenticated"], "", "configmaps", "list");
        let c = config.classify(&bob);
        assert_eq!(
            (
                &*c.schema,
                &*c.level_name,
                c.schema_uid.as_str(),
                c.level_uid.as_str(),
                c.flow.as_str()
            ),
            ("bob", "tight", "s1", "l1", "")
        );
        assert_eq!(
            config.levels[c.level].limit,
            Limit::Limited {
                shares: 1,
                queue_length_limit: None
            }
        );
        // What the rule does not name falls through to the mandatory catch-all.
        assert_eq!(
            served(
                &config,
                &request("bob", &["system:authenticated"], "", "secrets", "list")
            )
            .0,
            "catch-all"
        );
        let mut discovery = request("bob", &[], "", "", "get");
        discovery.resource_request = false;
        discovery.path = "/apis".into();
        assert_eq!(served(&config, &discovery).0, "bob");
        discovery.path = "/apis/apps/v1".into();
        assert_eq!(served(&config, &discovery).0, "bob");
        discovery.path = "/api".into();
        assert_eq!(served(&config, &discovery).0, "catch-all");
        // Only the mandatory levels and the operator's: seats by shares (exempt has none).
        assert_eq!(config.nominal_seats(60), vec![Some(10), None, Some(50)]);
    }

    #[test]
    fn seats_are_shared_by_the_levels_shares() {
        let config = Config::bootstrap();
        let seats = config.nominal_seats(600);
        let of = |name: &str| seats[config.levels.iter().position(|l| &*l.name == name).unwrap()];
        assert_eq!(of("exempt"), None);
        // global-default: 600 × 20 / 245 (the shares of Kubernetes' limited levels), rounded up.
        assert_eq!(of("global-default"), Some(49));
        assert_eq!(of("workload-low"), Some(245));
    }
}
