//! Custom resources as operators upgrade them, against the real binary with kubectl: validation
//! ratcheting after a CRD tightens its schema.

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
