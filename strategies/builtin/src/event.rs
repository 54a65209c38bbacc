//! Core `v1` Events as Kubernetes validates them: an event about a namespaced object lives in
//! that object's namespace; an event with an `eventTime` (the newer API's shape) names its
//! reporting controller and instance, action and reason; `type` is Normal or Warning.

use serde_json::Value;
use strategy_guest_sdk::{FieldError, FieldPath};

use super::KindStrategy;

/// Kubernetes' limit on the length of `action`, `reason` and `reportingInstance`.
const NAME_LIMIT: usize = 128;
/// Kubernetes' limit on the length of `message` for events with an `eventTime`.
const NOTE_LIMIT: usize = 4096;

pub(crate) struct Events;

fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

impl KindStrategy for Events {
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let namespace = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        let involved = obj
            .pointer("/involvedObject/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mismatch = if involved.is_empty() {
            !namespace.is_empty() && namespace != "default" && namespace != "kube-system"
        } else {
            involved != namespace
        };
        if mismatch {
            errs.push(FieldError::invalid(
                &FieldPath::new("involvedObject").child("namespace"),
                format!("{involved:?}: does not match event.namespace"),
            ));
        }
        let type_ = text(obj, "type");
        if !type_.is_empty() && type_ != "Normal" && type_ != "Warning" {
            errs.push(FieldError::invalid(
                &FieldPath::new("type"),
                format!("{type_:?}: has invalid value: {type_}"),
            ));
        }
        let new_style = obj.get("eventTime").is_some_and(|t| !t.is_null());
        if new_style {
            for field in [
                "reportingComponent",
                "reportingInstance",
                "action",
                "reason",
            ] {
                let value = text(obj, field);
                if value.is_empty() {
                    errs.push(FieldError::required(&FieldPath::new(field), ""));
                } else if field != "reportingComponent" && value.len() > NAME_LIMIT {
                    errs.push(FieldError::too_long(
                        &FieldPath::new(field),
                        format!("may not be more than {NAME_LIMIT} bytes"),
                    ));
                }
            }
            if text(obj, "message").len() > NOTE_LIMIT {
                errs.push(FieldError::too_long(
                    &FieldPath::new("message"),
                    format!("may not be more than {NOTE_LIMIT} bytes"),
                ));
            }
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_legacy_event_about_an_object_in_its_namespace_is_valid() {
        let e = json!({"metadata": {"namespace": "a"}, "involvedObject": {"kind": "Pod", "namespace": "a", "name": "p"}, "reason": "Started", "type": "Normal"});
        assert!(Events.validate(&e).is_empty());
    }

    #[test]
    fn namespace_mismatch_bad_type_and_missing_reporter_are_refused() {
        let e = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "b"}, "type": "Odd", "eventTime": "2026-01-01T00:00:00.000000Z"});
        let fields: Vec<String> = Events.validate(&e).into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            [
                "involvedObject.namespace",
                "type",
                "reportingComponent",
                "reportingInstance",
                "action",
                "reason"
            ]
        );
    }
}
