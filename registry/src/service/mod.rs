//! Core `v1` Services, Endpoints, `discovery.k8s.io/v1` EndpointSlices and
//! `networking.k8s.io/v1` IPAddresses (`service_kinds.json`). No traffic goes to a Service
//! here: Services are how an APIService names its backend, and what charts create and read.
//! A Service's strategy defaults and validates it as kube-apiserver does and gives it a
//! cluster IP (`cluster_ip.rs`) and, for NodePort and LoadBalancer Services, node ports.

pub mod cluster_ip;
mod node_port;
pub mod validation;

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::definition::ResourceDefinition;
use crate::served::Registry;
use crate::strategy::{Admission, Answer, FieldError, Strategy, StrategyContext, StrategyError};
use cluster_ip::{AllocationError, ClusterIpAllocator};
pub use node_port::NodePortRange;
use validation::{has_node_ports, needs_cluster_ip, service_type, set_defaults, validate};

/// The definitions of `services`, `endpoints`, `endpointslices` and `ipaddresses`.
pub fn definitions() -> Vec<ResourceDefinition> {
    ResourceDefinition::builtins(include_str!("../service_kinds.json"))
}

/// The strategy of `services`.
pub struct ServiceStrategy {
    cluster_ips: ClusterIpAllocator,
    node_ports: NodePortRange,
    /// The registry, for the node ports other Services hold.
    registry: Weak<Registry>,
}

impl ServiceStrategy {
    /// A strategy allocating from `cluster_ips` and `node_ports`.
    pub fn new(
        cluster_ips: ClusterIpAllocator,
        node_ports: NodePortRange,
        registry: &Arc<Registry>,
    ) -> Self {
        Self {
            cluster_ips,
            node_ports,
            registry: Arc::downgrade(registry),
        }
    }
}

fn meta<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.pointer(&format!("/metadata/{key}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn refused(errors: Vec<FieldError>) -> Answer {
    Ok(Admission {
        field_errors: errors,
        ..Admission::default()
    })
}

/// The cluster IP a spec asks for: `clusterIP`, else the first of `clusterIPs`.
fn requested_ip(spec: &Value) -> Option<String> {
    let ip = spec["clusterIP"]
        .as_str()
        .filter(|s| !s.is_empty())
        .or_else(|| spec.pointer("/clusterIPs/0").and_then(Value::as_str));
    ip.filter(|s| !s.is_empty()).map(str::to_string)
}

impl ServiceStrategy {
    /// Checks the IP family fields against this single-stack cluster and fills them in.
    fn set_families(&self, spec: &mut Value) -> Vec<FieldError> {
        let family = self.cluster_ips.range().family();
        let mut errors = Vec::new();
        if spec["ipFamilyPolicy"] == "RequireDualStack" {
            errors.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                &spec["ipFamilyPolicy"],
                "this cluster is not configured for dual-stack services",
            ));
        }
        if let Some(families) = spec["ipFamilies"].as_array() {
            for (i, f) in families.iter().enumerate() {
                if f != family {
                    errors.push(FieldError::invalid(
                        format!("spec.ipFamilies[{i}]"),
                        f,
                        "not configured on this cluster",
                    ));
                }
            }
        }
        if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
            spec["ipFamilyPolicy"] = json!("SingleStack");
        }
        spec["ipFamilies"] = json!([family]);
        errors
    }

    /// Gives a spec that needs one a cluster IP (a dry run only checks it is free).
    async fn assign_cluster_ip(
        &self,
        ctx: &StrategyContext,
        obj: &mut Value,
    ) -> Result<Vec<FieldError>, StrategyError> {
        let (namespace, name) = (
            meta(obj, "namespace").to_string(),
            meta(obj, "name").to_string(),
        );
        let spec = &mut obj["spec"];
        if spec["clusterIP"] == "None" {
            spec["clusterIPs"] = json!(["None"]);
            return Ok(self.set_families(spec));
        }
        let errors = self.set_families(spec);
        if !errors.is_empty() {
            return Ok(errors);
        }
        let requested = requested_ip(spec);
        match self
            .cluster_ips
            .allocate(&namespace, &name, requested.as_deref(), ctx.dry_run)
            .await
        {
            Ok(ip) => {
                spec["clusterIP"] = json!(ip);
                spec["clusterIPs"] = json!([ip]);
                Ok(Vec::new())
            }
            Err(AllocationError::Field(e)) => Ok(vec![e]),
            Err(AllocationError::Internal(e)) => Err(e),
        }
    }

    /// The end of a create or update whose spec validated with `errors`: refused with them, or
    /// else `obj`'s node ports assigned (keeping those of the `old` spec), and a cluster IP when
    /// it `wants_ip`.
    async fn allocate(
        &self,
        ctx: &StrategyContext,
        obj: &mut Value,
        old: Option<&Value>,
        errors: Vec<FieldError>,
        wants_ip: bool,
    ) -> Answer {
        if !errors.is_empty() {
            return refused(errors);
        }
        if has_node_ports(&obj["spec"]) {
            let in_use = self
                .node_ports_in_use(meta(obj, "namespace"), meta(obj, "name"))
                .await;
            let errors = self.node_ports.assign(&mut obj["spec"], old, &in_use);
            if !errors.is_empty() {
                return refused(errors);
            }
        }
        if wants_ip {
            return refused(self.assign_cluster_ip(ctx, obj).await?);
        }
        Ok(Admission::default())
    }

    /// The node ports every other Service holds.
    async fn node_ports_in_use(&self, namespace: &str, name: &str) -> Vec<i64> {
        let Some(registry) = self.registry.upgrade() else {
            return Vec::new();
        };
        let Some(services) = registry.resolve("", "v1", "services") else {
            return Vec::new();
        };
        node_port::held_by_others(&services.store, namespace, name).await
    }
}

