//! `apiregistration.k8s.io/v1` `APIService` (`apiregistration_kinds.json`): which server serves
//! a group/version — this one (`service: null`, a *local* APIService) or an extension API server
//! behind a Service. Its strategy defaults and validates the spec as kube-aggregator does; the
//! local APIServices of the served groups are kept by the `apiservice-registration` controller.

use std::ops::RangeInclusive;

use serde_json::{json, Value};

use super::definition::ResourceDefinition;
use super::names::{dns1123_label_error, dns1123_subdomain_error};
use crate::strategy::{Admission, AdmitStrategy, FieldError};

/// The API group of `APIService`.
pub const GROUP: &str = "apiregistration.k8s.io";
/// Its plural.
pub const PLURAL: &str = "apiservices";
/// The label kube-aggregator's autoregistration marks the APIServices it keeps with: `onstart`
/// (a built-in group, registered at start) or `true` (a CustomResourceDefinition's group).
pub const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// The definition of `apiservices`.
pub fn definition() -> ResourceDefinition {
    ResourceDefinition::builtins(include_str!("apiregistration_kinds.json"))
        .pop()
        .expect("apiregistration_kinds.json holds the definition")
}

/// The name of the APIService of `group`/`version`: `<version>.<group>` (`v1.` for the core
/// group).
pub fn name_of(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// A local APIService object of `group`/`version` (served by this server), with the given
/// priorities and automanaged label value.
pub fn local(
    group: &str,
    version: &str,
    group_priority_minimum: i64,
    version_priority: i64,
    automanaged: &str,
) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "APIService",
        "metadata": {
            "name": name_of(group, version),
            "labels": {AUTOMANAGED_LABEL: automanaged},
        },
        "spec": {
            "service": null,
            "group": group,
            "version": version,
            "groupPriorityMinimum": group_priority_minimum,
            "versionPriority": version_priority,
        },
    })
}

/// The strategy of `apiservices`.
pub const STRATEGY: AdmitStrategy = AdmitStrategy {
    name: "builtin-apiservices",
    admit,
};

/// Defaults `obj`'s spec (a Service's port: 443) and checks it as kube-aggregator's validation
/// does.
fn admit(obj: &mut Value) -> Admission {
    if let Some(service) = obj.pointer_mut("/spec/service").filter(|s| s.is_object()) {
        if service.get("port").is_none_or(Value::is_null) {
            service["port"] = json!(443);
        }
    }
    let spec = &obj["spec"];
    let text = |key: &str| spec[key].as_str().unwrap_or_default();
    let (group, version) = (text("group"), text("version"));
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut errors = Vec::new();
    if version.is_empty() {
        errors.push(FieldError::required("spec.version", ""));
    } else if let Some(why) = dns1123_label_error(version) {
        errors.push(FieldError::invalid("spec.version", &json!(version), why));
    }
    if group.is_empty() && version != "v1" {
        errors.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if let Some(why) = dns1123_subdomain_error(group).filter(|_| !group.is_empty()) {
        errors.push(FieldError::invalid("spec.group", &json!(group), why));
    }
    if name != name_of(group, version) {
        errors.push(FieldError::invalid(
            "metadata.name",
            &json!(name),
            "must be `spec.version+\".\"+spec.group`",
        ));
    }
    let number = |key: &str| spec[key].as_i64().unwrap_or(0);
    errors.extend(out_of_range(
        "spec.groupPriorityMinimum",
        number("groupPriorityMinimum"),
        1..=20000,
        "must be positive and less than 20000",
    ));
    errors.extend(out_of_range(
        "spec.versionPriority",
        number("versionPriority"),
        1..=1000,
        "must be positive and less than 1000",
    ));
    if let Some(service) = spec["service"].as_object() {
        for key in ["namespace", "name"] {
            if service
                .get(key)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                errors.push(FieldError::required(format!("spec.service.{key}"), ""));
            }
        }
        errors.extend(out_of_range(
            "spec.service.port",
            service.get("port").and_then(Value::as_i64).unwrap_or(0),
            1..=65535,
            "must be between 1 and 65535, inclusive",
        ));
        let ca_bundle = text("caBundle");
        if spec["insecureSkipTLSVerify"] == true && !ca_bundle.is_empty() {
            errors.push(FieldError::invalid(
                "spec.caBundle",
                &json!(format!("{} bytes", ca_bundle.len() * 3 / 4)),
                "must not be specified when insecureSkipTLSVerify is true",
            ));
        }
    }
    Admission {
        field_errors: errors,
        ..Admission::default()
    }
}

/// `field`'s error when its `value` is outside `range`.
fn out_of_range(
    field: &str,
    value: i64,
    range: RangeInclusive<i64>,
    why: &str,
) -> Option<FieldError> {
    (!range.contains(&value)).then(|| FieldError::invalid(field, &json!(value), why))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(obj: Value) -> Vec<String> {
        let mut obj = obj;
        admit(&mut obj)
            .field_errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    #[test]
    fn a_local_apiservice_is_valid() {
        assert!(errors(local("apps", "v1", 17800, 15, "onstart")).is_empty());
        assert!(errors(local("", "v1", 18000, 1, "onstart")).is_empty());
    }

    #[test]
    fn a_remote_apiservice_gets_port_443_and_kube_aggregators_checks() {
        let mut obj = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {
            "group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
            "versionPriority": 100, "service": {"namespace": "kube-system", "name": "metrics-server"}}});
        assert!(admit(&mut obj).field_errors.is_empty());
        assert_eq!(obj["spec"]["service"]["port"], 443);
        let bad = json!({"metadata": {"name": "wrong"}, "spec": {
            "group": "Metrics", "version": "v1beta1", "groupPriorityMinimum": 0,
            "versionPriority": 5000, "insecureSkipTLSVerify": true, "caBundle": "AAAA",
            "service": {"name": "m", "port": 70000}}});
        let got = errors(bad);
        for expected in [
            "spec.group: \"Metrics\": a lowercase RFC 1123 subdomain",
            "metadata.name: \"wrong\": must be `spec.version+\".\"+spec.group`",
            "spec.groupPriorityMinimum: 0: must be positive and less than 20000",
            "spec.versionPriority: 5000: must be positive and less than 1000",
            "spec.service.namespace: ",
            "spec.service.port: 70000: must be between 1 and 65535, inclusive",
            "spec.caBundle: \"3 bytes\": must not be specified when insecureSkipTLSVerify is true",
        ] {
            assert!(
                got.iter().any(|e| e.starts_with(expected)),
                "{expected}\nnot in\n{got:#?}"
            );
        }
        let no_group = errors(
            json!({"metadata": {"name": "v2."}, "spec": {"version": "v2",
            "groupPriorityMinimum": 1, "versionPriority": 1}}),
        );
        assert_eq!(
            no_group,
            ["spec.group: only v1 may have an empty group and it better be legacy kube"]
        );
    }
}
