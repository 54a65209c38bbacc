//! The controllers every control plane runs, beside the API as other clients of the
//! registry's verbs and the informer: the garbage collector (`ownerReferences`, propagation
//! policies), the namespace controller (emptying terminating namespaces), the ServiceAccount
//! token controller, the ValidatingAdmissionPolicy status controller, event expiry
//! (`--event-ttl`), the cleanup of deleted CustomResourceDefinitions, and the autoregistration
//! of local APIServices (kube-aggregator's, named `apiservice-autoregistration`), the
//! availability of remote ones (`apiservice-availability`), the repair of Services' cluster
//! IP allocations (`ipaddress-repair`), the `default/kubernetes` Service
//! (`kubernetes-service`), the publication of `kube-system/extension-apiserver-authentication` (kube-apiserver's
//! `cluster-authentication-trust`), and in every namespace the `default` ServiceAccount
//! (`serviceaccount`) and the `kube-root-ca.crt` ConfigMap (`root-ca-cert-publisher`). Which run is
//! chosen with `--controllers`, in kube-controller-manager's spelling; hosts sharing a store
//! run them on one elected host (`leader.rs`).
//!
//! A crate beside the api and the admission plugins, above the registry; it knows neither.

mod aggregated_content;
pub mod apiservice_availability;
pub mod apiservice_registration;
pub mod authentication_trust;
mod collection_deletion;
pub mod crd_cleanup;
pub mod event_expiry;
pub mod events;
pub mod flowcontrol_bootstrap;
pub mod garbage_collector;
pub mod ipaddress_repair;
pub mod kubernetes_service;
pub mod leader;
pub mod metrics;
pub mod namespace;
mod per_namespace;
pub mod policy_status;
pub mod queue;
pub mod resource_quota;
pub mod root_ca_publisher;
pub mod service_account_token;
pub mod serviceaccount;

use std::sync::Arc;

use tokio::task::JoinSet;

use strategy_host_registry::Registry;

/// The controllers this server has, by their kube-controller-manager names.
pub const KNOWN: [&str; 14] = [
    "apiservice-autoregistration",
    "apiservice-availability",
    "cluster-authentication-trust",
    "customresourcedefinition-cleanup",
    "event-expiry",
    "garbagecollector",
    "ipaddress-repair",
    "kubernetes-service",
    "namespace",
    "resourcequota",
    "root-ca-cert-publisher",
    "serviceaccount",
    "serviceaccount-token",
    "validatingadmissionpolicy-status",
];

/// Which controllers run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerSet {
    enabled: Vec<&'static str>,
}

/// A `--controllers` item naming no controller this server has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--controllers: unknown controller {name:?} (known: {})", KNOWN.join(", "))]
pub struct UnknownController {
    /// The name given.
    pub name: String,
}

impl ControllerSet {
    /// Reads `--controllers` items: `*` (every controller on by default), `name`, `-name`.
    ///
    /// # Errors
    /// An unknown controller name.
    pub fn parse(items: &[String]) -> Result<Self, UnknownController> {
        let mut star = false;
        let mut on = Vec::new();
        let mut off = Vec::new();
        for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
            if item == "*" {
                star = true;
                continue;
            }
            let (name, list) = match item.strip_prefix('-') {
                Some(name) => (name, &mut off),
                None => (item, &mut on),
            };
            let known = KNOWN
                .iter()
                .find(|k| **k == name)
                .ok_or_else(|| UnknownController { name: name.into() })?;
            list.push(*known);
        }
        let enabled = KNOWN
            .into_iter()
            .filter(|k| !off.contains(k) && (star || on.contains(k)))
            .collect();
        Ok(Self { enabled })
    }

    /// Whether `name` runs.
    pub fn runs(&self, name: &str) -> bool {
        self.enabled.contains(&name)
    }

    /// Whether none runs.
    pub fn is_empty(&self) -> bool {
        self.enabled.is_empty()
    }
}

/// The running controllers; dropping it stops them.
#[derive(Default)]
pub struct Running {
    tasks: Vec<JoinSet<()>>,
}

/// Runs the controllers of `set` over `registry` — on this host while it holds the
/// controllers' Lease when `election` is given, else at once — until the returned task is
/// aborted.
pub fn run(
    registry: &Arc<Registry>,
    set: ControllerSet,
    election: Option<leader::ElectionConfig>,
    parts: Parts,
) -> tokio::task::JoinHandle<()> {
    let registry = registry.clone();
    tokio::spawn(async move {
        if set.is_empty() {
            return;
        }
        let Some(config) = election else {
            let _running = start(&registry, &set, &parts);
            std::future::pending::<()>().await;
            return;
        };
        let client = strategy_host_registry::client::Client::new(&registry, "leader-election");
        let weak = Arc::downgrade(&registry);
        drop(registry);
        let lead = move || {
            weak.upgrade()
                .map(|registry| start(&registry, &set, &parts))
                .unwrap_or_default()
        };
        leader::run(client, leader::identity(), config, lead).await;
    })
}

