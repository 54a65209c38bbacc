//! Objects walked by their schema's structure, as structured-merge-diff walks them: which paths
//! an object sets, the value at a path, merging an applied configuration into a live object, and
//! removing paths. Structure comes from the OpenAPI schema: `x-kubernetes-list-type` (`map` with
//! `x-kubernetes-list-map-keys`, `set`, `atomic`; unmarked lists are atomic),
//! `x-kubernetes-map-type` (`atomic` or granular), `x-kubernetes-int-or-string` (a scalar); where
//! the schema says nothing (`x-kubernetes-preserve-unknown-fields`, no schema) objects are
//! granular and lists atomic, as Kubernetes deduces them.

use serde_json::{Map, Value};

use super::fieldset::{Element, FieldSet};
use crate::schema::{field_schema, list_type, ListType};

/// How a node is owned and merged.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    /// Each field (or map key) separately.
    Granular,
    /// As a whole (scalars, atomic maps and lists).
    Atomic,
    /// A list whose items are identified by these key fields.
    ListMap(Vec<String>),
    /// A list of unique scalars.
    ListSet,
}

fn shape(schema: Option<&Value>, value: &Value) -> Shape {
    match value {
        Value::Object(_) => {
            let marker = schema.and_then(|s| s.get("x-kubernetes-map-type"));
            if marker.and_then(Value::as_str) == Some("atomic")
                || schema.and_then(|s| s.get("x-kubernetes-int-or-string"))
                    == Some(&Value::Bool(true))
            {
                Shape::Atomic
            } else {
                Shape::Granular
            }
        }
        Value::Array(_) => match list_type(schema) {
            ListType::Map(keys) => Shape::ListMap(keys),
            ListType::Set => Shape::ListSet,
            ListType::Atomic => Shape::Atomic,
        },
        _ => Shape::Atomic,
    }
}

/// The metadata fields a manager can own, with the list types Kubernetes gives them (a CRD's
/// schema does not describe metadata).
static METADATA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    serde_json::json!({"type": "object", "properties": {
        "finalizers": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ownerReferences": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"],
                            "items": {"type": "object"}}
    }})
});

/// The schema of a top-level field of an object: the resource's, except `metadata`.
fn root_field_schema<'a>(schema: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    if name == "metadata" {
        Some(&METADATA)
    } else {
        field_schema(schema, name)
    }
}

fn item_schema(schema: Option<&Value>) -> Option<&Value> {
    schema?.get("items")
}

/// The path element of a field or map key.
pub fn field(name: &str) -> Element {
    format!("f:{name}")
}

/// The path element of a list-map item: its key fields as a JSON object.
fn key_element(item: &Value, keys: &[String]) -> Element {
    let mut map = Map::new();
    for k in keys {
        if let Some(v) = item.get(k) {
            map.insert(k.clone(), v.clone());
        }
    }
    format!("k:{}", Value::Object(map))
}

fn value_element(item: &Value) -> Element {
    format!("v:{item}")
}

fn same_keys(a: &Value, b: &Value, keys: &[String]) -> bool {
    keys.iter().all(|k| a.get(k) == b.get(k))
}

/// Every path `value` sets (its root is not itself a path).
pub fn fields_of(value: &Value, schema: Option<&Value>) -> FieldSet {
    let mut set = FieldSet::new();
    if let Value::Object(map) = value {
        for (k, v) in map {
            collect(
                v,
                root_field_schema(schema, k),
                &mut vec![field(k)],
                &mut set,
            );
        }
    }
    set
}

