//! Unit tests of the protobuf codec: JSON → protobuf → JSON round trips of every covered kind,
//! bytes as a Go client writes them, the envelope and watch frame layout, and errors (the
//! access-control, admission and service-network kinds' own checks are in `access.rs`,
//! `admission.rs` and `network.rs`).

mod access;
mod access_fixtures;
mod admission;
mod apiextensions;
mod errors;
mod fixtures;
mod flowcontrol;
mod network;
mod well_known;

use std::collections::BTreeMap;

use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta, Unknown};
use prost::Message;
use serde_json::{json, Value};

use super::bridge::JsonValue;
use super::{
    codec, decode, decode_watch_frame, encode, encode_watch_frame, envelope, supports, MAGIC,
    PROTOBUF,
};

/// `message` as a Go client writes it (in its envelope), decoded to JSON.
fn decoded_from_go(api_version: &str, kind: &str, message: &impl Message) -> Value {
    decode(&envelope(api_version, kind, message.encode_to_vec())).unwrap()
}

/// Metadata with a name alone.
fn named(name: &str) -> meta::ObjectMeta {
    meta::ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    }
}

/// Metadata with a namespace (`""` written as Go writes it) and a name.
fn named_in(namespace: &str, name: &str) -> meta::ObjectMeta {
    meta::ObjectMeta {
        namespace: Some(namespace.into()),
        ..named(name)
    }
}

/// `obj` encoded; panics when it has no protobuf form.
fn encoded(obj: &Value) -> Vec<u8> {
    encode(obj).expect("encodes").expect("has a protobuf form")
}

/// The JSON `obj` encoded by the codec, read back by k8s-pb alone (an independent reader, as a
/// Go client's generated code).
fn read_as<M: Message + Default>(obj: &Value) -> M {
    let body = encoded(obj);
    assert_eq!(body[..4], MAGIC);
    let unknown = Unknown::decode(&body[4..]).expect("an envelope");
    let type_meta = unknown.type_meta.expect("type meta");
    assert_eq!(type_meta.api_version.as_deref(), obj["apiVersion"].as_str());
    assert_eq!(type_meta.kind.as_deref(), obj["kind"].as_str());
    M::decode(unknown.raw.expect("raw").as_slice()).expect("k8s-pb decodes the message")
}

#[test]
fn every_kind_round_trips_fully_populated() {
    let fixtures = fixtures::all();
    assert_eq!(fixtures.len(), 33);
    for obj in fixtures {
        let (api_version, kind) = (
            obj["apiVersion"].as_str().unwrap(),
            obj["kind"].as_str().unwrap(),
        );
        assert!(supports(api_version, kind), "{api_version} {kind}");
        let codec = codec(api_version, kind).unwrap();
        let unset = (codec.unset_fields)(&obj);
        assert!(
            unset.is_empty(),
            "{api_version} {kind} fixture leaves unset: {unset:?}"
        );
        let body = encoded(&obj);
        assert_eq!(body[..4], MAGIC, "{kind}");
        assert_eq!(decode(&body).expect("decodes"), obj, "{api_version} {kind}");
    }
}

#[test]
fn the_envelope_is_an_unknown_with_type_meta_and_empty_content_fields() {
    let obj = fixtures::config_map("cm");
    let body = encoded(&obj);
    let unknown = Unknown::decode(&body[4..]).unwrap();
    assert_eq!(
        unknown.type_meta,
        Some(TypeMeta {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into())
        })
    );
    assert_eq!(unknown.content_encoding.as_deref(), Some(""));
    assert_eq!(unknown.content_type.as_deref(), Some(""));
    let cm = core::ConfigMap::decode(unknown.raw.unwrap().as_slice()).unwrap();
    assert_eq!(cm.metadata.unwrap().name.as_deref(), Some("cm"));
    assert_eq!(cm.immutable, Some(false));
    assert_eq!(cm.binary_data["blob"], vec![0x00, 0x01, 0xff, 0x7f]);
    assert_eq!(PROTOBUF, "application/vnd.kubernetes.protobuf");
}

#[test]
fn lists_round_trip_empty_and_items_get_their_kind() {
    let empty = json!({
        "apiVersion": "v1", "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "7"}, "items": []
    });
    assert_eq!(decode(&encoded(&empty)).unwrap(), empty);

    // Items carry no apiVersion/kind in protobuf; decoding stamps the list's on them.
    let mut list = core::ConfigMapList::default();
    list.items.push(core::ConfigMap {
        metadata: Some(named("a")),
        ..Default::default()
    });
    assert_eq!(
        decoded_from_go("v1", "ConfigMapList", &list),
        json!({
            "apiVersion": "v1", "kind": "ConfigMapList",
            "items": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]
        })
    );
}

