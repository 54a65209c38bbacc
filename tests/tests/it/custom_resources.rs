//! Custom resources as operators upgrade and remove them, against the real binary with kubectl:
//! validation ratcheting after a CRD tightens its schema; a deleted CRD's objects deleted
//! through the registry (finalizers, garbage collection) before the CRD goes; defaults added to a
//! schema given to objects stored before them as they are read.

use std::time::Duration;

use serde_json::{json, Value};
use strategy_host_e2e::{call, eventually, latest_kubectl_path, KubeFixture};

const THINGS: &str = "/apis/ratchet.example.com/v1/namespaces/default/things";

/// The `things.ratchet.example.com` definition; `tight` adds the limits of a later release.
fn things_crd(tight: bool) -> Value {
    let limit = |max: u64| if tight { json!(max) } else { json!(64) };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.ratchet.example.com"},
        "spec": {"group": "ratchet.example.com", "scope": "Namespaced",
                 "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                     "x": {"type": "string", "maxLength": limit(2)},
                     "z": {"type": "integer", "x-kubernetes-validations": [
                         {"rule": if tight { "self < 3" } else { "self < 100" }, "message": "z must be small"}]},
                     "ports": {"type": "array", "x-kubernetes-list-type": "map",
                               "x-kubernetes-list-map-keys": ["name"],
                               "items": {"type": "object", "required": ["name"], "properties": {
                                   "name": {"type": "string"},
                                   "protocol": {"type": "string", "maxLength": limit(3)}}}}
                   }}}}}}]}
    })
}

/// A Thing `name` with the values a tightened schema refuses.
fn old_thing(name: &str) -> Value {
    json!({"apiVersion": "ratchet.example.com/v1", "kind": "Thing", "metadata": {"name": name},
           "spec": {"x": "abcd", "z": 5, "ports": [{"name": "web", "protocol": "HTTPS"}]}})
}

/// The (field, message) of each cause of a 422.
fn causes(reply: &strategy_host_e2e::Reply) -> Vec<String> {
    assert_eq!(reply.code, 422, "{}", reply.body);
    reply.json()["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{}: {}", c["field"], c["message"]))
        .collect()
}

#[test]
fn a_tightened_schema_ratchets_unchanged_fields() {
    let s = KubeFixture::start(latest_kubectl_path().unwrap());
    let apply = |crd: &Value| s.ok_with(&["apply", "-f", "-"], Some(&crd.to_string()));
    apply(&things_crd(false));
    eventually("things served", Duration::from_secs(10), || {
        s.status(THINGS) == 200
    });
    let created = call("POST", &s.host.url(THINGS), Some(&old_thing("a"))).unwrap();
    assert_eq!(created.code, 201, "{}", created.body);

    apply(&things_crd(true));
    let mut n = 0;
    eventually("the tight schema served", Duration::from_secs(10), || {
        n += 1;
        let probe = old_thing(&format!("probe-{n}"));
        call("POST", &s.host.url(THINGS), Some(&probe))
            .unwrap()
            .code
            == 422
    });
    // A new object is held to the new schema.
    let refused = causes(&call("POST", &s.host.url(THINGS), Some(&old_thing("b"))).unwrap());
    assert_eq!(refused.len(), 2, "{refused:?}");

    // The old object still takes label changes and finalizers, added and removed.
    s.ok(&["label", "thing", "a", "team=blue"]);
    let finalizer = r#"{"metadata":{"finalizers":["example.com/cleanup"]}}"#;
    s.ok(&["patch", "thing", "a", "--type=merge", "-p", finalizer]);
    let unfinalize = r#"{"metadata":{"finalizers":null}}"#;
    s.ok(&["patch", "thing", "a", "--type=merge", "-p", unfinalize]);
    let got = s.get(&format!("{THINGS}/a"));
    assert_eq!(got["metadata"]["labels"]["team"], "blue");
    assert!(got["metadata"].get("finalizers").is_none(), "{got}");
    // A new item of a map list is checked; the unchanged item beside it is not.
    let added =
        r#"{"spec":{"ports":[{"name":"web","protocol":"HTTPS"},{"name":"db","protocol":"TCP"}]}}"#;
    s.ok(&["patch", "thing", "a", "--type=merge", "-p", added]);
    let bad_item = r#"{"spec":{"ports":[{"name":"web","protocol":"HTTPS"},{"name":"db","protocol":"SCTPX"}]}}"#;
    let err = s.fails(&["patch", "thing", "a", "--type=merge", "-p", bad_item]);
    assert!(
        err.contains("spec.ports[1].protocol: Too long: may not be more than 3 bytes"),
        "{err}"
    );
    // A changed value is held to the new schema and its rules.
    let err = s.fails(&[
        "patch",
        "thing",
        "a",
        "--type=merge",
        "-p",
        r#"{"spec":{"x":"efgh"}}"#,
    ]);
    assert!(err.contains("spec.x: Too long"), "{err}");
    let err = s.fails(&[
        "patch",
        "thing",
        "a",
        "--type=merge",
        "-p",
        r#"{"spec":{"z":6}}"#,
    ]);
    assert!(err.contains("z must be small"), "{err}");
    let fixed = r#"{"spec":{"x":"ok","z":1}}"#;
    s.ok(&["patch", "thing", "a", "--type=merge", "-p", fixed]);
}

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

