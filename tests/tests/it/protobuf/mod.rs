//! Kubernetes protobuf over HTTP against the real binary, checked with an independent decoder:
//! the k8s-pb message types and prost, as a Go client's generated code reads the wire. Every
//! built-in kind is written as protobuf and read back both ways (protobuf and JSON must agree);
//! lists and watch streams are protobuf when asked; custom resources stay JSON-only; an
//! admission policy written as protobuf (its rules nested messages on the wire, inline in JSON)
//! is enforced; a CustomResourceDefinition written as protobuf, as client-go's apiextensions
//! clientset writes it, defines a resource whose schema is enforced; API priority and fairness'
//! configuration is served (discovery, status, protobuf) with its mandatory objects.
//!
//! Here the built-in kinds and watches, with the helpers; `definitions.rs` the policy and the
//! CRD written as protobuf; `priority_and_fairness.rs` API priority and fairness' configuration.

mod definitions;
mod priority_and_fairness;

use std::io::Read as _;

use k8s_pb::api::admissionregistration::v1 as admission;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::events::v1 as events;
use k8s_pb::api::flowcontrol::v1 as flowcontrol;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::{json, Value};
use strategy_host_e2e::{call, call_raw, widget, widget_crd, HostProcess};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const MAGIC: &[u8] = b"k8s\0";

/// The body a Go client sends: the magic, then a `runtime.Unknown` around the message.
fn envelope<M: Message>(api_version: &str, kind: &str, message: &M) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(message.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [MAGIC, &unknown.encode_to_vec()].concat()
}

/// Opens a protobuf body: its (apiVersion, kind) and the message.
fn open<M: Message + Default>(body: &[u8]) -> (String, String, M) {
    assert_eq!(&body[..4], MAGIC, "not Kubernetes protobuf");
    let unknown = Unknown::decode(&body[4..]).unwrap();
    let tm = unknown.type_meta.unwrap();
    let message = M::decode(unknown.raw.unwrap().as_slice()).unwrap();
    (tm.api_version.unwrap(), tm.kind.unwrap(), message)
}

fn meta(name: &str, namespace: &str) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        ..Default::default()
    })
}

/// POSTs `message` as protobuf asking for protobuf back; answers the decoded reply and the
/// object as JSON read back, after checking both name the same object at the same version.
fn round_trip<M: Message + Default + PartialEq + std::fmt::Debug>(
    host: &HostProcess,
    collection: &str,
    api_version: &str,
    kind: &str,
    message: &M,
    object_meta: fn(&M) -> &meta::ObjectMeta,
) -> (M, Value) {
    let url = host.url(collection);
    let body = envelope(api_version, kind, message);
    let reply = call_raw(
        "POST",
        &url,
        Some(&body),
        &[
            ("Content-Type", PROTOBUF),
            ("Accept", &format!("{PROTOBUF}, application/json")),
        ],
    )
    .unwrap();
    assert_eq!(reply.code, 201, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.content_type, PROTOBUF);
    let (av, k, created) = open::<M>(&reply.body);
    assert_eq!((av.as_str(), k.as_str()), (api_version, kind));
    let m = object_meta(&created);
    let name = m.name.clone().unwrap();
    let json = call("GET", &format!("{url}/{name}"), None).unwrap().json();
    assert_eq!(json["metadata"]["uid"].as_str(), m.uid.as_deref());
    assert_eq!(
        json["metadata"]["resourceVersion"].as_str(),
        m.resource_version.as_deref()
    );
    let created_at = m
        .creation_timestamp
        .as_ref()
        .and_then(|t| t.seconds)
        .unwrap();
    assert!(created_at > 1_700_000_000, "creationTimestamp {created_at}");
    // And a protobuf GET answers the same message as the create did.
    let got = call_raw(
        "GET",
        &format!("{url}/{name}"),
        None,
        &[("Accept", PROTOBUF)],
    )
    .unwrap();
    assert_eq!(got.content_type, PROTOBUF);
    assert_eq!(open::<M>(&got.body).2, created);
    (created, json)
}

