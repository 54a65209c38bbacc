//! What an object uses of its namespace's ResourceQuotas (Kubernetes' quota evaluators): a
//! `count/<resource>[.<group>]` of one per object of any resource, the classic names of the
//! core kinds (`secrets`, `configmaps`, ...), and a Service's `services.nodeports` and
//! `services.loadbalancers`; which resource a limit's name counts; which quotas select which
//! objects. Quota admission (which charges a write) and the quota controller (which recounts a
//! namespace) both read it, so the two always agree.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use strategy_host_quantity::names::CLASSIC_OBJECT_COUNTS as CLASSIC;
use strategy_host_quantity::Quantity;

/// Amounts by resource name (`pods`, `count/widgets.example.com`, `cpu`), Kubernetes'
/// `ResourceList`.
pub type ResourceList = BTreeMap<String, Quantity>;

/// Resources quota never counts: virtual ones that are never stored, and events.
const IGNORED: &[(&str, &str)] = &[
    ("", "bindings"),
    ("", "componentstatuses"),
    ("", "events"),
    ("events.k8s.io", "events"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
];

/// The resource whose usage a quota on `group`/`plural` objects tracks, as quota evaluates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evaluator<'a> {
    /// The resource's group (`""`: core).
    pub group: &'a str,
    /// The resource's plural.
    pub plural: &'a str,
}

impl<'a> Evaluator<'a> {
    /// The evaluator of `group`/`plural`, or `None` for a resource quota never counts.
    pub fn of(group: &'a str, plural: &'a str) -> Option<Self> {
        (!IGNORED.contains(&(group, plural))).then_some(Self { group, plural })
    }

    fn is_services(&self) -> bool {
        self.group.is_empty() && self.plural == "services"
    }

    /// Whether an update can change what an object uses (a Service's type and ports); an
    /// object count changes only on create (and delete, which the controller recounts).
    pub fn charges_updates(&self) -> bool {
        self.is_services()
    }

    /// The names this resource's usage is reported under.
    pub fn names(&self) -> Vec<String> {
        let mut names = vec![object_count_name(self.group, self.plural)];
        if self.group.is_empty() && CLASSIC.contains(&self.plural) {
            names.push(self.plural.to_string());
        }
        if self.is_services() {
            names.extend(["services.loadbalancers".into(), "services.nodeports".into()]);
        }
        names
    }

    /// What `object` uses, under every name of [`Evaluator::names`] (zero where it uses none).
    pub fn usage(&self, object: &Value) -> ResourceList {
        let one = Quantity::from_count(1);
        let mut usage: ResourceList = self.names().into_iter().map(|n| (n, one)).collect();
        if self.is_services() {
            let (node_ports, load_balancers) = service_usage(&object["spec"]);
            usage.insert(
                "services.nodeports".into(),
                Quantity::from_count(node_ports),
            );
            usage.insert(
                "services.loadbalancers".into(),
                Quantity::from_count(load_balancers),
            );
        }
        usage
    }

    /// Whether `quota` selects this resource's objects: a quota with scopes selects pods (and,
    /// for `VolumeAttributesClass`, claims) only, so none of what is served here yet.
    pub fn selected_by(&self, quota: &Value) -> bool {
        let scoped = quota["spec"]["scopes"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
            || quota["spec"]["scopeSelector"]["matchExpressions"]
                .as_array()
                .is_some_and(|m| !m.is_empty());
        !scoped
    }
}

/// A Service's node ports and load balancers: a NodePort Service takes one node port per port;
/// a LoadBalancer takes one balancer and one node port per port (only the ports that name one
/// when `allocateLoadBalancerNodePorts` is false).
fn service_usage(spec: &Value) -> (i64, i64) {
    let ports = spec["ports"].as_array().map_or(&[][..], Vec::as_slice);
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    match spec["type"].as_str() {
        Some("NodePort") => (count(ports.len()), 0),
        Some("LoadBalancer") if spec["allocateLoadBalancerNodePorts"] == false => {
            let named = ports
                .iter()
                .filter(|p| p["nodePort"].as_i64().unwrap_or(0) != 0);
            (count(named.count()), 1)
        }
        Some("LoadBalancer") => (count(ports.len()), 1),
        _ => (0, 0),
    }
}

/// `count/<plural>` for a core resource, `count/<plural>.<group>` for any other.
pub fn object_count_name(group: &str, plural: &str) -> String {
    match group {
        "" => format!("count/{plural}"),
        group => format!("count/{plural}.{group}"),
    }
}

/// The resource (group, plural) whose objects a limit named `name` counts: `count/…`, a
/// classic core name, or a Service's node ports and balancers. `None` for what no object count
/// measures (`cpu`, `requests.storage`: the usage of pods and claims).
pub fn counted_resource(name: &str) -> Option<(String, String)> {
    if let Some(resource) = name.strip_prefix("count/") {
        let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
        return Some((group.to_string(), plural.to_string()));
    }
    if CLASSIC.contains(&name) {
        return Some((String::new(), name.to_string()));
    }
    matches!(name, "services.nodeports" | "services.loadbalancers")
        .then(|| (String::new(), "services".to_string()))
}

/// The quantities of a `ResourceList` member (`spec.hard`, `status.used`) that parse.
pub fn resource_list(value: &Value) -> ResourceList {
    value
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(name, q)| {
            let q = match q {
                Value::String(s) => Quantity::parse(s).ok()?,
                Value::Number(n) => Quantity::parse(&n.to_string()).ok()?,
                _ => return None,
            };
            Some((name.clone(), q))
        })
        .collect()
}

