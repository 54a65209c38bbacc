//! An example version conversion: Cluster API's MachineDeployment (`cluster.x-k8s.io`) between
//! v1beta1 and v1beta2 as a wasm module, where Cluster API runs a conversion webhook (a
//! Deployment, a Service and a certificate). The two versions differ here in the machine
//! template's object references — v1beta1's carry `apiVersion`, v1beta2's `apiGroup` — and in
//! where `minReadySeconds` lives (v1beta1: the spec; v1beta2: the machine template).

use serde_json::{Map, Value};
use strategy_guest_sdk::{strategy, Context, LazyObject, Resource, Scope, Strategy};

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

/// The reference at `path` of `machine` converted by `convert`, when it is an object.
fn convert_reference(
    machine: &mut LazyObject,
    path: &[&str],
    convert: fn(&Map<String, Value>) -> Map<String, Value>,
) {
    let Ok(Some(Value::Object(reference))) = machine.get::<Value>(path) else {
        return;
    };
    let (name, parents) = path.split_last().expect("a path");
    if let Some(parent) = machine.object_mut(parents) {
        parent.insert(name, convert(&reference));
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

    /// Lazily: only `apiVersion` and the spec's members on the way to the references are
    /// parsed; the rest (metadata, status, the template's other fields) goes back untouched.
    fn convert_lazily(
        &self,
        _ctx: &Context,
        mut obj: LazyObject,
        desired: &str,
    ) -> Result<LazyObject, String> {
        let to_v1beta2 = match desired.strip_prefix(GROUP) {
            Some("/v1beta2") => true,
            Some("/v1beta1") => false,
            _ => return Err(format!("cannot convert to {desired}")),
        };
        let source: Option<String> = obj.get(&["apiVersion"]).unwrap_or_default();
        obj.insert("apiVersion", desired);
        if source.as_deref() == Some(desired) || !obj.contains(&["spec"]) {
            return Ok(obj);
        }
        let Some(spec) = obj.object_mut(&["spec"]) else {
            return Ok(obj);
        };
        // minReadySeconds: v1beta1's spec, v1beta2's machine template.
        let (from, to): (&[&str], &[&str]) = match to_v1beta2 {
            true => (&["minReadySeconds"], &["template", "spec"]),
            false => (&["template", "spec", "minReadySeconds"], &[]),
        };
        // Opened first, so what is read below is found among parsed members, not scanned for.
        spec.object_mut(&["template"])
            .ok_or("spec.template is not an object")?
            .object_mut(&["spec"])
            .ok_or("spec.template.spec is not an object")?;
        let ready: Option<Value> = spec.get(from).ok().flatten();
        if let Some(seconds) = ready {
            let (name, parents) = from.split_last().expect("a path");
            if let Some(parent) = spec.object_mut(parents) {
                parent.remove(name);
            }
            if let Some(target) = spec.object_mut(to) {
                target.insert("minReadySeconds", seconds);
            }
        }
        let machine = spec
            .object_mut(&["template", "spec"])
            .ok_or("spec.template.spec is not an object")?;
        let convert = if to_v1beta2 {
            reference_to_v1beta2
        } else {
            reference_to_v1beta1
        };
        convert_reference(machine, &["infrastructureRef"], convert);
        convert_reference(machine, &["bootstrap", "configRef"], convert);
        Ok(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use strategy_guest_sdk::conversion::{convert, round_trip};

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
        let ctx = Context::default();
        let v2 = convert(
            &MachineDeployments,
            &ctx,
            v1beta1(),
            "cluster.x-k8s.io/v1beta2",
        )
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
        let other = convert(&MachineDeployments, &ctx, v1beta1(), "cluster.x-k8s.io/v2");
        assert!(other.is_err());
    }
}