#[test]
fn every_built_in_kind_round_trips_through_protobuf_and_agrees_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", &data]).unwrap();

    let ns = core::Namespace {
        metadata: Some(meta::ObjectMeta {
            name: Some("team".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let (ns, json) = round_trip(&host, "/api/v1/namespaces", "v1", "Namespace", &ns, |n| {
        n.metadata.as_ref().unwrap()
    });
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
    assert_eq!(json["status"]["phase"], "Active");

    let cm = core::ConfigMap {
        metadata: meta("settings", "team"),
        data: [("mode".to_string(), "fast".to_string())].into(),
        binary_data: [("blob".to_string(), vec![0u8, 159, 255])].into(),
        immutable: Some(true),
    };
    let (cm, json) = round_trip(
        &host,
        "/api/v1/namespaces/team/configmaps",
        "v1",
        "ConfigMap",
        &cm,
        |c| c.metadata.as_ref().unwrap(),
    );
    assert_eq!(cm.binary_data["blob"], vec![0u8, 159, 255]);
    assert_eq!(json["data"], json!({"mode": "fast"}));
    assert_eq!(json["binaryData"], json!({"blob": "AJ//"}));
    assert_eq!(json["immutable"], true);

    let secret = core::Secret {
        metadata: meta("creds", "team"),
        string_data: [("user".to_string(), "admin".to_string())].into(),
        r#type: Some("Opaque".into()),
        ..Default::default()
    };
    let (secret, json) = round_trip(
        &host,
        "/api/v1/namespaces/team/secrets",
        "v1",
        "Secret",
        &secret,
        |s| s.metadata.as_ref().unwrap(),
    );
    assert_eq!(secret.data["user"], b"admin");
    assert!(secret.string_data.is_empty());
    assert_eq!(json["data"]["user"], "YWRtaW4=");

    let sa = core::ServiceAccount {
        metadata: meta("runner", "team"),
        automount_service_account_token: Some(false),
        image_pull_secrets: vec![core::LocalObjectReference {
            name: Some("registry".into()),
        }],
        ..Default::default()
    };
    let (_, json) = round_trip(
        &host,
        "/api/v1/namespaces/team/serviceaccounts",
        "v1",
        "ServiceAccount",
        &sa,
        |s| s.metadata.as_ref().unwrap(),
    );
    assert_eq!(json["automountServiceAccountToken"], false);
    assert_eq!(json["imagePullSecrets"], json!([{"name": "registry"}]));

    let micro = |seconds, nanos| {
        Some(meta::MicroTime {
            seconds: Some(seconds),
            nanos: Some(nanos),
        })
    };
    let lease = coordination::Lease {
        metadata: meta("leader", "team"),
        spec: Some(coordination::LeaseSpec {
            holder_identity: Some("a".into()),
            lease_duration_seconds: Some(15),
            renew_time: micro(1_767_225_600, 123_456_000),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let (lease, json) = round_trip(
        &host,
        "/apis/coordination.k8s.io/v1/namespaces/team/leases",
        "coordination.k8s.io/v1",
        "Lease",
        &lease,
        |l| l.metadata.as_ref().unwrap(),
    );
    assert_eq!(
        lease.spec.unwrap().renew_time,
        micro(1_767_225_600, 123_456_000)
    );
    assert_eq!(json["spec"]["renewTime"], "2026-01-01T00:00:00.123456Z");

    let reference = Some(core::ObjectReference {
        kind: Some("ConfigMap".into()),
        name: Some("settings".into()),
        namespace: Some("team".into()),
        ..Default::default()
    });
    let event = core::Event {
        metadata: meta("settings.1", "team"),
        involved_object: reference.clone(),
        reason: Some("Reloaded".into()),
        message: Some("settings were reloaded".into()),
        count: Some(3),
        r#type: Some("Normal".into()),
        last_timestamp: Some(meta::Time {
            seconds: Some(1_767_225_600),
            nanos: Some(0),
        }),
        ..Default::default()
    };
    let (_, json) = round_trip(
        &host,
        "/api/v1/namespaces/team/events",
        "v1",
        "Event",
        &event,
        |e| e.metadata.as_ref().unwrap(),
    );
    assert_eq!(json["lastTimestamp"], "2026-01-01T00:00:00Z");
    assert_eq!(json["count"], 3);

    let recorded = events::Event {
        metadata: meta("settings.2", "team"),
        event_time: micro(1_767_225_600, 0),
        regarding: reference,
        reason: Some("Reconciled".into()),
        note: Some("all good".into()),
        action: Some("Reconcile".into()),
        reporting_controller: Some("example.com/controller".into()),
        reporting_instance: Some("controller-0".into()),
        r#type: Some("Normal".into()),
        ..Default::default()
    };
    let (back, json) = round_trip(
        &host,
        "/apis/events.k8s.io/v1/namespaces/team/events",
        "events.k8s.io/v1",
        "Event",
        &recorded,
        |e| e.metadata.as_ref().unwrap(),
    );
    assert_eq!(back.note.as_deref(), Some("all good"));
    assert_eq!(json["regarding"]["name"], "settings");

    // A list, as protobuf, agrees with the JSON list.
    let list = call_raw(
        "GET",
        &host.url("/api/v1/namespaces/team/events"),
        None,
        &[("Accept", PROTOBUF)],
    )
    .unwrap();
    let (_, kind, list) = open::<core::EventList>(&list.body);
    assert_eq!(kind, "EventList");
    // The JSON list of the same snapshot: the server writes in the background (its controllers'
    // Lease renewals), so a plain second list may be newer.
    let rv = list.metadata.unwrap().resource_version.unwrap();
    let json = call(
        "GET",
        &host.url(&format!(
            "/api/v1/namespaces/team/events?resourceVersion={rv}&resourceVersionMatch=Exact"
        )),
        None,
    )
    .unwrap()
    .json();
    assert_eq!(list.items.len(), json["items"].as_array().unwrap().len());
    assert_eq!(list.items.len(), 2);
    assert_eq!(
        json["metadata"]["resourceVersion"].as_str(),
        Some(rv.as_str())
    );
}

#[test]
fn protobuf_watches_frame_each_event_and_custom_resources_stay_json() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", &data]).unwrap();
    let cms = host.url("/api/v1/namespaces/default/configmaps");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "watched"}, "data": {"a": "1"}});
    assert_eq!(call("POST", &cms, Some(&cm)).unwrap().code, 201);

    let resp = ureq::get(&format!("{cms}?watch=1&resourceVersion=0&timeoutSeconds=5"))
        .set("Accept", PROTOBUF)
        .call()
        .unwrap();
    assert_eq!(
        resp.header("content-type"),
        Some("application/vnd.kubernetes.protobuf;stream=watch")
    );
    let mut reader = resp.into_reader();
    let mut len = [0u8; 4];
    reader.read_exact(&mut len).unwrap();
    let mut frame = vec![0u8; u32::from_be_bytes(len) as usize];
    reader.read_exact(&mut frame).unwrap();
    let event = meta::WatchEvent::decode(frame.as_slice()).unwrap();
    assert_eq!(event.r#type.as_deref(), Some("ADDED"));
    let raw = event.object.unwrap().raw.unwrap();
    let (av, kind, cm) = open::<core::ConfigMap>(&raw);
    assert_eq!((av.as_str(), kind.as_str()), ("v1", "ConfigMap"));
    assert_eq!(cm.metadata.unwrap().name.as_deref(), Some("watched"));
    assert_eq!(cm.data["a"], "1");

    // Custom resources: JSON whatever the Accept, and a protobuf body is refused.
    assert_eq!(
        call(
            "POST",
            &host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
            Some(&widget_crd())
        )
        .unwrap()
        .code,
        201
    );
    let widgets = host.url("/apis/example.com/v1/namespaces/default/widgets");
    let mut created = 0;
    for _ in 0..50 {
        created = call("POST", &widgets, Some(&widget("w", 1))).unwrap().code;
        if created == 201 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(created, 201);
    let got = call_raw(
        "GET",
        &format!("{widgets}/w"),
        None,
        &[("Accept", &format!("{PROTOBUF}, application/json"))],
    )
    .unwrap();
    assert_eq!(got.content_type, "application/json");
    let refused = call_raw(
        "POST",
        &widgets,
        Some(b"k8s\0"),
        &[("Content-Type", PROTOBUF)],
    )
    .unwrap();
    assert_eq!(
        refused.code,
        415,
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    // A malformed protobuf body for a built-in kind is a 400 with a Status, and the server serves on.
    let garbage = call_raw(
        "POST",
        &cms,
        Some(b"k8s\0\xff\xff\xff"),
        &[("Content-Type", PROTOBUF)],
    )
    .unwrap();
    assert_eq!(
        garbage.code,
        400,
        "{}",
        String::from_utf8_lossy(&garbage.body)
    );
    let status: Value = serde_json::from_slice(&garbage.body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(
        call("GET", &format!("{cms}/watched"), None).unwrap().code,
        200
    );
}
