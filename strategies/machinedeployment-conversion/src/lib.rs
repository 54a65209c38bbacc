//! An example version conversion: Cluster API's MachineDeployment (`cluster.x-k8s.io`) between
//! v1beta1 and v1beta2 as a wasm module, where Cluster API runs a conversion webhook (a
//! Deployment, a Service and a certificate). The two versions differ here in the machine
//! template's object references — v1beta1's carry `apiVersion`, v1beta2's `apiGroup` — and in
//! where `minReadySeconds` lives (v1beta1: the spec; v1beta2: the machine template).

use serde_json::Value;
use strategy_guest_sdk::{strategy, Context, LazyObject, Resource, Scope, Strategy};

const GROUP: &str = "cluster.x-k8s.io";

/// The conversion of `cluster.x-k8s.io` MachineDeployments.
#[derive(Default)]
pub struct MachineDeployments;

/// The group a v1beta1 reference's `apiVersion` names (`group/version`).
fn group_of(api_version: &str) -> &str {
    api_version.split('/').next().unwrap_or_default()
}

/// The reference at `path` of `machine`, when it is an object, in the other version's shape:
/// v1beta1's (`apiVersion`, `kind`, `name`) as v1beta2's (`apiGroup`, `kind`, `name`), or back
/// with the group's `v1beta1` (what Cluster API's providers serve). Every other member goes.
/// Changed in place, so `kind` and `name` keep their text unparsed.
fn convert_reference(machine: &mut LazyObject, path: &[&str], to_v1beta2: bool) {
    if !machine.contains(path) {
        return;
    }
    let Some(reference) = machine.object_mut(path) else {
        return;
    };
    let (from, to) = match to_v1beta2 {
        true => ("apiVersion", "apiGroup"),
        false => ("apiGroup", "apiVersion"),
    };
    let read: String = reference.get(&[from]).ok().flatten().unwrap_or_default();
    let others: Vec<String> = reference
        .names()
        .filter(|name| !matches!(*name, "kind" | "name"))
        .map(str::to_owned)
        .collect();
    for name in &others {
        reference.remove(name);
    }
    match to_v1beta2 {
        true => reference.insert(to, group_of(&read)),
        false => reference.insert(to, format!("{read}/v1beta1")),
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
        convert_reference(machine, &["infrastructureRef"], to_v1beta2);
        convert_reference(machine, &["bootstrap", "configRef"], to_v1beta2);
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
        // v1beta2's references hold a group, a kind and a name, nothing else.
        let mut extra = v1beta1();
        extra["spec"]["template"]["spec"]["infrastructureRef"]["uid"] = json!("u-1");
        let v2 = convert(&MachineDeployments, &ctx, extra, "cluster.x-k8s.io/v1beta2").unwrap();
        assert_eq!(
            v2["spec"]["template"]["spec"]["infrastructureRef"],
            machine["infrastructureRef"]
        );
        let other = convert(&MachineDeployments, &ctx, v1beta1(), "cluster.x-k8s.io/v2");
        assert!(other.is_err());
    }
}
