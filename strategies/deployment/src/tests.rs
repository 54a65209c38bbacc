//! Native unit tests of the Deployment strategy.

use serde_json::json;
use strategy_guest_sdk::{Context, FieldErrorKind, Strategy};

use super::*;

fn deployment(v: Value) -> Deployment {
    serde_json::from_value(v).unwrap()
}

fn valid() -> Value {
    json!({
        "apiVersion": "apps.example.com/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web", "tier": "fe"}}, "spec": {"containers": []}}
        },
        "status": {"readyReplicas": 9}
    })
}

#[test]
fn create_applies_defaults_and_clears_status() {
    let mut d = deployment(valid());
    Deployments.prepare_for_create(&Context::default(), &mut d);
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["spec"]["replicas"], 1);
    assert_eq!(v["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(v["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(v["spec"]["revisionHistoryLimit"], 10);
    assert!(v.get("status").is_none());
    assert_eq!(
        v["spec"]["template"]["spec"],
        json!({"containers": []}),
        "unknown fields kept"
    );
    assert_eq!(v["kind"], "Deployment");
    assert!(Deployments.validate(&Context::default(), &d).is_empty());
}

#[test]
fn explicit_replicas_are_kept() {
    let mut v = valid();
    v["spec"]["replicas"] = json!(3);
    let mut d = deployment(v);
    Deployments.prepare_for_create(&Context::default(), &mut d);
    assert_eq!(d.spec.replicas, Some(json!(3)));
}

#[test]
fn negative_replicas_and_mismatched_selector_are_invalid() {
    let mut v = valid();
    v["spec"]["replicas"] = json!(-1);
    v["spec"]["selector"]["matchLabels"]["app"] = json!("api");
    let errs = Deployments.validate(&Context::default(), &deployment(v));
    let fields: Vec<_> = errs.iter().map(|e| (e.kind, e.field.as_str())).collect();
    assert_eq!(
        fields,
        [
            (FieldErrorKind::Invalid, "spec.replicas"),
            (FieldErrorKind::Invalid, "spec.template.metadata.labels"),
        ]
    );
}

#[test]
fn missing_selector_and_unknown_strategy_type() {
    let mut v = valid();
    v["spec"]["replicas"] = json!(1);
    v["spec"].as_object_mut().unwrap().remove("selector");
    v["spec"]["strategy"] = json!({"type": "BlueGreen"});
    let errs = Deployments.validate(&Context::default(), &deployment(v));
    let kinds: Vec<_> = errs.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [FieldErrorKind::Required, FieldErrorKind::NotSupported]
    );
}

#[test]
fn selector_is_immutable_and_status_kept_on_update() {
    let ctx = Context::default();
    let mut old = deployment(valid());
    Deployments.prepare_for_create(&ctx, &mut old);
    old.status = json!({"readyReplicas": 1});

    let mut new = old.clone();
    new.status = json!({"readyReplicas": 100});
    new.spec.replicas = Some(json!(5));
    Deployments.prepare_for_update(&ctx, &mut new, &old);
    assert_eq!(new.status, json!({"readyReplicas": 1}));
    assert!(Deployments.validate_update(&ctx, &new, &old).is_empty());

    new.spec
        .selector
        .as_mut()
        .unwrap()
        .match_labels
        .insert("tier".into(), "fe".into());
    let errs = Deployments.validate_update(&ctx, &new, &old);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "spec.selector");
    assert_eq!(errs[0].detail, "field is immutable");
}
