//! A ConfigMap-like strategy: key names validated, total size capped at 1 MiB, and an
//! `immutable: true` flag enforced on update.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use strategy_guest_sdk::meta::{config_map_key_errors, ObjectMeta};
use strategy_guest_sdk::{Context, FieldError, FieldPath, Resource, Scope, Strategy};

/// The largest total size of a ConfigMap's data, as in Kubernetes.
pub const MAX_TOTAL_SIZE: usize = 1 << 20;

/// The ConfigMap object; fields it does not name are kept in `rest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMap {
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// When true, `data` and `binaryData` can no longer change (nor the flag itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
    /// UTF-8 entries.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    /// Binary entries, base64-encoded.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub binary_data: BTreeMap<String, String>,
    /// `apiVersion`, `kind` and anything else.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl ConfigMap {
    fn is_immutable(&self) -> bool {
        self.immutable == Some(true)
    }

    /// Bytes of keys and values (binary values counted decoded).
    pub fn total_size(&self) -> usize {
        let data: usize = self.data.iter().map(|(k, v)| k.len() + v.len()).sum();
        let binary: usize = self
            .binary_data
            .iter()
            .map(|(k, v)| k.len() + v.trim_end_matches('=').len() * 3 / 4)
            .sum();
        data + binary
    }
}

/// The strategy.
#[derive(Debug, Default)]
pub struct ConfigMaps;

impl Strategy for ConfigMaps {
    type Object = ConfigMap;
    const NAME: &'static str = "configmaps";
    const RESOURCES: &'static [Resource] = &[Resource::new(
        "example.com",
        "v1",
        "ConfigMap",
        "configmaps",
        Scope::Namespaced,
    )];

    fn validate(&self, _ctx: &Context, obj: &ConfigMap) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let data = FieldPath::new("data");
        let binary = FieldPath::new("binaryData");
        for key in obj.data.keys() {
            for msg in config_map_key_errors(key) {
                errs.push(FieldError::invalid(&data.key(key), key, msg));
            }
            if obj.binary_data.contains_key(key) {
                errs.push(FieldError::invalid(
                    &data.key(key),
                    key,
                    "duplicate of key present in binaryData",
                ));
            }
        }
        for key in obj.binary_data.keys() {
            for msg in config_map_key_errors(key) {
                errs.push(FieldError::invalid(&binary.key(key), key, msg));
            }
        }
        if obj.total_size() > MAX_TOTAL_SIZE {
            // As kube-apiserver, on no field: the limit is the whole object's.
            errs.push(FieldError::too_long(&FieldPath::new(""), MAX_TOTAL_SIZE));
        }
        errs
    }

    fn validate_update(&self, ctx: &Context, new: &ConfigMap, old: &ConfigMap) -> Vec<FieldError> {
        let mut errs = self.validate(ctx, new);
        if old.is_immutable() {
            if !new.is_immutable() {
                errs.push(FieldError::forbidden(
                    &FieldPath::new("immutable"),
                    "field is immutable when `immutable` is set",
                ));
            }
            if new.data != old.data {
                errs.push(FieldError::forbidden(
                    &FieldPath::new("data"),
                    "field is immutable when `immutable` is set",
                ));
            }
            if new.binary_data != old.binary_data {
                errs.push(FieldError::forbidden(
                    &FieldPath::new("binaryData"),
                    "field is immutable when `immutable` is set",
                ));
            }
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use strategy_guest_sdk::FieldErrorKind;

    use super::*;

    fn cm(v: Value) -> ConfigMap {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn valid_keys_pass_and_bad_keys_fail() {
        let ctx = Context::default();
        let ok =
            cm(json!({"metadata": {"name": "a"}, "data": {"app.properties": "x=1", "KEY_1": "v"}}));
        assert!(ConfigMaps.validate(&ctx, &ok).is_empty());
        let bad = cm(json!({"data": {"a/b": "x", "..": "y"}, "binaryData": {"a/b": "eA=="}}));
        let errs = ConfigMaps.validate(&ctx, &bad);
        assert!(errs
            .iter()
            .any(|e| e.field == "data[a/b]" && e.kind == FieldErrorKind::Invalid));
        assert!(errs.iter().any(|e| e.field == "data[..]"));
        let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert!(
            shown.contains(
                &r#"data[a/b]: Invalid value: "a/b": duplicate of key present in binaryData"#
                    .to_string()
            ),
            "{shown:?}"
        );
    }

    #[test]
    fn total_size_is_capped_at_one_mib() {
        let ctx = Context::default();
        let just_under = cm(json!({"data": {"k": "x".repeat(MAX_TOTAL_SIZE - 1)}}));
        assert!(ConfigMaps.validate(&ctx, &just_under).is_empty());
        let over = cm(json!({"data": {"k": "x".repeat(MAX_TOTAL_SIZE)}}));
        let errs = ConfigMaps.validate(&ctx, &over);
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            "Too long: may not be more than 1048576 bytes",
            "on no field, as kube-apiserver"
        );
    }

    #[test]
    fn immutable_config_maps_cannot_change() {
        let ctx = Context::default();
        let old = cm(json!({"immutable": true, "data": {"a": "1"}, "kind": "ConfigMap"}));
        let mut relabelled = old.clone();
        relabelled.metadata.labels.insert("x".into(), "y".into());
        assert!(
            ConfigMaps
                .validate_update(&ctx, &relabelled, &old)
                .is_empty(),
            "metadata may change"
        );
        let changed = cm(json!({"immutable": true, "data": {"a": "2"}}));
        let errs = ConfigMaps.validate_update(&ctx, &changed, &old);
        assert_eq!(errs.len(), 1);
        assert_eq!(
            (errs[0].kind, errs[0].field.as_str()),
            (FieldErrorKind::Forbidden, "data")
        );
        let unset = cm(json!({"immutable": false, "data": {"a": "1"}}));
        assert_eq!(
            ConfigMaps.validate_update(&ctx, &unset, &old)[0].field,
            "immutable"
        );
        let mutable = cm(json!({"data": {"a": "1"}}));
        assert!(ConfigMaps
            .validate_update(&ctx, &changed, &mutable)
            .is_empty());
    }
}
