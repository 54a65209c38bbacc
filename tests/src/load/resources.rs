//! The kinds api-load drives: each one's collection path, the definition it needs first (if
//! any), its objects (padded to a size when a figure is about bytes), and the changes the
//! writing modes make to them.

use anyhow::bail;
use serde_json::{json, Value};

use crate::{deployment, deployment_crd, widget, widget_crd};

/// The annotation a watch figure's writes carry: when the client sent the write, in Unix
/// nanoseconds, so whoever receives the event knows how long it took without a side channel.
pub const SENT_ANNOTATION: &str = "bench.strategy-host.io/sent-nanos";

/// The annotation that pads an object to the size a figure asks for (every kind keeps
/// annotations, whatever its schema prunes).
const PADDING_ANNOTATION: &str = "bench.strategy-host.io/padding";

/// One kind api-load can drive.
#[derive(Clone)]
pub struct Resource {
    /// The name on the command line (`widgets`, `configmaps`, …).
    pub name: String,
    /// The CustomResourceDefinition to create first (built-in kinds need none).
    pub crd: Option<Value>,
    /// The namespaced collection path, `/api…/namespaces/default/<plural>`.
    pub path: &'static str,
    object: fn(&str) -> Value,
}

impl Resource {
    /// The resource named `name` on the command line.
    ///
    /// # Errors
    /// An unknown name.
    pub fn named(name: &str) -> anyhow::Result<Self> {
        let (crd, path, object): (_, _, fn(&str) -> Value) = match name {
            "widgets" => (
                Some(widget_crd()),
                "/apis/example.com/v1/namespaces/default/widgets",
                |name| widget(name, 1),
            ),
            "deployments" => (
                Some(deployment_crd()),
                "/apis/apps.example.com/v1/namespaces/default/deployments",
                |name| deployment(name, "web"),
            ),
            "configmaps" => (None, "/api/v1/namespaces/default/configmaps", |name| {
                config_map(name, 0)
            }),
            // A Secret of the same size, for encryption at rest beside plain storage.
            "secrets" => (None, "/api/v1/namespaces/default/secrets", secret),
            // Gateway API's Gateway (its CRD loaded beforehand, e.g. by scripts/bench-cel.sh),
            // with its CEL rules, and the same CRD with its rules removed under another group.
            "gateways" => (
                None,
                "/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways",
                |name| gateway(name, "gateway.networking.k8s.io/v1"),
            ),
            "gateways-norules" => (
                None,
                "/apis/norules.gateway.example.com/v1/namespaces/default/gateways",
                |name| gateway(name, "norules.gateway.example.com/v1"),
            ),
            "leases" => (
                None,
                "/apis/coordination.k8s.io/v1/namespaces/default/leases",
                |name| lease(name, 0),
            ),
            // Cluster API's MachineDeployment (its CRD loaded beforehand, e.g. by
            // scripts/bench-conversion.sh) at its storage version and at the other one.
            "machinedeployments" => (
                None,
                "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/machinedeployments",
                |name| machine_deployment(name, "v1beta2"),
            ),
            "machinedeployments-v1beta1" => (
                None,
                "/apis/cluster.x-k8s.io/v1beta1/namespaces/default/machinedeployments",
                |name| machine_deployment(name, "v1beta1"),
            ),
            other => bail!(
                "unknown resource {other} (widgets, deployments, configmaps, secrets, gateways, \
                 gateways-norules, leases, machinedeployments or machinedeployments-v1beta1)"
            ),
        };
        Ok(Resource {
            name: name.to_owned(),
            crd,
            path,
            object,
        })
    }

    /// A new object named `name`, as the kind's example has it.
    pub fn object(&self, name: &str) -> Value {
        (self.object)(name)
    }

    /// A new object named `name` of at least `size` bytes of JSON (padded by an annotation).
    pub fn sized_object(&self, name: &str, size: usize) -> Value {
        pad((self.object)(name), size)
    }
}

/// `object` padded by an annotation to `size` bytes of compact JSON (unchanged if already
/// that big).
pub fn pad(mut object: Value, size: usize) -> Value {
    if object.to_string().len() >= size {
        return object;
    }
    let annotations = &mut object["metadata"]["annotations"];
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[PADDING_ANNOTATION] = json!("");
    let len = object.to_string().len();
    object["metadata"]["annotations"][PADDING_ANNOTATION] =
        json!("x".repeat(size.saturating_sub(len)));
    object
}

