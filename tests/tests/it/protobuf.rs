//! Kubernetes protobuf over HTTP against the real binary, checked with an independent decoder:
//! the k8s-pb message types and prost, as a Go client's generated code reads the wire. Every
//! built-in kind is written as protobuf and read back both ways (protobuf and JSON must agree);
//! lists and watch streams are protobuf when asked; custom resources stay JSON-only; an
//! admission policy written as protobuf (its rules nested messages on the wire, inline in JSON)
//! is enforced; a CustomResourceDefinition written as protobuf, as client-go's apiextensions
//! clientset writes it, defines a resource whose schema is enforced; API priority and fairness'
//! configuration is served (discovery, status, protobuf) with its mandatory objects.

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

#[test]
fn an_admission_policy_written_as_protobuf_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    // Without the status controller, whose write would move the policy's resourceVersion
    // between the create and the reads `round_trip` compares.
    let controllers = "--controllers=*,-validatingadmissionpolicy-status";
    let host = HostProcess::start(&["--data-dir", &data, controllers]).unwrap();
    let rule = admission::NamedRuleWithOperations {
        resource_names: Vec::new(),
        rule_with_operations: Some(admission::RuleWithOperations {
            operations: vec!["CREATE".into()],
            rule: Some(admission::Rule {
                api_groups: vec![String::new()],
                api_versions: vec!["v1".into()],
                resources: vec!["configmaps".into()],
                scope: None,
            }),
        }),
    };
    let policy = admission::ValidatingAdmissionPolicy {
        metadata: meta("small.example.com", ""),
        spec: Some(admission::ValidatingAdmissionPolicySpec {
            match_constraints: Some(admission::MatchResources {
                resource_rules: vec![rule],
                ..Default::default()
            }),
            validations: vec![admission::Validation {
                expression: Some("!has(object.data) || object.data.size() <= 1".into()),
                message: Some("at most one key".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    let policies = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
    let (created, json) = round_trip(
        &host,
        policies,
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        &policy,
        |p| p.metadata.as_ref().unwrap(),
    );
    let rules = &created
        .spec
        .unwrap()
        .match_constraints
        .unwrap()
        .resource_rules;
    let nested = rules[0].rule_with_operations.as_ref().unwrap();
    assert_eq!(nested.rule.as_ref().unwrap().resources, ["configmaps"]);
    // In JSON the rule's fields sit beside its operations, as Kubernetes writes them.
    assert_eq!(
        json["spec"]["matchConstraints"]["resourceRules"][0],
        json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]})
    );
    let binding = admission::ValidatingAdmissionPolicyBinding {
        metadata: meta("small.example.com", ""),
        spec: Some(admission::ValidatingAdmissionPolicyBindingSpec {
            policy_name: Some("small.example.com".into()),
            validation_actions: vec!["Deny".into()],
            ..Default::default()
        }),
    };
    round_trip(
        &host,
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        &binding,
        |b| b.metadata.as_ref().unwrap(),
    );
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "big"}, "data": {"a": "1", "b": "2"}});
    let url = host.url("/api/v1/namespaces/default/configmaps");
    let mut reply = call("POST", &url, Some(&big)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while reply.code == 201 && std::time::Instant::now() < deadline {
        call("DELETE", &format!("{url}/big"), None).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        reply = call("POST", &url, Some(&big)).unwrap();
    }
    assert_eq!(reply.code, 422, "{}", reply.body);
    assert!(reply.body.contains("at most one key"), "{}", reply.body);
}