/// A ConfigMap as a Go client's generated marshaller writes it: every non-pointer field is
/// present, unset strings as `""`, numbers as 0, the unset creationTimestamp as an empty message.
#[test]
fn bytes_from_a_go_client_decode_to_kubernetes_json() {
    let cm = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: Some("settings".into()),
            generate_name: Some(String::new()),
            namespace: Some("default".into()),
            self_link: Some(String::new()),
            uid: Some(String::new()),
            resource_version: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(meta::Time::default()),
            deletion_timestamp: None,
            deletion_grace_period_seconds: None,
            labels: BTreeMap::from([("app".into(), "web".into())]),
            annotations: BTreeMap::new(),
            owner_references: vec![],
            finalizers: vec![],
            managed_fields: vec![meta::ManagedFieldsEntry {
                manager: Some("client".into()),
                operation: Some("Update".into()),
                api_version: Some("v1".into()),
                time: Some(meta::Time {
                    seconds: Some(1_704_164_645),
                    nanos: Some(0),
                }),
                fields_type: Some("FieldsV1".into()),
                fields_v1: Some(meta::FieldsV1 {
                    raw: Some(br#"{"f:data":{"f:k":{}}}"#.to_vec()),
                }),
                subresource: Some(String::new()),
            }],
        }),
        immutable: None,
        data: BTreeMap::from([("k".into(), "v".into())]),
        binary_data: BTreeMap::from([("b".into(), vec![0, 1, 2])]),
    };
    assert_eq!(
        decoded_from_go("v1", "ConfigMap", &cm),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "settings",
                "namespace": "default",
                "labels": {"app": "web"},
                "managedFields": [{
                    "manager": "client",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2024-01-02T03:04:05Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:k": {}}}
                }]
            },
            "data": {"k": "v"},
            "binaryData": {"b": "AAEC"}
        })
    );
}

/// A Lease from a Go client: pointer fields keep their zero values, MicroTimes keep micros.
#[test]
fn a_go_lease_keeps_pointer_zeros_and_microseconds() {
    let lease = coordination::Lease {
        metadata: Some(named("leader")),
        spec: Some(coordination::LeaseSpec {
            holder_identity: Some(String::new()),
            lease_duration_seconds: Some(0),
            acquire_time: None,
            renew_time: Some(meta::MicroTime {
                seconds: Some(1_704_164_645),
                nanos: Some(123_456_789),
            }),
            lease_transitions: Some(0),
            strategy: None,
            preferred_holder: None,
        }),
    };
    assert_eq!(
        decoded_from_go("coordination.k8s.io/v1", "Lease", &lease),
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "leader"},
            "spec": {
                "holderIdentity": "",
                "leaseDurationSeconds": 0,
                "renewTime": "2024-01-02T03:04:05.123456Z",
                "leaseTransitions": 0
            }
        })
    );
}

#[test]
fn zero_values_of_omitempty_fields_are_left_out() {
    let obj = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "", "generation": 0, "labels": {}, "finalizers": []},
        "data": {}
    });
    assert_eq!(
        decode(&encoded(&obj)).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    );
}

#[test]
fn null_is_absent_and_unknown_fields_are_not_encoded() {
    let obj = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "a", "labels": null, "deletionTimestamp": null, "clusterName": "x"},
        "data": null, "type": null, "somethingNew": {"a": 1}
    });
    assert_eq!(
        decode(&encoded(&obj)).unwrap(),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}})
    );
}

#[test]
fn status_travels_as_v1_status_and_delete_options_under_any_group_version() {
    let status = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure", "code": 404});
    let body = encoded(&status);
    let unknown = Unknown::decode(&body[4..]).unwrap();
    let type_meta = unknown.type_meta.unwrap();
    assert_eq!(
        (type_meta.api_version.as_deref(), type_meta.kind.as_deref()),
        (Some("v1"), Some("Status"))
    );
    assert_eq!(decode(&body).unwrap(), status);
    assert!(!supports("meta.k8s.io/v1", "Status"));

    for api_version in ["v1", "meta.k8s.io/v1", "coordination.k8s.io/v1"] {
        let opts = json!({"apiVersion": api_version, "kind": "DeleteOptions", "propagationPolicy": "Background"});
        assert_eq!(decode(&encoded(&opts)).unwrap(), opts);
    }
}

