//! The `default/kubernetes` Service (kube-apiserver's bootstrap controller): the Service that
//! names this server to clients inside a cluster — the first address of
//! `--service-cluster-ip-range` (`10.96.0.1`), port `https` 443 to the port this server listens
//! on — with its Endpoints and EndpointSlice `kubernetes` naming the address it listens on.
//! Created when missing and put back as they were every 10 s.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::task::JoinSet;

use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::Registry;

/// Who the controller acts as.
const MANAGER: &str = "kube-apiserver";
/// How often the objects are checked (kube-apiserver's endpoint reconcile interval).
const EVERY: Duration = Duration::from_secs(10);

/// Where this server is reached: the Service's address and the address it listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KubernetesService {
    /// The Service's cluster IP (the range's first address).
    pub cluster_ip: std::net::IpAddr,
    /// What the endpoints name.
    pub listen: SocketAddr,
}

fn object_ref(group: &str, plural: &str) -> ObjectRef {
    ObjectRef::new(group, "v1", plural, Some("default"), "kubernetes")
}

/// The three objects: (group, plural, desired object, the fields kept as desired).
fn desired(
    at: &KubernetesService,
) -> Vec<(&'static str, &'static str, Value, &'static [&'static str])> {
    let labels = json!({"component": "apiserver", "provider": "kubernetes"});
    let ip = at.listen.ip().to_string();
    let port = at.listen.port();
    let family = if at.listen.is_ipv6() { "IPv6" } else { "IPv4" };
    vec![
        (
            "",
            "services",
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kubernetes", "namespace": "default", "labels": labels},
                "spec": {"type": "ClusterIP", "clusterIP": at.cluster_ip.to_string(),
                    "sessionAffinity": "None",
                    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}}),
            &["ports"],
        ),
        (
            "",
            "endpoints",
            json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "kubernetes", "namespace": "default",
                    "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                "subsets": [{"addresses": [{"ip": ip}],
                    "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}),
            &["subsets"],
        ),
        (
            "discovery.k8s.io",
            "endpointslices",
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "kubernetes", "namespace": "default",
                    "labels": {"kubernetes.io/service-name": "kubernetes"}},
                "addressType": family,
                "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}),
            &["endpoints", "ports"],
        ),
    ]
}

/// `key` of `current` and of `desired`, at the top level or under `spec`, wherever `desired`
/// has it.
fn at_key<'a>(current: &'a Value, desired: &'a Value, key: &str) -> (&'a Value, &'a Value) {
    if desired.get(key).is_some() {
        (&current[key], &desired[key])
    } else {
        (&current["spec"][key], &desired["spec"][key])
    }
}

/// Creates what is missing and puts back what changed.
async fn reconcile(client: &Client, at: &KubernetesService) {
    for (group, plural, object, kept) in desired(at) {
        let target = object_ref(group, plural);
        let result = match client.get(&target).await {
            Ok(None) => client
                .create(group, "v1", plural, Some("default"), object)
                .await
                .map(|_| ())
                .or_else(|e| {
                    if e.is_already_exists() {
                        Ok(())
                    } else {
                        Err(e)
                    }
                }),
            Ok(Some(current))
                if kept.iter().any(|k| {
                    let (now, wanted) = at_key(&current, &object, k);
                    now != wanted
                }) =>
            {
                let uid = current["metadata"]["uid"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                client
                    .update(&target, &uid, None, move |o| {
                        for key in kept {
                            if object.get(*key).is_some() {
                                o[*key] = object[*key].clone();
                            } else {
                                o["spec"][*key] = object["spec"][*key].clone();
                            }
                        }
                        true
                    })
                    .await
            }
            Ok(Some(_)) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            tracing::warn!(resource = plural, error = %e, "could not keep the kubernetes Service");
        }
    }
}

/// Runs the controller until the returned set is dropped.
pub fn start(registry: &Arc<Registry>, at: KubernetesService) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let client = Client::new(registry, MANAGER);
    tasks.spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            reconcile(&client, &at).await;
        }
    });
    tasks
}
