//! Native unit tests of the Deployment strategy.

use serde_json::json;
use strategy_guest_sdk::{Context, FieldErrorKind, Strategy};

use super::*;

/// The object as the module decodes it from the host's JSON.
fn deployment(v: Value) -> LazyObject {
    serde_json::from_str(&v.to_string()).unwrap()
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
    assert_eq!(d.get::<Value>(&["spec", "replicas"]), Ok(Some(json!(3))));
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
    // Worded as kube-apiserver words a Deployment's errors, values and all.
    let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            r#"spec.template.metadata.labels: Invalid value: map[string]string{"app":"web", "tier":"fe"}: `selector` does not match template `labels`"#,
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
    old.insert("status", json!({"readyReplicas": 1}));

    let mut new = old.clone();
    new.insert("status", json!({"readyReplicas": 100}));
    new.object_mut(&["spec"]).unwrap().insert("replicas", 5);
    Deployments.prepare_for_update(&ctx, &mut new, &old);
    assert_eq!(
        new.get::<Value>(&["status"]),
        Ok(Some(json!({"readyReplicas": 1})))
    );
    assert!(Deployments.validate_update(&ctx, &new, &old).is_empty());

    new.object_mut(&["spec", "selector", "matchLabels"])
        .unwrap()
        .insert("tier", "fe");
    let errs = Deployments.validate_update(&ctx, &new, &old);
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].to_string(),
        r#"spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"fe"}}: field is immutable"#
    );
}

/// A create through the ABI, as the host calls the module: the field errors and the answer's
/// object patch (ABI 1.4) as JSON.
fn create_through_abi(obj: &Value) -> (Vec<String>, Value) {
    use prost::Message;
    use strategy_guest_sdk::abi;
    let req = abi::Request {
        context: None,
        operation: Some(abi::request::Operation::BeforeCreate(
            abi::BeforeCreateRequest {
                object: obj.to_string().into_bytes(),
            },
        )),
    };
    let resp = abi::Response::decode(
        strategy_guest_sdk::handle(&Deployments, &req.encode_to_vec()).as_slice(),
    )
    .unwrap();
    assert!(resp.error.is_empty(), "{}", resp.error);
    assert!(resp.object.is_empty(), "answered as a patch, not whole");
    let errs = resp
        .field_errors
        .iter()
        .map(|e| format!("{} {}", e.field, e.detail));
    let patch = match resp.object_patch.is_empty() {
        true => json!([]),
        false => serde_json::from_slice(&resp.object_patch).unwrap(),
    };
    (errs.collect(), patch)
}

#[test]
fn a_create_answers_only_its_defaults() {
    let (errs, patch) = create_through_abi(&valid());
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        patch,
        json!([
            {"op": "remove", "path": "/status"},
            {"op": "add", "path": "/spec/replicas", "value": 1},
            {"op": "add", "path": "/spec/revisionHistoryLimit", "value": 10},
            {"op": "add", "path": "/spec/progressDeadlineSeconds", "value": 600},
            {"op": "add", "path": "/spec/strategy", "value": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}},
        ])
    );
}

#[test]
fn members_of_the_wrong_type_are_field_errors_not_decode_failures() {
    let (errs, patch) = create_through_abi(&json!({"spec": "web"}));
    assert_eq!(errs, [r#"spec "web": must be an object"#]);
    assert_eq!(patch, json!([]));

    let mut v = valid();
    v["spec"]["template"]["metadata"]["labels"] = json!(["app"]);
    v["spec"]["strategy"] = json!({"type": 7, "rollingUpdate": null});
    let (errs, _) = create_through_abi(&v);
    assert_eq!(
        errs,
        [
            "spec.template.metadata.labels invalid type: sequence, expected a map",
            "spec.template.metadata.labels null: `selector` does not match template `labels`",
            "spec.strategy.type invalid type: integer `7`, expected a string",
        ]
    );
}
