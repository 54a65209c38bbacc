//! Custom resources through their life with kubectl: scaled and selected through their
//! subresources, their status written by clients and controllers alike, and removed with their
//! definition through the registry.

use super::*;

const MACHINES: &str = "/apis/fleet.example.com/v1/namespaces/default/machinesets";

/// `machinesets.fleet.example.com`, shaped as Cluster API's MachineSet: a `scale` subresource
/// and `spec.clusterName` selectable.
fn machinesets_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "machinesets.fleet.example.com"},
        "spec": {"group": "fleet.example.com", "scope": "Namespaced",
                 "names": {"plural": "machinesets", "singular": "machineset", "kind": "MachineSet"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                   "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                       "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                   "selectableFields": [{"jsonPath": ".spec.clusterName"}],
                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                     "spec": {"type": "object", "properties": {
                         "clusterName": {"type": "string"},
                         "replicas": {"type": "integer", "minimum": 0, "maximum": 50}}},
                     "status": {"type": "object", "properties": {
                         "replicas": {"type": "integer"}, "selector": {"type": "string"}}}}}}}]}
    })
}

#[test]
fn kubectl_scales_and_selects_custom_resources() {
    let s = KubeFixture::start(latest_kubectl_path().unwrap());
    // A selectable field the schema does not have refuses the definition.
    let mut broken = machinesets_crd();
    broken["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.nothing"}]);
    let err = s
        .run_with(&["apply", "-f", "-"], Some(&broken.to_string()))
        .2;
    assert!(
        err.contains("spec.versions[0].selectableFields[0].jsonPath"),
        "{err}"
    );
    s.ok_with(&["apply", "-f", "-"], Some(&machinesets_crd().to_string()));
    eventually("machinesets served", Duration::from_secs(10), || {
        s.status(MACHINES) == 200
    });
    for (name, cluster) in [("a", "east"), ("b", "west"), ("c", "east")] {
        let obj = json!({"apiVersion": "fleet.example.com/v1", "kind": "MachineSet",
                         "metadata": {"name": name}, "spec": {"clusterName": cluster, "replicas": 1}});
        assert_eq!(
            call("POST", &s.host.url(MACHINES), Some(&obj))
                .unwrap()
                .code,
            201
        );
    }
    let east = s.ok(&[
        "get",
        "machinesets",
        "--field-selector",
        "spec.clusterName=east",
        "-o",
        "name",
    ]);
    assert_eq!(
        east.lines().collect::<Vec<_>>(),
        vec![
            "machineset.fleet.example.com/a",
            "machineset.fleet.example.com/c"
        ]
    );
    let err = s.fails(&["get", "machinesets", "--field-selector", "spec.replicas=1"]);
    assert!(err.contains("field label not supported"), "{err}");

    // The status carries the selector an autoscaler reads.
    let status = json!({"status": {"replicas": 1, "selector": "app=a"}});
    let patched = strategy_host_e2e::call_with(
        "PATCH",
        &s.host.url(&format!("{MACHINES}/a/status")),
        Some(status.to_string().as_bytes()),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    assert_eq!(patched.code, 200, "{}", patched.body);
    s.ok(&["scale", "machineset", "a", "--replicas=5"]);
    let scale = s.get(&format!("{MACHINES}/a/scale"));
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 5);
    assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=a"}));
    assert_eq!(s.get(&format!("{MACHINES}/a"))["spec"]["replicas"], 5);
    // The resource's own schema holds for a scale, and a stale resourceVersion conflicts.
    let err = s.fails(&["scale", "machineset", "a", "--replicas=51"]);
    assert!(err.contains("spec.replicas"), "{err}");
    let mut stale = s.get(&format!("{MACHINES}/a/scale"));
    stale["metadata"]["resourceVersion"] = json!("1");
    stale["spec"]["replicas"] = json!(2);
    let refused = call(
        "PUT",
        &s.host.url(&format!("{MACHINES}/a/scale")),
        Some(&stale),
    )
    .unwrap();
    assert_eq!(refused.code, 409, "{}", refused.body);
    assert!(
        refused.body.contains("the object has been modified"),
        "{}",
        refused.body
    );
    // A PUT of the Scale, as an autoscaler writes it.
    let mut put = s.get(&format!("{MACHINES}/b/scale"));
    put["spec"]["replicas"] = json!(3);
    let replaced = call(
        "PUT",
        &s.host.url(&format!("{MACHINES}/b/scale")),
        Some(&put),
    )
    .unwrap();
    assert_eq!(replaced.code, 200, "{}", replaced.body);
    assert_eq!(replaced.json()["spec"]["replicas"], 3);
    // Discovery names the subresource, so clients find it.
    let resources = s.get("/apis/fleet.example.com/v1");
    let names: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(names.contains(&"machinesets/scale"), "{names:?}");
}

