//! The built-in flow schemas and priority levels: which level a request is served in, and the
//! flow (its user) it queues in. A fixed subset of Kubernetes' mandatory and suggested API
//! Priority and Fairness configuration, with its names and concurrency shares; `FlowSchema` and
//! `PriorityLevelConfiguration` objects are not served, so it cannot be changed at run time.

use crate::authorization::Attributes;

/// A priority level: its name and its share of the server's seats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PriorityLevel {
    /// Kubernetes' name for it.
    pub name: &'static str,
    /// Its nominal concurrency shares; `None` for the exempt level, which is not queued.
    pub shares: Option<u32>,
}

/// Kubernetes' levels this server classifies into, in order (exempt first).
pub(super) const LEVELS: [PriorityLevel; 7] = [
    PriorityLevel {
        name: "exempt",
        shares: None,
    },
    PriorityLevel {
        name: "system",
        shares: Some(30),
    },
    PriorityLevel {
        name: "leader-election",
        shares: Some(10),
    },
    PriorityLevel {
        name: "workload-high",
        shares: Some(40),
    },
    PriorityLevel {
        name: "workload-low",
        shares: Some(100),
    },
    PriorityLevel {
        name: "global-default",
        shares: Some(20),
    },
    PriorityLevel {
        name: "catch-all",
        shares: Some(5),
    },
];

/// Where a request is served: the flow schema that matched, its priority level (an index into
/// `LEVELS`) and its flow's name (the user, as Kubernetes' `ByUser` distinguisher).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// The flow schema's name.
    pub schema: &'static str,
    /// The index of its priority level in `LEVELS`.
    pub level: usize,
    /// The flow within the level.
    pub flow: String,
}

impl Classification {
    /// The priority level's name.
    pub fn level_name(&self) -> &'static str {
        LEVELS[self.level].name
    }
}

const CONTROL_PLANE_USERS: [&str; 2] = ["system:kube-controller-manager", "system:kube-scheduler"];
const PROBES: [&str; 3] = ["/healthz", "/readyz", "/livez"];

/// Matches a request to the first flow schema that takes it, in Kubernetes' precedence order.
pub fn classify(attributes: &Attributes) -> Classification {
    let user = &attributes.user;
    let in_group = |g: &str| user.groups.iter().any(|have| have == g);
    let service_account_in = |ns: &str| {
        user.username
            .strip_prefix("system:serviceaccount:")
            .and_then(|rest| rest.split_once(':'))
            .is_some_and(|(namespace, _)| namespace == ns)
    };
    let (schema, level) = if in_group("system:masters") {
        ("exempt", "exempt")
    } else if !attributes.resource_request && PROBES.contains(&attributes.path.as_str()) {
        ("probes", "exempt")
    } else if is_leader_election(attributes)
        && (CONTROL_PLANE_USERS.contains(&user.username.as_str())
            || service_account_in("kube-system"))
    {
        ("system-leader-election", "leader-election")
    } else if in_group("system:nodes") {
        ("system-nodes", "system")
    } else if CONTROL_PLANE_USERS.contains(&user.username.as_str()) {
        ("kube-controller-manager-and-scheduler", "workload-high")
    } else if service_account_in("kube-system") {
        ("kube-system-service-accounts", "workload-high")
    } else if in_group("system:serviceaccounts") {
        ("service-accounts", "workload-low")
    } else if in_group("system:authenticated") || in_group("system:unauthenticated") {
        ("global-default", "global-default")
    } else {
        ("catch-all", "catch-all")
    };
    Classification {
        schema,
        level: LEVELS
            .iter()
            .position(|l| l.name == level)
            .expect("a level of LEVELS"),
        flow: user.username.clone(),
    }
}

/// Reads and writes of Leases (and the Endpoints and ConfigMaps older leader election used).
fn is_leader_election(a: &Attributes) -> bool {
    let resource = match a.api_group.as_str() {
        "coordination.k8s.io" => a.resource == "leases",
        "" => matches!(a.resource.as_str(), "endpoints" | "configmaps"),
        _ => false,
    };
    resource && matches!(a.verb.as_str(), "get" | "create" | "update")
}

/// Each queued level's seats: `total` divided by the levels' shares, rounded up, as
/// kube-apiserver sizes its nominal concurrency limits.
pub(super) fn nominal_seats(total: u32) -> Vec<Option<u32>> {
    let sum: u32 = LEVELS.iter().filter_map(|l| l.shares).sum();
    LEVELS
        .iter()
        .map(|l| {
            l.shares
                .map(|s| (u64::from(total) * u64::from(s)).div_ceil(u64::from(sum)) as u32)
        })
        .collect()
}

#[cfg(test)]
mod tests {
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

    fn served(a: &Attributes) -> (&'static str, &'static str, String) {
        let c = classify(a);
        (c.schema, c.level_name(), c.flow)
    }

    #[test]
    fn requests_land_in_kubernetes_levels_by_who_asks() {
        let authenticated = ["system:authenticated"];
        assert_eq!(
            served(&request("admin", &["system:masters"], "", "pods", "list")).1,
            "exempt"
        );
        assert_eq!(
            served(&request("alice", &authenticated, "", "configmaps", "list")),
            ("global-default", "global-default", "alice".into())
        );
        assert_eq!(
            served(&request(
                "system:anonymous",
                &["system:unauthenticated"],
                "",
                "configmaps",
                "get"
            ))
            .1,
            "global-default"
        );
        let sa = "system:serviceaccount:team:builder";
        assert_eq!(
            served(&request(
                sa,
                &["system:serviceaccounts"],
                "apps",
                "deployments",
                "list"
            ))
            .1,
            "workload-low"
        );
        let kube_system = "system:serviceaccount:kube-system:controller";
        let groups = ["system:serviceaccounts"];
        assert_eq!(
            served(&request(
                kube_system,
                &groups,
                "coordination.k8s.io",
                "leases",
                "update"
            )),
            (
                "system-leader-election",
                "leader-election",
                kube_system.into()
            )
        );
        assert_eq!(
            served(&request(
                kube_system,
                &groups,
                "apps",
                "deployments",
                "list"
            ))
            .1,
            "workload-high"
        );
        assert_eq!(
            served(&request("node-1", &["system:nodes"], "", "pods", "list")).1,
            "system"
        );
        assert_eq!(
            served(&request("nobody", &[], "", "pods", "list")).1,
            "catch-all"
        );
    }

    #[test]
    fn probes_are_exempt_for_everyone() {
        let mut a = request(
            "system:anonymous",
            &["system:unauthenticated"],
            "",
            "",
            "get",
        );
        a.resource_request = false;
        a.path = "/readyz".into();
        assert_eq!(served(&a).1, "exempt");
        a.path = "/version".into();
        assert_eq!(served(&a).1, "global-default");
    }

    #[test]
    fn seats_are_shared_by_the_levels_shares() {
        let seats = nominal_seats(600);
        assert_eq!(seats[0], None);
        // global-default: 600 × 20 / 205, rounded up.
        assert_eq!(seats[5], Some(59));
        assert_eq!(seats[4], Some(293));
    }
}
