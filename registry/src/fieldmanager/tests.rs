//! Ownership across creates, updates and applies, conflicts, forcing, removal and the cap.

use serde_json::{json, Value};

use super::managed::{self, Operation, MAX_UPDATE_MANAGERS};
use super::*;

fn manager(name: &str) -> Manager {
    Manager {
        name: name.into(),
        api_version: "v1".into(),
        subresource: String::new(),
        time: "2026-01-01T00:00:00Z".into(),
        status_subresource: false,
    }
}

fn owners(obj: &Value) -> Vec<(String, Operation, Vec<String>)> {
    managed::read(obj)
        .unwrap()
        .into_iter()
        .map(|e| {
            let paths = e.fields.paths().iter().map(|p| display_path(p)).collect();
            (e.manager, e.operation, paths)
        })
        .collect()
}

/// Who owns which paths (the owners without their operations).
fn who(obj: &Value) -> Vec<(String, Vec<String>)> {
    owners(obj).into_iter().map(|(m, _, p)| (m, p)).collect()
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u", "resourceVersion": "5"}, "data": data})
}

/// The manager `name`'s apply of a ConfigMap holding `data` over `live` (no schema).
fn apply_data(
    live: Option<&Value>,
    data: Value,
    name: &str,
    force: bool,
) -> Result<Value, Refusal> {
    apply(live, &cm(data), None, &manager(name), force)
}

#[test]
fn a_create_then_an_update_move_ownership_of_what_changed() {
    let mut obj = cm(json!({"a": "1", "b": "2"}));
    on_create(&mut obj, None, &manager("kubectl-create")).unwrap();
    assert_eq!(
        owners(&obj),
        [(
            "kubectl-create".into(),
            Operation::Update,
            vec![".data".into(), ".data.a".into(), ".data.b".into()]
        )]
    );
    let mut new = obj.clone();
    new["data"] = json!({"a": "9", "c": "3"});
    on_update(&obj, &mut new, None, &manager("editor")).unwrap();
    // The creator lost a (changed) and b (removed); it keeps the map it created.
    assert_eq!(
        owners(&new),
        [
            (
                "kubectl-create".into(),
                Operation::Update,
                vec![".data".into()]
            ),
            (
                "editor".into(),
                Operation::Update,
                vec![".data.a".into(), ".data.c".into()]
            )
        ]
    );
}

