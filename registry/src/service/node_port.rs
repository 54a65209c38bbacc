//! Node ports of NodePort and LoadBalancer Services (`--service-node-port-range`): a port the
//! client names is checked against the range and the ports other Services hold, every other
//! port gets a free one. No port is opened here; the numbers are what charts and clients read.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::store::{RegistryStore, RequestScope};
use crate::strategy::FieldError;
use strategy_host_storage::ListOptions;

/// The range node ports come from, inclusive (kube-apiserver's default 30000-32767).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodePortRange {
    low: i64,
    high: i64,
}

impl Default for NodePortRange {
    fn default() -> Self {
        Self {
            low: 30000,
            high: 32767,
        }
    }
}

impl std::fmt::Display for NodePortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.low, self.high)
    }
}

/// A `--service-node-port-range` that is not a range of ports.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a port range such as 30000-32767")]
pub struct NotAPortRange(String);

impl std::str::FromStr for NodePortRange {
    type Err = NotAPortRange;

    /// `low-high`, e.g. `30000-32767` (a single port `N` is the range `N-N`).
    fn from_str(s: &str) -> Result<Self, NotAPortRange> {
        let (low, high) = s.split_once('-').unwrap_or((s, s));
        let port = |p: &str| {
            p.trim()
                .parse::<i64>()
                .ok()
                .filter(|p| (1..=65535).contains(p))
        };
        match (port(low), port(high)) {
            (Some(low), Some(high)) if low <= high => Ok(Self { low, high }),
            _ => Err(NotAPortRange(s.to_string())),
        }
    }
}

impl NodePortRange {
    /// Checks the node ports `spec` names and gives the others a free one. `old` is the spec
    /// before an update: the ports it held stay the Service's own.
    pub fn assign(&self, spec: &mut Value, old: Option<&Value>, others: &[i64]) -> Vec<FieldError> {
        let held: BTreeSet<i64> = old
            .map(node_ports)
            .unwrap_or_default()
            .into_iter()
            .collect();
        let mut taken: BTreeSet<i64> = others.iter().copied().collect();
        let mut errors = Vec::new();
        let skip = spec["type"] == "LoadBalancer" && spec["allocateLoadBalancerNodePorts"] == false;
        let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) else {
            return errors;
        };
        for (i, port) in ports.iter_mut().enumerate() {
            let wanted = port["nodePort"].as_i64().unwrap_or(0);
            if wanted == 0 {
                continue;
            }
            let field = format!("spec.ports[{i}].nodePort");
            if held.contains(&wanted) && !taken.contains(&wanted) {
                taken.insert(wanted);
            } else if !(self.low..=self.high).contains(&wanted) {
                errors.push(FieldError::invalid(
                    field,
                    &json!(wanted),
                    format!("provided port is not in the valid range. The range of valid ports is {self}"),
                ));
            } else if !taken.insert(wanted) {
                errors.push(FieldError::invalid(
                    field,
                    &json!(wanted),
                    "provided port is already allocated",
                ));
            }
        }
        if skip || !errors.is_empty() {
            return errors;
        }
        for port in ports.iter_mut() {
            if port["nodePort"].as_i64().unwrap_or(0) != 0 {
                continue;
            }
            match self.free(&taken) {
                Some(p) => {
                    taken.insert(p);
                    port["nodePort"] = json!(p);
                }
                None => {
                    errors.push(FieldError::invalid(
                        "spec.ports",
                        &json!(null),
                        format!("failed to allocate a nodePort: range is full ({self})"),
                    ));
                    break;
                }
            }
        }
        errors
    }

    /// A free port: a random one, else the first free in order.
    fn free(&self, taken: &BTreeSet<i64>) -> Option<i64> {
        let span = (self.high - self.low + 1) as u64;
        let start = self.low + (rand::random::<u64>() % span) as i64;
        (start..=self.high)
            .chain(self.low..start)
            .find(|p| !taken.contains(p))
    }
}

/// The node ports of a spec.
fn node_ports(spec: &Value) -> Vec<i64> {
    spec["ports"]
        .as_array()
        .map(|ports| {
            ports
                .iter()
                .filter_map(|p| p["nodePort"].as_i64())
                .filter(|p| *p != 0)
                .collect()
        })
        .unwrap_or_default()
}

/// A port that leaves out its node port keeps the one the old spec gave the same port and
/// protocol.
pub(super) fn carry_over(new: &mut Value, old: &Value) {
    let Some(ports) = new.get_mut("ports").and_then(Value::as_array_mut) else {
        return;
    };
    let before = old["ports"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for port in ports.iter_mut() {
        if port["nodePort"].as_i64().unwrap_or(0) != 0 {
            continue;
        }
        let same = before
            .iter()
            .find(|o| o["port"] == port["port"] && o["protocol"] == port["protocol"]);
        if let Some(node_port) = same.and_then(|o| o["nodePort"].as_i64()) {
            port["nodePort"] = json!(node_port);
        }
    }
}

/// The node ports held by every Service but `namespace`/`name`, from the watch cache.
///
/// Two Services created at the same instant may be given the same port: kube-apiserver
/// serializes them through one range object in etcd; this server does not yet.
pub(super) async fn held_by_others(
    services: &RegistryStore,
    namespace: &str,
    name: &str,
) -> Vec<i64> {
    let scope = RequestScope {
        version: "v1".into(),
        ..RequestScope::default()
    };
    let opts = ListOptions {
        resource_version: "0".into(),
        ..ListOptions::default()
    };
    let Ok(page) = services.list(&scope, opts).await else {
        return Vec::new();
    };
    page.item_values()
        .iter()
        .filter(|s| {
            s.pointer("/metadata/namespace").and_then(Value::as_str) != Some(namespace)
                || s.pointer("/metadata/name").and_then(Value::as_str) != Some(name)
        })
        .flat_map(|s| node_ports(&s["spec"]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_ports_are_checked_and_the_rest_assigned() {
        let range: NodePortRange = "30000-30002".parse().unwrap();
        let mut spec = json!({"type": "NodePort", "ports": [
            {"port": 80, "protocol": "TCP", "nodePort": 30001}, {"port": 443, "protocol": "TCP"}]});
        assert!(range.assign(&mut spec, None, &[30000]).is_empty());
        assert_eq!(spec["ports"][1]["nodePort"], 30002);
        let mut clash = json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30000}]});
        let errors: Vec<String> = range
            .assign(&mut clash, None, &[30000])
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            ["spec.ports[0].nodePort: Invalid value: 30000: provided port is already allocated"]
        );
        let mut outside = json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]});
        assert_eq!(
            range.assign(&mut outside, None, &[])[0].to_string(),
            "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-30002"
        );
        // An update keeps the port the Service held.
        let old = json!({"ports": [{"port": 80, "nodePort": 30000}]});
        let mut kept = json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30000}]});
        assert!(range.assign(&mut kept, Some(&old), &[]).is_empty());
    }

    #[test]
    fn an_update_without_node_ports_keeps_the_old_ones() {
        let old = json!({"ports": [{"port": 80, "protocol": "TCP", "nodePort": 31000}]});
        let mut new =
            json!({"ports": [{"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "TCP"}]});
        carry_over(&mut new, &old);
        assert_eq!(new["ports"][0]["nodePort"], 31000);
        assert!(new["ports"][1].get("nodePort").is_none());
    }
}
