//! The repair of cluster IP allocations (kube-apiserver's `RepairIPAddress`): an `IPAddress`
//! the allocator made whose Service is gone, or no longer holds that address (a Service whose
//! create failed after its address was claimed, a release that did not happen), is deleted once
//! two passes a minute apart have both found it so; a Service holding an address with no
//! `IPAddress` gets it back.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::task::JoinSet;

use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::{Store, Writer};
use strategy_host_registry::service::cluster_ip::parent_ref;
use strategy_host_registry::system_fields::meta_str;
use strategy_host_registry::Preconditions;
use strategy_host_registry::Registry;

/// Who the controller acts as.
const MANAGER: &str = "ipaddress-repair-controller";
/// How often a pass runs (an orphan goes on the second pass that finds it).
const PASS: Duration = Duration::from_secs(60);

/// The addresses a Service holds.
fn held(service: &Value) -> Vec<String> {
    service
        .pointer("/spec/clusterIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|ip| *ip != "None" && !ip.is_empty())
        .map(str::to_string)
        .collect()
}

/// The IPAddresses the allocator made whose parent Service does not hold them.
fn orphans(addresses: &Store, services: &Store) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for address in addresses.state() {
        let managed = address
            .pointer("/metadata/labels/ipaddress.kubernetes.io~1managed-by")
            .and_then(Value::as_str)
            == Some("ipallocator.k8s.io");
        let parent = &address["spec"]["parentRef"];
        if !managed || parent["resource"] != "services" {
            continue;
        }
        let ip = meta_str(&address, "name").unwrap_or_default().to_string();
        let service = services.get(
            parent["namespace"].as_str(),
            parent["name"].as_str().unwrap_or_default(),
        );
        if !service.is_some_and(|s| held(&s).contains(&ip)) {
            found.insert((
                ip,
                meta_str(&address, "uid").unwrap_or_default().to_string(),
            ));
        }
    }
    found
}

/// Runs the controller until the returned set is dropped.
pub fn start(registry: &Arc<Registry>) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let (Some(addresses), Some(services)) = (
        registry.resolve("networking.k8s.io", "v1", "ipaddresses"),
        registry.resolve("", "v1", "services"),
    ) else {
        return tasks;
    };
    let (address_store, address_task) = addresses.reflect("v1", Writer::new());
    let (service_store, service_task) = services.reflect("v1", Writer::new());
    let client = Client::new(registry, MANAGER);
    tasks.spawn(async move {
        let _followers = (AbortOnDrop(address_task), AbortOnDrop(service_task));
        address_store.wait_until_ready().await;
        service_store.wait_until_ready().await;
        let mut suspects = BTreeSet::new();
        let mut tick = tokio::time::interval(PASS);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let found = orphans(&address_store, &service_store);
            for (ip, uid) in found.intersection(&suspects) {
                let target = ObjectRef::new("networking.k8s.io", "v1", "ipaddresses", None, ip);
                match client.delete(&target, Preconditions::uid(uid), None).await {
                    Ok(_) => tracing::info!(%ip, "released a cluster IP no Service holds"),
                    Err(e) => tracing::warn!(%ip, error = %e, "could not release a cluster IP"),
                }
            }
            suspects = found;
            restore_missing(&client, &address_store, &service_store).await;
        }
    });
    tasks
}

/// Recreates the `IPAddress` of every address a Service holds without one.
async fn restore_missing(client: &Client, addresses: &Store, services: &Store) {
    for service in services.state() {
        let (namespace, name) = (
            meta_str(&service, "namespace").unwrap_or_default(),
            meta_str(&service, "name").unwrap_or_default(),
        );
        for ip in held(&service) {
            if addresses.get(None, &ip).is_some() {
                continue;
            }
            let family = if ip.contains(':') { "IPv6" } else { "IPv4" };
            let address = json!({
                "apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
                "metadata": {"name": ip, "labels": {
                    "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io",
                    "ipaddress.kubernetes.io/ip-family": family}},
                "spec": {"parentRef": parent_ref(namespace, name)},
            });
            match client
                .create("networking.k8s.io", "v1", "ipaddresses", None, address)
                .await
            {
                Ok(_) => {
                    tracing::info!(%ip, service = %format!("{namespace}/{name}"), "restored a Service's IPAddress")
                }
                Err(e) if e.is_already_exists() => {}
                Err(e) => {
                    tracing::warn!(%ip, error = %e, "could not restore a Service's IPAddress")
                }
            }
        }
    }
}

/// Aborts a follower's task when the controller stops.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(objects: Vec<Value>) -> Store {
        objects.into_iter().collect()
    }

    fn address(ip: &str, service: &str) -> Value {
        json!({"metadata": {"name": ip, "uid": format!("u-{ip}"),
            "labels": {"ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}},
            "spec": {"parentRef": parent_ref("default", service)}})
    }

    #[test]
    fn addresses_no_service_holds_are_orphans() {
        let addresses = store(vec![
            address("10.96.0.10", "web"),
            address("10.96.0.11", "gone"),
            address("10.96.0.12", "web"),
        ]);
        let services = store(vec![
            json!({"metadata": {"namespace": "default", "name": "web"},
            "spec": {"clusterIPs": ["10.96.0.10"]}}),
        ]);
        let found: Vec<String> = orphans(&addresses, &services)
            .into_iter()
            .map(|(ip, _)| ip)
            .collect();
        assert_eq!(found, ["10.96.0.11", "10.96.0.12"]);
    }
}
