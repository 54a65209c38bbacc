//! The resource names a ResourceQuota limits: the core kinds counted under a classic name as
//! well as `count/<resource>`, the other whole counts, and what pods use (Kubernetes'
//! standard quota resources).

/// The core resources counted under their own name as well as `count/<resource>`.
pub const CLASSIC_OBJECT_COUNTS: &[&str] = &[
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
];

/// A Service's node ports and load balancers.
pub const SERVICE_COUNTS: &[&str] = &["services.nodeports", "services.loadbalancers"];

/// What pods (and claims) use, limited without a `/` in the name.
pub const COMPUTE: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
];

/// Whether `name` is a standard quota resource (one without a `/` quota knows).
pub fn is_standard(name: &str) -> bool {
    CLASSIC_OBJECT_COUNTS.contains(&name)
        || SERVICE_COUNTS.contains(&name)
        || COMPUTE.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// Whether `name` counts whole objects (a classic count, a Service's, or `count/…`).
pub fn is_integer(name: &str) -> bool {
    CLASSIC_OBJECT_COUNTS.contains(&name)
        || SERVICE_COUNTS.contains(&name)
        || name.starts_with("count/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_whole_and_compute_is_standard() {
        assert!(
            is_integer("secrets")
                && is_integer("services.nodeports")
                && is_integer("count/widgets.example.com")
        );
        assert!(!is_integer("cpu") && is_standard("cpu") && is_standard("requests.hugepages-2Mi"));
        assert!(!is_standard("widgets") && !is_standard("count/secrets"));
    }
}
