//! The event's JSON form, field for field as Kubernetes' `audit.k8s.io/v1` `Event` writes it.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;

use crate::audit::event::{
    format_micro_time, Event, EventUser, Level, ObjectRef, ResponseStatus, Stage,
};

#[test]
fn micro_time_is_rfc3339_in_utc_with_microseconds() {
    let t = UNIX_EPOCH + Duration::new(1_714_564_800, 123_456_789);
    assert_eq!(format_micro_time(t), "2024-05-01T12:00:00.123456Z");
    assert_eq!(format_micro_time(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
}

#[test]
fn a_metadata_event_has_kubernetes_field_names() {
    let received = UNIX_EPOCH + Duration::new(1_714_564_800, 5_000);
    let event = Event {
        level: Level::Metadata,
        audit_id: "0b9c3f2e-6a51-4c1e-9f1e-2b8f3c1d4e5f".into(),
        stage: Stage::ResponseComplete,
        request_uri: "/api/v1/namespaces/default/pods/web?timeout=5s".into(),
        verb: "get".into(),
        user: EventUser {
            username: "alice".into(),
            uid: "u-1".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: BTreeMap::from([("scopes".into(), vec!["a".into()])]),
        },
        source_ips: vec!["10.0.0.1".into(), "127.0.0.1".into()],
        user_agent: "kubectl/v1.35.0".into(),
        object_ref: Some(ObjectRef {
            resource: "pods".into(),
            namespace: "default".into(),
            name: "web".into(),
            api_version: "v1".into(),
            ..ObjectRef::default()
        }),
        response_status: Some(ResponseStatus {
            code: 200,
            ..ResponseStatus::default()
        }),
        request_received_timestamp: received,
        stage_timestamp: received + Duration::from_micros(1_500),
        annotations: BTreeMap::from([
            ("authorization.k8s.io/decision".into(), "allow".into()),
            ("authorization.k8s.io/reason".into(), String::new()),
        ]),
        ..Event::default()
    };
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Metadata",
            "auditID": "0b9c3f2e-6a51-4c1e-9f1e-2b8f3c1d4e5f",
            "stage": "ResponseComplete",
            "requestURI": "/api/v1/namespaces/default/pods/web?timeout=5s",
            "verb": "get",
            "user": {
                "username": "alice",
                "uid": "u-1",
                "groups": ["devs", "system:authenticated"],
                "extra": {"scopes": ["a"]}
            },
            "sourceIPs": ["10.0.0.1", "127.0.0.1"],
            "userAgent": "kubectl/v1.35.0",
            "objectRef": {"resource": "pods", "namespace": "default", "name": "web", "apiVersion": "v1"},
            "responseStatus": {"metadata": {}, "code": 200},
            "requestReceivedTimestamp": "2024-05-01T12:00:00.000005Z",
            "stageTimestamp": "2024-05-01T12:00:00.001505Z",
            "annotations": {
                "authorization.k8s.io/decision": "allow",
                "authorization.k8s.io/reason": ""
            }
        })
    );
}

#[test]
fn empty_fields_are_left_out_and_objects_kept_as_given() {
    let event = Event {
        level: Level::RequestResponse,
        audit_id: "id".into(),
        stage: Stage::Panic,
        request_uri: "/healthz".into(),
        verb: "get".into(),
        object_ref: Some(ObjectRef {
            api_group: "apps".into(),
            subresource: "scale".into(),
            uid: "u".into(),
            resource_version: "7".into(),
            ..ObjectRef::default()
        }),
        response_status: Some(ResponseStatus {
            status: Some("Failure".into()),
            message: Some("gone".into()),
            reason: Some("NotFound".into()),
            details: Some(json!({"name": "x"})),
            code: 404,
            ..ResponseStatus::default()
        }),
        request_object: Some(json!({"a": 1})),
        response_object: Some(json!([1, 2])),
        ..Event::default()
    };
    let v = serde_json::to_value(&event).unwrap();
    assert_eq!(v["user"], json!({}));
    for absent in ["sourceIPs", "userAgent", "annotations", "impersonatedUser"] {
        assert!(v.get(absent).is_none(), "{absent}");
    }
    assert_eq!(v["stage"], "Panic");
    assert_eq!(
        v["objectRef"],
        json!({"uid": "u", "apiGroup": "apps", "resourceVersion": "7", "subresource": "scale"})
    );
    assert_eq!(
        v["responseStatus"],
        json!({"metadata": {}, "status": "Failure", "message": "gone", "reason": "NotFound", "details": {"name": "x"}, "code": 404})
    );
    assert_eq!(v["requestObject"], json!({"a": 1}));
    assert_eq!(v["responseObject"], json!([1, 2]));
    // The line is one JSON object in Kubernetes' field order.
    let line = serde_json::to_string(&event).unwrap();
    assert!(line.starts_with(r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"id","stage":"Panic","requestURI":"/healthz","verb":"get","user":{}"#), "{line}");
}

#[test]
fn levels_are_ordered_and_parsed_by_name() {
    assert!(Level::None < Level::Metadata);
    assert!(Level::Metadata < Level::Request);
    assert!(Level::Request < Level::RequestResponse);
    for name in Level::NAMES {
        assert_eq!(name.parse::<Level>().unwrap().as_str(), name);
    }
    assert!("metadata".parse::<Level>().is_err());
    assert_eq!(Level::default(), Level::Metadata);
}
