//! A conversion module converting a long list: its objects go out in batches that run on the
//! runtime's workers at once, and come back converted, each in its place.

use crate::wasm_common::*;
use serde_json::{json, Value};
use strategy_host::strategy::Strategy;
use strategy_host::wasm::WasmStrategy;

/// A v1beta1 MachineDeployment named `md-<i>` whose references and `minReadySeconds` carry `i`.
fn machine_deployment(i: usize) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
        "metadata": {"name": format!("md-{i}"), "namespace": "default"},
        "spec": {"clusterName": "c1", "minReadySeconds": i, "template": {"spec": {
            "clusterName": "c1",
            "bootstrap": {"configRef": {"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1",
                                        "kind": "KubeadmConfigTemplate", "name": format!("b-{i}")}},
            "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                  "kind": "DockerMachineTemplate", "name": format!("i-{i}")}}}}
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_list_is_converted_in_batches_that_keep_its_order() {
    let rt = runtime();
    let module = load(&rt, strategy_artifacts::MACHINEDEPLOYMENT_CONVERSION);
    let strategy = WasmStrategy::new(rt, module);
    let mut ctx = ctx(
        "cluster.x-k8s.io",
        "MachineDeployment",
        "machinedeployments",
        true,
    );
    ctx.resource.version = "v1beta1".into();
    // Several batches of 64, the last one short.
    let objects: Vec<Vec<u8>> = (0..300).map(machine_deployment).collect();
    let converted = strategy
        .convert(&ctx.resource, objects, "cluster.x-k8s.io/v1beta2")
        .await
        .expect("converted");
    assert_eq!(converted.len(), 300);
    for (i, answer) in converted.iter().enumerate() {
        let md: Value = serde_json::from_slice(answer).expect("a JSON object");
        assert_eq!(md["apiVersion"], "cluster.x-k8s.io/v1beta2");
        assert_eq!(
            md["metadata"]["name"],
            format!("md-{i}"),
            "answer {i} in its place"
        );
        let machine = &md["spec"]["template"]["spec"];
        assert_eq!(machine["minReadySeconds"], i);
        assert_eq!(
            machine["infrastructureRef"],
            json!({"apiGroup": "infrastructure.cluster.x-k8s.io",
                   "kind": "DockerMachineTemplate", "name": format!("i-{i}")})
        );
        assert_eq!(machine["bootstrap"]["configRef"]["name"], format!("b-{i}"));
    }
}
