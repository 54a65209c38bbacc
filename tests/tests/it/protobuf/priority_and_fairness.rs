//! API priority and fairness' configuration, served as Kubernetes' specs use it: discovery,
//! the mandatory objects, protobuf writes and reads, status and the Dangling condition.

use super::*;

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
