//! Tests of schema defaulting, pruning and validation.

use super::*;
use serde_json::json;

fn schema() -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["size"], "properties": {
        "size": {"type": "integer", "minimum": 1, "maximum": 10},
        "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    }}}})
}

#[test]
fn defaults_prunes_and_validates() {
    let mut obj = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {}, "spec": {"size": 3, "junk": 1, "free": {"a": 1}}, "extra": true});
    apply_defaults(&mut obj, &schema());
    let pruned = prune(&mut obj, &schema(), true);
    assert_eq!(pruned, vec!["extra".to_string(), "spec.junk".to_string()]);
    assert_eq!(obj["spec"]["color"], "red");
    assert_eq!(obj["spec"]["free"]["a"], 1);
    assert!(validate(&obj, &schema(), "").is_empty());
    let bad =
        json!({"spec": {"size": "x", "color": "green", "name": "ABCDEFG", "tags": ["a", "b", 3]}});
    let errs = validate(&bad, &schema(), "");
    let fields: Vec<_> = errs.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "spec.color",
            "spec.name",
            "spec.name",
            "spec.size",
            "spec.tags",
            "spec.tags[2]"
        ],
        "{errs:?}"
    );
    let missing = validate(&json!({"spec": {}}), &schema(), "");
    assert_eq!(missing[0].kind, FieldErrorKind::Required);
    assert_eq!(missing[0].field, "spec.size");
}