/// A `ResourceList` as its JSON member.
pub fn resource_list_value(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(name, q)| (name.clone(), Value::String(q.to_string())))
            .collect::<Map<_, _>>(),
    )
}

/// `name=quantity,...` in name order, as Kubernetes prints a `ResourceList` in messages.
pub fn pretty(list: &ResourceList) -> String {
    list.iter()
        .map(|(name, q)| format!("{name}={q}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn shown(list: &ResourceList) -> String {
        pretty(list)
    }

    #[test]
    fn every_object_counts_once_under_its_count_name_and_classic_name() {
        let secrets = Evaluator::of("", "secrets").unwrap();
        assert_eq!(
            shown(&secrets.usage(&json!({}))),
            "count/secrets=1,secrets=1"
        );
        let widgets = Evaluator::of("example.com", "widgets").unwrap();
        assert_eq!(
            shown(&widgets.usage(&json!({}))),
            "count/widgets.example.com=1"
        );
        assert!(Evaluator::of("", "events").is_none());
        assert!(!secrets.charges_updates());
    }

    #[test]
    fn services_count_their_node_ports_and_balancers() {
        let services = Evaluator::of("", "services").unwrap();
        let ports = json!([{"port": 80}, {"port": 443, "nodePort": 30443}]);
        let usage = |spec: Value| shown(&services.usage(&json!({"spec": spec})));
        assert_eq!(
            usage(json!({"type": "ClusterIP", "ports": ports})),
            "count/services=1,services=1,services.loadbalancers=0,services.nodeports=0"
        );
        assert_eq!(
            usage(json!({"type": "NodePort", "ports": ports})),
            "count/services=1,services=1,services.loadbalancers=0,services.nodeports=2"
        );
        assert_eq!(
            usage(json!({"type": "LoadBalancer", "ports": ports})),
            "count/services=1,services=1,services.loadbalancers=1,services.nodeports=2"
        );
        assert_eq!(
            usage(
                json!({"type": "LoadBalancer", "ports": ports, "allocateLoadBalancerNodePorts": false})
            ),
            "count/services=1,services=1,services.loadbalancers=1,services.nodeports=1"
        );
        assert!(services.charges_updates());
    }

    #[test]
    fn a_limits_name_says_which_resource_it_counts() {
        let r = |g: &str, p: &str| Some((g.to_string(), p.to_string()));
        assert_eq!(
            counted_resource("count/replicasets.apps"),
            r("apps", "replicasets")
        );
        assert_eq!(
            counted_resource("count/widgets.example.com"),
            r("example.com", "widgets")
        );
        assert_eq!(counted_resource("count/secrets"), r("", "secrets"));
        assert_eq!(counted_resource("configmaps"), r("", "configmaps"));
        assert_eq!(counted_resource("services.nodeports"), r("", "services"));
        assert_eq!(counted_resource("cpu"), None);
        assert_eq!(counted_resource("requests.storage"), None);
    }

    #[test]
    fn scoped_quotas_select_no_object_count() {
        let secrets = Evaluator::of("", "secrets").unwrap();
        assert!(secrets.selected_by(&json!({"spec": {"hard": {"secrets": "1"}}})));
        assert!(!secrets.selected_by(&json!({"spec": {"scopes": ["BestEffort"]}})));
        assert!(!secrets.selected_by(
            &json!({"spec": {"scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "Exists"}]}}})
        ));
    }

    #[test]
    fn lists_read_and_write_quantities() {
        let list = resource_list(&json!({"pods": "5", "cpu": 2, "bad": "x", "memory": "1024Mi"}));
        assert_eq!(shown(&list), "cpu=2,memory=1Gi,pods=5");
        assert_eq!(
            resource_list_value(&list),
            json!({"cpu": "2", "memory": "1Gi", "pods": "5"})
        );
    }
}