#[async_trait]
impl Strategy for ServiceStrategy {
    fn name(&self) -> &str {
        "builtin-services"
    }

    async fn before_create(&self, ctx: &StrategyContext, obj: &mut Value) -> Answer {
        set_defaults(&mut obj["spec"]);
        obj["status"] = json!({"loadBalancer": {}});
        let errors = validate(&obj["spec"]);
        let wants_ip = service_type(&obj["spec"]) != "ExternalName";
        self.allocate(ctx, obj, None, errors, wants_ip).await
    }

    async fn before_update(&self, ctx: &StrategyContext, new: &mut Value, old: &Value) -> Answer {
        set_defaults(&mut new["spec"]);
        carry_over_allocations(&mut new["spec"], &old["spec"]);
        drop_type_dependent_fields(&mut new["spec"], &old["spec"]);
        let mut errors = validate(&new["spec"]);
        let old_ip = requested_ip(&old["spec"]).filter(|ip| ip != "None");
        if let (Some(before), true) = (&old_ip, needs_cluster_ip(&new["spec"])) {
            if requested_ip(&new["spec"]).as_ref() != Some(before) {
                errors.push(FieldError::invalid(
                    "spec.clusterIPs[0]",
                    &json!(before),
                    "may not change once set",
                ));
            }
        }
        let wants_ip = old_ip.is_none() && needs_cluster_ip(&new["spec"]);
        self.allocate(ctx, new, Some(&old["spec"]), errors, wants_ip)
            .await
    }

    async fn after_update(
        &self,
        _ctx: &StrategyContext,
        new: &Value,
        old: &Value,
    ) -> Result<(), StrategyError> {
        let before = requested_ip(&old["spec"]).filter(|ip| ip != "None");
        if let Some(ip) = before.filter(|ip| requested_ip(&new["spec"]).as_ref() != Some(ip)) {
            self.cluster_ips
                .release(&ip, meta(old, "namespace"), meta(old, "name"))
                .await;
        }
        Ok(())
    }