/// The `knobs.defaults.example.com` definition (cluster-scoped, two string fields).
fn knobs_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "knobs.defaults.example.com"},
        "spec": {"group": "defaults.example.com", "scope": "Cluster",
                 "names": {"plural": "knobs", "singular": "knob", "kind": "Knob"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                     "a": {"type": "string"}, "b": {"type": "string"}}}}}]}
    })
}

#[test]
fn defaults_added_to_a_schema_are_given_to_objects_stored_before_them_as_they_are_read() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    let host = &k.host;
    let crds = host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    assert_eq!(call("POST", &crds, Some(&knobs_crd())).unwrap().code, 201);
    const KNOBS: &str = "/apis/defaults.example.com/v1/knobs";
    let knob = |name: &str| json!({"apiVersion": "defaults.example.com/v1", "kind": "Knob", "metadata": {"name": name}});
    eventually("knobs to be served", Duration::from_secs(10), || {
        call("POST", &host.url(KNOBS), Some(&knob("old")))
            .unwrap()
            .code
            == 201
    });
    let patch_crd = |ops: Value| {
        let reply = strategy_host_e2e::call_with(
            "PATCH",
            &format!("{crds}/knobs.defaults.example.com"),
            Some(ops.to_string().as_bytes()),
            &[("Content-Type", "application/json-patch+json")],
        )
        .unwrap();
        assert_eq!(reply.code, 200, "{}", reply.body);
    };
    let schema = "/spec/versions/0/schema/openAPIV3Schema/properties";
    patch_crd(json!([{"op": "add", "path": format!("{schema}/a/default"), "value": "A"}]));
    // A get, a list and a watch's initial events read the stored object with the default.
    eventually(
        "the old object to be read with a's default",
        Duration::from_secs(10),
        || k.get(&format!("{KNOBS}/old"))["a"] == "A",
    );
    let listed = k.get(KNOBS);
    assert_eq!(listed["items"][0]["a"], "A", "{listed}");
    let w = strategy_host_e2e::WatchReader::open(&host.url(&format!(
        "{KNOBS}?watch=true&resourceVersion=0&timeoutSeconds=5"
    )))
    .unwrap();
    let added = w.next(Duration::from_secs(5)).unwrap();
    assert_eq!(added["object"]["a"], "A", "{added}");
    // kubectl reads it the same way.
    let out = k.ok(&[
        "get",
        "knobs.defaults.example.com",
        "old",
        "-o",
        "jsonpath={.a}",
    ]);
    assert_eq!(out, "A");
    // A new object is defaulted as it is written (and stored so).
    let created = call("POST", &host.url(KNOBS), Some(&knob("new")))
        .unwrap()
        .json();
    assert_eq!(created["a"], "A", "{created}");
    // Moving the default from a to b: the new object keeps its stored a, both read b.
    patch_crd(json!([
        {"op": "remove", "path": format!("{schema}/a/default")},
        {"op": "add", "path": format!("{schema}/b/default"), "value": "B"}
    ]));
    eventually(
        "both objects to be read with b's default",
        Duration::from_secs(10),
        || {
            let (old, new) = (
                k.get(&format!("{KNOBS}/old")),
                k.get(&format!("{KNOBS}/new")),
            );
            old["b"] == "B" && new["b"] == "B"
        },
    );
    assert!(
        k.get(&format!("{KNOBS}/old"))["a"].is_null(),
        "a's default is gone, and was never stored"
    );
    assert_eq!(
        k.get(&format!("{KNOBS}/new"))["a"],
        "A",
        "what was stored stays"
    );
}
