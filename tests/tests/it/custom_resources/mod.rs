//! Custom resources as operators upgrade and remove them, against the real binary with kubectl:
//! validation ratcheting after a CRD tightens its schema; a deleted CRD's objects deleted
//! through the registry (finalizers, garbage collection) before the CRD goes; defaults added to a
//! schema given to objects stored before them as they are read.
//!
//! Here the schema as it changes (ratcheting, defaults); `lifecycle.rs` scaling and selecting
//! with kubectl, status writes, and a definition's deletion.

mod lifecycle;

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
