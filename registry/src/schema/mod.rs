//! Structural OpenAPI v3 schemas of custom resources: defaulting, pruning of unknown fields and
//! validation, with one field error per violation, worded as Kubernetes words them.

use serde_json::Value;

use crate::system_fields::strings;

const TYPES: &[&str] = &["object", "array", "string", "integer", "number", "boolean"];

/// Finds an obviously broken part of a schema (an unknown `type`), as a path suffix.
pub fn check_schema(schema: &Value) -> Option<String> {
    fn walk(s: &Value, path: String) -> Option<String> {
        let obj = s.as_object()?;
        if let Some(t) = obj.get("type") {
            if !t.as_str().is_some_and(|t| TYPES.contains(&t)) {
                return Some(format!("{path}.type"));
            }
        }
        if let Some(pattern) = obj.get("pattern").and_then(Value::as_str) {
            if regex::Regex::new(pattern).is_err() {
                return Some(format!("{path}.pattern"));
            }
        }
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                if let Some(bad) = walk(v, format!("{path}.properties[{k}]")) {
                    return Some(bad);
                }
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(sub) = obj.get(key).filter(|v| v.is_object()) {
                if let Some(bad) = walk(sub, format!("{path}.{key}")) {
                    return Some(bad);
                }
            }
        }
        None
    }
    walk(schema, String::new())
}

/// The schema of field (or map key) `name` of an object whose schema is `schema`: its property,
/// else its `additionalProperties` schema.
pub fn field_schema<'a>(schema: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    let s = schema?;
    s.get("properties")
        .and_then(|p| p.get(name))
        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
}

/// How a list merges and is owned, from `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// As a whole (`atomic`, no marker, or `map` without keys).
    Atomic,
    /// Unique scalars (`set`).
    Set,
    /// Items identified by these key fields (`map` with `x-kubernetes-list-map-keys`).
    Map(Vec<String>),
}

/// The list type `schema` gives an array.
pub fn list_type(schema: Option<&Value>) -> ListType {
    let marker = schema
        .and_then(|s| s.get("x-kubernetes-list-type"))
        .and_then(Value::as_str);
    match marker {
        Some("map") => {
            let keys = strings(schema.and_then(|s| s.get("x-kubernetes-list-map-keys")));
            if keys.is_empty() {
                ListType::Atomic
            } else {
                ListType::Map(keys)
            }
        }
        Some("set") => ListType::Set,
        _ => ListType::Atomic,
    }
}

fn preserves_unknown(schema: &Value) -> bool {
    schema["x-kubernetes-preserve-unknown-fields"] == true
}

/// Fills in `default`s of missing properties, recursively; answers whether it filled any.
pub fn apply_defaults(value: &mut Value, schema: &Value) -> bool {
    let mut filled = false;
    match value {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, sub) in props {
                    if !map.contains_key(k) {
                        if let Some(d) = sub.get("default") {
                            map.insert(k.clone(), d.clone());
                            filled = true;
                        }
                    }
                    if let Some(v) = map.get_mut(k) {
                        filled |= apply_defaults(v, sub);
                    }
                }
            }
            if let Some(sub) = schema.get("additionalProperties").filter(|s| s.is_object()) {
                for v in map.values_mut() {
                    filled |= apply_defaults(v, sub);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for v in items {
                    filled |= apply_defaults(v, sub);
                }
            }
        }
        _ => {}
    }
    filled
}

/// Appends each `default` under `schema` to `out` as `path/…/default=value;`, in schema order:
/// what two schemas default alike share (`path` is where `schema` is; it comes back as it was).
pub fn fingerprint_defaults(schema: &Value, path: &mut String, out: &mut String) {
    match schema {
        Value::Object(map) => {
            for (k, v) in map {
                let len = path.len();
                path.push('/');
                path.push_str(k);
                if k == "default" {
                    out.push_str(&format!("{path}={v};"));
                } else {
                    fingerprint_defaults(v, path, out);
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                fingerprint_defaults(v, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

pub use strategy_host_apimachinery::meta::OBJECT_META_FIELDS;

/// Removes fields the schema does not know (unless it preserves unknown fields) and returns
/// their paths. At the root, `apiVersion`, `kind` and `metadata` are always kept; in an object
/// marked `x-kubernetes-embedded-resource` too, its `metadata` pruned to an `ObjectMeta`'s fields.
pub fn prune(value: &mut Value, schema: &Value, root: bool) -> Vec<String> {
    let mut pruned = Vec::new();
    prune_at(value, schema, root, "", &mut pruned);
    pruned
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn prune_at(value: &mut Value, schema: &Value, root: bool, path: &str, pruned: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|s| s.is_object());
            let keep_all = preserves_unknown(schema) || schema["additionalProperties"] == true;
            let embedded = !root && schema["x-kubernetes-embedded-resource"] == true;
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                if root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if embedded && matches!(k.as_str(), "apiVersion" | "kind") {
                    continue;
                }
                if embedded && k == "metadata" {
                    if let Some(Value::Object(meta)) = map.get_mut(&k) {
                        let declared = props
                            .and_then(|p| p.get("metadata"))
                            .and_then(|m| m.get("properties"))
                            .and_then(Value::as_object);
                        let unknown: Vec<String> = meta
                            .keys()
                            .filter(|f| {
                                !OBJECT_META_FIELDS.contains(&f.as_str())
                                    && !declared.is_some_and(|d| d.contains_key(f.as_str()))
                            })
                            .cloned()
                            .collect();
                        for field in unknown {
                            meta.remove(&field);
                            pruned.push(join(&join(path, "metadata"), &field));
                        }
                    }
                    continue;
                }
                let sub = props.and_then(|p| p.get(&k)).or(additional);
                match sub {
                    Some(sub) => {
                        if let Some(v) = map.get_mut(&k) {
                            prune_at(v, sub, false, &join(path, &k), pruned);
                        }
                    }
                    None if keep_all => {}
                    None => {
                        map.remove(&k);
                        pruned.push(join(path, &k));
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for (i, v) in items.iter_mut().enumerate() {
                    prune_at(v, sub, false, &format!("{path}[{i}]"), pruned);
                }
            }
        }
        _ => {}
    }
}

mod validation;
pub use validation::{validate, validate_update};

#[cfg(test)]
mod tests;
