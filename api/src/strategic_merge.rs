//! Strategic merge patch (`application/strategic-merge-patch+json`), which kubectl sends for
//! built-in kinds (`kubectl patch`, `label`, `annotate`, client-side `apply`): a JSON merge
//! patch whose lists merge by the schema's list keys (`x-kubernetes-list-type: map` with
//! `x-kubernetes-list-map-keys`, Kubernetes' `patchMergeKey`) or as sets, with the `$patch`,
//! `$retainKeys`, `$deleteFromPrimitiveList/` and `$setElementOrder/` directives.

use serde_json::{Map, Value};

use strategy_host_registry::schema::{field_schema, list_type, ListType};

/// A strategic merge patch's `$patch` directive that is not `merge`, `replace` or `delete`.
#[derive(Debug, thiserror::Error)]
#[error("unknown patch type: {0:?}")]
pub struct UnknownDirective(String);

const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// Applies `patch` to `doc`, guided by `schema` (the resource's structural schema, if any).
///
/// # Errors
/// An unknown `$patch` directive.
pub(crate) fn apply(
    doc: &mut Value,
    patch: &Value,
    schema: Option<&Value>,
) -> Result<(), UnknownDirective> {
    match (doc, patch) {
        (doc @ Value::Object(_), Value::Object(p)) => merge_object(doc, p, schema),
        (doc, p) => {
            *doc = strip_directives(p);
            Ok(())
        }
    }
}

fn merge_object(
    doc: &mut Value,
    patch: &Map<String, Value>,
    schema: Option<&Value>,
) -> Result<(), UnknownDirective> {
    match patch.get("$patch").and_then(Value::as_str) {
        None | Some("merge") => {}
        Some("replace") => {
            *doc = strip_directives(&Value::Object(patch.clone()));
            return Ok(());
        }
        Some("delete") => {
            *doc = Value::Object(Map::new());
            return Ok(());
        }
        Some(other) => return Err(UnknownDirective(other.to_owned())),
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let map = doc.as_object_mut().expect("an object");
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            let removed = value.as_array().cloned().unwrap_or_default();
            if let Some(Value::Array(list)) = map.get_mut(field) {
                list.retain(|v| !removed.contains(v));
            }
            continue;
        }
        if key.starts_with(SET_ELEMENT_ORDER) || key == "$patch" || key == "$retainKeys" {
            continue;
        }
        let field_schema = field_schema(schema, key);
        match value {
            Value::Null => {
                map.remove(key);
            }
            Value::Object(p) => {
                if p.get("$patch").and_then(Value::as_str) == Some("delete") {
                    map.remove(key);
                    continue;
                }
                let entry = map.entry(key.clone()).or_insert(Value::Null);
                merge_object(entry, p, field_schema)?;
            }
            Value::Array(items) => {
                let current = map.remove(key);
                map.insert(key.clone(), merge_list(current, items, field_schema)?);
            }
            other => {
                map.insert(key.clone(), other.clone());
            }
        }
    }
    if let Some(Value::Array(retain)) = patch.get("$retainKeys") {
        map.retain(|k, _| retain.iter().any(|r| r.as_str() == Some(k)));
    }
    Ok(())
}

/// Merges a list by the schema: by its map keys, as a set, or (no marker) replaced whole.
fn merge_list(
    current: Option<Value>,
    items: &[Value],
    schema: Option<&Value>,
) -> Result<Value, UnknownDirective> {
    let replace_directive = items
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"));
    let mut result = match current {
        Some(Value::Array(list)) if !replace_directive => list,
        _ => Vec::new(),
    };
    let item_schema = schema.and_then(|s| s.get("items"));
    match list_type(schema) {
        ListType::Map(keys) => {
            let same = |a: &Value, b: &Value| keys.iter().all(|k| a.get(k) == b.get(k));
            for item in items {
                if item.get("$patch").and_then(Value::as_str) == Some("replace") {
                    continue;
                }
                let position = result.iter().position(|e| same(e, item));
                if item.get("$patch").and_then(Value::as_str) == Some("delete") {
                    result.retain(|e| !same(e, item));
                    continue;
                }
                match position {
                    Some(i) => apply(&mut result[i], item, item_schema)?,
                    None => result.push(strip_directives(item)),
                }
            }
        }
        ListType::Set => {
            for item in items {
                if !result.contains(item) {
                    result.push(item.clone());
                }
            }
        }
        ListType::Atomic => {
            result = items
                .iter()
                .filter(|i| i.get("$patch").is_none())
                .map(strip_directives)
                .collect();
        }
    }
    Ok(Value::Array(result))
}

/// `v` without directive keys, at any depth.
fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn patched(doc: Value, patch: Value, schema: Option<Value>) -> Value {
        let mut doc = doc;
        apply(&mut doc, &patch, schema.as_ref()).unwrap();
        doc
    }

    #[test]
    fn maps_merge_and_null_removes_as_in_a_merge_patch() {
        let doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "data": {"x": "1"}});
        let out = patched(
            doc,
            json!({"metadata": {"labels": {"a": null, "c": "3"}}, "data": {"y": "2"}}),
            None,
        );
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "data": {"x": "1", "y": "2"}})
        );
    }

    #[test]
    fn keyed_lists_merge_by_key_and_honour_delete() {
        let schema = json!({"properties": {"secrets": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object"}}}});
        let doc = json!({"secrets": [{"name": "a", "namespace": "x"}, {"name": "b"}]});
        let out = patched(
            doc,
            json!({"secrets": [{"name": "a", "namespace": "y"}, {"name": "c"}, {"name": "b", "$patch": "delete"}], "$setElementOrder/secrets": [{"name": "a"}, {"name": "c"}]}),
            Some(schema),
        );
        assert_eq!(
            out,
            json!({"secrets": [{"name": "a", "namespace": "y"}, {"name": "c"}]})
        );
    }

    #[test]
    fn unmarked_lists_are_replaced_and_directives_apply() {
        let doc = json!({"spec": {"finalizers": ["a", "b"], "x": 1}, "keep": {"a": 1, "b": 2}});
        let out = patched(
            doc,
            json!({"spec": {"$patch": "replace", "y": 2}, "$deleteFromPrimitiveList/list": ["z"], "keep": {"$retainKeys": ["a"], "a": 5}}),
            None,
        );
        assert_eq!(out, json!({"spec": {"y": 2}, "keep": {"a": 5}}));
        let mut doc = json!({});
        assert!(apply(&mut doc, &json!({"$patch": "explode"}), None).is_err());
    }
}