/// What the controllers need from the rest of the server.
#[derive(Clone)]
pub struct Parts {
    /// Where they record their metrics.
    pub metrics: metrics::ControllerMetrics,
    /// The ServiceAccount token signer (the token controller runs only with one).
    pub signer: Option<Arc<dyn service_account_token::TokenSigner>>,
    /// How long an Event lives after its last write (`--event-ttl`).
    pub event_ttl: std::time::Duration,
    /// What `kube-system/extension-apiserver-authentication` holds (none in development mode,
    /// which has no certificates).
    pub authentication_trust: Option<std::collections::BTreeMap<String, String>>,
    /// The APIServices of extension API servers and how to reach them (the availability
    /// controller runs only with it).
    pub aggregation: Option<Arc<strategy_host_registry::aggregation::Aggregation>>,
    /// Where the `default/kubernetes` Service points (the controller runs only with it).
    pub kubernetes_service: Option<kubernetes_service::KubernetesService>,
    /// The CA bundle (PEM) that verifies the serving certificate, published in every namespace
    /// (none in development mode, which serves plain HTTP).
    pub root_ca: Option<String>,
}

/// Starts the controllers of `set` over `registry`.
pub fn start(registry: &Arc<Registry>, set: &ControllerSet, parts: &Parts) -> Running {
    let metrics = &parts.metrics;
    let mut running = Running::default();
    if set.runs("garbagecollector") {
        running
            .tasks
            .push(garbage_collector::start(registry, metrics.clone()));
    }
    if let (true, Some(signer)) = (set.runs("serviceaccount-token"), &parts.signer) {
        running
            .tasks
            .push(service_account_token::start(registry, signer.clone()));
    }
    if set.runs("namespace") {
        running.tasks.push(namespace::start(
            registry,
            metrics.clone(),
            parts.aggregation.clone(),
        ));
    }
    if set.runs("validatingadmissionpolicy-status") {
        running.tasks.push(policy_status::start(registry));
    }
    if set.runs("apiservice-autoregistration") {
        running.tasks.push(apiservice_registration::start(registry));
    }
    if let (true, Some(aggregation)) = (set.runs("apiservice-availability"), &parts.aggregation) {
        running.tasks.push(apiservice_availability::start(
            registry,
            aggregation.clone(),
            metrics.clone(),
        ));
    }
    if let (true, Some(data)) = (
        set.runs("cluster-authentication-trust"),
        &parts.authentication_trust,
    ) {
        running
            .tasks
            .push(authentication_trust::start(registry, data.clone()));
    }
    if let (true, Some(at)) = (set.runs("kubernetes-service"), parts.kubernetes_service) {
        running.tasks.push(kubernetes_service::start(registry, at));
    }
    if set.runs("resourcequota") {
        running.tasks.push(resource_quota::start(registry));
    }
    if set.runs("serviceaccount") {
        running.tasks.push(serviceaccount::start(registry));
    }
    if let (true, Some(ca)) = (set.runs("root-ca-cert-publisher"), &parts.root_ca) {
        running
            .tasks
            .push(root_ca_publisher::start(registry, ca.clone()));
    }
    if set.runs("ipaddress-repair") {
        running.tasks.push(ipaddress_repair::start(registry));
    }
    if set.runs("customresourcedefinition-cleanup") {
        running.tasks.push(crd_cleanup::start(registry));
    }
    if set.runs("event-expiry") {
        running
            .tasks
            .push(event_expiry::start(registry, parts.event_ttl));
    }
    running
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> Result<ControllerSet, UnknownController> {
        ControllerSet::parse(&items.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn controllers_are_chosen_as_kube_controller_manager_chooses_them() {
        let all = set(&["*"]).unwrap();
        assert!(all.runs("garbagecollector") && all.runs("namespace"));
        let no_gc = set(&["*", "-garbagecollector"]).unwrap();
        assert!(!no_gc.runs("garbagecollector") && no_gc.runs("namespace"));
        let only_ns = set(&["namespace"]).unwrap();
        assert!(!only_ns.runs("garbagecollector") && only_ns.runs("namespace"));
        assert!(set(&["-namespace", "-garbagecollector"])
            .unwrap()
            .is_empty());
        let err = set(&["*", "replicaset"]).unwrap_err().to_string();
        assert!(err.contains("unknown controller \"replicaset\""), "{err}");
    }
}
