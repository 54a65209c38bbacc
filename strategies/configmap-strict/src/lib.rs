//! A test program: a second, stricter version of the ConfigMap example (`strategies/configmap`,
//! same module name `configmaps`, same resource `example.com/v1` `ConfigMap`), so tests can stage
//! one version of a module against another (rollout, replay, `strategy-host module diff`).
//!
//! It keeps every rule of the example (its library, `strategy_configmap`) and adds:
//! - data keys starting with `legacy-` are refused (`data[legacy-x]`, Invalid);
//! - on create, the label `example.com/policy: strict` is set when absent;
//! - a warning when a ConfigMap has more than [`MAX_KEYS_WITHOUT_WARNING`] data keys;
//! - a `panic` data key makes validation panic, so the call traps (to test canary rollback).
//!
//! Not an example to follow: it exists for tests.

use strategy_configmap::{ConfigMap, ConfigMaps};
use strategy_guest_sdk::{Context, FieldError, FieldPath, Resource, Strategy};

/// The label set on create when absent.
pub const POLICY_LABEL: &str = "example.com/policy";
/// Its value.
pub const POLICY: &str = "strict";
/// Data keys beyond this many draw a warning.
pub const MAX_KEYS_WITHOUT_WARNING: usize = 8;

/// The stricter strategy.
#[derive(Debug, Default)]
pub struct StrictConfigMaps;

impl StrictConfigMaps {
    /// The rules this version adds to the example's.
    fn strict_errors(obj: &ConfigMap) -> Vec<FieldError> {
        assert!(
            !obj.data.contains_key("panic"),
            "the `panic` data key asks this test program to trap"
        );
        let data = FieldPath::new("data");
        obj.data
            .keys()
            .filter(|k| k.starts_with("legacy-"))
            .map(|k| FieldError::invalid(&data.key(k), k, "legacy- keys are no longer accepted"))
            .collect()
    }

    fn warnings(obj: &ConfigMap) -> Vec<String> {
        let n = obj.data.len();
        if n > MAX_KEYS_WITHOUT_WARNING {
            vec![format!(
                "the ConfigMap has {n} data keys; more than {MAX_KEYS_WITHOUT_WARNING} are hard to review"
            )]
        } else {
            Vec::new()
        }
    }
}

impl Strategy for StrictConfigMaps {
    type Object = ConfigMap;
    const NAME: &'static str = ConfigMaps::NAME;
    const RESOURCES: &'static [Resource] = ConfigMaps::RESOURCES;

    fn prepare_for_create(&self, _ctx: &Context, obj: &mut ConfigMap) {
        obj.metadata
            .labels
            .entry(POLICY_LABEL.into())
            .or_insert_with(|| POLICY.into());
    }

    fn validate(&self, ctx: &Context, obj: &ConfigMap) -> Vec<FieldError> {
        let mut errs = ConfigMaps.validate(ctx, obj);
        errs.extend(Self::strict_errors(obj));
        errs
    }

    fn warnings_on_create(&self, _ctx: &Context, obj: &ConfigMap) -> Vec<String> {
        Self::warnings(obj)
    }

    fn validate_update(&self, ctx: &Context, new: &ConfigMap, old: &ConfigMap) -> Vec<FieldError> {
        let mut errs = ConfigMaps.validate_update(ctx, new, old);
        errs.extend(Self::strict_errors(new));
        errs
    }

    fn warnings_on_update(&self, _ctx: &Context, new: &ConfigMap, _old: &ConfigMap) -> Vec<String> {
        Self::warnings(new)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use strategy_guest_sdk::FieldErrorKind;

    use super::*;

    fn cm(v: serde_json::Value) -> ConfigMap {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn legacy_keys_are_refused_beside_the_examples_rules() {
        let ctx = Context::default();
        let errs =
            StrictConfigMaps.validate(&ctx, &cm(json!({"data": {"legacy-x": "1", "a/b": "2"}})));
        assert!(errs.iter().any(|e| e.field == "data[legacy-x]"
            && e.kind == FieldErrorKind::Invalid
            && e.to_string()
                == r#"data[legacy-x]: Invalid value: "legacy-x": legacy- keys are no longer accepted"#));
        assert!(
            errs.iter().any(|e| e.field == "data[a/b]"),
            "the example's rule"
        );
    }

    #[test]
    fn the_policy_label_is_defaulted_on_create_only_when_absent() {
        let ctx = Context::default();
        let mut obj = cm(json!({"metadata": {"name": "a"}}));
        StrictConfigMaps.prepare_for_create(&ctx, &mut obj);
        assert_eq!(obj.metadata.labels[POLICY_LABEL], POLICY);
        let mut own = cm(json!({"metadata": {"labels": {POLICY_LABEL: "lax"}}}));
        StrictConfigMaps.prepare_for_create(&ctx, &mut own);
        assert_eq!(own.metadata.labels[POLICY_LABEL], "lax");
    }

    #[test]
    fn many_keys_draw_a_warning() {
        let ctx = Context::default();
        let data: serde_json::Map<_, _> = (0..9).map(|i| (format!("k{i}"), json!("v"))).collect();
        let obj = cm(json!({ "data": data }));
        assert_eq!(StrictConfigMaps.warnings_on_create(&ctx, &obj).len(), 1);
        assert!(StrictConfigMaps
            .warnings_on_create(&ctx, &cm(json!({"data": {"a": "1"}})))
            .is_empty());
    }

    #[test]
    #[should_panic(expected = "trap")]
    fn a_panic_key_panics() {
        StrictConfigMaps.validate(&Context::default(), &cm(json!({"data": {"panic": "1"}})));
    }
}