#[test]
fn deleting_a_definition_deletes_its_objects_through_the_registry_first() {
    let s = KubeFixture::start(latest_kubectl_path().unwrap());
    s.ok_with(&["apply", "-f", "-"], Some(&things_crd(false).to_string()));
    eventually("things served", Duration::from_secs(10), || {
        s.status(THINGS) == 200
    });
    let thing = |name: &str, finalizers: Value| {
        json!({"apiVersion": "ratchet.example.com/v1", "kind": "Thing",
               "metadata": {"name": name, "finalizers": finalizers}, "spec": {"x": "a"}})
    };
    let post = |obj: &Value| call("POST", &s.host.url(THINGS), Some(obj)).unwrap();
    assert_eq!(post(&thing("plain", json!([]))).code, 201);
    let held = post(&thing("held", json!(["example.com/hold"])));
    assert_eq!(held.code, 201, "{}", held.body);
    // A dependent of the plain Thing, which the garbage collector deletes after it.
    let owner = json!([{"apiVersion": "ratchet.example.com/v1", "kind": "Thing", "name": "plain",
                        "uid": s.get(&format!("{THINGS}/plain"))["metadata"]["uid"]}]);
    let dependent = json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "of-plain", "ownerReferences": owner}});
    let configmaps = s.host.url("/api/v1/namespaces/default/configmaps");
    assert_eq!(
        call("POST", &configmaps, Some(&dependent)).unwrap().code,
        201
    );

    s.ok(&[
        "delete",
        "crd",
        "things.ratchet.example.com",
        "--wait=false",
    ]);
    let crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.ratchet.example.com";
    eventually(
        "the plain Thing deleted, the held one marked",
        Duration::from_secs(10),
        || {
            s.status(&format!("{THINGS}/plain")) == 404
                && s.get(&format!("{THINGS}/held"))["metadata"]["deletionTimestamp"].is_string()
        },
    );
    let terminating = s.get(crd);
    assert!(
        terminating["metadata"]["finalizers"]
            .as_array()
            .unwrap()
            .contains(&json!("customresourcecleanup.apiextensions.k8s.io")),
        "{terminating}"
    );
    let condition = terminating["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Terminating")
        .cloned()
        .unwrap();
    assert_eq!(condition["status"], "True", "{condition}");
    // No new object while the definition goes.
    let refused = post(&thing("late", json!([])));
    assert_eq!(refused.code, 405, "{}", refused.body);
    assert_eq!(
        refused.json()["message"],
        "create not allowed while custom resource definition is terminating"
    );
    eventually(
        "the garbage collector to delete the dependent",
        Duration::from_secs(10),
        || s.status("/api/v1/namespaces/default/configmaps/of-plain") == 404,
    );
    // The held Thing keeps the definition until its finalizer goes.
    assert_eq!(s.status(crd), 200);
    s.ok(&[
        "patch",
        "things.ratchet.example.com",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    // The controller retries with backoff (at most 10 s apart) while objects remain.
    eventually("the definition removed", Duration::from_secs(30), || {
        s.status(crd) == 404
    });
    assert_eq!(s.status(THINGS), 404);
}

/// Status writes as Kubernetes' API specs make them: a CustomResourceDefinition's status keeps
/// the conditions a client adds beside the server's own (through PUT and PATCH of `status`), and
/// a namespace's status write may change its annotations, only not its spec.
#[test]
fn status_writes_keep_what_clients_add() {
    let host = strategy_host_e2e::HostProcess::start(&[]).unwrap();
    let crds = host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.status.example.com"},
        "spec": {"group": "status.example.com", "scope": "Namespaced",
                 "names": {"plural": "foos", "kind": "Foo"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}
    });
    assert_eq!(call("POST", &crds, Some(&crd)).unwrap().code, 201);
    let status = format!("{crds}/foos.status.example.com/status");
    let mut read = call("GET", &status, None).unwrap().json();
    read["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"message": "updated"}));
    let put = call("PUT", &status, Some(&read)).unwrap();
    assert_eq!(put.code, 200, "{}", put.body);
    let conditions = put.json()["status"]["conditions"].clone();
    assert!(
        conditions
            .as_array()
            .unwrap()
            .contains(&json!({"message": "updated"})),
        "{conditions}"
    );
    assert!(
        conditions
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Established"),
        "the server's own stay: {conditions}"
    );
    let patched = strategy_host_e2e::call_with(
        "PATCH",
        &status,
        Some(
            json!([{"op": "add", "path": "/status/conditions", "value": [{"message": "patched"}]}])
                .to_string()
                .as_bytes(),
        ),
        &[("Content-Type", "application/json-patch+json")],
    )
    .unwrap();
    assert_eq!(patched.code, 200, "{}", patched.body);
    let conditions = patched.json()["status"]["conditions"].clone();
    assert!(
        conditions
            .as_array()
            .unwrap()
            .contains(&json!({"message": "patched"})),
        "{conditions}"
    );

    call(
        "POST",
        &host.url("/api/v1/namespaces"),
        Some(&json!({"metadata": {"name": "team"}})),
    )
    .unwrap();
    let patched = strategy_host_e2e::call_with(
        "PATCH",
        &host.url("/api/v1/namespaces/team/status"),
        Some(
            json!({
                "metadata": {"annotations": {"e2e-patched-ns-status": "team"}},
                "spec": {"finalizers": []},
                "status": {"conditions": [{"type": "StatusPatch", "status": "True",
                                           "reason": "E2E", "message": "Patched by an e2e test"}]}
            })
            .to_string()
            .as_bytes(),
        ),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    assert_eq!(patched.code, 200, "{}", patched.body);
    let ns = patched.json();
    assert_eq!(
        ns["metadata"]["annotations"]["e2e-patched-ns-status"], "team",
        "{ns}"
    );
    assert_eq!(ns["status"]["conditions"][0]["reason"], "E2E", "{ns}");
    assert_eq!(
        ns["spec"]["finalizers"],
        json!(["kubernetes"]),
        "the spec is not the status's: {ns}"
    );
}