#[test]
fn apply_creates_merges_and_removes_what_it_no_longer_applies() {
    let created = apply_data(None, json!({"a": "1", "b": "2"}), "kubectl", false).unwrap();
    assert_eq!(created["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(owners(&created)[0].1, Operation::Apply);
    // Re-applying the same configuration changes nothing.
    let again = apply_data(
        Some(&created),
        json!({"a": "1", "b": "2"}),
        "kubectl",
        false,
    )
    .unwrap();
    assert_eq!(again, created);
    // Dropping b removes it; another manager's field stays.
    let mut edited = again.clone();
    edited["data"]["other"] = json!("x");
    on_update(&again, &mut edited, None, &manager("editor")).unwrap();
    let applied = apply_data(Some(&edited), json!({"a": "1"}), "kubectl", false).unwrap();
    assert_eq!(applied["data"], json!({"a": "1", "other": "x"}));
}

#[test]
fn changing_another_managers_field_conflicts_unless_forced_and_equal_values_share() {
    let first = apply_data(None, json!({"a": "1", "b": "2"}), "alice", false).unwrap();
    // Same value: shared ownership, no conflict.
    let shared = apply_data(Some(&first), json!({"a": "1"}), "bob", false).unwrap();
    assert_eq!(
        who(&shared),
        [
            (
                "alice".to_string(),
                vec![
                    ".data".to_string(),
                    ".data.a".to_string(),
                    ".data.b".to_string()
                ]
            ),
            (
                "bob".to_string(),
                vec![".data".to_string(), ".data.a".to_string()]
            )
        ]
    );
    // A different value: one conflict per field, in Kubernetes' words.
    let refused = apply_data(Some(&shared), json!({"a": "7", "b": "8"}), "bob", false);
    let Err(Refusal::Conflicts(conflicts)) = refused else {
        panic!("{refused:?}")
    };
    let fields: Vec<&str> = conflicts.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, [".data.a", ".data.b"]);
    assert_eq!(
        conflicts[0].cause_message(),
        "conflict with \"alice\" using v1"
    );
    assert_eq!(
        conflicts_message(&conflicts),
        "Apply failed with 2 conflicts: conflicts with \"alice\" using v1:\n- .data.a\n- .data.b"
    );
    assert_eq!(
        conflicts_message(&conflicts[..1]),
        "Apply failed with 1 conflict: conflict with \"alice\" using v1: .data.a"
    );
    // Forced: bob takes both; alice keeps nothing of them.
    let forced = apply_data(Some(&shared), json!({"a": "7", "b": "8"}), "bob", true).unwrap();
    assert_eq!(forced["data"], json!({"a": "7", "b": "8"}));
    assert_eq!(
        who(&forced),
        [
            ("alice".to_string(), vec![".data".to_string()]),
            (
                "bob".to_string(),
                vec![
                    ".data".to_string(),
                    ".data.a".to_string(),
                    ".data.b".to_string()
                ]
            )
        ]
    );
}

#[test]
fn keyed_lists_are_owned_per_item() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object"}}}}}});
    // The manager `name`'s apply of a Service-like object with `ports` over `live`.
    let apply_ports = |live: Option<&Value>, ports: Value, name: &str| {
        let obj = json!({"metadata": {"name": "s"}, "spec": {"ports": ports}});
        apply(live, &obj, Some(&schema), &manager(name), false)
    };
    let a = apply_ports(None, json!([{"name": "http", "port": 80}]), "a").unwrap();
    let b = apply_ports(Some(&a), json!([{"name": "https", "port": 443}]), "b").unwrap();
    assert_eq!(
        b["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}])
    );
    let refused = apply_ports(Some(&b), json!([{"name": "http", "port": 8080}]), "b");
    let Err(Refusal::Conflicts(c)) = refused else {
        panic!()
    };
    assert_eq!(c[0].field, ".spec.ports[name=\"http\"].port");
    // a stops applying http: the item goes (nobody else owns it).
    let gone = apply_ports(Some(&b), json!([]), "a").unwrap();
    assert_eq!(
        gone["spec"]["ports"],
        json!([{"name": "https", "port": 443}])
    );
}

#[test]
fn update_managers_are_capped_and_clients_may_reset_managed_fields() {
    let mut obj = cm(json!({}));
    on_create(&mut obj, None, &manager("creator")).unwrap();
    for i in 0..(MAX_UPDATE_MANAGERS + 3) {
        let mut new = obj.clone();
        new["data"][format!("k{i}")] = json!("v");
        let mut m = manager(&format!("m{i}"));
        m.time = format!("2026-01-01T00:00:{i:02}Z");
        on_update(&obj, &mut new, None, &m).unwrap();
        obj = new;
    }
    let names: Vec<String> = owners(&obj).into_iter().map(|(m, _, _)| m).collect();
    assert_eq!(names.len(), MAX_UPDATE_MANAGERS);
    assert!(names.contains(&"ancient-changes".to_string()), "{names:?}");
    assert!(names.contains(&format!("m{}", MAX_UPDATE_MANAGERS + 2)));

    let mut reset = obj.clone();
    reset["metadata"]["managedFields"] = json!([]);
    on_update(&obj, &mut reset, None, &manager("x")).unwrap();
    assert!(reset["metadata"].get("managedFields").is_none());
    let mut bad = obj.clone();
    bad["metadata"]["managedFields"] = json!([{"manager": "m", "operation": "Steal"}]);
    assert!(matches!(
        on_update(&obj, &mut bad, None, &manager("x")),
        Err(Refusal::Invalid(..))
    ));
}

#[test]
fn status_is_owned_only_through_its_subresource() {
    let mut m = manager("ctl");
    m.status_subresource = true;
    let mut obj = json!({"metadata": {"name": "w"}, "spec": {"a": 1}, "status": {"ready": true}});
    on_create(&mut obj, None, &m).unwrap();
    // (spec has no schema here, so it is a map, owned as a node too)
    assert_eq!(owners(&obj)[0].2, [".spec", ".spec.a"]);
    let mut s = manager("kubelet");
    s.status_subresource = true;
    s.subresource = "status".into();
    let mut new = obj.clone();
    new["status"]["ready"] = json!(false);
    on_update(&obj, &mut new, None, &s).unwrap();
    let last = owners(&new).pop().unwrap();
    assert_eq!(
        (last.0.as_str(), last.2),
        ("kubelet", vec![".status.ready".to_string()])
    );
}
