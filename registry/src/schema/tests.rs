//! Tests of schema defaulting, pruning and validation.

use super::*;
use crate::strategy::FieldErrorKind;
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

#[test]
fn an_update_ratchets_what_it_leaves_unchanged() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 2},
        "atomic": {"type": "array", "items": {"type": "string", "maxLength": 2}},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "maxLength": 2}},
        "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "string", "maxLength": 2}}}}
    }}}});
    let old = json!({"metadata": {}, "spec": {"name": "long", "atomic": ["long"], "set": ["long"],
                     "map": [{"k": "a", "v": "long"}]}});
    let fields = |new: &Value| -> Vec<String> {
        validate_update(new, Some(&old), &schema, "")
            .into_iter()
            .map(|e| e.field)
            .collect()
    };
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"] = json!({"team": "blue"});
    assert!(fields(&relabelled).is_empty());
    // Items moved or joined by others: a set member and a map item are found by value and key,
    // an atomic list's items are not correlated once the list changes.
    let grown = json!({"metadata": {}, "spec": {"name": "long", "atomic": ["ok", "long"],
                       "set": ["ok", "long"], "map": [{"k": "b", "v": "ok"}, {"k": "a", "v": "long"}]}});
    assert_eq!(fields(&grown), vec!["spec.atomic[1]"]);
    let changed = json!({"metadata": {}, "spec": {"name": "longer", "atomic": ["long"], "set": ["long"],
                         "map": [{"k": "a", "v": "longer"}]}});
    assert_eq!(fields(&changed), vec!["spec.map[0].v", "spec.name"]);
    assert_eq!(validate(&old, &schema, "").len(), 4);
}

/// An object marked `x-kubernetes-embedded-resource` keeps its `apiVersion` and `kind`, and its
/// `metadata` is an `ObjectMeta` whatever the schema declares of it: its known fields stay,
/// others are pruned and reported.
#[test]
fn an_embedded_resource_keeps_its_type_and_object_meta() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
            "spec": {"type": "object"}
        }}
    }}}});
    let mut obj = json!({"spec": {"template": {
        "apiVersion": "foo/v1", "kind": "Sub", "apiversion": "typo",
        "metadata": {"name": "sub", "namespace": "ns", "labels": {"a": "b"}, "unknownSubMeta": 1},
        "spec": {}
    }}});
    let pruned = super::prune(&mut obj, &schema, true);
    assert_eq!(
        pruned,
        [
            "spec.template.apiversion",
            "spec.template.metadata.unknownSubMeta"
        ]
    );
    assert_eq!(
        obj["spec"]["template"],
        json!({"apiVersion": "foo/v1", "kind": "Sub",
               "metadata": {"name": "sub", "namespace": "ns", "labels": {"a": "b"}}, "spec": {}})
    );
}