/// A Gateway with three listeners (each of its listener rules has something to check).
fn gateway(name: &str, api_version: &str) -> Value {
    json!({
        "apiVersion": api_version, "kind": "Gateway",
        "metadata": {"name": name},
        "spec": {
            "gatewayClassName": "example",
            "listeners": [
                {"name": "http", "protocol": "HTTP", "port": 80, "hostname": "shop.example.com"},
                {"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "shop.example.com",
                 "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-cert"}]}},
                {"name": "tcp", "protocol": "TCP", "port": 5432},
            ],
        },
    })
}

/// A Cluster API MachineDeployment at `version` (v1beta1 references carry `apiVersion`, v1beta2
/// ones `apiGroup`).
fn machine_deployment(name: &str, version: &str) -> Value {
    let reference = |group: &str, kind: &str, name: &str| match version {
        "v1beta1" => json!({"apiVersion": format!("{group}/v1beta1"), "kind": kind, "name": name}),
        _ => json!({"apiGroup": group, "kind": kind, "name": name}),
    };
    json!({
        "apiVersion": format!("cluster.x-k8s.io/{version}"), "kind": "MachineDeployment",
        "metadata": {"name": name},
        "spec": {"clusterName": "c1", "replicas": 1, "selector": {"matchLabels": {"md": name}},
                 "template": {"metadata": {"labels": {"md": name}}, "spec": {
                     "clusterName": "c1", "version": "v1.31.0",
                     "bootstrap": {"configRef": reference("bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate", "boot")},
                     "infrastructureRef": reference("infrastructure.cluster.x-k8s.io", "DockerMachineTemplate", "infra")}}},
    })
}

/// A ConfigMap of about 1 KiB of JSON.
fn config_map(name: &str, counter: u64) -> Value {
    let mut cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "web", "team": "storefront", "owner": "storefront"}},
        "data": {"counter": counter.to_string(), "LOG_LEVEL": "info", "FEATURE_FLAGS": "checkout-v2,search-suggest"},
    });
    let len = cm.to_string().len();
    cm["data"]["padding"] = json!("x".repeat(1024usize.saturating_sub(len + 14)));
    cm
}

/// A Secret of about 1 KiB of JSON (its values base64, as Secrets hold them).
fn secret(name: &str) -> Value {
    use base64::Engine as _;
    let encode = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut secret = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": name, "labels": {"app": "web", "team": "storefront"}},
        "data": {"username": encode("storefront"), "password": encode("correct-horse-battery-staple")},
    });
    let len = secret.to_string().len();
    let padding = "x".repeat(1024usize.saturating_sub(len + 14) * 3 / 4);
    secret["data"]["padding"] = json!(encode(&padding));
    secret
}

/// The change the `update` mode patches (and `apply` applies) on its `i`-th call.
pub fn change(resource: &str, i: u64) -> Value {
    match resource {
        "configmaps" => json!({"data": {"counter": (i % 50).to_string()}}),
        "machinedeployments" | "machinedeployments-v1beta1" => {
            json!({"spec": {"replicas": 1 + (i % 50)}})
        }
        _ => json!({"spec": {"size": 1 + (i % 50)}}),
    }
}

/// A JSON merge patch (RFC 7386) of `patch` into `doc`.
pub fn merge(doc: &mut Value, patch: &Value) {
    match (doc, patch) {
        (Value::Object(d), Value::Object(p)) => {
            for (k, v) in p {
                merge(d.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (d, p) => *d = p.clone(),
    }
}

/// A leader-election Lease held by `name`, renewed for the `renewal`-th time.
pub fn lease(name: &str, renewal: u64) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name},
        "spec": {
            "holderIdentity": "controller-0", "leaseDurationSeconds": 15,
            "acquireTime": "2026-01-01T00:00:00.000000Z",
            "renewTime": format!("2026-01-01T00:{:02}:{:02}.{:06}Z", renewal / 60 % 60, renewal % 60, renewal % 1_000_000),
            "leaseTransitions": 0,
        },
    })
}

/// The Unix-nanosecond timestamp after [`SENT_ANNOTATION`] in a JSON text (an event line or a
/// stored value), found without parsing the rest: a fan-out reads millions of these.
pub fn sent_nanos(json: &[u8]) -> Option<u64> {
    let needle = b"sent-nanos\":\"";
    let at = json.windows(needle.len()).position(|w| w == needle)? + needle.len();
    let digits = json[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&json[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_to_the_size_asked() {
        let r = Resource::named("widgets").unwrap();
        assert_eq!(r.sized_object("w", 1024).to_string().len(), 1024);
    }

    #[test]
    fn finds_the_sent_timestamp() {
        let mut o = json!({"metadata": {"annotations": {}}});
        o["metadata"]["annotations"][SENT_ANNOTATION] = json!("1234");
        assert_eq!(sent_nanos(o.to_string().as_bytes()), Some(1234));
        assert_eq!(sent_nanos(b"{}"), None);
    }
}