fn collect(value: &Value, schema: Option<&Value>, path: &mut Vec<Element>, set: &mut FieldSet) {
    match (shape(schema, value), value) {
        (Shape::Granular, Value::Object(map)) if !map.is_empty() => {
            // A map (additionalProperties, or an object the schema does not describe) is owned
            // as a node too (FieldsV1's "."); a struct (properties) is not, as in Kubernetes.
            let is_struct = schema.is_some_and(|s| s.get("properties").is_some());
            if !is_struct {
                set.insert(path);
            }
            for (k, v) in map {
                path.push(field(k));
                collect(v, field_schema(schema, k), path, set);
                path.pop();
            }
        }
        (Shape::ListMap(keys), Value::Array(items)) if !items.is_empty() => {
            let items_schema = item_schema(schema);
            for item in items {
                path.push(key_element(item, &keys));
                set.insert(path);
                if let Value::Object(fields) = item {
                    for (k, v) in fields {
                        path.push(field(k));
                        collect(v, field_schema(items_schema, k), path, set);
                        path.pop();
                    }
                }
                path.pop();
            }
        }
        (Shape::ListSet, Value::Array(items)) if !items.is_empty() => {
            for item in items {
                path.push(value_element(item));
                set.insert(path);
                path.pop();
            }
        }
        _ => set.insert(path),
    }
}

/// Whether `path` is a node `set` also has paths below (a map or list item owned for its
/// existence, whose value is its children's business).
pub fn is_container(set: &FieldSet, path: &[Element]) -> bool {
    set.has_children(path)
}

/// The key field names of the list item `path` ends at (none when it is no list item).
pub fn item_keys(path: &[Element]) -> Vec<String> {
    path.last()
        .and_then(|e| e.strip_prefix("k:"))
        .and_then(|keys| serde_json::from_str::<Map<String, Value>>(keys).ok())
        .map(|keys| keys.keys().cloned().collect())
        .unwrap_or_default()
}

/// Whether `path` ends at one of a list item's key fields (`...[name="web"].name`).
pub fn is_key_field(path: &[Element]) -> bool {
    match path {
        [.., item, last] => last.strip_prefix("f:").is_some_and(|name| {
            item_keys(std::slice::from_ref(item))
                .iter()
                .any(|k| k == name)
        }),
        _ => false,
    }
}

/// The value at `path`, if `value` has it.
pub fn value_at<'a>(value: &'a Value, path: &[Element]) -> Option<&'a Value> {
    let mut cur = value;
    for e in path {
        cur = step(cur, e)?;
    }
    Some(cur)
}

fn step<'a>(value: &'a Value, e: &str) -> Option<&'a Value> {
    if let Some(name) = e.strip_prefix("f:") {
        return value.get(name);
    }
    let items = value.as_array()?;
    if let Some(keys) = e.strip_prefix("k:") {
        let wanted: Map<String, Value> = serde_json::from_str(keys).ok()?;
        return items
            .iter()
            .find(|i| wanted.iter().all(|(k, v)| i.get(k) == Some(v)));
    }
    let wanted: Value = serde_json::from_str(e.strip_prefix("v:")?).ok()?;
    items.iter().find(|i| **i == wanted)
}

