//! An example version conversion: Cluster API's MachineDeployment (`cluster.x-k8s.io`) between
//! v1beta1 and v1beta2 as a wasm module, where Cluster API runs a conversion webhook (a
//! Deployment, a Service and a certificate). The two versions differ here in the machine
//! template's object references — v1beta1's carry `apiVersion`, v1beta2's `apiGroup` — and in
//! where `minReadySeconds` lives (v1beta1: the spec; v1beta2: the machine template).

use serde_json::{Map, Value};
use strategy_guest_sdk::{strategy, Context, Resource, Scope, Strategy};

const GROUP: &str = "cluster.x-k8s.io";

/// The conversion of `cluster.x-k8s.io` MachineDeployments.
#[derive(Default)]
pub struct MachineDeployments;

/// A v1beta1 reference (`apiVersion`, `kind`, `name`) as v1beta2's (`apiGroup`, `kind`, `name`).
fn reference_to_v1beta2(reference: &Map<String, Value>) -> Map<String, Value> {
    let mut out = keep(reference, &["kind", "name"]);
    let group = reference
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.split('/').next())
        .unwrap_or_default();
    out.insert("apiGroup".into(), group.into());
    out
}

/// A v1beta2 reference as v1beta1's: the group's `v1beta1` (what Cluster API's providers serve).
fn reference_to_v1beta1(reference: &Map<String, Value>) -> Map<String, Value> {
    let mut out = keep(reference, &["kind", "name"]);
    let group = reference
        .get("apiGroup")
        .and_then(Value::as_str)
        .unwrap_or_default();
    out.insert("apiVersion".into(), format!("{group}/v1beta1").into());
    out
}

fn keep(map: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    map.iter()
        .filter(|(k, _)| keys.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl MachineDeployments {
    /// The machine template's references converted in place.
    fn convert_references(machine: &mut Map<String, Value>, to_v1beta2: bool) {
        let convert = if to_v1beta2 {
            reference_to_v1beta2
        } else {
            reference_to_v1beta1
        };
        if let Some(Value::Object(r)) = machine.get_mut("infrastructureRef") {
            *r = convert(r);
        }
        if let Some(Value::Object(r)) = machine
            .get_mut("bootstrap")
            .and_then(|b| b.get_mut("configRef"))
        {
            *r = convert(r);
        }
    }
}

#[strategy]
impl Strategy for MachineDeployments {
    type Object = Value;
    const NAME: &'static str = "machinedeployment-conversion";
    const RESOURCES: &'static [Resource] = &[Resource::new(
        GROUP,
        "v1beta2",
        "MachineDeployment",
        "machinedeployments",
        Scope::Namespaced,
    )];

    fn convert(&self, _ctx: &Context, mut obj: Value, desired: &str) -> Result<Value, String> {
        let to_v1beta2 = match desired.strip_prefix(GROUP) {
            Some("/v1beta2") => true,
            Some("/v1beta1") => false,
            _ => return Err(format!("cannot convert to {desired}")),
        };
        let source = obj["apiVersion"].as_str().unwrap_or_default().to_string();
        obj["apiVersion"] = desired.into();
        if source == desired {
            return Ok(obj);
        }
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(obj);
        };
        let ready = if to_v1beta2 {
            spec.remove("minReadySeconds")
        } else {
            None
        };
        let machine = spec
            .entry("template")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or("spec.template is not an object")?
            .entry("spec")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or("spec.template.spec is not an object")?;
        Self::convert_references(machine, to_v1beta2);
        match ready {
            Some(seconds) => {
                machine.insert("minReadySeconds".into(), seconds);
            }
            None if !to_v1beta2 => {
                if let Some(seconds) = machine.remove("minReadySeconds") {
                    spec.insert("minReadySeconds".into(), seconds);
                }
            }
            None => {}
        }
        Ok(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use strategy_guest_sdk::conversion::round_trip;

    fn v1beta1() -> Value {
        json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
               "metadata": {"name": "md"},
               "spec": {"clusterName": "c1", "minReadySeconds": 5, "template": {"spec": {
                   "clusterName": "c1",
                   "bootstrap": {"configRef": {"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1", "kind": "KubeadmConfigTemplate", "name": "b"}},
                   "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate", "name": "i"}}}}})
    }

    #[test]
    fn converts_to_v1beta2_and_round_trips() {
        let v2 = MachineDeployments
            .convert(&Context::default(), v1beta1(), "cluster.x-k8s.io/v1beta2")
            .unwrap();
        let machine = &v2["spec"]["template"]["spec"];
        assert_eq!(machine["minReadySeconds"], 5);
        assert_eq!(
            machine["infrastructureRef"],
            json!({"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": "i"})
        );
        assert!(v2["spec"].get("minReadySeconds").is_none());
        round_trip(&MachineDeployments, &v1beta1(), "cluster.x-k8s.io/v1beta2").unwrap();
        round_trip(&MachineDeployments, &v2, "cluster.x-k8s.io/v1beta1").unwrap();
        let other =
            MachineDeployments.convert(&Context::default(), v1beta1(), "cluster.x-k8s.io/v2");
        assert!(other.is_err());
    }
}
