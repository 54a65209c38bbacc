//! The built-in kinds' providers: each family of kinds the server serves without a
//! CustomResourceDefinition, with the strategies that serve it. The server lists its providers
//! once ([`Registry::serve_kinds`]); the registry's own are here, the others (RBAC, the
//! `StrategyModule` kind) beside the code their strategies need.

use std::sync::Arc;

use super::builtin::CrdStrategy;
use super::definition::ResourceDefinition;
use super::namespace_lifecycle::NamespaceStrategy;
use super::served::Registry;
use super::service::cluster_ip::{ClusterIpAllocator, ServiceIpRange};
use super::service::{IpAddressStrategy, NodePortRange, ServiceStrategy};
use crate::strategy::DefaultStrategy;

/// One family of built-in kinds.
pub trait KindProvider {
    /// What it serves, for the log (`core`, `services`, `rbac`, …).
    fn name(&self) -> &'static str;

    /// Serves its kinds on `registry` (with [`Registry::serve_builtin`]).
    fn serve(&self, registry: &Arc<Registry>);
}

impl Registry {
    /// Serves the kinds of every provider, in order (a later provider may read what an earlier
    /// one serves).
    pub fn serve_kinds(self: &Arc<Self>, providers: &[&dyn KindProvider]) {
        for provider in providers {
            provider.serve(self);
            tracing::debug!(provider = provider.name(), "built-in kinds served");
        }
    }
}

/// The kinds of the registry itself: CustomResourceDefinitions (and their lifecycle),
/// Namespaces (and theirs), APIServices, and the kinds with Kubernetes' default behaviour —
/// the admission configurations, API priority and fairness' configuration, and the reviews
/// (create-only; the API answers them).
#[derive(Debug, Clone, Copy)]
pub struct Core;

impl KindProvider for Core {
    fn name(&self) -> &'static str {
        "core"
    }

    fn serve(&self, registry: &Arc<Registry>) {
        registry.serve_builtin(
            ResourceDefinition::custom_resource_definitions(),
            Arc::new(CrdStrategy),
        );
        registry.serve_builtin(
            ResourceDefinition::namespaces(),
            Arc::new(NamespaceStrategy),
        );
        registry.serve_builtin(
            crate::apiservice::definition(),
            Arc::new(crate::apiservice::STRATEGY),
        );
        let defaults = ResourceDefinition::admission_kinds()
            .into_iter()
            .chain(ResourceDefinition::flowcontrol_kinds())
            .chain(ResourceDefinition::review_kinds());
        for def in defaults {
            registry.serve_builtin(def, Arc::new(DefaultStrategy));
        }
    }
}

/// Kubernetes' kinds whose behaviour is a strategy module (`builtin_kinds.json`: ConfigMaps,
/// Secrets, ResourceQuotas, …), each served by the strategy the registry's resolver gives —
/// the built-in kinds' wasm module.
#[derive(Debug, Clone, Copy)]
pub struct ModuleKinds;

impl KindProvider for ModuleKinds {
    fn name(&self) -> &'static str {
        "kinds served by the built-in module"
    }

    fn serve(&self, registry: &Arc<Registry>) {
        for def in ResourceDefinition::builtin_kinds() {
            let strategy = registry.resolver().strategy(&def.group, &def.kind);
            registry.serve_builtin(def, strategy);
        }
    }
}

/// Services (cluster IPs from `cluster_ips`, node ports from `node_ports`), their Endpoints and
/// EndpointSlices, and the IPAddresses that record allocated cluster IPs.
#[derive(Debug, Clone)]
pub struct Services {
    /// `--service-cluster-ip-range`.
    pub cluster_ips: ServiceIpRange,
    /// `--service-node-port-range`.
    pub node_ports: NodePortRange,
}

impl KindProvider for Services {
    fn name(&self) -> &'static str {
        "services"
    }

    fn serve(&self, registry: &Arc<Registry>) {
        let mut defs = crate::service::definitions();
        let mut take = |plural: &str| {
            let at = defs.iter().position(|d| d.plural == plural);
            defs.remove(at.expect("service_kinds.json defines it"))
        };
        registry.serve_builtin(take("ipaddresses"), Arc::new(IpAddressStrategy));
        let addresses = registry
            .resolve("networking.k8s.io", "v1", "ipaddresses")
            .expect("just served");
        let allocator = ClusterIpAllocator::new(self.cluster_ips, addresses.store);
        let services = ServiceStrategy::new(allocator, self.node_ports, registry);
        registry.serve_builtin(take("services"), Arc::new(services));
        for def in defs {
            registry.serve_builtin(def, Arc::new(DefaultStrategy));
        }
    }
}