#[test]
fn kinds_without_a_protobuf_form_are_declined() {
    let deployment =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}});
    assert_eq!(encode(&deployment), Ok(None));
    assert_eq!(encode_watch_frame("ADDED", &deployment), Ok(None));
    assert!(!supports("apps/v1", "Deployment"));
    assert!(!supports("example.com/v1", "ConfigMap"));
    assert!(!supports("v1", "Lease"));
    assert_eq!(encode(&json!({"kind": "ConfigMap"})), Ok(None));
    assert_eq!(encode(&json!("ConfigMap")), Ok(None));
    for (api_version, kind) in [
        ("v1", "ConfigMap"),
        ("v1", "ConfigMapList"),
        ("events.k8s.io/v1", "Event"),
        ("coordination.k8s.io/v1", "Lease"),
        ("v1", "Status"),
    ] {
        assert!(supports(api_version, kind), "{api_version} {kind}");
    }
}

#[test]
fn a_watch_frame_is_a_length_then_a_raw_watch_event_holding_a_full_object() {
    let obj = fixtures::lease("leader");
    let frame = encode_watch_frame("MODIFIED", &obj).unwrap().unwrap();
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    // The event itself has no magic and no envelope: field 1 (type), a string, comes first.
    assert_eq!(frame[4], 0x0a);
    let event = meta::WatchEvent::decode(&frame[4..]).unwrap();
    assert_eq!(event.r#type.as_deref(), Some("MODIFIED"));
    let raw = event.object.unwrap().raw.unwrap();
    assert_eq!(raw[..4], MAGIC);
    assert_eq!(raw, encoded(&obj));
    assert_eq!(decode(&raw).unwrap(), obj);
    assert_eq!(
        decode_watch_frame(&frame).unwrap(),
        ("MODIFIED".to_owned(), obj)
    );

    let status = fixtures::status();
    let frame = encode_watch_frame("ERROR", &status).unwrap().unwrap();
    assert_eq!(
        decode_watch_frame(&frame).unwrap(),
        ("ERROR".to_owned(), status)
    );
}

/// A frame as kube-apiserver writes one, read back.
#[test]
fn a_watch_frame_written_like_kube_apiserver_decodes() {
    let cm = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            resource_version: Some("9".into()),
            ..named("a")
        }),
        ..Default::default()
    };
    let event = meta::WatchEvent {
        r#type: Some("BOOKMARK".into()),
        object: Some(RawExtension {
            raw: Some(envelope("v1", "ConfigMap", cm.encode_to_vec())),
        }),
    };
    let bytes = event.encode_to_vec();
    let frame = [(bytes.len() as u32).to_be_bytes().to_vec(), bytes].concat();
    assert_eq!(
        decode_watch_frame(&frame).unwrap(),
        (
            "BOOKMARK".to_owned(),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "9"}})
        )
    );
}

/// The bridges of messages that are not kinds of their own also round trip.
#[test]
fn envelope_and_event_messages_bridge_both_ways() {
    fn round_trip<M: JsonValue>(json: Value) {
        assert_eq!(M::from_json(&json).unwrap().to_json().unwrap(), json);
    }
    round_trip::<meta::WatchEvent>(
        json!({"type": "ADDED", "object": {"kind": "ConfigMap", "data": {"a": "b"}}}),
    );
    round_trip::<Unknown>(json!({
        "typeMeta": {"apiVersion": "v1", "kind": "ConfigMap"},
        "raw": "CgA=", "contentEncoding": "gzip", "contentType": "application/json"
    }));
    round_trip::<meta::Preconditions>(json!({"uid": "u", "resourceVersion": "1"}));
}

/// `objects` and a one-item list of each (`{Kind}List`).
fn with_lists(objects: Vec<Value>) -> Vec<Value> {
    let lists: Vec<Value> = objects
        .iter()
        .map(|o| {
            let kind = format!("{}List", o["kind"].as_str().unwrap());
            fixtures::list(o["apiVersion"].as_str().unwrap(), &kind, vec![o.clone()])
        })
        .collect();
    objects.into_iter().chain(lists).collect()
}

/// Each of `objects` has a protobuf form, sets every field of it, and round-trips unchanged.
fn assert_round_trips_fully_populated(objects: Vec<Value>) {
    for obj in objects {
        let (api_version, kind) = (
            obj["apiVersion"].as_str().unwrap(),
            obj["kind"].as_str().unwrap(),
        );
        assert!(supports(api_version, kind), "{api_version} {kind}");
        let unset = (codec(api_version, kind).unwrap().unset_fields)(&obj);
        assert!(unset.is_empty(), "{kind} fixture leaves unset: {unset:?}");
        assert_eq!(decode(&encoded(&obj)).expect("decodes"), obj, "{kind}");
    }
}