/// A CRD as client-go's apiextensions clientset sends it: protobuf, with every non-pointer
/// field written (empty strings, an empty status), the schema's default as embedded JSON and
/// its items as a schema. Served, it defaults and validates widgets as its schema says.
#[test]
fn a_crd_written_as_protobuf_defines_its_resource() {
    let host = HostProcess::start(&[]).unwrap();
    let schema = |kind: &str| apiextensions::JsonSchemaProps {
        r#type: Some(kind.into()),
        ..Default::default()
    };
    let mut spec_properties = std::collections::BTreeMap::new();
    spec_properties.insert(
        "size".to_owned(),
        apiextensions::JsonSchemaProps {
            maximum: Some(100.0),
            ..schema("integer")
        },
    );
    spec_properties.insert(
        "color".to_owned(),
        apiextensions::JsonSchemaProps {
            default: Some(apiextensions::Json {
                raw: Some(br#""blue""#.to_vec()),
            }),
            ..schema("string")
        },
    );
    spec_properties.insert(
        "tags".to_owned(),
        apiextensions::JsonSchemaProps {
            items: Some(Box::new(apiextensions::JsonSchemaPropsOrArray {
                schema: Some(Box::new(schema("string"))),
                j_son_schemas: vec![],
            })),
            ..schema("array")
        },
    );
    let mut properties = std::collections::BTreeMap::new();
    properties.insert(
        "spec".to_owned(),
        apiextensions::JsonSchemaProps {
            properties: spec_properties,
            required: vec!["size".into()],
            ..schema("object")
        },
    );
    let names = |plural: &str, kind: &str| apiextensions::CustomResourceDefinitionNames {
        plural: Some(plural.into()),
        singular: Some(String::new()),
        kind: Some(kind.into()),
        list_kind: Some(String::new()),
        ..Default::default()
    };
    let crd = apiextensions::CustomResourceDefinition {
        metadata: Some(meta::ObjectMeta {
            name: Some("widgets.example.com".into()),
            ..Default::default()
        }),
        spec: Some(apiextensions::CustomResourceDefinitionSpec {
            group: Some("example.com".into()),
            names: Some(names("widgets", "Widget")),
            scope: Some("Namespaced".into()),
            versions: vec![apiextensions::CustomResourceDefinitionVersion {
                name: Some("v1".into()),
                served: Some(true),
                storage: Some(true),
                deprecated: Some(false),
                schema: Some(apiextensions::CustomResourceValidation {
                    open_apiv3_schema: Some(apiextensions::JsonSchemaProps {
                        properties,
                        ..schema("object")
                    }),
                }),
                ..Default::default()
            }],
            conversion: None,
            preserve_unknown_fields: Some(false),
        }),
        status: Some(apiextensions::CustomResourceDefinitionStatus {
            accepted_names: Some(names("", "")),
            observed_generation: Some(0),
            ..Default::default()
        }),
    };
    let (created, json) = round_trip(
        &host,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &crd,
        |c| c.metadata.as_ref().unwrap(),
    );
    let spec = created.spec.unwrap();
    let top = spec.versions[0]
        .schema
        .clone()
        .unwrap()
        .open_apiv3_schema
        .unwrap();
    let color = &top.properties["spec"].properties["color"];
    assert_eq!(
        color.default.as_ref().unwrap().raw.as_deref(),
        Some(&br#""blue""#[..])
    );
    assert_eq!(
        json["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["tags"]["items"],
        json!({"type": "string"})
    );
    let widgets = host.url("/apis/example.com/v1/namespaces/default/widgets");
    strategy_host_e2e::eventually(
        "widgets to be served",
        std::time::Duration::from_secs(10),
        || call("GET", &widgets, None).unwrap().code == 200,
    );
    let made = call("POST", &widgets, Some(&widget("w", 3))).unwrap();
    assert_eq!(made.code, 201, "{}", made.body);
    assert_eq!(
        made.json()["spec"]["color"],
        "blue",
        "the default from protobuf"
    );
    let refused = call("POST", &widgets, Some(&widget("big", 101))).unwrap();
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert!(
        refused.body.contains("should be less than or equal to 100"),
        "{}",
        refused.body
    );
    // The list reads back as protobuf too, its items established.
    let list = call_raw(
        "GET",
        &host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        None,
        &[("Accept", PROTOBUF)],
    )
    .unwrap();
    let (_, kind, list) = open::<apiextensions::CustomResourceDefinitionList>(&list.body);
    assert_eq!(kind, "CustomResourceDefinitionList");
    let status = list.items[0].status.clone().unwrap();
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.r#type.as_deref() == Some("Established")
                && c.status.as_deref() == Some("True")),
        "{status:?}"
    );
}

/// `flowcontrol.apiserver.k8s.io/v1` as Kubernetes' API priority and fairness specs use it:
/// discovered with its status subresources, the mandatory `exempt` and `catch-all` objects
/// there from the start, a FlowSchema written and read as protobuf, its status its own and the
/// server's Dangling condition in it.
#[test]
fn flowcontrol_configuration_is_served_with_its_mandatory_objects() {
    let host = HostProcess::start(&[]).unwrap();
    let base = "/apis/flowcontrol.apiserver.k8s.io/v1";
    let resources = call("GET", &host.url(base), None).unwrap().json();
    let names: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for name in [
        "flowschemas",
        "flowschemas/status",
        "prioritylevelconfigurations",
        "prioritylevelconfigurations/status",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    for (plural, name) in [
        ("prioritylevelconfigurations", "exempt"),
        ("prioritylevelconfigurations", "catch-all"),
        ("flowschemas", "exempt"),
        ("flowschemas", "catch-all"),
    ] {
        let got = call_raw(
            "GET",
            &host.url(&format!("{base}/{plural}/{name}")),
            None,
            &[("Accept", PROTOBUF)],
        )
        .unwrap();
        assert_eq!(got.code, 200, "{plural}/{name}");
        assert_eq!(got.content_type, PROTOBUF);
    }
    let catch_all = call(
        "GET",
        &host.url(&format!("{base}/flowschemas/catch-all")),
        None,
    )
    .unwrap()
    .json();
    assert_eq!(
        catch_all["spec"]["matchingPrecedence"], 10000,
        "{catch_all}"
    );
    assert_eq!(
        catch_all["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );

    let schema = flowcontrol::FlowSchema {
        metadata: Some(meta::ObjectMeta {
            name: Some("e2e-example".into()),
            ..Default::default()
        }),
        spec: Some(flowcontrol::FlowSchemaSpec {
            priority_level_configuration: Some(flowcontrol::PriorityLevelConfigurationReference {
                name: Some("catch-all".into()),
            }),
            matching_precedence: Some(9000),
            distinguisher_method: None,
            rules: vec![flowcontrol::PolicyRulesWithSubjects {
                subjects: vec![flowcontrol::Subject {
                    kind: Some("User".into()),
                    user: Some(flowcontrol::UserSubject {
                        name: Some("example-e2e-non-existent-user".into()),
                    }),
                    group: None,
                    service_account: None,
                }],
                resource_rules: vec![],
                non_resource_rules: vec![flowcontrol::NonResourcePolicyRule {
                    verbs: vec!["*".into()],
                    non_resource_ur_ls: vec!["/apis".into()],
                }],
            }],
        }),
        status: Some(flowcontrol::FlowSchemaStatus::default()),
    };
    // Created as protobuf, answered as protobuf.
    let reply = call_raw(
        "POST",
        &host.url(&format!("{base}/flowschemas")),
        Some(&envelope(
            "flowcontrol.apiserver.k8s.io/v1",
            "FlowSchema",
            &schema,
        )),
        &[("Content-Type", PROTOBUF), ("Accept", PROTOBUF)],
    )
    .unwrap();
    assert_eq!(reply.code, 201, "{}", String::from_utf8_lossy(&reply.body));
    let (_, kind, created) = open::<flowcontrol::FlowSchema>(&reply.body);
    assert_eq!(kind, "FlowSchema");
    assert_eq!(created.spec, schema.spec);
    // The server reports whether its level exists (Kubernetes' Dangling condition) ...
    let schema_url = host.url(&format!("{base}/flowschemas/e2e-example"));
    strategy_host_e2e::eventually(
        "the Dangling condition",
        std::time::Duration::from_secs(10),
        || {
            let json = call("GET", &schema_url, None).unwrap().json();
            json["status"]["conditions"][0]["type"] == "Dangling"
        },
    );
    // ... and a protobuf GET answers what a JSON GET does.
    let json = call("GET", &schema_url, None).unwrap().json();
    let got = call_raw("GET", &schema_url, None, &[("Accept", PROTOBUF)]).unwrap();
    let (_, _, read) = open::<flowcontrol::FlowSchema>(&got.body);
    let read_meta = read.metadata.as_ref().unwrap();
    assert_eq!(
        read_meta.resource_version.as_deref(),
        json["metadata"]["resourceVersion"].as_str()
    );
    let condition = &read.status.as_ref().unwrap().conditions[0];
    assert_eq!(
        (
            condition.r#type.as_deref(),
            condition.status.as_deref(),
            condition.reason.as_deref()
        ),
        (Some("Dangling"), Some("False"), Some("Found"))
    );
    assert_eq!(
        json["spec"]["rules"][0]["subjects"][0]["user"]["name"],
        "example-e2e-non-existent-user"
    );
    // The status is written through its subresource, and only there (the server's Dangling
    // condition comes back beside a client's).
    let status_url = host.url(&format!("{base}/flowschemas/e2e-example/status"));
    let mut with_status = json.clone();
    with_status["status"] =
        json!({"conditions": [{"type": "StatusUpdated", "status": "True", "reason": "E2E"}]});
    let put = call("PUT", &status_url, Some(&with_status)).unwrap();
    assert_eq!(put.code, 200, "{}", put.body);
    assert_eq!(
        put.json()["status"]["conditions"][0]["type"],
        "StatusUpdated"
    );
    let has_condition = |obj: &Value, type_: &str| {
        obj["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == type_))
    };
    // A spec write keeps the status (retried while the server re-reports Dangling).
    let mut updated = Value::Null;
    strategy_host_e2e::eventually("a spec update", std::time::Duration::from_secs(10), || {
        let mut respecced = call("GET", &schema_url, None).unwrap().json();
        respecced["spec"]["matchingPrecedence"] = json!(8000);
        respecced["status"] = json!({});
        let reply = call("PUT", &schema_url, Some(&respecced)).unwrap();
        assert!(matches!(reply.code, 200 | 409), "{}", reply.body);
        updated = reply.json();
        reply.code == 200
    });
    assert_eq!(updated["spec"]["matchingPrecedence"], 8000);
    assert!(has_condition(&updated, "StatusUpdated"), "{updated}");
    strategy_host_e2e::eventually(
        "the server's condition beside the client's",
        std::time::Duration::from_secs(10),
        || {
            let now = call("GET", &schema_url, None).unwrap().json();
            has_condition(&now, "StatusUpdated") && has_condition(&now, "Dangling")
        },
    );
}
