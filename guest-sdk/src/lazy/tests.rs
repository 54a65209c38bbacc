//! Reads, changes and encoding of a `LazyObject`.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::LazyObject;

const DEPLOYMENT: &str = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"a.b/c":"d"}},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27",  "args":["a\"b"]}]}}},"status":{"readyReplicas":2}}"#;

fn lazy(text: &str) -> LazyObject {
    serde_json::from_str(text).unwrap()
}

#[test]
fn untouched_members_encode_as_they_arrived() {
    let obj = lazy(DEPLOYMENT);
    assert_eq!(serde_json::to_string(&obj).unwrap(), DEPLOYMENT);
    assert_eq!(
        obj.names().collect::<Vec<_>>(),
        ["apiVersion", "kind", "metadata", "spec", "status"]
    );
}

#[test]
fn reads_decode_only_the_path_named() {
    let obj = lazy(DEPLOYMENT);
    assert_eq!(obj.get::<i64>(&["spec", "replicas"]), Ok(Some(3)));
    let labels: BTreeMap<String, String> = obj
        .get(&["spec", "template", "metadata", "labels"])
        .unwrap()
        .unwrap();
    assert_eq!(labels, BTreeMap::from([("app".into(), "web".into())]));
    assert_eq!(
        obj.get::<Value>(&["metadata", "labels", "a.b/c"]),
        Ok(Some(json!("d")))
    );
    assert_eq!(obj.get::<Value>(&["spec", "paused"]), Ok(None));
    assert_eq!(obj.get::<Value>(&["nothing", "below"]), Ok(None));
    assert_eq!(
        obj.get::<Value>(&[]),
        Ok(Some(serde_json::from_str(DEPLOYMENT).unwrap()))
    );
    assert!(obj.contains(&["status", "readyReplicas"]));
    assert!(!obj.contains(&["status", "replicas"]));
}

