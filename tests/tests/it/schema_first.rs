//! A strategy module's validation never sees an object its resource's schema refuses for a
//! member's type: with the example Deployment CRD (`replicas: integer`), `replicas: "three"` is
//! one cause, the schema's (`FieldValueTypeInvalid`, Kubernetes' words), not the schema's and the
//! Rust strategy's own; and the Go strategy, whose typed decoding fails on it, answers the same.

use std::path::Path;

use serde_json::{json, Value};
use strategy_host_e2e::{call, shared_module_cache, warm_go_modules, HostProcess};

fn ill_typed_replicas(module: (&str, &str)) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let strategies = dir.path().join("strategies");
    std::fs::create_dir(&strategies).unwrap();
    std::fs::copy(module.1, strategies.join(module.0)).unwrap();
    let host = HostProcess::start(&[
        "--strategy-dir",
        &strategies.display().to_string(),
        "--module-cache-dir",
        &shared_module_cache().display().to_string(),
    ])
    .unwrap();
    let crd: Value = serde_yaml::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/crds/deployments.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    // The module defines the resource on its own a moment after it loads: replace that
    // definition with the example's, or create the example's first.
    let crds = host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    let url = format!("{crds}/deployments.apps.example.com");
    let mut defined = false;
    for _ in 0..100 {
        let current = call("GET", &url, None).unwrap();
        let r = if current.code == 200 {
            let mut replaced = crd.clone();
            replaced["metadata"]["resourceVersion"] =
                current.json()["metadata"]["resourceVersion"].clone();
            call("PUT", &url, Some(&replaced)).unwrap()
        } else {
            call("POST", &crds, Some(&crd)).unwrap()
        };
        if matches!(r.code, 200 | 201) {
            defined = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        defined,
        "the example's Deployment definition could not be applied"
    );
    let deployment = json!({"apiVersion": "apps.example.com/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": "three", "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}}}});
    let path = "/apis/apps.example.com/v1/namespaces/default/deployments";
    let mut last = Value::Null;
    // The definition's new schema reaches the served resource a moment after the PUT.
    for _ in 0..100 {
        let r = call("POST", &host.url(path), Some(&deployment)).unwrap();
        last = r.json();
        if last["details"]["causes"][0]["reason"] == "FieldValueTypeInvalid" {
            return last;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("no schema cause: {last:#}")
}

#[test]
fn an_ill_typed_member_gets_the_schemas_one_cause_whatever_the_strategy() {
    warm_go_modules();
    for module in [
        ("deployments.wasm", strategy_artifacts::DEPLOYMENT),
        ("deployments-go.wasm", strategy_artifacts::GO_DEPLOYMENT),
    ] {
        let status = ill_typed_replicas(module);
        assert_eq!(status["code"], 422, "{status:#}");
        let causes = status["details"]["causes"].as_array().unwrap();
        assert_eq!(causes.len(), 1, "{module:?}: {status:#}");
        assert_eq!(causes[0]["field"], "spec.replicas");
        assert_eq!(
            status["message"],
            "Deployment.apps.example.com \"web\" is invalid: spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            "{module:?}"
        );
    }
}
