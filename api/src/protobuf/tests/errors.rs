//! Errors of the codec: bodies that are not protobuf, truncated or corrupt bytes, unsupported
//! kinds, and JSON of the wrong type — each an error that names what is wrong, never a panic.

use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::{json, Value};

use super::super::ProtobufError;
use super::{decode, decode_watch_frame, encode, encoded, envelope, fixtures, MAGIC};

/// The error of encoding `obj`, as the client would read it.
fn encode_error(obj: &Value) -> String {
    encode(obj).expect_err("does not encode").to_string()
}

#[test]
fn bodies_without_the_magic_are_not_protobuf() {
    for body in [
        &b""[..],
        b"k8s",
        b"{\"kind\":\"ConfigMap\"}",
        b"k8s\x01\x0a\x00",
        &MAGIC,
    ] {
        let err = decode(body).expect_err("rejected");
        assert!(
            matches!(err, ProtobufError::NotProtobuf(_)),
            "{body:?}: {err}"
        );
    }
    let err = decode(b"{\"kind\":\"ConfigMap\"}").unwrap_err().to_string();
    assert!(err.contains("magic bytes 6b 38 73 00"), "{err}");
}

#[test]
fn truncated_and_corrupt_bytes_are_errors_not_panics() {
    let body = encoded(&fixtures::events_event("e"));
    for len in 0..body.len() {
        // Whatever a cut leaves must not panic; a cut inside `raw` or a tag is an error.
        let _ = decode(&body[..len]);
    }
    for len in [5, 10, body.len() / 2, body.len() - 3, body.len() - 1] {
        assert!(
            decode(&body[..len]).is_err(),
            "cut at {len} of {}",
            body.len()
        );
    }
    let mut garbage = MAGIC.to_vec();
    garbage.extend([0xff; 12]);
    assert!(matches!(
        decode(&garbage),
        Err(ProtobufError::Malformed { .. })
    ));

    // A valid envelope around bytes that are not a ConfigMap.
    let err = decode(&envelope("v1", "ConfigMap", vec![0x0a, 0x05, 0x01])).unwrap_err();
    assert!(
        matches!(&err, ProtobufError::Malformed { what, .. } if what == "v1 ConfigMap"),
        "{err}"
    );

    let mut frame = super::encode_watch_frame("ADDED", &fixtures::config_map("c"))
        .unwrap()
        .unwrap();
    frame.pop();
    assert!(decode_watch_frame(&frame)
        .unwrap_err()
        .to_string()
        .contains("length prefix"));
    assert!(decode_watch_frame(&[0, 0]).is_err());
}

#[test]
fn envelopes_without_a_kind_with_an_encoding_or_of_unknown_kinds_are_rejected() {
    let unknown = Unknown {
        type_meta: None,
        raw: Some(vec![]),
        content_encoding: None,
        content_type: None,
    };
    let body = [MAGIC.to_vec(), unknown.encode_to_vec()].concat();
    assert!(decode(&body)
        .unwrap_err()
        .to_string()
        .contains("names no apiVersion or kind"));

    let gzip = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
        }),
        raw: Some(vec![]),
        content_encoding: Some("gzip".into()),
        content_type: None,
    };
    let body = [MAGIC.to_vec(), gzip.encode_to_vec()].concat();
    assert!(decode(&body).unwrap_err().to_string().contains("\"gzip\""));

    let err = decode(&envelope("apps/v1", "Deployment", vec![])).unwrap_err();
    assert_eq!(
        err,
        ProtobufError::Unsupported {
            api_version: "apps/v1".into(),
            kind: "Deployment".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "no protobuf encoding is served for apiVersion \"apps/v1\", kind \"Deployment\""
    );
}

#[test]
fn wrong_json_types_name_the_field_path() {
    let cases = [
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": 5}),
            "metadata: expected an object, got number",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generation": "3"}}),
            "metadata.generation: expected a 64-bit integer, got string",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generation": 1.5}}),
            "metadata.generation: expected a 64-bit integer, got number",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"app": 1}}}),
            "metadata.labels[app]: expected a string, got number",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"managedFields": [{}, {"time": 5}]}}),
            "metadata.managedFields[1].time: expected an RFC 3339 timestamp string, got number",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"creationTimestamp": "yesterday"}}),
            "metadata.creationTimestamp: invalid RFC 3339 timestamp \"yesterday\"",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"finalizers": "a"}}),
            "metadata.finalizers: expected an array, got string",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"finalizers": ["a", null]}}),
            "metadata.finalizers[1]: expected a string, got null",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": ["a"]}),
            "data: expected an object, got array",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "immutable": "true"}),
            "immutable: expected a boolean, got string",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": [{"metadata": {"ownerReferences": [{"controller": 1}]}}]}),
            "items[0].metadata.ownerReferences[0].controller: expected a boolean, got number",
        ),
        (
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"leaseDurationSeconds": 10_000_000_000_i64}}),
            "spec.leaseDurationSeconds: expected a 32-bit integer, got number",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Status", "details": {"causes": [{"field": false}]}}),
            "details.causes[0].field: expected a string, got boolean",
        ),
    ];
    for (obj, message) in cases {
        assert_eq!(encode_error(&obj), message);
    }
    let err = encode_error(
        &json!({"apiVersion": "v1", "kind": "Secret", "data": {"password": "not base64!"}}),
    );
    assert!(err.starts_with("data[password]: invalid base64"), "{err}");
}

#[test]
fn protobuf_values_without_a_json_form_name_the_field_path() {
    let decode_cm = |metadata: meta::ObjectMeta| {
        let cm = core::ConfigMap {
            metadata: Some(metadata),
            ..Default::default()
        };
        decode(&envelope("v1", "ConfigMap", cm.encode_to_vec()))
            .unwrap_err()
            .to_string()
    };
    let err = decode_cm(meta::ObjectMeta {
        managed_fields: vec![meta::ManagedFieldsEntry {
            fields_v1: Some(meta::FieldsV1 {
                raw: Some(b"{not json".to_vec()),
            }),
            ..Default::default()
        }],
        ..Default::default()
    });
    assert!(
        err.starts_with("metadata.managedFields[0].fieldsV1: raw bytes are not JSON"),
        "{err}"
    );
    let err = decode_cm(meta::ObjectMeta {
        creation_timestamp: Some(meta::Time {
            seconds: Some(i64::MAX),
            nanos: Some(0),
        }),
        ..Default::default()
    });
    assert!(
        err.starts_with("metadata.creationTimestamp: time "),
        "{err}"
    );
}
