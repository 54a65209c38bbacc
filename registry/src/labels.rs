//! Labels and `metav1.LabelSelector`s: an object's labels, and whether a selector (matchLabels,
//! matchExpressions) matches them — what RBAC aggregation and admission selectors share.

use std::collections::BTreeMap;

use serde_json::Value;

/// The `metadata.labels` of `obj` (string values only).
pub fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the `metav1.LabelSelector` `selector` matches `labels`: every matchLabels pair and
/// every matchExpressions requirement holds (an empty selector matches everything).
pub fn selector_matches(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    let match_labels = selector.get("matchLabels").and_then(Value::as_object);
    let labels_hold = match_labels.into_iter().flatten().all(|(k, v)| {
        v.as_str()
            .is_some_and(|v| labels.get(k).map(String::as_str) == Some(v))
    });
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    labels_hold
        && expressions.into_iter().flatten().all(|e| {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|vs| vs.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let value = labels.get(key).map(String::as_str);
            match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => value.is_some_and(|v| values.contains(&v)),
                "NotIn" => !value.is_some_and(|v| values.contains(&v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
}