/// Removes `path` from `value` (a field, a list item, or a set value); absent paths are ignored.
pub fn remove(value: &mut Value, path: &[Element]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = value;
    for e in parents {
        let next = if let Some(name) = e.strip_prefix("f:") {
            cur.get_mut(name)
        } else {
            let Some(index) = cur.as_array().and_then(|items| position(items, e)) else {
                return;
            };
            cur.get_mut(index)
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    if let Some(name) = last.strip_prefix("f:") {
        if let Some(map) = cur.as_object_mut() {
            map.remove(name);
        }
    } else if let Some(items) = cur.as_array_mut() {
        if let Some(i) = position(items, last) {
            items.remove(i);
        }
    }
}

fn position(items: &[Value], e: &str) -> Option<usize> {
    let target = step(&Value::Array(items.to_vec()), e)?.clone();
    items.iter().position(|i| *i == target)
}

/// `config` merged into `live` by the schema: granular objects field by field (a `null` removes
/// the field), list-map items by key, set items by value, everything else replaced.
pub fn merge(live: Option<&Value>, config: &Value, schema: Option<&Value>) -> Value {
    merge_at(live, config, schema, true)
}

/// [`merge`] of a node; `root` marks the object itself, whose `metadata` has its own schema.
fn merge_at(live: Option<&Value>, config: &Value, schema: Option<&Value>, root: bool) -> Value {
    match (shape(schema, config), live, config) {
        (Shape::Granular, Some(Value::Object(live)), Value::Object(cfg)) => {
            let mut out = live.clone();
            for (k, cv) in cfg {
                if cv.is_null() {
                    out.remove(k);
                    continue;
                }
                let child = if root {
                    root_field_schema(schema, k)
                } else {
                    field_schema(schema, k)
                };
                let merged = merge_at(live.get(k), cv, child, false);
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Shape::ListMap(keys), Some(Value::Array(live)), Value::Array(cfg)) => {
            let mut out = live.clone();
            for item in cfg {
                match out.iter().position(|i| same_keys(i, item, &keys)) {
                    Some(i) => out[i] = merge_at(Some(&out[i]), item, item_schema(schema), false),
                    None => out.push(item.clone()),
                }
            }
            Value::Array(out)
        }
        (Shape::ListSet, Some(Value::Array(live)), Value::Array(cfg)) => {
            let mut out = live.clone();
            for item in cfg {
                if !out.contains(item) {
                    out.push(item.clone());
                }
            }
            Value::Array(out)
        }
        _ => strip_nulls(config),
    }
}

fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "containers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                               "items": {"type": "object", "properties": {"name": {"type": "string"}, "image": {"type": "string"}}}},
                "finalizers": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
                "port": {"x-kubernetes-int-or-string": true}
            }}
        }})
    }

    fn paths(set: &FieldSet) -> Vec<String> {
        set.paths()
            .iter()
            .map(|p| super::super::fieldset::display_path(p))
            .collect()
    }

    #[test]
    fn fields_follow_the_schema() {
        let obj = json!({"spec": {"containers": [{"name": "web", "image": "a"}], "finalizers": ["x"], "args": ["1", "2"],
                                  "selector": {"app": "web"}, "port": 80, "extra": {"deep": 1}}});
        let s = schema();
        assert_eq!(
            paths(&fields_of(&obj, Some(&s))),
            [
                ".spec.args",
                ".spec.containers[name=\"web\"]",
                ".spec.containers[name=\"web\"].image",
                ".spec.containers[name=\"web\"].name",
                ".spec.extra",
                ".spec.extra.deep",
                ".spec.finalizers[=\"x\"]",
                ".spec.port",
                ".spec.selector",
            ]
        );
    }

    #[test]
    fn merge_follows_the_schema() {
        let s = schema();
        let live = json!({"spec": {"containers": [{"name": "web", "image": "a"}, {"name": "side", "image": "s"}],
                                   "finalizers": ["x"], "args": ["1"], "selector": {"app": "web", "tier": "f"}, "keep": 1}});
        let config = json!({"spec": {"containers": [{"name": "web", "image": "b"}, {"name": "new", "image": "n"}],
                                     "finalizers": ["y"], "args": ["2"], "selector": {"app": "web"}, "keep": null}});
        let merged = merge(Some(&live), &config, Some(&s));
        assert_eq!(
            merged,
            json!({"spec": {"containers": [{"name": "web", "image": "b"}, {"name": "side", "image": "s"}, {"name": "new", "image": "n"}],
                            "finalizers": ["x", "y"], "args": ["2"], "selector": {"app": "web"}}})
        );
    }

    #[test]
    fn values_are_found_and_removed_by_path() {
        let s = schema();
        let mut obj = json!({"spec": {"containers": [{"name": "web", "image": "a"}, {"name": "side"}], "finalizers": ["x", "y"]}});
        let set = fields_of(&obj, Some(&s));
        let image = set
            .paths()
            .into_iter()
            .find(|p| p.last().is_some_and(|e| e == "f:image"))
            .unwrap();
        assert_eq!(value_at(&obj, &image), Some(&json!("a")));
        remove(&mut obj, &image);
        let side = vec![
            field("spec"),
            field("containers"),
            "k:{\"name\":\"side\"}".to_string(),
        ];
        assert!(is_container(&set, &side));
        remove(&mut obj, &side);
        remove(
            &mut obj,
            &[field("spec"), field("finalizers"), "v:\"x\"".into()],
        );
        remove(&mut obj, &[field("spec"), field("absent"), field("x")]);
        assert_eq!(
            obj,
            json!({"spec": {"containers": [{"name": "web"}], "finalizers": ["y"]}})
        );
    }
}
