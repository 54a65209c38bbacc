//! Labels and `metav1.LabelSelector`s: an object's labels, and whether a selector (matchLabels,
//! matchExpressions) matches them — what RBAC aggregation and admission selectors share, through
//! the label selector lists use.

use std::collections::BTreeMap;

use serde_json::Value;

use strategy_host_apimachinery::LabelSelector;

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
/// every matchExpressions requirement holds (an empty selector matches everything). The one
/// label-selector implementation is storage's, which lists select with too.
pub fn selector_matches(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    LabelSelector::from_label_selector(selector).matches_labels(labels)
}