    async fn after_delete(&self, _ctx: &StrategyContext, obj: &Value) -> Result<(), StrategyError> {
        if let Some(ip) = requested_ip(&obj["spec"]).filter(|ip| ip != "None") {
            self.cluster_ips
                .release(&ip, meta(obj, "namespace"), meta(obj, "name"))
                .await;
        }
        Ok(())
    }
}

/// An update that leaves out what the server allocated keeps it (kube-apiserver's
/// `patchAllocatedValues`): `kubectl apply` and `helm upgrade` send manifests without them.
fn carry_over_allocations(new: &mut Value, old: &Value) {
    if needs_cluster_ip(new) && needs_cluster_ip(old) && requested_ip(new).is_none() {
        for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if new.get(key).is_none_or(Value::is_null) && !old[key].is_null() {
                new[key] = old[key].clone();
            }
        }
    }
    if has_node_ports(new) && has_node_ports(old) {
        node_port::carry_over(new, old);
    }
}

/// What the old type needed and the new one does not is dropped when the client left it as
/// it was (kube-apiserver's `dropTypeDependentFields`).
fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let Some(map) = new.as_object_mut() else {
        return;
    };
    let same = |map: &serde_json::Map<String, Value>, key: &str| {
        map.get(key).unwrap_or(&Value::Null) == old.get(key).unwrap_or(&Value::Null)
    };
    let new_type = map
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    if new_type == "ExternalName" && old["type"] != "ExternalName" {
        for key in [
            "clusterIP",
            "clusterIPs",
            "ipFamilies",
            "ipFamilyPolicy",
            "internalTrafficPolicy",
        ] {
            if same(map, key) {
                map.remove(key);
            }
        }
    }
    let node_ports = matches!(new_type.as_str(), "NodePort" | "LoadBalancer");
    if !node_ports && has_node_ports(old) {
        if same(map, "externalTrafficPolicy") {
            map.remove("externalTrafficPolicy");
        }
        if let Some(ports) = map.get_mut("ports").and_then(Value::as_array_mut) {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                port.remove("nodePort");
            }
        }
    }
    if new_type != "LoadBalancer" && same(map, "allocateLoadBalancerNodePorts") {
        map.remove("allocateLoadBalancerNodePorts");
    }
}

/// The strategy of `ipaddresses`: the name is an address in canonical form, and the parent
/// it is allocated to is required and never changes.
pub struct IpAddressStrategy;

fn ip_address_errors(obj: &Value) -> Vec<FieldError> {
    let name = meta(obj, "name");
    let mut errors = Vec::new();
    match name.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.to_string() != name => errors.push(FieldError::invalid(
            "metadata.name",
            &json!(name),
            format!("must be in canonical form (\"{ip}\")"),
        )),
        Ok(_) => {}
        Err(_) => errors.push(FieldError::invalid(
            "metadata.name",
            &json!(name),
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        )),
    }
    let parent = &obj["spec"]["parentRef"];
    for key in ["resource", "name"] {
        if parent[key].as_str().is_none_or(str::is_empty) {
            errors.push(FieldError::required(format!("spec.parentRef.{key}"), ""));
        }
    }
    errors
}

#[async_trait]
impl Strategy for IpAddressStrategy {
    fn name(&self) -> &str {
        "builtin-ipaddresses"
    }

    async fn before_create(&self, _ctx: &StrategyContext, obj: &mut Value) -> Answer {
        refused(ip_address_errors(obj))
    }

    async fn before_update(&self, _ctx: &StrategyContext, new: &mut Value, old: &Value) -> Answer {
        let mut errors = ip_address_errors(new);
        if new["spec"]["parentRef"] != old["spec"]["parentRef"] {
            errors.push(FieldError::invalid(
                "spec.parentRef",
                &new["spec"]["parentRef"],
                "field is immutable",
            ));
        }
        refused(errors)
    }
}

#[cfg(test)]
mod tests;
