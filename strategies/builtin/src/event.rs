//! Core `v1` Events as Kubernetes validates them: an event about a namespaced object lives in
//! that object's namespace; an event with an `eventTime` (the newer API's shape) names its
//! reporting controller and instance, action and reason; `type` is Normal or Warning.

use serde_json::Value;
use strategy_guest_sdk::{FieldError, FieldPath};

use super::KindStrategy;

/// Kubernetes' limit on the length of `action`, `reason` and `reportingInstance`.
const NAME_LIMIT: usize = 128;
/// Kubernetes' limit on the length of `message` (`note`) for events with an `eventTime`.
const NOTE_LIMIT: usize = 1024;

pub(crate) struct Events;

/// `events.k8s.io/v1` Events: the same rules under the newer field names; `eventTime` is
/// required.
pub(crate) struct EventsV1;

/// (events.k8s.io name, core name) of the fields the two versions name differently.
const RENAMES: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

impl KindStrategy for EventsV1 {
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut core = obj.clone();
        if let Some(map) = core.as_object_mut() {
            for (new, old) in RENAMES {
                if let Some(v) = map.remove(*new) {
                    map.insert((*old).to_string(), v);
                }
            }
        }
        let mut errs = Vec::new();
        if obj.get("eventTime").is_none_or(Value::is_null) {
            errs.push(FieldError::required(&FieldPath::new("eventTime"), ""));
        }
        for mut e in Events.validate(&core) {
            for (new, old) in RENAMES {
                if let Some(rest) = e.field.strip_prefix(old) {
                    if rest.is_empty() || rest.starts_with('.') {
                        e.field = format!("{new}{rest}");
                        break;
                    }
                }
            }
            errs.push(e);
        }
        errs
    }
}

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
                involved,
                "does not match event.namespace",
            ));
        }
        let type_ = text(obj, "type");
        if !type_.is_empty() && type_ != "Normal" && type_ != "Warning" {
            errs.push(FieldError::invalid(
                &FieldPath::new("type"),
                type_,
                format!("has invalid value: {type_}"),
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
                    errs.push(FieldError::too_long(&FieldPath::new(field), NAME_LIMIT));
                }
            }
            if text(obj, "message").len() > NOTE_LIMIT {
                errs.push(FieldError::too_long(&FieldPath::new("message"), NOTE_LIMIT));
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
    fn events_v1_are_checked_under_their_own_field_names() {
        let e = json!({"metadata": {"namespace": "a"}, "regarding": {"namespace": "b"}, "eventTime": "2026-01-01T00:00:00.000000Z", "reportingInstance": "i", "action": "Do", "reason": "R", "note": "n".repeat(2000)});
        let fields: Vec<String> = EventsV1.validate(&e).into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            ["regarding.namespace", "reportingController", "note"]
        );
        let ok = json!({"metadata": {"namespace": "a"}, "regarding": {"namespace": "a"}, "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "c", "reportingInstance": "i", "action": "Do", "reason": "R", "type": "Normal"});
        assert!(EventsV1.validate(&ok).is_empty());
        let untimed = json!({"metadata": {"namespace": "a"}});
        assert_eq!(EventsV1.validate(&untimed)[0].field, "eventTime");
    }

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
