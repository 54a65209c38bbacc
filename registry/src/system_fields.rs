//! System-owned metadata: uid, creationTimestamp, generation, deletionTimestamp; set on create,
//! carried over from the stored object on update, whatever the client sent.

use serde_json::{json, Map, Value};

pub use strategy_host_apimachinery::meta::{
    format_rfc3339, new_uid, now_rfc3339, now_seconds, parse_rfc3339,
};

/// The `metadata` map of `obj`, created when missing (`obj` must be an object).
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = Value::Object(Map::new());
    }
    obj["metadata"]
        .as_object_mut()
        .expect("metadata is an object")
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// The annotation `key` of `obj`, if it is set to a string.
pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

/// Sets the fields a create owns: uid, creationTimestamp, generation 1 (for resources that track
/// it); clears what a client may not set on create.
pub fn prepare_for_create(obj: &mut Value, tracks_generation: bool) {
    let meta = metadata_mut(obj);
    meta.insert("uid".into(), Value::String(new_uid()));
    meta.insert("creationTimestamp".into(), Value::String(now_rfc3339()));
    if tracks_generation {
        meta.insert("generation".into(), Value::from(1));
    } else {
        meta.remove("generation");
    }
    for field in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        meta.remove(field);
    }
}

/// Carries the system fields of `old` into `new` on update, and bumps the generation (for
/// resources that track it) when anything outside metadata and status changed.
pub fn prepare_for_update(new: &mut Value, old: &Value, tracks_generation: bool) {
    let spec_changed = {
        let strip = |v: &Value| {
            let mut m = v.as_object().cloned().unwrap_or_default();
            m.remove("metadata");
            m.remove("status");
            m
        };
        strip(new) != strip(old)
    };
    let old_meta = old
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let meta = metadata_mut(new);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "name",
        "namespace",
    ] {
        match old_meta.get(field) {
            Some(v) => {
                meta.insert(field.into(), v.clone());
            }
            None => {
                meta.remove(field);
            }
        }
    }
    meta.remove("selfLink");
    if spec_changed && tracks_generation {
        let generation = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        meta.insert("generation".into(), Value::from(generation + 1));
    }
}

/// The strings of a JSON array (other items skipped); none when it is absent or not an array.
pub fn strings(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The strings of the list at `pointer` in `obj` (none when it is missing or no list).
pub fn strings_at(obj: &Value, pointer: &str) -> Vec<String> {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Sets `condition` (a `{type, status, reason, message}` object) among `obj`'s
/// `status.conditions`: it replaces the one of its type where that one is, or goes last; its
/// `lastTransitionTime` is the one it replaces while the status stays the same, else now
/// (Kubernetes' `meta.SetStatusCondition`). Answers whether the conditions changed.
pub fn set_condition(obj: &mut Value, mut condition: Value) -> bool {
    if !obj["status"]["conditions"].is_array() {
        obj["status"]["conditions"] = json!([]);
    }
    let conditions = obj["status"]["conditions"]
        .as_array_mut()
        .expect("made an array above");
    let at = conditions
        .iter()
        .position(|c| c["type"] == condition["type"]);
    condition["lastTransitionTime"] = transition_time(at.map(|i| &conditions[i]), &condition);
    match at {
        Some(i) if conditions[i] == condition => false,
        Some(i) => {
            conditions[i] = condition;
            true
        }
        None => {
            conditions.push(condition);
            true
        }
    }
}

/// The `lastTransitionTime` of `condition`, replacing `previous` (of its type): the previous
/// one's while the status stays the same, else now.
pub fn transition_time(previous: Option<&Value>, condition: &Value) -> Value {
    previous
        .filter(|c| c["status"] == condition["status"])
        .map(|c| c["lastTransitionTime"].clone())
        .filter(|t| !t.is_null())
        .unwrap_or_else(|| json!(now_rfc3339()))
}

/// The condition of `type_` among `obj`'s `status.conditions`.
pub fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == type_)
}

/// The object's finalizers.
pub fn finalizers(obj: &Value) -> Vec<String> {
    strings_at(obj, "/metadata/finalizers")
}

/// Removes `finalizer` from the finalizers at `pointer` (`/metadata/finalizers`, or a
/// namespace's `/spec/finalizers`), if it is there.
pub fn remove_finalizer(obj: &mut Value, pointer: &str, finalizer: &str) {
    if let Some(Value::Array(list)) = obj.pointer_mut(pointer) {
        list.retain(|f| f.as_str() != Some(finalizer));
    }
}

/// True once the object's deletion has begun.
pub fn is_being_deleted(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_condition_replaces_its_type_in_place_and_keeps_its_time_while_its_status_holds() {
        let mut obj = json!({"status": {"conditions": [
            {"type": "A", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "then"},
            {"type": "B", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "then"}]}});
        let same = json!({"type": "A", "status": "True", "reason": "R", "message": "m"});
        assert!(!set_condition(&mut obj, same), "nothing changed");
        let reworded = json!({"type": "A", "status": "True", "reason": "R", "message": "new"});
        assert!(set_condition(&mut obj, reworded));
        assert!(set_condition(
            &mut obj,
            json!({"type": "B", "status": "False", "reason": "R", "message": "m"})
        ));
        assert!(set_condition(
            &mut obj,
            json!({"type": "C", "status": "True", "reason": "R", "message": "m"})
        ));
        let conditions = obj["status"]["conditions"].as_array().unwrap();
        let types: Vec<&str> = conditions
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["A", "B", "C"]);
        assert_eq!(conditions[0]["message"], "new");
        assert_eq!(conditions[0]["lastTransitionTime"], "then");
        assert_ne!(conditions[1]["lastTransitionTime"], "then");
        assert!(conditions[2]["lastTransitionTime"].is_string());
        let mut bare = json!({});
        assert!(set_condition(
            &mut bare,
            json!({"type": "A", "status": "Unknown"})
        ));
        assert_eq!(bare["status"]["conditions"][0]["status"], "Unknown");
    }

    #[test]
    fn generation_counts_spec_changes_only() {
        let mut old = json!({"metadata": {"name": "a"}, "spec": {"x": 1}});
        prepare_for_create(&mut old, true);
        let mut new = json!({"metadata": {"name": "a", "labels": {"l": "v"}}, "spec": {"x": 1}, "status": {"s": 1}});
        prepare_for_update(&mut new, &old, true);
        assert_eq!(new["metadata"]["generation"], 1);
        assert_eq!(new["metadata"]["uid"], old["metadata"]["uid"]);
        let mut newer = json!({"metadata": {"name": "a"}, "spec": {"x": 2}});
        prepare_for_update(&mut newer, &old, true);
        assert_eq!(newer["metadata"]["generation"], 2);
    }
}