#[test]
fn null_reads_as_absent() {
    let obj = lazy(r#"{"spec":{"replicas":null},"status":null}"#);
    assert_eq!(obj.get::<i64>(&["spec", "replicas"]), Ok(None));
    assert_eq!(obj.get::<i64>(&["status", "replicas"]), Ok(None));
    assert!(!obj.contains(&["status"]));
    assert!(obj.contains(&["spec"]));
}

#[test]
fn wrong_types_are_errors_naming_the_path() {
    let obj = lazy(r#"{"spec":{"replicas":"3","template":[1]}}"#);
    let err = obj.get::<i64>(&["spec", "replicas"]).unwrap_err();
    assert_eq!(err.path(), "spec.replicas");
    assert_eq!(
        err.to_string(),
        "spec.replicas: invalid type: string \"3\", expected i64"
    );
    assert_eq!(err.reason(), "invalid type: string \"3\", expected i64");
    let err = obj
        .get::<Value>(&["spec", "template", "metadata"])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "spec.template: expected an object, found an array"
    );
    assert!(!obj.contains(&["spec", "template", "metadata"]));
}

#[test]
fn changes_open_only_their_path() {
    let mut obj = lazy(DEPLOYMENT);
    obj.remove("status");
    let spec = obj.object_mut(&["spec"]).unwrap();
    assert!(!spec.insert_if_absent("replicas", 1), "kept: 3");
    assert!(spec.insert_if_absent("revisionHistoryLimit", 10));
    let rolling = obj
        .object_mut(&["spec", "strategy", "rollingUpdate"])
        .unwrap();
    rolling.insert("maxSurge", "25%");
    let text = serde_json::to_string(&obj).unwrap();
    // The template's text, whitespace and escapes included, is copied as it arrived.
    assert!(text.contains(r#""template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27",  "args":["a\"b"]}]}}"#), "{text}");
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["spec"]["replicas"], 3);
    assert_eq!(value["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(
        value["spec"]["strategy"],
        json!({"rollingUpdate": {"maxSurge": "25%"}})
    );
    assert!(value.get("status").is_none());
    // Reads see the changes.
    assert_eq!(
        obj.get::<String>(&["spec", "strategy", "rollingUpdate", "maxSurge"]),
        Ok(Some("25%".into()))
    );
    assert_eq!(
        obj.get::<Value>(&["spec", "strategy"]),
        Ok(Some(json!({"rollingUpdate": {"maxSurge": "25%"}})))
    );
}

#[test]
fn object_mut_refuses_a_non_object_and_leaves_it() {
    let mut obj = lazy(r#"{"spec":"web","status":null}"#);
    assert!(obj.object_mut(&["spec", "template"]).is_none());
    assert!(
        obj.object_mut(&["status"]).unwrap().is_empty(),
        "null opens as {{}}"
    );
    obj.insert("extra", json!({"a": 1}));
    obj.object_mut(&["extra"]).unwrap().insert("b", 2);
    assert_eq!(
        serde_json::to_value(&obj).unwrap(),
        json!({"spec": "web", "status": {}, "extra": {"a": 1, "b": 2}})
    );
}

#[test]
fn copy_member_takes_the_other_objects_member_or_its_absence() {
    let old = lazy(r#"{"status":{"readyReplicas":2}}"#);
    let mut new = lazy(r#"{"spec":{},"status":{"readyReplicas":9}}"#);
    new.copy_member(&old, "status");
    assert_eq!(new.get::<i64>(&["status", "readyReplicas"]), Ok(Some(2)));
    new.copy_member(&lazy("{}"), "status");
    assert!(!new.contains(&["status"]));
    assert_eq!(new.len(), 1);
}

#[test]
fn the_last_of_duplicate_members_wins() {
    let obj = lazy(r#"{"spec":{"replicas":1,"replicas":2}}"#);
    assert_eq!(obj.get::<i64>(&["spec", "replicas"]), Ok(Some(2)));
}

#[test]
fn only_objects_decode() {
    for text in ["[]", "1", "\"x\"", "null"] {
        assert!(serde_json::from_str::<LazyObject>(text).is_err(), "{text}");
    }
    // From a value tree too (what a native caller has).
    let obj: LazyObject = serde_json::from_value(json!({"spec": {"replicas": 2}})).unwrap();
    assert_eq!(obj.get::<i64>(&["spec", "replicas"]), Ok(Some(2)));
}

/// Applies `obj`'s JSON Patch to the text it was decoded from and checks the result is the
/// object encoded whole.
fn patch_matches_whole(input: &str, obj: &LazyObject) -> Value {
    let patch: json_patch::Patch = match obj.json_patch().unwrap() {
        ops if ops.is_empty() => json_patch::Patch(vec![]),
        ops => serde_json::from_slice(&ops).unwrap(),
    };
    let mut patched: Value = serde_json::from_str(input).unwrap();
    json_patch::patch(&mut patched, &patch).unwrap();
    assert_eq!(patched, serde_json::to_value(obj).unwrap());
    patched
}

#[test]
fn the_json_patch_makes_the_input_the_changed_object() {
    let mut obj = lazy(DEPLOYMENT);
    assert!(obj.json_patch().unwrap().is_empty(), "nothing changed");
    obj.remove("status");
    let spec = obj.object_mut(&["spec"]).unwrap();
    spec.insert("replicas", 5);
    spec.insert_if_absent("paused", false);
    obj.object_mut(&["spec", "strategy", "rollingUpdate"])
        .unwrap()
        .insert("maxSurge", "25%");
    obj.object_mut(&["metadata", "labels"])
        .unwrap()
        .insert("x/y~z", "1");
    let patched = patch_matches_whole(DEPLOYMENT, &obj);
    assert_eq!(patched["metadata"]["labels"]["x/y~z"], "1");
    let ops: Value = serde_json::from_slice(&obj.json_patch().unwrap()).unwrap();
    assert_eq!(
        ops,
        json!([
            {"op": "remove", "path": "/status"},
            {"op": "add", "path": "/metadata/labels/x~1y~0z", "value": "1"},
            {"op": "add", "path": "/spec/replicas", "value": 5},
            {"op": "add", "path": "/spec/paused", "value": false},
            {"op": "add", "path": "/spec/strategy", "value": {"rollingUpdate": {"maxSurge": "25%"}}},
        ]),
        "only what changed, the untouched template not at all"
    );
}

#[test]
fn the_json_patch_follows_removals_copies_and_replaced_objects() {
    let input = r#"{"a":{"b":1},"status":{"s":1},"n":null,"v":2}"#;
    let mut obj = lazy(input);
    obj.remove("a");
    obj.insert("a", json!({"c": 2}));
    obj.object_mut(&["a"]).unwrap().insert("d", 3);
    obj.copy_member(&lazy(r#"{"status":{"s":9}}"#), "status");
    obj.object_mut(&["n", "m"]).unwrap().insert("k", "v");
    obj.remove("v");
    obj.remove("v");
    obj.insert("w", 1);
    obj.remove("w");
    let patched = patch_matches_whole(input, &obj);
    assert_eq!(
        patched,
        json!({"a": {"c": 2, "d": 3}, "status": {"s": 9}, "n": {"m": {"k": "v"}}})
    );

    let mut obj = lazy(input);
    obj.copy_member(&lazy("{}"), "status");
    assert_eq!(
        patch_matches_whole(input, &obj),
        json!({"a": {"b": 1}, "n": null, "v": 2})
    );
}

#[test]
fn the_hosts_text_reads_as_serde_jsons_does() {
    let text = r#" {"apiVersion":"v1", "na\u006De":{"x":[1,{"y":"}"}]}, "spec" : {"replicas":3}} "#;
    let mut host = LazyObject::from_json(text.as_bytes().into()).unwrap();
    let checked = lazy(text);
    assert_eq!(
        host.names().collect::<Vec<_>>(),
        ["apiVersion", "name", "spec"]
    );
    assert_eq!(
        host.get::<Value>(&["name", "x"]),
        checked.get(&["name", "x"])
    );
    assert_eq!(host.get::<i64>(&["spec", "replicas"]), Ok(Some(3)));
    host.object_mut(&["spec"]).unwrap().insert("paused", true);
    let mut written = Vec::new();
    host.write_json(&mut written).unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&written).unwrap(),
        json!({"apiVersion": "v1", "name": {"x": [1, {"y": "}"}]}, "spec": {"replicas": 3, "paused": true}})
    );
    for text in ["", "[]", r#"{"a":1"#, r#"{"a":1} {}"#, r#"{"a":"x}"#] {
        assert!(
            LazyObject::from_json(text.as_bytes().into()).is_err(),
            "{text}"
        );
    }
}
